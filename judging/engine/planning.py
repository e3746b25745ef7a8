"""Planning a crowd campaign before paying for it: expected judgments, HITs, cost, and the risk that a
consistent crowd loses a true top-k item (Clarke, Vtyurina and Smucker, "Assessing top-k preferences",
section 4.3)."""

from __future__ import annotations

import functools
import math
import random
import statistics
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from judging.engine.adaptive import AdaptiveParams
from judging.engine.agreement import held_to_k, top_k_agreement
from judging.engine.oracles import NoisyOracle, Oracle, PerfectOracle
from judging.engine.params import DEFAULT_HIT_SHAPE, DEFAULT_PRICING, CrowdParams, HitShape, Pricing
from judging.engine.simulator import SimulationResult, simulate_adaptive, simulate_crowd
from judging.engine.tournament import tournament_judgment_bound

# How many simulated judgments between two looks at the clock (a look costs about as much as a judgment).
DEADLINE_CHECK_EVERY = 256


class PlanTimeExceededError(ValueError):
    """A plan ran out of its time (``max_seconds``) before its last trial: the message names the bound, how
    many trials were done in it and how many would fit."""

    def __init__(self, *, max_seconds: float, trials_done: int, trials: int) -> None:
        fits = max(1, int(trials_done * 0.8))
        super().__init__(
            f"this plan needs more than {max_seconds:g} s: {trials_done} of its {trials} trials were done in that"
            f" time; ask for at most about {fits} trials, smaller pools or a smaller P"
        )
        self.max_seconds, self.trials_done, self.trials = max_seconds, trials_done, trials


class _DeadlineOracle:
    """An oracle that answers as ``inner`` until ``deadline`` (``time.monotonic()``) has passed, then raises
    ``_OutOfTime`` on a judgment: the simulators ask it for every judgment, so a plan stops within a few
    hundred judgments of its deadline, however large one trial is."""

    def __init__(self, inner: Oracle, deadline: float) -> None:
        self.inner, self.deadline, self.calls = inner, deadline, 0

    def prefer(self, topic_id: str, a: str, b: str) -> str:
        self.calls += 1
        if self.calls % DEADLINE_CHECK_EVERY == 0 and time.monotonic() > self.deadline:
            raise _OutOfTime
        return self.inner.prefer(topic_id, a, b)


class _OutOfTime(Exception):
    pass


def _within(oracle: Oracle, deadline: float | None) -> Oracle:
    return oracle if deadline is None else _DeadlineOracle(oracle, deadline)


def _check_time(deadline: float | None, *, max_seconds: float | None, trial: int, trials: int) -> None:
    """Between trials (a small pool's trial asks its crowd too few times to look at the clock itself)."""
    if deadline is not None and time.monotonic() > deadline:
        raise PlanTimeExceededError(max_seconds=max_seconds or 0, trials_done=trial, trials=trials)


def plan_campaign(
    pool_sizes: Mapping[str, int],
    *,
    params: CrowdParams,
    trials: int,
    rng: random.Random,
    hit_shape: HitShape = DEFAULT_HIT_SHAPE,
    pricing: Pricing = DEFAULT_PRICING,
    error_rate: float = 0.0,
    max_seconds: float | None = None,
    on_trial: Callable[[], None] | None = None,
    jobs: int = 1,
) -> dict[str, Any]:
    """Monte-Carlo plan of a crowd campaign over topics with the given pool sizes.

    Each trial gives every topic a fresh, uniformly random strict order of its candidates and runs
    ``simulate_crowd`` with a consistent crowd (``PerfectOracle`` on that order), so the only
    randomness is the pairing graphs', or with one that reverses each judgment with probability
    ``error_rate`` (recorded as ``error_rate``). Returns a JSON-serialisable dict:

    - ``judgments``, ``hits``, ``cost_usd``, ``rounds``: means over trials (``*_sd``: sample standard
      deviations); ``judgments_min``/``judgments_max``;
    - ``p_miss``: the risk the paper discusses (section 4.3): the mean over topics with a pool of the
      probability that a stage-1 culling round eliminates at least one of the true top-min(k, |C|)
      items (it "fails to win a majority of its pairings"), with its Monte-Carlo standard error
      ``p_miss_se``; ``p_miss_per_topic``; ``p_miss_any_topic``: probability that some topic has one
      culled; ``p_miss_by_rank``: for r = 1..k, the probability (over topics with |C| >= r) that the
      true r-th best is culled;
    - ``p_lost`` (with ``p_lost_se``, ``p_lost_per_topic``, ``p_lost_any_topic``, ``p_lost_by_rank``):
      the same for the campaign's output, i.e. after reinstatement (docs/decisions.md "Reinstatement and round cap": when fewer than k survive,
      the best culled by win ratio come back) and stage 2: the probability that the final top-k really
      misses a true top-k item. ``p_lost <= p_miss``; they are equal when ``params.reinstate`` is False;
    - ``kth_culled_in_round1_by_opponents``: for the true k-th best of pools entering stage 1, keyed by
      its number of opponents in round 1: how often it had that many (``rounds``), the fraction of those
      in which the culling rule removed it (``p_culled``, before reinstatement) and in which it stayed
      out (``p_lost``, after reinstatement). For |C| = 10, k = 5, P = 7 this is the setting of the
      paper's "12%" remark: with 7 opponents it is culled iff they include all of the top 4, with
      hypergeometric probability C(5,3)/C(9,7) = 0.278, which is ``p_miss``;
      reinstatement brings it back whenever only the top 4 survive, so ``p_lost`` is lower (about 0.11);
    - ``tournament_judgment_bound``: the dedicated tournament's bound for the same pools, for comparison.
    Only ids and counts are reported; ``trials`` must be >= 1. With ``max_seconds`` a plan that has not
    finished within that many seconds stops and raises ``PlanTimeExceededError``. ``on_trial``, when given,
    is called after every trial (a command's progress bar). ``jobs`` > 1 runs that many trials at once in
    processes; the plan is the same as with one (every trial's world is drawn from ``rng`` first, in order),
    and it cannot be bounded by ``max_seconds``.
    """
    params.validate()
    _check_plan_args(trials=trials, error_rate=error_rate)
    topics = sorted(pool_sizes)
    for topic in topics:
        params.validate(pool_sizes[topic])
    totals: dict[str, list[float]] = defaultdict(list)
    culled = _MissTally()
    lost = _MissTally()
    kth_rounds: Counter[int] = Counter()
    kth_culled: Counter[int] = Counter()
    kth_lost: Counter[int] = Counter()
    trial = functools.partial(
        _crowd_trial, params=params, hit_shape=hit_shape, pricing=pricing, error_rate=error_rate
    )
    for world, outcome in _run_trials(
        trial, pool_sizes, trials=trials, rng=rng, error_rate=error_rate, max_seconds=max_seconds, jobs=jobs
    ):
        for name, value in outcome.totals.items():
            totals[name].append(value)
        culled.add_trial(world.true_orders, params.k, outcome.culled)
        lost.add_trial(world.true_orders, params.k, outcome.lost)
        for opponents, culled_or_reinstated, stayed_out in outcome.kth:
            kth_rounds[opponents] += 1
            kth_culled[opponents] += culled_or_reinstated
            kth_lost[opponents] += stayed_out
        if on_trial is not None:
            on_trial()
    judged_topics = [t for t in topics if pool_sizes[t] > 0]
    plan: dict[str, Any] = {
        "k": params.k,
        "F": params.F,
        "P": params.P,
        "culling": params.culling,
        "error_rate": error_rate,
        "trials": trials,
        "topics": len(topics),
        "candidates": sum(pool_sizes.values()),
    }
    plan.update(_totals_summary(totals))
    plan.update(culled.report("p_miss", judged_topics, trials))
    plan.update(lost.report("p_lost", judged_topics, trials))
    plan["kth_culled_in_round1_by_opponents"] = {
        str(n): {
            "rounds": kth_rounds[n],
            "p_culled": kth_culled[n] / kth_rounds[n],
            "p_lost": kth_lost[n] / kth_rounds[n],
        }
        for n in sorted(kth_rounds)
    }
    plan["tournament_judgment_bound"] = sum(
        tournament_judgment_bound(pool_sizes[t], params.k) for t in topics
    )
    return plan


def _trial_totals(
    result: SimulationResult, values: Mapping[str, Mapping[str, float]], k: int
) -> dict[str, float]:
    """One trial's ``judgments``, ``hits``, ``cost_usd`` and ``rounds``, its ``top_k_recall`` (share of the true
    top-k found, the top-k held to k items: ties at rank k broken at random, in expectation, since a topic a
    budget cuts may leave many items tied there) and ``best_first`` (topics whose true best is ranked first),
    against the trial's strict true orders (``top_k_agreement``)."""
    agreement = top_k_agreement(
        {topic: outcome.ranked for topic, outcome in result.topics.items()},
        {topic: sorted(topic_values) for topic, topic_values in values.items()},
        PerfectOracle(values),
        k=k,
    )
    totals = {name: float(getattr(result, name)) for name in ("judgments", "hits", "cost_usd", "rounds")}
    totals["top_k_recall"] = agreement.recall_at_k if agreement.recall_at_k is not None else 1.0
    totals["best_first"] = float(agreement.same_best)
    return totals


def _culled_in_stage1(result: SimulationResult, topic: str) -> set[str]:
    """Items a stage-1 culling rule removed, whether or not reinstatement brought them back."""
    removed: set[str] = set()
    for round_ in result.topics[topic].rounds:
        if round_.stage == 1:
            removed.update(round_.culled, round_.reinstated)
    return removed


class _MissTally:
    """Per-topic and per-rank counts of trials in which a true top-k item fell in a given set."""

    def __init__(self) -> None:
        self.topics: Counter[str] = Counter()
        self.ranks: Counter[int] = Counter()
        self.rank_trials: Counter[int] = Counter()
        self.any_topic = 0

    def add_trial(self, true_orders: Mapping[str, list[str]], k: int, missed: Mapping[str, set[str]]) -> None:
        """Count one trial; ``missed[topic]`` holds the items that count as missed in it."""
        any_missed = False
        for topic, order in true_orders.items():
            topic_missed = False
            for rank, docid in enumerate(order[:k], start=1):
                self.rank_trials[rank] += 1
                if docid in missed[topic]:
                    self.ranks[rank] += 1
                    topic_missed = True
            if topic_missed:
                self.topics[topic] += 1
                any_missed = True
        self.any_topic += any_missed

    def report(self, name: str, topics: list[str], trials: int) -> dict[str, Any]:
        per_topic = {t: self.topics[t] / trials for t in topics}
        return {
            name: sum(per_topic.values()) / len(per_topic) if per_topic else 0.0,
            f"{name}_se": _proportion_se(self.topics, topics, trials),
            f"{name}_any_topic": self.any_topic / trials,
            f"{name}_by_rank": {
                str(r): self.ranks[r] / self.rank_trials[r] for r in sorted(self.rank_trials)
            },
            f"{name}_per_topic": per_topic,
        }


def _proportion_se(missed: Counter[str], topics: list[str], trials: int) -> float:
    """Standard error of the mean over topics of per-topic miss proportions (topics independent)."""
    if not topics:
        return 0.0
    variance = sum((missed[t] / trials) * (1 - missed[t] / trials) / trials for t in topics)
    return math.sqrt(variance) / len(topics)


def plan_adaptive(
    pool_sizes: Mapping[str, int],
    *,
    params: AdaptiveParams,
    trials: int,
    rng: random.Random,
    hit_shape: HitShape = DEFAULT_HIT_SHAPE,
    pricing: Pricing = DEFAULT_PRICING,
    error_rate: float = 0.0,
    max_seconds: float | None = None,
    max_judgments: int | None = None,
    on_trial: Callable[[], None] | None = None,
    jobs: int = 1,
) -> dict[str, Any]:
    """Monte-Carlo plan of an adaptive campaign (``adaptive.py``): each trial gives every topic a fresh random
    strict order and runs ``simulate_adaptive`` with a crowd that reverses each judgment with probability
    ``error_rate`` (0: a consistent crowd), within ``max_judgments`` when given (the judge model's rounds once
    the crowd is seen to err: docs/judge-model.md). ``top_k_recall`` and ``best_first`` are the expected share
    of the true top-k found and the expected number of topics with the true best first (both planners report
    them). Returns ``judgments``, ``hits``, ``cost_usd``, ``rounds`` (means,
    ``*_sd``, ``judgments_min``/``judgments_max``), ``pairs_tied`` (mean) and the miss risk: ``p_lost`` (mean
    over topics with a pool of the probability that the output misses a true top-min(k, |C|) item, with
    ``p_lost_se``, ``p_lost_any_topic``, ``p_lost_by_rank``, ``p_lost_per_topic``); ``p_miss`` equals it (the
    adaptive mode has no culling round to report apart). A consistent crowd never loses an item: every
    elimination rests on k confirmed betters. ``max_seconds``, ``on_trial`` and ``jobs``: as for ``plan_campaign``."""
    params.validate()
    _check_plan_args(trials=trials, error_rate=error_rate)
    topics = sorted(pool_sizes)
    totals: dict[str, list[float]] = defaultdict(list)
    lost = _MissTally()
    trial = functools.partial(
        _adaptive_trial,
        params=params,
        hit_shape=hit_shape,
        pricing=pricing,
        error_rate=error_rate,
        max_judgments=max_judgments,
    )
    for world, outcome in _run_trials(
        trial, pool_sizes, trials=trials, rng=rng, error_rate=error_rate, max_seconds=max_seconds, jobs=jobs
    ):
        for name, value in outcome.totals.items():
            totals[name].append(value)
        lost.add_trial(world.true_orders, params.k, outcome.lost)
        if on_trial is not None:
            on_trial()
    judged_topics = [t for t in topics if pool_sizes[t] > 0]
    plan: dict[str, Any] = {
        "mode": "adaptive",
        "k": params.k,
        "F": params.F,
        "max_votes": params.max_votes,
        "confidence": params.confidence,
        "error_rate": error_rate,
        "max_judgments": max_judgments,
        "model_rounds": params.model_rounds if max_judgments is not None else None,
        "trials": trials,
        "topics": len(topics),
        "candidates": sum(pool_sizes.values()),
    }
    plan.update(_totals_summary(totals))
    report = lost.report("p_lost", judged_topics, trials)
    plan.update(report)
    plan["p_miss"] = report["p_lost"]
    plan["tournament_judgment_bound"] = sum(
        tournament_judgment_bound(pool_sizes[t], params.k) for t in topics
    )
    return plan


def _check_plan_args(*, trials: int, error_rate: float) -> None:
    """Raise ``ValueError`` on a plan's ``trials`` or ``error_rate`` out of range (both planners take them)."""
    if trials < 1:
        raise ValueError(f"trials must be at least 1 (got {trials})")
    if not 0 <= error_rate < 0.5:
        raise ValueError(f"error rate must be in [0, 0.5) (got {error_rate})")


def _trial_world(
    pool_sizes: Mapping[str, int], *, rng: random.Random
) -> tuple[dict[str, list[str]], dict[str, dict[str, float]]]:
    """One trial's world: each topic's candidates ``topic#i`` in a true order shuffled by ``rng`` (best first,
    topics in sorted order), and the values that order gives them (the best pool-size, the last 1)."""
    true_orders = {}
    for topic in sorted(pool_sizes):
        order = [f"{topic}#{i}" for i in range(pool_sizes[topic])]
        rng.shuffle(order)
        true_orders[topic] = order
    values = {
        topic: {docid: float(len(order) - i) for i, docid in enumerate(order)}
        for topic, order in true_orders.items()
    }
    return true_orders, values


@dataclass(frozen=True)
class _TrialWorld:
    """What one trial draws from the plan's stream, in this order: the true orders and their values
    (``_trial_world``), the noisy crowd's own seed (only when the crowd errs) and the simulation's seed."""

    true_orders: dict[str, list[str]]
    values: dict[str, dict[str, float]]
    crowd_seed: int | None
    seed: int


@dataclass(frozen=True)
class _TrialOutcome:
    """One trial's figures, small enough to send back from a process: its totals, and per topic the true
    top-k items the output misses (``lost``) and, for the paper's procedure, those a stage-1 culling removed
    (``culled``) and the true k-th's first round (opponents, culled or reinstated, culled for good)."""

    totals: dict[str, float]
    lost: dict[str, set[str]]
    culled: dict[str, set[str]] = field(default_factory=dict)
    kth: list[tuple[int, bool, bool]] = field(default_factory=list)


def _draw_trial(pool_sizes: Mapping[str, int], *, rng: random.Random, error_rate: float) -> _TrialWorld:
    true_orders, values = _trial_world(pool_sizes, rng=rng)
    crowd_seed = rng.randrange(2**32) if error_rate else None
    return _TrialWorld(true_orders, values, crowd_seed, rng.randrange(2**32))


def _run_trials(
    trial: Callable[[_TrialWorld, float | None], _TrialOutcome],
    pool_sizes: Mapping[str, int],
    *,
    trials: int,
    rng: random.Random,
    error_rate: float,
    max_seconds: float | None,
    jobs: int,
) -> Iterator[tuple[_TrialWorld, _TrialOutcome]]:
    """Each trial's world and outcome, in trial order: one after another within ``max_seconds`` (the clock
    looked at between trials and by the crowd every few hundred judgments), or ``jobs`` at once in processes.
    The worlds are drawn in trial order either way, so the plan does not depend on ``jobs``."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1 (got {jobs})")
    if jobs > 1 and max_seconds is not None:
        raise ValueError("a plan bounded in seconds runs its trials one after another (jobs 1)")
    if jobs == 1:
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        for number in range(trials):
            _check_time(deadline, max_seconds=max_seconds, trial=number, trials=trials)
            world = _draw_trial(pool_sizes, rng=rng, error_rate=error_rate)
            try:
                outcome = trial(world, deadline)
            except _OutOfTime:
                raise PlanTimeExceededError(
                    max_seconds=max_seconds or 0, trials_done=number, trials=trials
                ) from None
            yield world, outcome
        return
    # The worlds are drawn as the processes need them, a few trials ahead: a plan of a thousand trials of large
    # pools would not fit in memory all at once.
    with ProcessPoolExecutor(max_workers=min(jobs, trials)) as pool:
        pending: deque[tuple[_TrialWorld, Future[_TrialOutcome]]] = deque()
        for _ in range(trials):
            world = _draw_trial(pool_sizes, rng=rng, error_rate=error_rate)
            pending.append((world, pool.submit(trial, world, None)))
            if len(pending) > 2 * jobs:
                first, running = pending.popleft()
                yield first, running.result()
        for first, running in pending:
            yield first, running.result()


def _planned_crowd(world: _TrialWorld, *, error_rate: float, deadline: float | None) -> Oracle:
    """The simulated crowd of a plan's trial: consistent, or reversing each judgment with ``error_rate`` from
    its own stream; within ``deadline`` when given."""
    crowd: Oracle = PerfectOracle(world.values)
    if world.crowd_seed is not None:
        crowd = NoisyOracle(world.values, rng=random.Random(world.crowd_seed), error_rate=error_rate)
    return _within(crowd, deadline)


def _missed(world: _TrialWorld, k: int, kept: Callable[[str], set[str]]) -> dict[str, set[str]]:
    """Per topic, the true top-k items not in ``kept(topic)``."""
    return {topic: set(order[:k]) - kept(topic) for topic, order in world.true_orders.items()}


def _lost(world: _TrialWorld, result: SimulationResult, k: int) -> dict[str, set[str]]:
    """The true top-k items the output misses, its top-k held to k items. The ties at rank k are broken by a
    stream of the trial's own, so that both planners keep drawing the same worlds trial by trial however many
    ties each leaves."""
    ties = random.Random(f"{world.seed}:ties")
    return _missed(world, k, lambda topic: held_to_k(result.topics[topic].ranked, k, ties))


def _crowd_trial(
    world: _TrialWorld,
    deadline: float | None,
    *,
    params: CrowdParams,
    hit_shape: HitShape,
    pricing: Pricing,
    error_rate: float,
) -> _TrialOutcome:
    """One trial of the paper's procedure (``plan_campaign``)."""
    result = simulate_crowd(
        {topic: sorted(order) for topic, order in world.true_orders.items()},
        _planned_crowd(world, error_rate=error_rate, deadline=deadline),
        params=params,
        seed=world.seed,
        hit_shape=hit_shape,
        pricing=pricing,
    )
    kth = []
    for topic, order in world.true_orders.items():
        outcome = result.topics[topic]
        if len(order) >= params.k and outcome.rounds and outcome.rounds[0].stage == 1:
            first, true_kth = outcome.rounds[0], order[params.k - 1]
            kth.append(
                (
                    first.opponents[true_kth],
                    true_kth in first.culled or true_kth in first.reinstated,
                    true_kth in first.culled,
                )
            )
    return _TrialOutcome(
        totals=_trial_totals(result, world.values, params.k),
        lost=_lost(world, result, params.k),
        culled={
            topic: set(order[: params.k]) & _culled_in_stage1(result, topic)
            for topic, order in world.true_orders.items()
        },
        kth=kth,
    )


def _adaptive_trial(
    world: _TrialWorld,
    deadline: float | None,
    *,
    params: AdaptiveParams,
    hit_shape: HitShape,
    pricing: Pricing,
    error_rate: float,
    max_judgments: int | None,
) -> _TrialOutcome:
    """One trial of the adaptive mode (``plan_adaptive``)."""
    result = simulate_adaptive(
        {topic: sorted(order) for topic, order in world.true_orders.items()},
        _planned_crowd(world, error_rate=error_rate, deadline=deadline),
        params=params,
        seed=world.seed,
        hit_shape=hit_shape,
        pricing=pricing,
        max_judgments=max_judgments,
    )
    totals = _trial_totals(result, world.values, params.k)
    totals["pairs_tied"] = float(result.vote_counts()["pairs_tied"])
    return _TrialOutcome(totals=totals, lost=_lost(world, result, params.k))


def _totals_summary(totals: dict[str, list[float]]) -> dict[str, Any]:
    """Mean and standard deviation over the trials of each total (``judgments``, ``hits``, ``cost_usd``...),
    with the judgments' range and the cost rounded to cents: the figures both planners report alike."""
    summary: dict[str, Any] = {}
    for name, values in totals.items():
        summary[name] = statistics.fmean(values)
        summary[f"{name}_sd"] = statistics.stdev(values) if len(values) > 1 else 0.0
    summary["judgments_min"] = int(min(totals["judgments"]))
    summary["judgments_max"] = int(max(totals["judgments"]))
    summary["cost_usd"] = round(summary["cost_usd"], 2)
    return summary

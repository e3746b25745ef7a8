"""A model of every judge: per-topic Bradley-Terry item scores with their uncertainty, one reliability per judge,
and how sure the model is of each item's place in the top-k (docs/judge-model.md).

- **Items.** In topic t, item i has a latent score s_i; a judge who follows the model prefers a over b with
  probability sigma(s_a - s_b) (Bradley and Terry, "Rank analysis of incomplete block designs", Biometrika
  1952). The prior is Gaussian around the item's NIST grade: s_i ~ N(grade_scale * (g_i - mean grade of the
  topic's candidates), prior_sd^2); ``grade_scale`` and ``prior_sd`` are estimated from the data when
  ``JudgeModelParams.estimate_prior`` (empirical Bayes, pooled over topics).
- **Judges.** Judge j answers by the model with probability eta_j and at random otherwise (the reliability of
  Crowd-BT: Chen, Bennett, Collins-Thompson and Horvitz, "Pairwise ranking aggregation in a crowdsourced
  setting", WSDM 2013, section 3, with a coin flip in place of the reversed model so that a judge who answers at
  random has eta = 0 and a perfect one eta = 1): P(a over b) = 1/2 + eta_j (sigma(s_a - s_b) - 1/2). A challenge
  (a candidate against a known non-relevant item, truth certain) is passed with probability (1 + eta_j) / 2.
  A tie counts as half a vote each way, and tells nothing about eta.
- **Fit.** Alternate (expectation-maximisation): given the reliabilities, each topic's scores are the posterior
  mode (Fisher scoring on the exact mixture likelihood plus the prior), with the Laplace approximation
  N(mode, (prior precision + Fisher information)^-1) as posterior; given the scores (each pair's win probability
  averaged over that posterior), each vote's responsibility (the posterior probability that it came from the
  model, not the coin) updates eta_j, shrunk toward the crowd's pooled eta with the weight of
  ``judge_prior_weight`` answers.
- **Confidence.** ``p_top_k`` and ``p_best`` of every candidate are frequencies over ``samples`` draws from the
  posterior: an item is in a draw's top-k when its score is at least the k-th highest (an item tied with the
  k-th counts as in), and best when its score is the highest (ties for best count for each).
- **The link.** Bradley-Terry describes a crowd that errs on close pairs. A crowd that reverses at random, as often
  on its easy challenges as on the pairs it splits (``crowd_reverses_at_random``), is read instead by the noisy
  sorting model (``noisy_sorting``: each answer right with probability (1 + eta_j) / 2 whatever the pair), with
  each judge's eta from its challenges, whose truth is known; the draws of ``p_top_k`` and ``p_best`` then come
  from that posterior (``JudgeModelParams.link``, "auto" by default; ``JudgeModel.link`` says which was used).

Everything is pure (numpy only) and deterministic for a seed: the draws of topic t come from a generator seeded
by (seed, topic).
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from judging.engine.adaptive import NOISY_RATE, PRIOR_ANSWERS, PRIOR_ERRORS
from judging.engine.noisy_sorting import CHAINS, noisy_sorting_draws, noisy_sorting_evidence

FloatArray = npt.NDArray[np.float64]

# Judges' reliabilities are kept inside (MIN_ETA, MAX_ETA): a judge of eta exactly 1 would make one contrary vote
# impossible and the likelihood unbounded.
MIN_ETA, MAX_ETA = 0.0, 0.995
# A model round's pair value weighs the model's doubt about the pair's order as (4 p (1 - p)) ** CLOSENESS: a high
# power sends the votes to the pairs nearest a coin flip. Crowd log, level-gap, 14,000 judgments, seeds 0-4
# (tie-aware recall / best first): 1: 0.902 / 133.0, 2: 0.908 / 137.8, 3: 0.910 / 140.6, 4: 0.914 / 141.2, 6: 0.918
# / 142.6 (docs/decisions.md, "The model rounds at a budget").
CLOSENESS = 4.0
# A crowd whose repeated pairs split at least this many times as often as it fails its challenges errs mostly on
# close pairs (the noise Bradley-Terry describes); below it, the crowd reverses at random whatever the pair. On
# CAsT, seed 1, after two waves: reversals at random 10% gave 0.084 against 0.074 (1.1), the crowd log's
# level-gap noise 0.179 against 0.107 (1.7) (docs/judge-model.md).
ITEM_NOISE_RATIO = 1.4
# The switch to the model rounds, tested after every wave, also wants the split rate above the challenge
# failure rate by this many standard errors (``splits_beyond_failures``): by the ratio alone a crowd that
# reverses at random 10% of the time read 0.95-1.2 after two waves on CAsT, but 1.45 once in twenty seeds (seed
# 12: 299 minority votes in 2,918 against 71 failures in 854 challenges, 1.8 standard errors) and switched, and
# the model rounds spent 21,746 judgments where the closure rounds spend about 14,000. --discriminability 2
# passes after its first wave by 4.7 (seed 0), and the item world and the crowd log switch after the same waves
# as before; a campaign of a few topics waits for more waves (docs/decisions.md, "Closure rounds at a budget:
# 0.989 at 14,000").
ITEM_NOISE_Z = 3.0
# How ``fit_judge_model`` reads the votes for ``p_top_k`` and ``p_best``: "auto" (the default) chooses by the
# crowd (``crowd_reverses_at_random``; docs/decisions.md, "`p_top_k` under noisy sorting").
LINKS = ("auto", "bradley-terry", "noisy-sorting")
# The most challenge answers of the crowd's a judge's own pass rate is weighed against (``judge_spread_weight``).
MAX_SPREAD_WEIGHT = 1000.0
# A fitted score and its sd are reported to this many decimals. Items the votes cannot tell apart (same prior
# mean, no votes, or mirror-image votes) have equal scores in exact arithmetic but differ in the last bits of a
# floating-point fit, and those bits depend on the BLAS kernel the machine's CPU selects: ordered by them, the
# anchors of a model round and with them every later round differed between two machines for the same seed
# (CAsT, item world, seed 0: tie-aware recall 0.771 with OpenBLAS's Haswell kernels, 0.787 with SkylakeX).
# Rounded, such items tie exactly and are ordered by docid on any machine; 1e-7 of a logit is far below what any
# number of votes can resolve.
SCORE_DECIMALS = 7


class JudgeVote(NamedTuple):
    """One judgment of one topic: ``winner`` is ``item_a``, ``item_b`` or None for a tie; ``judge`` is any judge's
    id (an assessor, a crowd worker, an LLM that is just another worker id). A plain 4-tuple works as well."""

    item_a: str
    item_b: str
    winner: str | None
    judge: str


class ChallengeAnswer(NamedTuple):
    """One challenge answered by ``judge`` (a pair whose truth is known): ``passed`` or not."""

    judge: str
    passed: bool


@dataclass(frozen=True)
class JudgeModelParams:
    """``prior_sd`` and ``grade_scale``: the prior of the scores (starting values when ``estimate_prior``);
    ``eta_prior``/``judge_prior_weight``: the crowd's reliability before any answer is seen, and how many answers
    a judge's own estimate weighs against the crowd's; ``iterations``: rounds of expectation-maximisation;
    ``samples``: posterior draws for ``p_top_k`` and ``p_best``; ``link``: how the votes are read for them (``LINKS``:
    "auto", the default, is noisy sorting for a crowd that reverses at random and Bradley-Terry otherwise)."""

    prior_sd: float = 1.0
    grade_scale: float = 0.5
    estimate_prior: bool = True
    eta_prior: float = 0.8
    crowd_prior_weight: float = 4.0
    judge_prior_weight: float = 10.0
    iterations: int = 12
    samples: int = 2000
    link: str = "auto"

    def validate(self) -> None:
        """Raise ``ValueError`` naming the violated rule."""
        if not self.prior_sd > 0:
            raise ValueError(f"prior sd must be positive (got {self.prior_sd})")
        if not 0 <= self.eta_prior <= 1:
            raise ValueError(f"eta prior must be in [0, 1] (got {self.eta_prior})")
        if self.crowd_prior_weight < 0 or self.judge_prior_weight < 0:
            raise ValueError("prior weights must not be negative")
        if self.iterations < 1 or self.samples < 1:
            raise ValueError("iterations and samples must be at least 1")
        if self.link not in LINKS:
            raise ValueError(f"link must be one of {', '.join(LINKS)} (got {self.link!r})")


DEFAULT_JUDGE_MODEL_PARAMS = JudgeModelParams()


@dataclass(frozen=True)
class ItemConfidence:
    """One candidate of a topic: posterior mean ``score`` and standard deviation ``sd``; ``p_top_k``, the
    probability that it belongs to the true top-k (tied with the k-th counts as in); ``p_best``, that it is the
    true best (ties count)."""

    docid: str
    score: float
    sd: float
    p_top_k: float
    p_best: float


@dataclass(frozen=True)
class TopicConfidence:
    """A topic's candidates, best score first. ``certainty`` is the smallest max(p_top_k, 1 - p_top_k) over its
    candidates (1: every item's place in or out of the top-k is sure); ``expected_misplaced`` the expected number
    of candidates on the wrong side of the top-k boundary when each is put in where its p_top_k passes 1/2 (sum
    of min(p_top_k, 1 - p_top_k)): the fewest any reading of the model can expect, so a lower bound for
    ``top_k()``, the k of highest posterior mean."""

    topic: str
    k: int
    items: tuple[ItemConfidence, ...]

    @property
    def certainty(self) -> float:
        return min((max(i.p_top_k, 1 - i.p_top_k) for i in self.items), default=1.0)

    @property
    def expected_misplaced(self) -> float:
        return float(sum(min(i.p_top_k, 1 - i.p_top_k) for i in self.items))

    def top_k(self) -> list[str]:
        """The model's top-k: the k candidates of highest posterior mean (fewer if the topic has fewer)."""
        return [item.docid for item in self.items[: self.k]]


@dataclass(frozen=True)
class JudgeReliability:
    """A judge's estimated ``eta`` (1: always answers by the model; 0: at random), from ``votes`` votes and
    ``challenges`` challenges of which ``challenges_failed`` failed."""

    judge: str
    eta: float
    votes: int
    challenges: int
    challenges_failed: int


@dataclass(frozen=True)
class JudgeModel:
    """The fitted model: ``topics`` (topic -> ``TopicConfidence``), ``judges`` (judge -> ``JudgeReliability``),
    the crowd's pooled ``crowd_eta`` (the reliability of a judge not seen yet), the prior used, and the ``link``
    that read the votes for ``p_top_k`` and ``p_best`` ("bradley-terry" or "noisy-sorting"; the reliabilities
    are that link's)."""

    topics: Mapping[str, TopicConfidence]
    judges: Mapping[str, JudgeReliability]
    crowd_eta: float
    grade_scale: float
    prior_sd: float
    scores: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    link: str = "bradley-terry"

    def reliability(self, judge: str) -> float:
        """``eta`` of ``judge``; the crowd's for a judge the model has not seen."""
        known = self.judges.get(judge)
        return known.eta if known is not None else self.crowd_eta


@dataclass(frozen=True)
class TopicPosterior:
    """The Laplace posterior of one topic's scores over ``candidates``: ``mean`` and ``cov``."""

    candidates: tuple[str, ...]
    mean: FloatArray
    cov: FloatArray


def _sigmoid(x: FloatArray) -> FloatArray:
    out: FloatArray = 0.5 * (1.0 + np.tanh(0.5 * x))
    return out


class _TopicData:
    """One topic's votes as arrays: ``i``/``j`` item indices, ``y`` 1 if i won, 0 if j won, 0.5 for a tie, and the
    judge of each vote."""

    def __init__(self, candidates: Sequence[str], votes: Iterable[tuple[str, str, str | None, str]]) -> None:
        self.candidates = tuple(candidates)
        index = {docid: n for n, docid in enumerate(self.candidates)}
        i, j, y, judges = [], [], [], []
        for a, b, winner, judge in votes:
            if a not in index or b not in index or a == b:
                raise ValueError(f"vote on ({a}, {b}) is not between two candidates")
            if winner is not None and winner not in (a, b):
                raise ValueError(f"winner {winner} is not in the pair ({a}, {b})")
            i.append(index[a])
            j.append(index[b])
            y.append(0.5 if winner is None else 1.0 if winner == a else 0.0)
            judges.append(judge)
        self.i = np.asarray(i, dtype=np.int64)
        self.j = np.asarray(j, dtype=np.int64)
        self.y = np.asarray(y, dtype=np.float64)
        self.judges = judges


def fit_topic_posterior(
    candidates: Sequence[str],
    votes: Iterable[tuple[str, str, str | None, str]],
    *,
    reliability: Mapping[str, float],
    prior_mean: Sequence[float] | None = None,
    prior_sd: float = DEFAULT_JUDGE_MODEL_PARAMS.prior_sd,
    default_eta: float = DEFAULT_JUDGE_MODEL_PARAMS.eta_prior,
) -> TopicPosterior:
    """The Laplace posterior of one topic's Bradley-Terry scores given each judge's ``reliability`` (eta; judges
    missing from it get ``default_eta``), the prior N(``prior_mean``, ``prior_sd``^2) per item (0 when None).
    Raises ``ValueError`` on a vote not between two candidates or a winner outside its pair."""
    data = _TopicData(candidates, votes)
    mu = np.zeros(len(data.candidates)) if prior_mean is None else np.asarray(prior_mean, dtype=np.float64)
    eta = np.asarray([reliability.get(judge, default_eta) for judge in data.judges], dtype=np.float64)
    return _posterior(data, eta, mu, prior_sd)


def _posterior(data: _TopicData, eta: FloatArray, mu: FloatArray, prior_sd: float) -> TopicPosterior:
    """Fisher scoring on the exact mixture likelihood plus the prior; the Laplace covariance is the inverse of the
    information at the mode. The mixture's log-likelihood is not concave (a judge answers at random with
    probability 1 - eta), so a full step can overshoot where the votes pull against the prior and the iterates
    then swing between two sides of the mode: each step is halved until the log-posterior does not fall."""
    precision = 1.0 / prior_sd**2
    s = mu.copy()
    for _ in range(50):
        grad_d, info = _gradient_information(data, eta, s, mu, precision)
        grad = np.zeros(len(s))
        np.add.at(grad, data.i, grad_d)
        np.add.at(grad, data.j, -grad_d)
        grad -= precision * (s - mu)
        step = np.linalg.solve(info, grad)
        converged = float(np.max(np.abs(step), initial=0.0)) < 1e-6
        current = _log_posterior(data, eta, s, mu, precision)
        for _halving in range(30):
            if _log_posterior(data, eta, s + step, mu, precision) >= current - 1e-12:
                break
            step = step / 2
        s = s + step
        if converged:
            break
    _, info = _gradient_information(data, eta, s, mu, precision)
    cov = np.asarray(np.linalg.inv(info), dtype=np.float64)
    return TopicPosterior(candidates=data.candidates, mean=s, cov=(cov + cov.T) / 2)


def _log_posterior(
    data: _TopicData, eta: FloatArray, s: FloatArray, mu: FloatArray, precision: float
) -> float:
    """The log-posterior of the scores ``s`` up to a constant: each vote's mixture likelihood (a tie counting half
    a win each way) plus the Gaussian prior."""
    p = _sigmoid(s[data.i] - s[data.j])
    q = np.clip(0.5 + eta * (p - 0.5), 1e-300, 1.0)
    r = np.clip(0.5 - eta * (p - 0.5), 1e-300, 1.0)
    votes = np.sum(data.y * np.log(q) + (1 - data.y) * np.log(r))
    return float(votes - precision / 2 * np.sum((s - mu) ** 2))


def _gradient_information(
    data: _TopicData, eta: FloatArray, s: FloatArray, mu: FloatArray, precision: float
) -> tuple[FloatArray, FloatArray]:
    """The log-likelihood's slope in each vote's score difference, and the posterior information matrix (prior
    precision plus the expected Fisher information of every vote: (eta p (1 - p))^2 / (q (1 - q)), q the
    probability of item a's win)."""
    p = _sigmoid(s[data.i] - s[data.j])
    q = np.clip(0.5 + eta * (p - 0.5), 1e-9, 1 - 1e-9)
    slope = eta * p * (1 - p)
    grad_d: FloatArray = (data.y - q) / (q * (1 - q)) * slope
    fisher = slope**2 / (q * (1 - q))
    info: FloatArray = np.eye(len(s)) * precision
    np.add.at(info, (data.i, data.i), fisher)
    np.add.at(info, (data.j, data.j), fisher)
    np.add.at(info, (data.i, data.j), -fisher)
    np.add.at(info, (data.j, data.i), -fisher)
    return grad_d, info


def topk_probabilities(
    posterior: TopicPosterior, *, k: int, samples: int, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray]:
    """``(p_top_k, p_best)`` per candidate of ``posterior`` from ``samples`` draws: in a draw, an item is in the
    top-k when its score is at least the k-th highest (an item tied with the k-th counts as in) and best when it
    has the highest score (each of several tied for best counts). A topic with at most k candidates has every
    p_top_k 1."""
    n = len(posterior.candidates)
    if n == 0:
        empty: FloatArray = np.zeros(0)
        return empty, empty.copy()
    if n <= k:
        ones: FloatArray = np.ones(n)
        if n == 1:
            return ones, ones.copy()
    root = np.linalg.cholesky(posterior.cov + np.eye(n) * 1e-12)
    draws = posterior.mean + rng.standard_normal((samples, n)) @ root.T
    return draws_topk_probabilities(draws, k=k)


def draws_topk_probabilities(draws: FloatArray, *, k: int) -> tuple[FloatArray, FloatArray]:
    """``(p_top_k, p_best)`` per column of ``draws`` (rows: draws of the items' scores), as
    ``topk_probabilities`` reads them."""
    n = draws.shape[1]
    top = draws.max(axis=1, keepdims=True)
    p_best: FloatArray = (draws >= top).mean(axis=0)
    if n <= k:
        return np.ones(n), p_best
    kth = -np.partition(-draws, k - 1, axis=1)[:, k - 1 : k]
    p_top_k: FloatArray = (draws >= kth).mean(axis=0)
    return p_top_k, p_best


def pair_win_probability(posterior: TopicPosterior, a: int, b: int) -> float:
    """P(item a over item b) for a judge who follows the model, averaged over the posterior (the probit
    approximation of the logistic-normal integral: sigma(m / sqrt(1 + pi v / 8)), MacKay 1992)."""
    m = float(posterior.mean[a] - posterior.mean[b])
    v = float(posterior.cov[a, a] + posterior.cov[b, b] - 2 * posterior.cov[a, b])
    return 1.0 / (1.0 + math.exp(-m / math.sqrt(1.0 + math.pi * max(v, 0.0) / 8.0)))


_Arguments = ParamSpec("_Arguments")
_Result = TypeVar("_Result")


def one_blas_thread(function: Callable[_Arguments, _Result]) -> Callable[_Arguments, _Result]:
    """Run ``function`` with one BLAS thread. The judge model's linear algebra is on one topic at a time (a
    few dozen items): a second BLAS thread only spins, taking a core from whatever else runs (CAsT, item
    world at 14,000 judgments: 19.4 s of CPU for 10.2 s with the default two threads, 9.9 s for 10.0 s with
    one; two such runs side by side 26.1 s against 10.4 to 10.6 s)."""

    @functools.wraps(function)
    def call(*args: _Arguments.args, **kwargs: _Arguments.kwargs) -> _Result:
        with threadpool_limits(limits=1):
            return function(*args, **kwargs)

    return call


def topic_rng(*, seed: int, topic: str) -> np.random.Generator:
    """The random source of one topic's posterior draws: a function of (seed, topic) alone."""
    return np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(topic.encode())])


@one_blas_thread
def fit_judge_model(
    votes: Mapping[str, Iterable[tuple[str, str, str | None, str]]],
    *,
    candidates: Mapping[str, Sequence[str]] | None = None,
    grades: Mapping[str, Mapping[str, float]] | None = None,
    challenges: Iterable[tuple[str, bool]] = (),
    k: int = 5,
    params: JudgeModelParams = DEFAULT_JUDGE_MODEL_PARAMS,
    seed: int = 0,
    start: JudgeModel | None = None,
) -> JudgeModel:
    """Fit item scores and judge reliabilities (module docstring) to ``votes`` (topic -> votes ``(item_a, item_b,
    winner or None for a tie, judge)``) and ``challenges`` (``(judge, passed)``), with the NIST ``grades`` (topic
    -> docid -> grade; missing: 0) as the prior, and report every candidate's ``p_top_k`` and ``p_best``.

    ``candidates`` (topic -> docids) defaults to the items of a topic's votes and grades; a topic with candidates
    and no votes gets its prior alone. Raises ``ValueError`` on a vote not between two candidates of its topic, a
    winner outside its pair, or k < 1. ``start``, an earlier fit, gives the starting reliabilities and prior (a
    campaign refitted after each round needs fewer ``iterations`` that way)."""
    params.validate()
    if k < 1:
        raise ValueError(f"k must be at least 1 (got {k})")
    grades = grades or {}
    vote_lists = {topic: list(topic_votes) for topic, topic_votes in votes.items()}
    if candidates is None:
        pools: dict[str, tuple[str, ...]] = {}
        for topic in set(vote_lists) | set(grades):
            seen = set(grades.get(topic, {}))
            for a, b, _, _ in vote_lists.get(topic, []):
                seen.update((a, b))
            pools[topic] = tuple(sorted(seen))
    else:
        pools = {topic: tuple(sorted(docids)) for topic, docids in candidates.items()}
    for topic in vote_lists:
        if topic not in pools:
            raise ValueError(f"votes for topic {topic}, which has no candidates")
    topics = sorted(pools)
    data = {}
    for topic in topics:
        try:
            data[topic] = _TopicData(pools[topic], vote_lists.get(topic, []))
        except ValueError as error:
            raise ValueError(f"topic {topic}: {error}") from None
    centred = {}
    for topic in topics:
        g = np.asarray([float(grades.get(topic, {}).get(d, 0.0)) for d in pools[topic]], dtype=np.float64)
        centred[topic] = g - g.mean() if len(g) else g
    challenge_list = [(judge, bool(passed)) for judge, passed in challenges]

    fit = _fit_scores(data, centred, challenge_list, params=params, start=start)
    posteriors, eta, crowd_eta = fit.posteriors, fit.eta, fit.crowd_eta
    grade_scale, prior_sd, judge_names = fit.grade_scale, fit.prior_sd, sorted(fit.eta)
    link = params.link
    if link == "auto":
        link = "noisy-sorting" if crowd_reverses_at_random(vote_lists, challenge_list) else "bradley-terry"
    if link == "noisy-sorting":
        crowd_eta, eta = challenge_reliabilities(challenge_list, judge_names, params=params)
    counts = {j: [0, 0, 0] for j in judge_names}
    for d in data.values():
        for judge in d.judges:
            counts[judge][0] += 1
    for judge, passed in challenge_list:
        counts[judge][1] += 1
        counts[judge][2] += not passed
    results = {}
    for topic in topics:
        posterior = posteriors[topic]
        rng = topic_rng(seed=seed, topic=topic)
        if link == "noisy-sorting":
            p_top, p_best = _noisy_sorting_probabilities(
                data[topic],
                eta,
                grade_scale * centred[topic] / prior_sd,
                start=posterior,
                prior_sd=prior_sd,
                k=k,
                samples=params.samples,
                rng=rng,
            )
        else:
            p_top, p_best = topk_probabilities(posterior, k=k, samples=params.samples, rng=rng)
        mean = np.round(posterior.mean, SCORE_DECIMALS) + 0.0  # + 0.0: no -0.0 in what users read
        sd = np.round(np.sqrt(np.clip(np.diag(posterior.cov), 0.0, None)), SCORE_DECIMALS)
        order = sorted(range(len(posterior.candidates)), key=lambda n: (-mean[n], posterior.candidates[n]))
        results[topic] = TopicConfidence(
            topic=topic,
            k=k,
            items=tuple(
                ItemConfidence(
                    docid=posterior.candidates[n],
                    score=float(mean[n]),
                    sd=float(sd[n]),
                    p_top_k=float(p_top[n]),
                    p_best=float(p_best[n]),
                )
                for n in order
            ),
        )
    return JudgeModel(
        topics=results,
        judges={
            j: JudgeReliability(
                judge=j,
                eta=eta[j],
                votes=counts[j][0],
                challenges=counts[j][1],
                challenges_failed=counts[j][2],
            )
            for j in judge_names
        },
        crowd_eta=crowd_eta,
        grade_scale=grade_scale,
        prior_sd=prior_sd,
        scores={
            topic: {
                d: round(float(m), SCORE_DECIMALS) + 0.0 for d, m in zip(p.candidates, p.mean, strict=True)
            }
            for topic, p in posteriors.items()
        },
        link=link,
    )


def crowd_reverses_at_random(
    votes: Mapping[str, Iterable[tuple[str, str, str | None, str]]], challenges: Sequence[tuple[str, bool]]
) -> bool:
    """Whether the crowd reverses answers at random, whatever the pair (a reliable crowd included): it is not one
    that ``errs_on_close_pairs``, judged on ``votes`` (topic -> votes; a pair's ties left out) and ``challenges``,
    the test the adaptive mode's switch to the model rounds makes. Without challenge answers there is nothing to
    compare: False."""
    if not challenges:
        return False
    by_pair: dict[tuple[str, str, str], list[int]] = {}
    for topic, topic_votes in votes.items():
        for a, b, winner, _ in topic_votes:
            if winner is None:
                continue
            key = (topic, min(a, b), max(a, b))
            by_pair.setdefault(key, [0, 0])[winner == key[2]] += 1
    repeated = [counts for counts in by_pair.values() if sum(counts) >= 2]
    return not errs_on_close_pairs(
        pair_errors=sum(min(counts) for counts in repeated),
        pair_answers=sum(sum(counts) for counts in repeated),
        challenge_failures=sum(not passed for _, passed in challenges),
        challenge_answers=len(challenges),
    )


def errs_on_close_pairs(
    *, pair_errors: int, pair_answers: int, challenge_failures: int, challenge_answers: int
) -> bool:
    """Whether a crowd errs mostly on close pairs, the noise Bradley-Terry describes: it errs at a rate of at least
    NOISY_RATE and its repeated pairs split (``pair_errors`` minority votes in ``pair_answers`` votes of pairs
    voted more than once) at least ITEM_NOISE_RATIO times as often as it fails its easy challenges, both rates
    with the prior of the adaptive mode's error estimate (PRIOR_ERRORS in PRIOR_ANSWERS). A crowd that reverses
    at random fails its challenges about as often as it splits pairs."""
    challenge_rate = (challenge_failures + PRIOR_ERRORS) / (challenge_answers + PRIOR_ANSWERS)
    pair_rate = (pair_errors + PRIOR_ERRORS) / (pair_answers + PRIOR_ANSWERS)
    return max(pair_rate, challenge_rate) >= NOISY_RATE and pair_rate >= ITEM_NOISE_RATIO * challenge_rate


def splits_beyond_failures(
    *, pair_errors: int, pair_answers: int, challenge_failures: int, challenge_answers: int
) -> bool:
    """Whether repeated pairs split (``pair_errors`` minority votes in ``pair_answers``) more often than challenges
    fail by at least ITEM_NOISE_Z standard errors (a test of two proportions on the counts as observed: the prior
    of ``errs_on_close_pairs``, worth 250 answers, would hide a first wave's 130 or so repeated answers)."""
    split = pair_errors / max(pair_answers, 1)
    failed = challenge_failures / max(challenge_answers, 1)
    se = math.sqrt(
        split * (1 - split) / max(pair_answers, 1) + failed * (1 - failed) / max(challenge_answers, 1)
    )
    return split - failed >= ITEM_NOISE_Z * se


def challenge_reliabilities(
    challenges: Sequence[tuple[str, bool]], judges: Iterable[str], *, params: JudgeModelParams
) -> tuple[float, dict[str, float]]:
    """The crowd's eta and each judge's from challenge answers alone (a challenge is passed with probability
    (1 + eta) / 2): the crowd's pass rate under a Beta prior of ``crowd_prior_weight`` answers at ``eta_prior``, a
    judge's shrunk toward the crowd's with the weight the judges' spread gives (``judge_spread_weight``); a judge
    without challenges gets the crowd's. Within [MIN_ETA, MAX_ETA]."""
    answered: dict[str, list[int]] = {}
    for judge, passed in challenges:
        counts = answered.setdefault(judge, [0, 0])
        counts[0] += 1
        counts[1] += bool(passed)
    total = sum(n for n, _ in answered.values())
    passes = sum(p for _, p in answered.values())
    crowd_weight, judge_weight = params.crowd_prior_weight, judge_spread_weight(answered.values())
    # With neither answers nor a prior weight there is nothing to read: the prior's eta stands (not 0, which
    # would make every vote a coin flip).
    crowd_pass = (
        (passes + crowd_weight * (1 + params.eta_prior) / 2) / (total + crowd_weight)
        if total + crowd_weight > 0
        else (1 + params.eta_prior) / 2
    )
    crowd = float(np.clip(2 * crowd_pass - 1, MIN_ETA, MAX_ETA))
    eta = {}
    for judge in judges:
        n, p = answered.get(judge, (0, 0))
        judge_pass = (
            (p + judge_weight * (1 + crowd) / 2) / max(n + judge_weight, 1e-12) if n else (1 + crowd) / 2
        )
        eta[judge] = float(np.clip(2 * judge_pass - 1, MIN_ETA, MAX_ETA))
    return crowd, eta


def judge_spread_weight(answered: Iterable[Sequence[int]]) -> float:
    """How many challenge answers the crowd's pass rate weighs against a judge's own (the concentration of a Beta
    prior over judges' pass rates, by the method of moments): the judges' pass rates (``answered``: [answers,
    passes] per judge) spread by binomial noise and by their true differences; only the second is kept. Judges
    who differ by no more than chance weigh MAX_SPREAD_WEIGHT answers of the crowd's (the same accuracy for all);
    a shrinkage too weak lets a judge who passed a few more challenges by luck read too sure."""
    counts = [(n, p) for n, p in answered if n]
    if len(counts) < 2:
        return MAX_SPREAD_WEIGHT
    n = np.asarray([c[0] for c in counts], dtype=np.float64)
    rate = np.asarray([c[1] for c in counts], dtype=np.float64) / n
    mean = float(np.sum(rate * n) / np.sum(n))
    chance = mean * (1 - mean) * float(np.mean(1 / n))
    between = float(np.var(rate)) - chance
    if between <= 0 or mean * (1 - mean) == 0:
        return MAX_SPREAD_WEIGHT
    return float(min(MAX_SPREAD_WEIGHT, max(1.0, mean * (1 - mean) / between - 1)))


def _noisy_sorting_probabilities(
    data: _TopicData,
    eta: Mapping[str, float],
    prior_mean: FloatArray,
    *,
    start: TopicPosterior,
    prior_sd: float,
    k: int,
    samples: int,
    rng: np.random.Generator,
) -> tuple[FloatArray, FloatArray]:
    """``(p_top_k, p_best)`` of one topic under the noisy sorting link (``noisy_sorting``): each vote of judge j
    weighs log(q / (1 - q)), q = (1 + eta_j) / 2; a tie weighs nothing. ``prior_mean`` is in units of the prior's
    sd (``prior_sd``). The chains start from draws of the Bradley-Terry posterior ``start``, which orders the
    items about as the votes do."""
    n = len(data.candidates)
    if n <= 1:
        return np.ones(n), np.ones(n)
    decided = data.y != 0.5
    winners = np.where(data.y == 1.0, data.i, data.j)[decided]
    losers = np.where(data.y == 1.0, data.j, data.i)[decided]
    q = np.asarray([(1 + eta[judge]) / 2 for judge in data.judges], dtype=np.float64)[decided]
    evidence = noisy_sorting_evidence(n, winners, losers, np.log(q / (1 - q)))
    root = np.linalg.cholesky(start.cov + np.eye(n) * 1e-12)
    chains = (start.mean + rng.standard_normal((CHAINS, n)) @ root.T) / prior_sd
    draws = noisy_sorting_draws(evidence, prior_mean, samples=samples, rng=rng, start=chains)
    return draws_topk_probabilities(draws, k=k)


@dataclass(frozen=True)
class _ScoreFit:
    """What the alternating maximisation leaves: each topic's posterior and the judges' reliabilities."""

    posteriors: dict[str, TopicPosterior]
    eta: dict[str, float]
    crowd_eta: float
    grade_scale: float
    prior_sd: float


def _fit_scores(
    data: Mapping[str, _TopicData],
    centred: Mapping[str, FloatArray],
    challenge_list: Sequence[tuple[str, bool]],
    *,
    params: JudgeModelParams,
    start: JudgeModel | None,
) -> _ScoreFit:
    """Alternate the topics' Laplace posteriors, the prior (empirical Bayes) and the judges' reliabilities."""
    topics = sorted(data)
    judge_names = sorted({j for d in data.values() for j in d.judges} | {j for j, _ in challenge_list})
    crowd_eta = params.eta_prior if start is None else start.crowd_eta
    eta = {j: crowd_eta if start is None else start.reliability(j) for j in judge_names}
    grade_scale, prior_sd = (
        (params.grade_scale, params.prior_sd) if start is None else (start.grade_scale, start.prior_sd)
    )
    posteriors: dict[str, TopicPosterior] = {}
    for _ in range(params.iterations):
        posteriors = {
            topic: _posterior(
                data[topic],
                np.asarray([eta[j] for j in data[topic].judges], dtype=np.float64),
                grade_scale * centred[topic],
                prior_sd,
            )
            for topic in topics
        }
        if params.estimate_prior:
            grade_scale, prior_sd = _prior_update(posteriors, centred)
        crowd_eta, eta = _reliability_update(data, posteriors, challenge_list, eta, params)

    return _ScoreFit(posteriors, eta, crowd_eta, grade_scale, prior_sd)


def _prior_update(
    posteriors: Mapping[str, TopicPosterior], centred: Mapping[str, FloatArray]
) -> tuple[float, float]:
    """Empirical Bayes for the prior: ``grade_scale`` by least squares of the topic-centred posterior means on the
    centred grades, ``prior_sd`` from the expected squared residual (mean and variance), both kept in a sane
    range so that a topic set without grades or without votes cannot drive them to 0 or infinity."""
    g_all, m_all, v_all = [], [], []
    for topic, posterior in posteriors.items():
        if not len(posterior.mean):
            continue
        g_all.append(centred[topic])
        m_all.append(posterior.mean - posterior.mean.mean())
        v_all.append(np.diag(posterior.cov))
    if not g_all:
        return DEFAULT_JUDGE_MODEL_PARAMS.grade_scale, DEFAULT_JUDGE_MODEL_PARAMS.prior_sd
    g, m, v = np.concatenate(g_all), np.concatenate(m_all), np.concatenate(v_all)
    gg = float(g @ g)
    scale = float(np.clip(g @ m / gg, 0.0, 5.0)) if gg > 0 else 0.0
    sd = math.sqrt(float(np.mean((m - scale * g) ** 2 + v)))
    return scale, float(np.clip(sd, 0.2, 5.0))


def _reliability_update(
    data: Mapping[str, _TopicData],
    posteriors: Mapping[str, TopicPosterior],
    challenges: Sequence[tuple[str, bool]],
    eta: Mapping[str, float],
    params: JudgeModelParams,
) -> tuple[float, dict[str, float]]:
    """The reliabilities that maximise the likelihood of the answers given the scores: an answer the model gives
    probability p (averaged over the posterior) has likelihood 1/2 + eta (p - 1/2); a passed challenge p = 1, a
    failed one p = 0; a tie carries no information. The crowd's eta pools every answer under a Beta prior of
    ``crowd_prior_weight`` answers at ``eta_prior``; a judge's own is shrunk toward the crowd's with a Beta prior
    of ``judge_prior_weight`` answers (the log-likelihood is concave in eta: bisection on its slope)."""
    leans: dict[str, list[float]] = {j: [] for j in eta}
    for topic, d in data.items():
        if not len(d.y):
            continue
        posterior = posteriors[topic]
        # Each answer is scored against the model fitted without it (approximate leave-one-out: one Newton step
        # removing its gradient), since the fit has already bent toward every answer, a random judge's included.
        e_vote = np.asarray([eta[j] for j in d.judges], dtype=np.float64)
        m = posterior.mean[d.i] - posterior.mean[d.j]
        v = posterior.cov[d.i, d.i] + posterior.cov[d.j, d.j] - 2 * posterior.cov[d.i, d.j]
        p = _sigmoid(m)
        q = np.clip(0.5 + e_vote * (p - 0.5), 1e-9, 1 - 1e-9)
        grad = (d.y - q) / (q * (1 - q)) * e_vote * p * (1 - p)
        loo = m - v * grad
        p_loo = _sigmoid(loo)
        for n, judge in enumerate(d.judges):
            if d.y[n] == 0.5:
                continue
            leans[judge].append(float(p_loo[n] - 0.5) if d.y[n] == 1.0 else float(0.5 - p_loo[n]))
    for judge, passed in challenges:
        leans[judge].append(0.5 if passed else -0.5)
    arrays = {j: np.asarray(v, dtype=np.float64) for j, v in leans.items()}
    everything = np.concatenate([np.zeros(0), *arrays.values()])
    crowd = _eta_mode(everything, params.eta_prior, params.crowd_prior_weight)
    return crowd, {j: _eta_mode(v, crowd, params.judge_prior_weight) for j, v in arrays.items()}


def _eta_mode(leans: FloatArray, prior: float, weight: float) -> float:
    """argmax over eta of sum log(1/2 + eta * lean) + weight (prior log eta + (1 - prior) log(1 - eta)), within
    [MIN_ETA, MAX_ETA]."""
    a, b = weight * prior, weight * (1 - prior)
    if not (a or b or np.any(leans)):
        # nothing leans either way and no prior weighs: every eta is as likely, so the prior's stands
        return float(np.clip(prior, MIN_ETA, MAX_ETA))

    def slope(e: float) -> float:
        value = float(np.sum(leans / (0.5 + e * leans)))
        if a:
            value += a / max(e, 1e-12)
        return value - b / (1 - e)

    low, high = MIN_ETA, MAX_ETA
    if slope(high) >= 0:
        return high
    if slope(max(low, 1e-9)) <= 0:
        return low
    for _ in range(40):
        middle = (low + high) / 2
        if slope(middle) > 0:
            low = middle
        else:
            high = middle
    return (low + high) / 2


@one_blas_thread
def fit_item_world(
    log: Iterable[tuple[str, str, str]],
    *,
    candidates: Mapping[str, Sequence[str]],
    grades: Mapping[str, Mapping[str, float]],
    params: JudgeModelParams = DEFAULT_JUDGE_MODEL_PARAMS,
) -> JudgeModel:
    """The judge model fitted to a judgment log (``(topic, winner, loser)`` records, as the released crowd logs
    hold, without worker ids: the log is one judge, ``"log"``) over ``candidates`` plus the items the log judged,
    the NIST ``grades`` as prior. Its ``scores`` and ``crowd_eta`` define an item-score world
    (``oracles.ItemScoreOracle``) that fits the log and whose truth is known. Topics of the log without
    candidates are left out."""
    pools = {topic: set(docids) for topic, docids in candidates.items()}
    votes: dict[str, list[tuple[str, str, str | None, str]]] = {topic: [] for topic in pools}
    for topic, winner, loser in log:
        if topic in pools:
            pools[topic].update((winner, loser))
            votes[topic].append((winner, loser, winner, "log"))
    return fit_judge_model(
        votes, candidates={t: sorted(p) for t, p in pools.items()}, grades=grades, k=1, params=params
    )


def model_round_limit(*, budget_left: int, rounds_done: int, max_rounds: int) -> int:
    """The most judgments the next model round may ask: the budget left spread evenly over the rounds left,
    ceil(``budget_left`` / (``max_rounds`` - ``rounds_done``)); 0 when no budget or no round is left. A round
    that asks fewer leaves the rest to the rounds after it, and the last round may ask all that is left. So
    rounds at this limit never pass the budget nor ``max_rounds`` rounds in all (``rounds_done`` counts every
    earlier round, closure waves included)."""
    rounds_left = max_rounds - rounds_done
    if budget_left <= 0 or rounds_left <= 0:
        return 0
    return -(-budget_left // rounds_left)


def model_round_anchors(topic: TopicConfidence) -> list[str]:
    """The items a topic's doubtful items are compared with in a model round: the current best and the k-th and
    (k+1)-th by posterior mean (the two sides of the top-k boundary), those the topic has."""
    return [topic.items[rank].docid for rank in sorted({0, topic.k - 1, topic.k}) if rank < len(topic.items)]


def vote_variance_share(variance: float, *, p: float) -> float:
    """The share of the posterior variance of a pair's score difference (``variance``) that one more vote removes,
    v I / (1 + v I), I = p (1 - p) the Fisher information of a vote that follows the model, p the probability that
    the first item wins. A pair whose difference is already known closely, a near tie its many votes have pinned
    down as well as a pair the prior settles, has little left to learn from a vote, however close to a coin flip
    it is: in the spirit of the expected information gain by which Chen, Bennett, Collins-Thompson and Horvitz
    ("Pairwise ranking aggregation in a crowdsourced setting", WSDM 2013) choose the next pair. The crowd's
    reliability is left out: it scales every pair's information nearly alike, and a choice that does not hang
    on it stays the same when two fits of the same votes differ slightly in it."""
    information = p * (1 - p)
    return variance * information / (1.0 + variance * information)


def model_round_pairs(
    model: JudgeModel,
    votes: Mapping[str, Mapping[tuple[str, str], int]],
    *,
    max_votes: int,
    confidence: float,
    pairs_per_item: int = 1,
    anchor_pairs: int | None = None,
    best_weight: float = 1.0,
    limit: int | None = None,
) -> dict[str, list[tuple[str, str]]]:
    """The pairs of one round chosen by the judge model: each topic's items still in doubt, each compared with
    one of the topic's anchors (``model_round_anchors``: the current best, the k-th and the (k+1)-th by
    posterior mean), so that every answer bears on rank 1 or on the top-k boundary. An item's doubt is
    p_top_k (1 - p_top_k) + ``best_weight`` p_best (1 - p_best); a pair's value is the sum of its items' doubts
    times (4 p (1 - p)) ** CLOSENESS, p the model's probability that the first wins (a pair the model is sure of
    teaches little), times the share of the pair's variance one vote removes (``vote_variance_share``: a pair
    already pinned down teaches little either), divided by 1 + the votes it already has. The pair's variance is
    the sum of its two items' posterior variances: the variance of their difference without the covariance,
    which is positive within a topic (its scores share an offset), so it overstates what is left to learn about
    a pair voted on many times (a pair split 20-20 among 15 items: 1.06 against 0.12). The rounds were tuned
    with it, and it needs only the per-item figures a stored model keeps. A topic whose every item has max(p_top_k, 1 - p_top_k) >=
    ``confidence`` and whose best has p_best >= ``confidence`` is settled and gets no pair. Pairs are taken by
    value over all topics (ties by topic and pair), an anchor in at most ``anchor_pairs`` pairs (default
    ``pairs_per_item``), any other item in at most ``pairs_per_item``, no pair past ``max_votes`` votes
    (``votes``: topic -> pair ``(a, b)`` with a < b -> votes so far), at most ``limit`` pairs in all. Pairs come
    back as ``(a, b)`` with a < b.

    The design follows the active top-k selection of Heckel, Shah, Ramchandran and Wainwright ("Active ranking
    from pairwise comparisons and when parametric assumptions do not help", Annals of Statistics 2019): spend
    comparisons only on the items whose side of the top-k boundary is still uncertain; it batches them as Yan,
    Luo, Clarke et al. ask of human judges ("Human Preferences as Dueling Bandits", SIGIR 2022, section 4):
    rounds in parallel, repeats per pair limited."""
    options: list[tuple[float, str, tuple[str, str]]] = []
    caps: dict[tuple[str, str], int] = {}
    for topic in sorted(model.topics):
        confidence_of_topic = model.topics[topic]
        items = confidence_of_topic.items
        if len(items) < 2:
            continue
        best = max(item.p_best for item in items)
        if min(max(i.p_top_k, 1 - i.p_top_k) for i in items) >= confidence and best >= confidence:
            continue
        doubt = [i.p_top_k * (1 - i.p_top_k) + best_weight * i.p_best * (1 - i.p_best) for i in items]
        asked = votes.get(topic, {})
        anchors = set(model_round_anchors(confidence_of_topic))
        for docid in anchors:
            caps[(topic, docid)] = pairs_per_item if anchor_pairs is None else anchor_pairs
        for x, a in enumerate(items):
            for y in range(x + 1, len(items)):
                b = items[y]
                if doubt[x] + doubt[y] < 1e-6 or (a.docid not in anchors and b.docid not in anchors):
                    continue
                key = (a.docid, b.docid) if a.docid < b.docid else (b.docid, a.docid)
                if asked.get(key, 0) >= max_votes:
                    continue
                variance = a.sd**2 + b.sd**2
                spread = math.sqrt(1.0 + math.pi * variance / 8.0)
                p = 1.0 / (1.0 + math.exp(-(a.score - b.score) / spread))
                # A pair asked n times before is worth 1/(n+1) of a fresh one: a near tie of the real crowd
                # splits its votes however often it is asked (Yan et al., section 5).
                value = (
                    (doubt[x] + doubt[y])
                    * (4 * p * (1 - p)) ** CLOSENESS
                    * vote_variance_share(variance, p=p)
                    / (1 + asked.get(key, 0))
                )
                options.append((-value, topic, key))
    options.sort()
    used: dict[tuple[str, str], int] = {}
    chosen: dict[str, list[tuple[str, str]]] = {}
    taken = 0
    for value, topic, (first, second) in options:
        if limit is not None and taken >= limit:
            break
        if (
            value > -1e-9
            or used.get((topic, first), 0) >= caps.get((topic, first), pairs_per_item)
            or used.get((topic, second), 0) >= caps.get((topic, second), pairs_per_item)
        ):
            continue
        used[(topic, first)] = used.get((topic, first), 0) + 1
        used[(topic, second)] = used.get((topic, second), 0) + 1
        chosen.setdefault(topic, []).append((first, second))
        taken += 1
    return chosen

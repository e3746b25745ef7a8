"""Whole campaigns with simulated assessors: the crowd pipeline and the dedicated tournament.

The simulator drives the same engine functions as the Django layer, topic by topic, in synchronised
campaign rounds: every active topic posts its round, the pairs of all topics are packed into HITs,
the oracle judges them, and every topic closes its round.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judging.engine.challenges import challenge_pick
from judging.engine.elimination import (
    RankedItem,
    crowd_round_plan,
    preference_values,
    stage1_close,
    stage2_rank,
)
from judging.engine.hits import hit_layout, pack_hits
from judging.engine.oracles import Oracle
from judging.engine.params import DEFAULT_HIT_SHAPE, DEFAULT_PRICING, CrowdParams, HitShape, Pricing
from judging.engine.tournament import Tournament, tournament_judgment_bound


@dataclass(frozen=True)
class RoundRecord:
    """One round of one topic: its stage, pool size, pairs judged and (stage 1) the opponents and
    wins of each candidate and who was culled or reinstated."""

    stage: int
    pool_size: int
    judgments: int
    opponents: dict[str, int] = field(default_factory=dict)
    wins: dict[str, int] = field(default_factory=dict)
    culled: tuple[str, ...] = ()
    reinstated: tuple[str, ...] = ()


@dataclass
class TopicOutcome:
    """The result of judging one topic: ``ranked`` is its top-k (ties at rank k included);
    ``rounds`` its history (stage-1 rounds, then stage 2 when it had one)."""

    topic: str
    pool_size: int
    ranked: list[RankedItem] = field(default_factory=list)
    rounds: list[RoundRecord] = field(default_factory=list)
    judgments: int = 0

    @property
    def stage1_rounds(self) -> int:
        return sum(1 for r in self.rounds if r.stage == 1)

    def judgments_in_stage(self, stage: int) -> int:
        return sum(r.judgments for r in self.rounds if r.stage == stage)

    @property
    def reinstated(self) -> list[str]:
        return [docid for r in self.rounds for docid in r.reinstated]


@dataclass
class SimulationResult:
    """A simulated campaign: per-topic outcomes and campaign totals. ``rounds`` counts campaign
    rounds (synchronised waves: the longest topic's stage-1 rounds plus stage 2); ``hits`` and
    ``cost_usd`` are 0 for a dedicated tournament."""

    mode: str
    k: int
    topics: dict[str, TopicOutcome]
    hits: int = 0
    challenges: int = 0
    challenge_failures: int = 0
    cost_usd: float = 0.0
    rounds: int = 0

    @property
    def judgments(self) -> int:
        return sum(t.judgments for t in self.topics.values())

    def preferences(
        self, graded: Mapping[str, Mapping[str, float]], *, kind: str = "combined"
    ) -> dict[str, dict[str, float]]:
        """The preference qrels of every topic of ``graded`` and of the campaign (see
        ``preference_values``); topics without an outcome keep their grades (``combined``)."""
        topics = sorted(set(graded) | set(self.topics))
        return {
            topic: preference_values(
                graded.get(topic, {}),
                self.topics[topic].ranked if topic in self.topics else [],
                k=self.k,
                kind=kind,
            )
            for topic in topics
        }

    def summary(self) -> dict[str, Any]:
        """Campaign totals as a JSON-serialisable dict (the stdout of ``toppref simulate``)."""
        outcomes = self.topics.values()
        summary: dict[str, Any] = {
            "mode": self.mode,
            "k": self.k,
            "topics": len(self.topics),
            "candidates": sum(t.pool_size for t in outcomes),
            "judgments": self.judgments,
            "hits": self.hits,
            "challenges": self.challenges,
            "challenge_failures": self.challenge_failures,
            "cost_usd": self.cost_usd,
            "rounds": self.rounds,
            "topics_nothing_to_judge": sum(1 for t in outcomes if t.pool_size <= 1),
            "topics_with_ties_at_k": sum(1 for t in outcomes if len(t.ranked) > self.k),
        }
        if self.mode == "crowd":
            summary.update(
                stage1_judgments=sum(t.judgments_in_stage(1) for t in outcomes),
                stage2_judgments=sum(t.judgments_in_stage(2) for t in outcomes),
                stage1_rounds=sum(t.stage1_rounds for t in outcomes),
                topics_straight_to_stage2=sum(
                    1 for t in outcomes if t.pool_size > 1 and t.stage1_rounds == 0
                ),
                reinstatements=sum(len(t.reinstated) for t in outcomes),
                topics_with_reinstatement=sum(1 for t in outcomes if t.reinstated),
            )
        else:
            summary["judgment_bound"] = sum(tournament_judgment_bound(t.pool_size, self.k) for t in outcomes)
        return summary


class _CrowdTopic:
    """One topic moving through the crowd pipeline: thinned -> stage-1 round r -> stage 2 -> done."""

    def __init__(self, topic: str, candidates: Sequence[str], params: CrowdParams) -> None:
        self.outcome = TopicOutcome(topic=topic, pool_size=len(candidates))
        self.candidates = list(candidates)
        self.params = params
        self.forced_stage: int | None = None
        self.plan = None
        self.is_done = len(candidates) <= 1
        if self.is_done:
            self.outcome.ranked = stage2_rank(self.candidates, [], k=params.k)

    def post(self, rng: random.Random) -> list[tuple[str, str]]:
        self.plan = crowd_round_plan(self.candidates, params=self.params, rng=rng, stage=self.forced_stage)
        return self.plan.pairs

    def close(self, outcomes: list[tuple[str, str]]) -> None:
        plan, outcome = self.plan, self.outcome
        outcome.judgments += len(outcomes)
        if plan.stage == 2:
            outcome.ranked = stage2_rank(self.candidates, outcomes, k=self.params.k)
            outcome.rounds.append(
                RoundRecord(stage=2, pool_size=len(self.candidates), judgments=len(outcomes))
            )
            self.is_done = True
            return
        result = stage1_close(
            self.candidates, plan.pairs, outcomes, params=self.params, round_number=outcome.stage1_rounds + 1
        )
        outcome.rounds.append(
            RoundRecord(
                stage=1,
                pool_size=len(self.candidates),
                judgments=len(outcomes),
                opponents=result.opponents,
                wins=result.wins,
                culled=tuple(result.culled),
                reinstated=tuple(result.reinstated),
            )
        )
        self.candidates = result.survivors
        self.forced_stage = 2 if result.next_stage == 2 else None
        if len(self.candidates) <= 1:
            # Without reinstatement a round can leave 0 or 1 items (e.g. strict majority on a balanced round).
            self.outcome.ranked = stage2_rank(self.candidates, [], k=self.params.k)
            self.is_done = True


def simulate_crowd(
    pools: Mapping[str, Sequence[str]],
    oracle: Oracle,
    *,
    params: CrowdParams,
    rng: random.Random,
    hit_shape: HitShape = DEFAULT_HIT_SHAPE,
    pricing: Pricing = DEFAULT_PRICING,
    nonrelevant: Mapping[str, Sequence[str]] | None = None,
) -> SimulationResult:
    """Run the crowd pipeline (paper 000 §4.3) over ``pools`` (topic -> candidate docids) with
    ``oracle`` as the crowd, one judgment per pair.

    Each campaign round: every unfinished topic (in sorted topic order) plans its round
    (``crowd_round_plan``); the pairs of all topics, in that order, are packed into HITs of
    ``hit_shape.preferences`` (``pack_hits``; a round's last HIT may be partial); every HIT gets
    ``hit_shape.challenges`` challenges, each from a random topic of the HIT (``challenge_pick`` over
    that topic's current pool and ``nonrelevant[topic]``; none if it has no non-relevant items) and is
    laid out by ``hit_layout``; the oracle answers every slot (challenges are counted, and failures
    counted, but do not discard HITs here); then every topic closes its round. cost = hits *
    (pay + fee). Reproducible for a given ``rng`` state and a deterministic (or equally seeded) oracle.
    """
    params.validate()
    hit_shape.validate()
    topics = {topic: _CrowdTopic(topic, pools[topic], params) for topic in sorted(pools)}
    result = SimulationResult(mode="crowd", k=params.k, topics={t: s.outcome for t, s in topics.items()})
    nonrelevant = nonrelevant or {}
    while True:
        active = [state for state in topics.values() if not state.is_done]
        if not active:
            break
        result.rounds += 1
        queue = [(state, pair) for state in active for pair in state.post(rng)]
        answers: dict[str, list[tuple[str, str]]] = {state.outcome.topic: [] for state in active}
        for hit in pack_hits(queue, preferences_per_hit=hit_shape.preferences):
            challenges = []
            for _ in range(hit_shape.challenges):
                state = rng.choice(hit)[0]
                pick = challenge_pick(state.candidates, nonrelevant.get(state.outcome.topic, ()), rng)
                if pick is not None:
                    challenges.append((state.outcome.topic, pick))
            slots = hit_layout([pair for _, pair in hit], [pick for _, pick in challenges], rng=rng)
            for slot in slots:
                if slot.is_challenge:
                    topic, (expected, _) = challenges[slot.source_index]
                    result.challenges += 1
                    if oracle.prefer(topic, slot.left, slot.right) != expected:
                        result.challenge_failures += 1
                else:
                    state = hit[slot.source_index][0]
                    winner = oracle.prefer(state.outcome.topic, slot.left, slot.right)
                    loser = slot.right if winner == slot.left else slot.left
                    answers[state.outcome.topic].append((winner, loser))
            result.hits += 1
        for state in active:
            state.close(answers[state.outcome.topic])
    result.cost_usd = pricing.cost(result.hits)
    return result


def simulate_tournament(
    pools: Mapping[str, Sequence[str]], oracle: Oracle, *, k: int, rng: random.Random
) -> SimulationResult:
    """Run a dedicated-assessor tournament (paper 000 §4.2, ``Tournament``) on every pool, topics in
    sorted order, asking ``oracle`` each pair the tournament needs. ``ranked`` lists the placed items
    with ranks 1..min(k, |C|) (no ties) and, as wins, the judgments each won."""
    if k < 1:
        raise ValueError(f"k must be at least 1 (got {k})")
    outcomes = {}
    for topic in sorted(pools):
        tournament = Tournament.start(pools[topic], k=k, rng=rng)
        while (pair := tournament.next_pair()) is not None:
            a, b = pair
            winner = oracle.prefer(topic, a, b)
            tournament.record(winner, b if winner == a else a)
        outcomes[topic] = TopicOutcome(
            topic=topic,
            pool_size=len(pools[topic]),
            ranked=tournament.ranking(),
            judgments=tournament.judgment_count,
        )
    return SimulationResult(mode="tournament", k=k, topics=outcomes, rounds=1 if outcomes else 0)

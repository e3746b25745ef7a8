"""One topic of a crowd campaign as a pure state machine (Clarke, Vtyurina and Smucker, "Assessing top-k
preferences", section 4.3): open a round, close it with the answers to its pairs, until stage 2 ranks the
pool. The pure simulator and the database services both drive these two functions; the database stores
``TopicState`` as rows (active candidates, round number, the last round's ``next_stage``).

    state --topic_round_open--> RoundOpening (pairs to judge, or the final ranking when nothing is left)
    state + pairs' outcomes --topic_round_close--> RoundClosing (next state; the ranking after stage 2)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from judging.engine.elimination import (
    Outcome,
    RankedItem,
    RoundPlan,
    Stage1Result,
    crowd_round_plan,
    stage1_close,
    stage2_rank,
)
from judging.engine.params import CrowdParams
from judging.engine.seeding import round_rng


@dataclass(frozen=True)
class TopicState:
    """Where a topic stands between rounds: its active ``candidates`` in canonical order
    (``seeding.candidate_order``), the number of rounds opened so far, and ``forced_stage`` (2 when the
    last stage-1 round sent the pool to stage 2 whatever its size, else None: the size decides)."""

    topic: str
    candidates: tuple[str, ...]
    rounds: int = 0
    forced_stage: int | None = None


@dataclass(frozen=True)
class RoundOpening:
    """The next round of a topic: round ``number`` with ``plan``; when the plan has no pairs (0 or 1
    candidates) the topic is finished and ``ranked`` holds its final ranking."""

    number: int
    plan: RoundPlan
    ranked: list[RankedItem] | None = None

    @property
    def is_final(self) -> bool:
        return self.ranked is not None


@dataclass(frozen=True)
class RoundClosing:
    """A closed round: the topic's ``state`` after it, ``stage1`` (culling and reinstatement) for a
    stage-1 round, ``wins`` per candidate for a stage-2 round and ``ranked``, the final top-k, once
    stage 2 is closed."""

    state: TopicState
    stage1: Stage1Result | None = None
    wins: dict[str, int] = field(default_factory=dict)
    ranked: list[RankedItem] | None = None


def topic_round_open(state: TopicState, *, params: CrowdParams, seed: int) -> RoundOpening:
    """Plan round ``state.rounds + 1`` with the round's own random source (``seeding.round_rng``), so
    the pairs depend on (seed, topic, round) only. A pool of 0 or 1 candidates has nothing to judge: the
    opening is final and ranks the pool (``stage2_rank`` with no judgments)."""
    number = state.rounds + 1
    candidates = list(state.candidates)
    plan = crowd_round_plan(
        candidates,
        params=params,
        rng=round_rng(seed=seed, topic_id=state.topic, number=number),
        stage=state.forced_stage,
    )
    if not plan.pairs:
        return RoundOpening(number=number, plan=plan, ranked=stage2_rank(candidates, [], k=params.k))
    return RoundOpening(number=number, plan=plan)


def topic_round_close(
    state: TopicState,
    *,
    number: int,
    plan: RoundPlan,
    outcomes: Sequence[Outcome],
    params: CrowdParams,
) -> RoundClosing:
    """Close round ``number`` of ``plan`` with one ``(winner, loser)`` per pair. Stage 1 culls and
    reinstates (``stage1_close``) and returns the next state; stage 2 ranks the pool (``stage2_rank``)
    and the topic is finished (``ranked`` set). Raises ``ValueError`` when outcomes do not match the
    pairs."""
    candidates = list(state.candidates)
    if plan.stage == 2:
        wins = Counter(winner for winner, _ in outcomes)
        ranked = stage2_rank(candidates, outcomes, k=params.k)
        return RoundClosing(
            state=TopicState(topic=state.topic, candidates=state.candidates, rounds=number, forced_stage=2),
            wins={docid: wins[docid] for docid in candidates},
            ranked=ranked,
        )
    result = stage1_close(candidates, plan.pairs, outcomes, params=params, round_number=number)
    return RoundClosing(
        state=TopicState(
            topic=state.topic,
            candidates=tuple(result.survivors),
            rounds=number,
            forced_stage=2 if result.next_stage == 2 else None,
        ),
        stage1=result,
    )

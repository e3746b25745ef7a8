"""Crowd elimination (Clarke, Vtyurina and Smucker, "Assessing top-k preferences",
section 4.3): stage-1 rounds that cull the pool, then an all-pairs stage 2."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from judging.engine.pairing import pairing_graph
from judging.engine.params import CrowdParams

Pair = tuple[str, str]
Outcome = tuple[str, str]  # (winner, loser)


@dataclass(frozen=True)
class RoundPlan:
    """The pairs to judge in one round: ``stage`` 1 (a pairing graph) or 2 (all pairs)."""

    stage: int
    pairs: list[Pair]


@dataclass(frozen=True)
class Stage1Result:
    """The close of a stage-1 round.

    ``survivors`` (in input order) go on; ``culled`` are out; ``reinstated`` lists the culled
    candidates brought back because fewer than k survived (they are included in ``survivors`` and not
    in ``culled``). ``wins``/``opponents`` count this round only. ``next_stage`` is 1 if another
    stage-1 round follows, 2 if the survivors go to stage 2 (at most F left, the round cap reached, or
    the round removed nothing).
    """

    survivors: list[str]
    culled: list[str]
    reinstated: list[str]
    wins: dict[str, int]
    opponents: dict[str, int]
    next_stage: int


@dataclass(frozen=True)
class RankedItem:
    """One item of a stage-2 ranking: competition rank (1 = best) and its stage-2 wins."""

    docid: str
    rank: int
    wins: int


@dataclass(frozen=True)
class _Tally:
    wins: dict[str, int] = field(default_factory=dict)
    opponents: dict[str, int] = field(default_factory=dict)


def crowd_round_plan(
    candidates: Sequence[str], *, params: CrowdParams, rng: random.Random, stage: int | None = None
) -> RoundPlan:
    """Plan the next round of a topic ("Assessing top-k preferences", section 4.3).

    With ``stage=None`` the size decides: stage 1 (a ``pairing_graph`` with P or P+1 opponents each)
    while |C| > F, else stage 2 (every pair once, in ``candidates`` order). ``stage=2`` forces stage 2,
    as ``Stage1Result.next_stage`` asks after the round cap or a round that removed nothing;
    ``stage=1`` on a pool of at most F raises ``ValueError``. Pools of 0 or 1 candidates give a
    stage-2 plan with no pairs (nothing to judge).
    """
    params.validate(len(candidates))
    if len(set(candidates)) != len(candidates):
        raise ValueError("candidates must be distinct")
    if stage not in (None, 1, 2):
        raise ValueError(f"stage must be 1 or 2 (got {stage})")
    if stage is None:
        stage = 1 if len(candidates) > params.F else 2
    if stage == 1:
        if len(candidates) <= params.F:
            raise ValueError(f"stage 1 needs more than F={params.F} candidates (got {len(candidates)})")
        return RoundPlan(stage=1, pairs=pairing_graph(candidates, params.P, rng))
    return RoundPlan(stage=2, pairs=list(itertools.combinations(candidates, 2)))


def stage1_close(
    candidates: Sequence[str],
    pairs: Sequence[Pair],
    outcomes: Iterable[Outcome],
    *,
    params: CrowdParams,
    round_number: int = 1,
) -> Stage1Result:
    """Close a stage-1 round: count wins, cull, reinstate ("Assessing top-k preferences",
    section 4.3; docs/decisions.md "Culling rule", "Reinstatement and round cap").

    ``outcomes`` holds one ``(winner, loser)`` per pair of the round (either orientation of the pair);
    a missing, repeated or foreign outcome raises ``ValueError``. A candidate with w wins out of n
    opponents is culled iff 2w < n (``culling="half"``) or 2w <= n (``"strict_majority"``). If fewer
    than k would survive and ``params.reinstate`` is set, culled candidates come back best win ratio
    w/n first, a whole tie group at a time, until at least k survive. ``round_number`` (1-based) is this round's number, compared with
    ``params.max_rounds``.
    """
    tally = _tally(candidates, pairs, outcomes)
    strict = params.culling == "strict_majority"

    def is_culled(docid: str) -> bool:
        wins, opponents = tally.wins[docid], tally.opponents[docid]
        return 2 * wins <= opponents if strict and opponents else 2 * wins < opponents

    survivors = [c for c in candidates if not is_culled(c)]
    culled = [c for c in candidates if is_culled(c)]
    reinstated: list[str] = []
    if params.reinstate and len(survivors) < params.k and culled:
        ratio = {c: Fraction(tally.wins[c], tally.opponents[c]) for c in culled}
        for _, group in itertools.groupby(sorted(culled, key=lambda c: -ratio[c]), key=lambda c: ratio[c]):
            reinstated.extend(group)
            if len(survivors) + len(reinstated) >= params.k:
                break
        back = set(reinstated)
        survivors = [c for c in candidates if c in back or not is_culled(c)]
        culled = [c for c in culled if c not in back]
        reinstated = [c for c in candidates if c in back]
    made_no_progress = not culled
    next_stage = (
        2 if len(survivors) <= params.F or round_number >= params.max_rounds or made_no_progress else 1
    )
    return Stage1Result(
        survivors=survivors,
        culled=culled,
        reinstated=reinstated,
        wins=tally.wins,
        opponents=tally.opponents,
        next_stage=next_stage,
    )


def stage2_rank(candidates: Sequence[str], outcomes: Iterable[Outcome], *, k: int) -> list[RankedItem]:
    """Rank a stage-2 pool ("Assessing top-k preferences", section 4.3; docs/decisions.md "Stage-2 ranking and
    ties").

    ``outcomes`` holds one ``(winner, loser)`` for every pair of ``candidates`` (missing, repeated or
    foreign outcomes raise ``ValueError``); only these stage-2 judgments count. Score = stage-2 wins;
    competition ranking: rank = 1 + number of candidates with more wins. Returns the items with
    rank <= k, best first (ties by docid), so every item tied at rank k is kept and the list may be
    longer than k; it is shorter than k only when the pool is. Intransitive judgments produce ties
    anywhere. A pool of one item ranks it first with 0 wins; an empty pool gives [].
    """
    if k < 1:
        raise ValueError(f"k must be at least 1 (got {k})")
    tally = _tally(candidates, list(itertools.combinations(candidates, 2)), outcomes)
    ordered = sorted(candidates, key=lambda c: (-tally.wins[c], c))
    ranked = []
    for docid in ordered:
        rank = 1 + sum(1 for other in candidates if tally.wins[other] > tally.wins[docid])
        if rank > k:
            break
        ranked.append(RankedItem(docid=docid, rank=rank, wins=tally.wins[docid]))
    return ranked


def preference_values(
    graded: Mapping[str, float], ranked: Sequence[RankedItem], *, k: int, kind: str = "combined"
) -> dict[str, float]:
    """One topic's preference qrels from its grades and its top-k ("Assessing top-k preferences",
    sections 3 and 5; docs/decisions.md "Stage-2 ranking and ties"). Only the order of values matters to
    the measures (the paper's Appendix A); values <= 0 are L_0.

    - ``"combined"``: an item at rank r <= k gets 10*(k+1-r) (ranks 1..5 -> 50, 40, 30, 20, 10 with
      ties sharing a value, e.g. 31_1 -> 50, 50, 30, 30, 10, exactly as the released TREC-CAsT-2019
      file), which is above every grade when grades are below 10; with larger grades it gets
      max_grade + k + 1 - r. Every other item keeps its grade (0 included).
    - ``"top_k"``: rank r <= k gets k+1-r; every other graded item 0.
    - ``"best"``: rank 1 gets 1 (several if tied at rank 1); every other graded item 0.

    Ranked items missing from ``graded`` are included all the same. Items with rank > k are treated as
    not in the top-k.
    """
    if kind not in ("combined", "top_k", "best"):
        raise ValueError(f"kind must be combined, top_k or best (got {kind!r})")
    top = [item for item in ranked if item.rank <= k]
    if kind == "combined":
        values = {docid: float(grade) for docid, grade in graded.items()}
        max_grade = max(graded.values(), default=0)
        for item in top:
            level = k + 1 - item.rank
            values[item.docid] = float(10 * level if max_grade < 10 else max_grade + level)
        return values
    values = {docid: 0.0 for docid in graded}
    for item in top:
        if kind == "top_k":
            values[item.docid] = float(k + 1 - item.rank)
        elif item.rank == 1:
            values[item.docid] = 1.0
    return values


def _tally(candidates: Sequence[str], pairs: Sequence[Pair], outcomes: Iterable[Outcome]) -> _Tally:
    """Wins and opponents per candidate, requiring exactly one outcome per pair."""
    members = set(candidates)
    if len(members) != len(candidates):
        raise ValueError("candidates must be distinct")
    for a, b in pairs:
        if a not in members or b not in members or a == b:
            raise ValueError(f"pair ({a}, {b}) is not between two candidates of the round")
    expected = {frozenset(pair) for pair in pairs}
    seen: set[frozenset[str]] = set()
    tally = _Tally(wins={c: 0 for c in candidates}, opponents={c: 0 for c in candidates})
    for winner, loser in outcomes:
        key = frozenset((winner, loser))
        if key not in expected:
            raise ValueError(f"outcome ({winner}, {loser}) is not a pair of this round")
        if key in seen:
            raise ValueError(f"pair ({winner}, {loser}) has more than one outcome")
        seen.add(key)
        tally.wins[winner] += 1
        tally.opponents[winner] += 1
        tally.opponents[loser] += 1
    if len(seen) != len(expected):
        missing = sorted(tuple(sorted(p)) for p in expected - seen)
        raise ValueError(f"{len(missing)} pairs of the round have no outcome, e.g. {missing[0]}")
    return tally

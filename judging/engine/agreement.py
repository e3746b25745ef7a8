"""How close a campaign's top-k came to an oracle's: the one scoring function of ``toppref simulate``
(``oracle_same_best``, ``oracle_top_k_recall``), ``benchmarks/pipeline.py`` (``same_best``, ``top5_recall``) and
the tests, for simulated and stored campaigns alike.

The oracle's top-k is taken within each topic's candidate pool, the thinned pool the campaign judged
("Assessing top-k preferences", section 4.1): an item thinning left out cannot be found by any judging, so it
is not counted as missed. (benchmarks/pipeline.py used to take it among every item the oracle has a value for,
which counted the CAsT campaign's top-5 recall as 0.9769 where ``toppref simulate``, on the same campaign, said
0.9883; docs/decisions.md "One top-k score against an oracle".)"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judging.engine.elimination import RankedItem
from judging.engine.oracles import PerfectOracle


@dataclass(frozen=True)
class OracleAgreement:
    """``same_best``: topics whose first item is the oracle's best; ``found`` of ``wanted``: the oracle's
    top-k items (per topic, at most k) that are in the campaign's top-k (ties at rank k included). The
    ``_at_k`` forms hold the campaign's top-k to k items: its ties at rank k broken at random, in expectation
    (``expected_found``), so that a top-k which keeps more than k items gets no credit for the extra ones.

    The ``_tie_aware`` forms count an item as right when it shares the right item's oracle value: where the
    oracle ties two items, its own docid tie-break is no truth a judge could find (on CAsT 2019, 61 questions
    have their best tied with the second)."""

    topics: int
    same_best: int
    found: int
    wanted: int
    same_best_tie_aware: int = 0
    found_tie_aware: int = 0
    found_at_k: float = 0.0
    found_tie_aware_at_k: float = 0.0

    @property
    def recall(self) -> float | None:
        return self.found / self.wanted if self.wanted else None

    @property
    def recall_tie_aware(self) -> float | None:
        return self.found_tie_aware / self.wanted if self.wanted else None

    @property
    def recall_at_k(self) -> float | None:
        return self.found_at_k / self.wanted if self.wanted else None

    @property
    def recall_tie_aware_at_k(self) -> float | None:
        return self.found_tie_aware_at_k / self.wanted if self.wanted else None


def top_k_agreement(
    ranked: Mapping[str, Sequence[RankedItem]],
    pools: Mapping[str, Sequence[str]],
    oracle: PerfectOracle,
    *,
    k: int,
) -> OracleAgreement:
    """Score a campaign's top-k (``ranked``: per topic, best first) against ``oracle`` over every topic of
    ``pools`` (its candidate pool; a topic without a ranking found nothing)."""
    same_best = same_best_tied = found = found_tied = wanted = 0
    found_at_k = found_tied_at_k = 0.0
    for topic, pool in pools.items():
        truth = oracle.ranking(topic, pool)[:k]
        items = [item for item in ranked.get(topic, ()) if item.rank <= k]
        got = [item.docid for item in items]
        values = oracle.values.get(topic, {})
        if got and truth:
            same_best += got[0] == truth[0]
            same_best_tied += values.get(got[0], 0.0) == values.get(truth[0], 0.0)
        found += len(set(truth) & set(got))
        shared = Counter(values.get(d, 0.0) for d in truth) & Counter(values.get(d, 0.0) for d in got)
        found_tied += min(len(truth), sum(shared.values()))
        found_at_k += expected_found(items, k=k, wanted=Counter(truth), key=lambda docid: docid)
        found_tied_at_k += expected_found(
            items, k=k, wanted=Counter(values.get(d, 0.0) for d in truth), key=lambda d: values.get(d, 0.0)
        )
        wanted += len(truth)
    return OracleAgreement(
        topics=len(pools),
        same_best=same_best,
        found=found,
        wanted=wanted,
        same_best_tie_aware=same_best_tied,
        found_tie_aware=found_tied,
        found_at_k=found_at_k,
        found_tie_aware_at_k=found_tied_at_k,
    )


def expected_found(
    items: Sequence[RankedItem], *, k: int, wanted: Counter[Any], key: Callable[[str], Any]
) -> float:
    """How many of ``wanted`` (a multiset of keys: docids, or oracle values for the tie-aware form) a top-k
    ``items`` (every item ranked at most k) holds, expected over breaking its ties at rank k at random down to
    k items. A top-k that keeps ties at rank k (the paper's stage 2 keeps them, "Assessing top-k preferences",
    section 4.3, and a topic cut at a budget may tie many) gets no credit for the items beyond k: without this a
    topic left unjudged, every candidate tied at rank 1, would find its whole true top-k. Each key's count is
    hypergeometric: of the n tied items, m are kept."""
    sure_items, tied_items = split_at_k(items, k)
    above = Counter(key(docid) for docid in sure_items)
    if not tied_items:
        return float(sum((above & wanted).values()))
    tied = Counter(key(docid) for docid in tied_items)
    n = len(tied_items)
    m = k - len(sure_items)
    total = 0.0
    for value, want in wanted.items():
        sure, pool = above.get(value, 0), tied.get(value, 0)
        if not pool:
            total += min(want, sure)
            continue
        for drawn in range(max(0, m - (n - pool)), min(m, pool) + 1):
            chance = math.comb(pool, drawn) * math.comb(n - pool, m - drawn) / math.comb(n, m)
            total += chance * min(want, sure + drawn)
    return total


def split_at_k(items: Sequence[RankedItem], k: int) -> tuple[list[str], list[str]]:
    """A top-k (competition ranks) as the docids it surely keeps when held to k items and those tied for the
    places left: ``([every item ranked at most k], [])`` when there are at most k, else the items above the
    last rank and the items at it (sorted), of which k - len(first) are kept."""
    top = [item for item in items if item.rank <= k]
    if len(top) <= k:
        return [item.docid for item in top], []
    last = max(item.rank for item in top)
    return [item.docid for item in top if item.rank < last], sorted(
        item.docid for item in top if item.rank == last
    )


def held_to_k(items: Sequence[RankedItem], k: int, rng: random.Random) -> set[str]:
    """The docids of a top-k held to k items, its ties at rank k broken by ``rng``: one draw of what
    ``expected_found`` averages over."""
    sure, tied = split_at_k(items, k)
    return set(sure) | set(rng.sample(tied, k - len(sure))) if tied else set(sure)


def majority_error(reversal: float, votes: int) -> float:
    """The probability that the majority of ``votes`` independent answers, each reversed with probability
    ``reversal``, picks the wrong item of a pair (an even split counting as half wrong)."""
    wrong = 0.0
    for reversed_answers in range(votes + 1):
        p = (
            math.comb(votes, reversed_answers)
            * reversal**reversed_answers
            * (1 - reversal) ** (votes - reversed_answers)
        )
        if 2 * reversed_answers > votes:
            wrong += p
        elif 2 * reversed_answers == votes:
            wrong += p / 2
    return wrong


def best_first_ceiling(
    pools: Mapping[str, Sequence[str]],
    oracle: PerfectOracle,
    reversal: Callable[[str, str, str], float],
    *,
    max_votes: int,
) -> float:
    """The expected number of topics whose best item a method can put first, tie-aware, when a pair gets at
    most ``max_votes`` answers and ``reversal(topic, a, b)`` is the probability that one answer reverses the
    oracle's order.

    Where a topic's best item is unique, its runner-up (the oracle's second item) is the item next to it in
    the oracle's order. When reversals do not depend on the items (``--error-rate``), swapping the two changes
    the likelihood of no answer but those to their own pair, so no other pair says which of them is better:
    a method that treats the two alike puts the best first at most as often as the majority of ``max_votes``
    answers to that pair is right (fewer answers do worse). The ceiling is the number of topics less that
    majority's error over the topics with a unique best; with 10% reversals and ``max_votes`` 5 a majority is
    wrong 0.86% of the time. For reversals that depend on the levels (``--discriminability``,
    ``--noise-from``) other pairs carry some evidence and the figure is no bound."""
    ceiling = 0.0
    for topic, pool in pools.items():
        truth = oracle.ranking(topic, pool)
        if not truth:
            continue
        ceiling += 1
        values = oracle.values.get(topic, {})
        if len(truth) > 1 and values.get(truth[0], 0.0) != values.get(truth[1], 0.0):
            ceiling -= majority_error(reversal(topic, truth[0], truth[1]), max_votes)
    return ceiling


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Cohen's kappa of two raters' labels of the same items (Cohen, "A coefficient of agreement for nominal
    scales", 1960): (p_o - p_e) / (1 - p_e), with p_o the share of items labelled alike and p_e the share
    expected by chance from each rater's own label frequencies. ``a`` and ``b`` are equally long; None for
    no items, 1.0 when chance agreement is already certain and the raters agree on every item (0.0 if not)."""
    if len(a) != len(b):
        raise ValueError(f"cohen_kappa: {len(a)} labels against {len(b)}")
    if not a:
        return None
    n = len(a)
    observed = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    labels = set(a) | set(b)
    expected = sum(
        (sum(1 for x in a if x == label) / n) * (sum(1 for y in b if y == label) / n) for label in labels
    )
    if expected >= 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return (observed - expected) / (1.0 - expected)

"""How close a campaign's top-k came to an oracle's: the one scoring function of ``toppref simulate``
(``oracle_same_best``, ``oracle_top_k_recall``), ``benchmarks/pipeline.py`` (``same_best``, ``top5_recall``) and
the tests, for simulated and stored campaigns alike.

The oracle's top-k is taken within each topic's candidate pool, the thinned pool the campaign judged
("Assessing top-k preferences", section 4.1): an item thinning left out cannot be found by any judging, so it
is not counted as missed. (benchmarks/pipeline.py used to take it among every item the oracle has a value for,
which counted the CAsT campaign's top-5 recall as 0.9769 where ``toppref simulate``, on the same campaign, said
0.9883; docs/decisions.md "One top-k score against an oracle".)"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from judging.engine.elimination import RankedItem
from judging.engine.oracles import PerfectOracle


@dataclass(frozen=True)
class OracleAgreement:
    """``same_best``: topics whose first item is the oracle's best; ``found`` of ``wanted``: the oracle's
    top-k items (per topic, at most k) that are in the campaign's top-k (ties at rank k included).

    The ``_tie_aware`` forms count an item as right when it shares the right item's oracle value: where the
    oracle ties two items, its own docid tie-break is no truth a judge could find (on CAsT 2019, 61 questions
    have their best tied with the second)."""

    topics: int
    same_best: int
    found: int
    wanted: int
    same_best_tie_aware: int = 0
    found_tie_aware: int = 0

    @property
    def recall(self) -> float | None:
        return self.found / self.wanted if self.wanted else None

    @property
    def recall_tie_aware(self) -> float | None:
        return self.found_tie_aware / self.wanted if self.wanted else None


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
    for topic, pool in pools.items():
        truth = oracle.ranking(topic, pool)[:k]
        got = [item.docid for item in ranked.get(topic, ()) if item.rank <= k]
        values = oracle.values.get(topic, {})
        if got and truth:
            same_best += got[0] == truth[0]
            same_best_tied += values.get(got[0], 0.0) == values.get(truth[0], 0.0)
        found += len(set(truth) & set(got))
        shared = Counter(values.get(d, 0.0) for d in truth) & Counter(values.get(d, 0.0) for d in got)
        found_tied += min(len(truth), sum(shared.values()))
        wanted += len(truth)
    return OracleAgreement(
        topics=len(pools),
        same_best=same_best,
        found=found,
        wanted=wanted,
        same_best_tie_aware=same_best_tied,
        found_tie_aware=found_tied,
    )

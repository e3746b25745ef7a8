"""How close a campaign's top-k came to an oracle's: the one scoring function of ``toppref simulate``
(``oracle_same_best``, ``oracle_top_k_recall``), ``benchmarks/pipeline.py`` (``same_best``, ``top5_recall``) and
the tests, for simulated and stored campaigns alike.

The oracle's top-k is taken within each topic's candidate pool, the thinned pool the campaign judged
("Assessing top-k preferences", section 4.1): an item thinning left out cannot be found by any judging, so it
is not counted as missed. (benchmarks/pipeline.py used to take it among every item the oracle has a value for,
which counted the CAsT campaign's top-5 recall as 0.9769 where ``toppref simulate``, on the same campaign, said
0.9883; docs/decisions.md "One top-k score against an oracle".)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from judging.engine.elimination import RankedItem
from judging.engine.oracles import PerfectOracle


@dataclass(frozen=True)
class OracleAgreement:
    """``same_best``: topics whose first item is the oracle's best; ``found`` of ``wanted``: the oracle's
    top-k items (per topic, at most k) that are in the campaign's top-k (ties at rank k included)."""

    topics: int
    same_best: int
    found: int
    wanted: int

    @property
    def recall(self) -> float | None:
        return self.found / self.wanted if self.wanted else None


def top_k_agreement(
    ranked: Mapping[str, Sequence[RankedItem]],
    pools: Mapping[str, Sequence[str]],
    oracle: PerfectOracle,
    *,
    k: int,
) -> OracleAgreement:
    """Score a campaign's top-k (``ranked``: per topic, best first) against ``oracle`` over every topic of
    ``pools`` (its candidate pool; a topic without a ranking found nothing)."""
    same_best = found = wanted = 0
    for topic, pool in pools.items():
        truth = oracle.ranking(topic, pool)[:k]
        items = [item for item in ranked.get(topic, ()) if item.rank <= k]
        same_best += bool(items) and bool(truth) and items[0].docid == truth[0]
        found += len(set(truth) & {item.docid for item in items})
        wanted += len(truth)
    return OracleAgreement(topics=len(pools), same_best=same_best, found=found, wanted=wanted)

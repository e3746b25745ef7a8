"""Which pairs a hybrid campaign sends to people once a model has answered them all: the pairs that decide the
top of each topic's ranking first, whatever the model said.

Why not only the model's ties: on TREC DL 2021's human-judged pairs (the data of Arabzadeh and Clarke,
"Benchmarking LLM-based Relevance Judgment Methods"), sending people only the pairs GPT-4o left
position-inconsistent spends 40% of the human votes and leaves the run ranking where the model alone puts it
(Kendall's tau against the human-only ranking 0.917, the model alone 0.918): the model's ties are pairs people
split on as well. Compatibility weighs the top of the ideal ranking most (it is rank-biased overlap with the
ideal ranking, Webber, Moffat and Zobel 2010), so the pairs whose answer moves an item near the top are the
ones worth a person; ``benchmarks/llm_judges.py`` measures both rules (docs/decisions.md, "Routing pairs from
a model to people").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping

from judging.engine.judge_agreement import PairKey


def provisional_ranks(answers: Mapping[PairKey, str | None]) -> dict[tuple[str, str], int]:
    """Each item's competition rank (1 = most wins; equal wins share the better rank) within its topic, by the
    model's decisive answers; every item of a pair in ``answers`` is ranked, a tie or a missing answer (None)
    giving neither item a win. A winner that is neither item of its pair is a ``ValueError``."""
    wins: Counter[tuple[str, str]] = Counter()
    items: dict[str, set[str]] = defaultdict(set)
    for (topic, x, y), winner in answers.items():
        if winner not in (None, x, y):
            raise ValueError(f"topic {topic}: winner {winner} is neither {x} nor {y}")
        items[topic].update((x, y))
        if winner is not None:
            wins[(topic, winner)] += 1
    ranks = {}
    for topic, docids in items.items():
        counts = sorted((wins[(topic, d)] for d in docids), reverse=True)
        first_rank: dict[int, int] = {}
        for position, count in enumerate(counts, start=1):
            first_rank.setdefault(count, position)
        for docid in docids:
            ranks[(topic, docid)] = first_rank[wins[(topic, docid)]]
    return ranks


def routing_order(answers: Mapping[PairKey, str | None]) -> list[PairKey]:
    """Every pair of ``answers`` (the model's winner per pair, ``None`` for a tie or no answer), most worth a
    person first: by the deeper of its two items' provisional ranks (``provisional_ranks``), then the
    shallower, then the pairs the model did not decide before those it did, then topic and docids (so the
    order is total and the same on every run). A pair both of whose items the model puts near the top of
    its topic comes before any pair reaching deeper, decided or not."""
    ranks = provisional_ranks(answers)

    def priority(key: PairKey) -> tuple[int, int, bool, str, str, str]:
        topic, x, y = key
        shallow, deep = sorted((ranks[(topic, x)], ranks[(topic, y)]))
        return (deep, shallow, answers[key] is not None, topic, x, y)

    return sorted(answers, key=priority)


def route_to_people(
    answers: Mapping[PairKey, str | None],
    *,
    budget: float,
    cost: Callable[[PairKey], float] = lambda key: 1.0,
) -> list[PairKey]:
    """The pairs to send to people: the longest prefix of ``routing_order`` whose summed ``cost`` (the
    person-votes a pair takes; 1 by default) stays within ``budget``. Pairs after the first that does not fit
    stay with the model, so a larger budget only ever adds pairs."""
    if budget < 0:
        raise ValueError(f"budget must be non-negative (got {budget})")
    routed: list[PairKey] = []
    spent = 0.0
    for key in routing_order(answers):
        spent += cost(key)
        if spent > budget:
            break
        routed.append(key)
    return routed

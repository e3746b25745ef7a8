"""Thinning the herd: from graded judgments to the candidate pool C that preference judging starts from
(Clarke, Vtyurina and Smucker, "Assessing top-k preferences", section 4.1 and section 7). Pure Python."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

SCHEMES = ("graded", "abc")
# Grades at or above this are A ("answers the question") under the "abc" scheme. 2 fits both a native
# three-grade file coded A=2, B=1, C=0 and the CAsT guidelines, whose grades 2-4 all "answer the turn".
DEFAULT_ANSWER_GRADE = 2.0


def thin_pool(
    grades: Mapping[str, float],
    k: int,
    *,
    scheme: str = "graded",
    answer_grade: float = DEFAULT_ANSWER_GRADE,
) -> dict[str, float]:
    """The candidate pool of one topic: ``{docid: grade}`` for the items kept, from ``{docid: grade}``.

    ``scheme="graded"`` (section 4.1): with 𝒢_g, ..., 𝒢_1 the sets of items of each distinct positive grade,
    highest first, ``C ← ∅; for i = g..1: if |C| >= k: stop; C ← C ∪ 𝒢_i``. A whole grade is added at once,
    so |C| may end far above k (CAsT turn 67_8 gets 112 items for k = 5); if the positive grades run out,
    |C| may stay below k. Grades need not be integers or contiguous: only their order matters.

    ``scheme="abc"`` (section 7, the suggested three-grade first pass): A = items with grade >=
    ``answer_grade`` ("answers the question"), B = the other items with a positive grade ("provides related
    information"). C is A, plus all of B when |A| < k. This is the same loop with g = 2.

    An item with grade <= 0 is never a candidate; ``k <= 0`` gives an empty pool. The returned dict keeps the
    items' original grades, in the input's order."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown thinning scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    levels: dict[str, float]
    if scheme == "abc":
        levels = {docid: (2 if grade >= answer_grade else 1) for docid, grade in grades.items() if grade > 0}
    else:
        levels = {docid: grade for docid, grade in grades.items() if grade > 0}
    level_sizes = Counter(levels.values())
    kept_levels: set[float] = set()
    size = 0
    for level in sorted(level_sizes, reverse=True):
        if size >= k:
            break
        kept_levels.add(level)
        size += level_sizes[level]
    return {docid: grades[docid] for docid, level in levels.items() if level in kept_levels}


def thin_qrels(
    qrels: Mapping[str, Mapping[str, float]],
    k: int,
    *,
    scheme: str = "graded",
    answer_grade: float = DEFAULT_ANSWER_GRADE,
) -> dict[str, dict[str, float]]:
    """:func:`thin_pool` for every topic of ``{topic_id: {docid: grade}}``. A topic with no candidate (no
    positive grade) is left out of the result."""
    pools = {
        topic_id: thin_pool(grades, k, scheme=scheme, answer_grade=answer_grade)
        for topic_id, grades in qrels.items()
    }
    return {topic_id: pool for topic_id, pool in pools.items() if pool}

"""Preference precision measures ppref and wpref (Carterette, Bennett, Chickering and Dumais, "Here or
there: preference judgments for relevance", ECIR 2008, section 4): per-topic scores of one ranking against
the item preferences implied by a topic's judgment values.

The preferences are inferred from the judgment values, as the paper does for its Table 5: item ``i`` is
preferred to item ``j`` when both are judged and ``level(i) > level(j)``, where a value <= 0 is level 0
(the same levels as compatibility's ideal ranking; judged items at level 0 still lose to every
positive one). Unjudged items take part in no preference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from metrics.core.lexiprecision import document_positions
from metrics.core.ranking import NOT_RETRIEVED, Alignment


def _check_depth(depth: int | None) -> None:
    if depth is not None and depth < 1:
        raise ValueError(f"depth must be a positive integer or None, not {depth}")


def _levels_and_ranks(
    ranking: Sequence[str], values: Mapping[str, float], depth: int | None
) -> tuple[np.ndarray, np.ndarray, int]:
    _check_depth(depth)
    ranking = list(ranking[:depth] if depth is not None else ranking)
    docids = list(values)
    return (
        document_positions(ranking, docids),
        np.array([values[d] for d in docids], dtype=np.float64),
        len(ranking),
    )


def _pairs(ranks: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``preferred[i, j]``: item i preferred to item j; ``considered``: those pairs with an item ranked."""
    levels = np.maximum(np.asarray(values, dtype=np.float64), 0.0)
    is_ranked = np.isfinite(ranks)
    preferred = levels[:, None] > levels[None, :]
    return preferred, preferred & (is_ranked[:, None] | is_ranked[None, :])


def ppref_of_ranks(ranks: np.ndarray, values: np.ndarray) -> float:
    """ppref of one topic from its judged items (rule and edge cases in ``ppref``).

    ``ranks``: shape ``(n,)``, 1-based rank of each judged item in the (already cut) ranking, ``inf`` when
    not ranked; ``values``: shape ``(n,)``, the judgment values, aligned. Memory O(n^2).
    """
    ranks = np.asarray(ranks, dtype=np.float64)
    preferred, considered = _pairs(ranks, values)
    if not preferred.any():
        return float("nan")
    total = int(considered.sum())
    if total == 0:
        return 0.0
    correct = considered & (ranks[:, None] < ranks[None, :])
    return int(correct.sum()) / total


def wpref_of_ranks(ranks: np.ndarray, values: np.ndarray, length: int) -> float:
    """wpref of one topic from its judged items (rule and edge cases in ``wpref``); arguments as in
    ``ppref_of_ranks`` plus ``length``, the evaluated ranking length L (unranked items take rank L + 1)."""
    ranks = np.asarray(ranks, dtype=np.float64)
    preferred, considered = _pairs(ranks, values)
    if not preferred.any():
        return float("nan")
    if not considered.any():
        return 0.0
    ranks = np.where(np.isfinite(ranks), ranks, length + 1.0)
    weights = 1.0 / np.log2(np.maximum(ranks[:, None], ranks[None, :]) + 1.0)
    correct = considered & (ranks[:, None] < ranks[None, :])
    return float(weights[correct].sum() / weights[considered].sum())


def ppref(ranking: Sequence[str], values: Mapping[str, float], *, depth: int | None = None) -> float:
    """Precision of preferences ([CBCD] section 4): ``#pairs ordered correctly / #pairs considered``.

    Over every inferred preference ``i > j`` (see the module docstring): a pair where neither item is in
    the ranking is ignored; if only ``i`` is ranked it counts as correct (i above j), if only ``j`` is
    ranked as incorrect; if both are ranked it is correct when ``rank(i) < rank(j)``.
    ``ranking``: docids best first (the run's tie rule already applied); ``depth`` cuts it (``None`` = all).
    ``values``: the topic's judgments, docid -> value. Returns ``nan`` when the topic implies no preference
    at all (one level only: undefined, dropped from averages like a topic without relevant items), and 0.0
    when preferences exist but the ranking touches none of them.
    """
    ranks, levels, _ = _levels_and_ranks(ranking, values, depth)
    return ppref_of_ranks(ranks, levels)


def wpref(ranking: Sequence[str], values: Mapping[str, float], *, depth: int | None = None) -> float:
    """Rank-weighted ppref ([CBCD] section 4): ``sum_{correct pairs} w_ij / sum_{considered pairs} w_ij``
    with ``w_ij = 1 / log2(max(rank_i, rank_j) + 1)``: a pair counts by the discount of its *deeper* item
    (the measure's definition, pipeline.md 4.D.1). An unranked item takes rank ``L + 1`` with ``L`` the
    evaluated ranking length, so weights stay finite (pipeline.md 4.D.2). Same pairs, arguments and edge
    cases as ``ppref``.
    """
    ranks, levels, length = _levels_and_ranks(ranking, values, depth)
    return wpref_of_ranks(ranks, levels, length)


def _per_topic(alignment: Alignment, depth: int | None, weighted: bool) -> np.ndarray:
    _check_depth(depth)
    lengths = alignment.run_length if depth is None else np.minimum(alignment.run_length, depth)
    is_ranked = (alignment.position != NOT_RETRIEVED) & (alignment.position < lengths[alignment.judged_topic])
    ranks = np.where(is_ranked, alignment.position + 1.0, np.inf)
    bounds = np.searchsorted(alignment.judged_topic, np.arange(alignment.topic_count + 1))
    scores = np.empty(alignment.topic_count)
    for topic in range(alignment.topic_count):
        rows = slice(bounds[topic], bounds[topic + 1])
        scores[topic] = (
            wpref_of_ranks(ranks[rows], alignment.value[rows], int(lengths[topic]))
            if weighted
            else ppref_of_ranks(ranks[rows], alignment.value[rows])
        )
    return scores


def ppref_per_topic(alignment: Alignment, depth: int | None = None) -> np.ndarray:
    """``ppref`` of every topic of an alignment (``metrics.core.ranking``), ranking cut at ``depth``.
    Shape ``(T,)``; ``nan`` for a topic whose judgments imply no preference."""
    return _per_topic(alignment, depth, weighted=False)


def wpref_per_topic(alignment: Alignment, depth: int | None = None) -> np.ndarray:
    """``wpref`` of every topic of an alignment, ranking cut at ``depth``. Shape ``(T,)``."""
    return _per_topic(alignment, depth, weighted=True)

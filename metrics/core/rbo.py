"""Rank-biased overlap and compatibility (Clarke, Vtyurina and Smucker, "Assessing top-k preferences", Eq. 1-3).

compatibility(R) = max over ideal rankings I of RBO(R, I); the maximum is reached by the maximum-similarity ideal
(:mod:`metrics.core.ideal`). As in the reference ``compatibility.py`` (the authors' script for "Assessing top-k preferences"):

    RBO(R, I) = sum_{d=1..D} p^(d-1) * |R[:d] & I[:d]| / d  /  sum_{d=1..D} p^(d-1)     (D = depth = 1000)
    NRBO(R, I) = RBO(R, I) / RBO(I, I)        (0 when RBO(I, I) = 0, i.e. no item with value > 0)

Dividing by the weight total equals Eq. 1's (1 - p) factor times 1 / (1 - p^D), a negligible change at D = 1000.
Prefixes are sets: a docid repeated in the run adds nothing the second time but takes a rank.

Fast formulation (exact up to float summation order, < 1e-14): a judged item j with first run position r_j and
ideal position q_j (0-based) is in both prefixes of length d iff d > max(r_j, q_j) = m_j. So
sum_d w_d * overlap_d = sum_j W[m_j] with w_d = p^(d-1)/d and the tail sums W[m] = sum_{d=m+1..D} w_d (W[m] = 0
for m >= D or an unretrieved item). That is one gather and one bincount for every topic of a run at once.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from metrics.core.ideal import ideal_lengths, ideal_positions, ideal_ranking
from metrics.core.ranking import NOT_RETRIEVED, Alignment

DEFAULT_P = 0.95
DEFAULT_DEPTH = 1000
# p matched to NDCG@k by Kendall's tau on the TREC Web Track (Table 1 of "Assessing top-k preferences").
P_PRESETS = {"ndcg@3": 0.80, "ndcg@5": 0.85, "ndcg@10": 0.90, "ndcg@20": 0.95}


def rbo(a: Sequence[Hashable], b: Sequence[Hashable], p: float, depth: int | None = None) -> float:
    """Truncated rank-biased overlap (Webber et al. 2010): (1 - p) * sum_{d=1..depth} p^(d-1) |a[:d] & b[:d]| / d.

    No extrapolation and no reference scaling: identical lists of 50 items at p = 0.9, depth 50 score
    1 - 0.9^50 = 0.99485 (the system-ordering RBO of Rashidi et al.). ``depth`` defaults to the
    longer list; past the end of a list its prefix stops growing. Repeated items count once.
    """
    _check_p(p)
    depth = max(len(a), len(b)) if depth is None else depth
    seen_a: set[Hashable] = set()
    seen_b: set[Hashable] = set()
    overlap = 0
    total = 0.0
    for d in range(1, depth + 1):
        if d <= len(a) and a[d - 1] not in seen_a:
            seen_a.add(a[d - 1])
            overlap += a[d - 1] in seen_b
        if d <= len(b) and b[d - 1] not in seen_b:
            seen_b.add(b[d - 1])
            overlap += b[d - 1] in seen_a
        total += p ** (d - 1) * overlap / d
    return (1 - p) * total


def compatibility_weights(p: float, depth: int) -> tuple[np.ndarray, float]:
    """Tail sums ``W`` (length depth + 1, W[depth] = 0) of w_d = p^(d-1)/d and the weight total sum p^(d-1)."""
    _check_p(p)
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    d = np.arange(1, depth + 1, dtype=np.float64)
    discount = p ** (d - 1)
    tail = np.zeros(depth + 1)
    tail[:depth] = np.cumsum((discount / d)[::-1])[::-1]
    return tail, float(discount.sum())


def compatibility(
    alignment: Alignment, p: float = DEFAULT_P, depth: int = DEFAULT_DEPTH, normalize: bool = True
) -> np.ndarray:
    """Compatibility of one run for every topic of ``alignment``; shape (T,), values in [0, 1].

    ``alignment`` must come from the reference ordering (``DOCID_ASCENDING``, ``duplicates="keep"``) for
    reference-identical numbers. ``normalize`` = NRBO (the default, as in the released script; False reproduces
    the CIKM'20/ICTIR'20 un-normalised numbers). A topic without positive values, or missing from the run,
    scores 0; which topics count is the caller's topic policy (see :mod:`metrics.core.evaluate`).
    """
    tail, weight_total = compatibility_weights(p, depth)
    ideal = ideal_positions(alignment)
    is_ideal = ideal >= 0
    run_position = alignment.position[is_ideal]
    deeper = np.maximum(run_position, ideal[is_ideal])
    contribution = np.where(run_position == NOT_RETRIEVED, 0.0, tail[np.minimum(deeper, depth)])
    sums = np.bincount(
        alignment.judged_topic[is_ideal], weights=contribution, minlength=alignment.topic_count
    )
    scores: npt.NDArray[np.float64] = sums / weight_total
    if not normalize:
        return scores
    best = _ideal_self_rbo(ideal_lengths(alignment), tail, weight_total, depth)
    normalized = np.zeros_like(scores)
    np.divide(scores, best, out=normalized, where=best > 0)
    return normalized


def ideal_rbo(length: int, p: float = DEFAULT_P, depth: int = DEFAULT_DEPTH) -> float:
    """RBO(I, I) with the reference scaling for an ideal ranking of ``length`` items (the NRBO denominator).

    Worked values: p = 0.95 gives 0.157670, 0.476300, 0.672422, 0.981277 for 1, 5, 10, 50 items.
    """
    tail, weight_total = compatibility_weights(p, depth)
    return float(_ideal_self_rbo(np.array([length]), tail, weight_total, depth)[0])


def _ideal_self_rbo(
    lengths: npt.NDArray[np.integer], tail: npt.NDArray[np.float64], weight_total: float, depth: int
) -> npt.NDArray[np.float64]:
    cumulative = np.concatenate([[0.0], np.cumsum(tail[:depth])])
    self_rbo: npt.NDArray[np.float64] = cumulative[np.minimum(lengths, depth)] / weight_total
    return self_rbo


def compatibility_of_ranking(
    run: Sequence[str],
    values: Mapping[str, float],
    p: float = DEFAULT_P,
    depth: int = DEFAULT_DEPTH,
    normalize: bool = True,
) -> float:
    """Compatibility of one ranked list (already ordered) against one topic's qrels values; a convenience.

    Example: values {d1:3, d2:2, d3:2, d4:1, d5:0}, run [d3, d9, d1, d4, d2], p = 0.8:
    RBO 0.458505, NRBO 0.568320.
    """
    ideal = ideal_ranking(values, run)
    if not ideal:
        return 0.0
    tail, weight_total = compatibility_weights(p, depth)
    first_position: dict[str, int] = {}
    for position, docid in enumerate(run):
        first_position.setdefault(docid, position)
    score = sum(
        tail[min(max(first_position[docid], q), depth)]
        for q, docid in enumerate(ideal)
        if docid in first_position
    )
    score /= weight_total
    if normalize:
        score /= _ideal_self_rbo(np.array([len(ideal)]), tail, weight_total, depth)[0]
    return float(score)


def _check_p(p: float) -> None:
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")

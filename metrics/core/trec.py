"""Score-per-run measures with trec_eval semantics: P@k, AP, RR, NDCG(@k), RBP with residual, ESL.

Every function takes an :class:`~metrics.core.ranking.Alignment` built with the trec_eval ordering
(``DOCID_DESCENDING``, ``duplicates="collapse"``) and returns one float per topic, shape (T,). Positions are
0-based here; the formulas below use 1-based ranks f. Binary relevance is ``value >= threshold`` (trec_eval's
``-l``, default 1); with preference qrels, first turn values into levels (:func:`metrics.core.ideal.
levels_from_values`; effectiveness levels as in Clarke, Vtyurina and Smucker, "Assessing top-k
preferences", section 3.1). Unjudged items are non-relevant. A topic missing from the run has an empty ranking
(score 0; ESL its worst case).
"""

from __future__ import annotations

import numpy as np

from metrics.core.ranking import NOT_RETRIEVED, Alignment

DEFAULT_THRESHOLD = 1.0


def precision(alignment: Alignment, k: int, threshold: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """P@k = |{relevant items at ranks 1..k}| / k; the denominator is k even for shorter runs (trec_eval P_k)."""
    _check_cutoff(k)
    hit = _is_relevant_retrieved(alignment, threshold) & (alignment.position < k)
    return _per_topic(alignment, hit.astype(np.float64)) / k


def average_precision(alignment: Alignment, threshold: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """AP = (1/m) * sum_i i / f_i over retrieved relevant items in rank order (trec_eval map), m = number of
    judged relevant items (retrieved or not); 0 when m = 0."""
    is_relevant = alignment.value >= threshold
    rows = np.flatnonzero(is_relevant & (alignment.position != NOT_RETRIEVED))
    rows = rows[np.lexsort((alignment.position[rows], alignment.judged_topic[rows]))]
    topic = alignment.judged_topic[rows]
    recall_level = np.arange(1, len(rows) + 1) - np.searchsorted(topic, topic)
    precision_at_item = recall_level / (alignment.position[rows] + 1.0)
    total = _sum_by_topic(topic, weights=precision_at_item, minlength=alignment.topic_count)
    relevant_count = _per_topic(alignment, is_relevant.astype(np.float64))
    result: np.ndarray = np.divide(total, relevant_count, out=np.zeros_like(total), where=relevant_count > 0)
    return result


def reciprocal_rank(alignment: Alignment, threshold: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """RR = 1 / f_1, the rank of the first relevant item; 0 when none is retrieved (trec_eval recip_rank)."""
    first = _first_relevant_rank(alignment, threshold)
    return np.where(first > 0, 1.0 / np.maximum(first, 1), 0.0)


def ndcg(alignment: Alignment, k: int | None = None) -> np.ndarray:
    """NDCG@k = DCG@k / IDCG@k with DCG = sum_f gain / log2(f + 1) and gain = the qrels value (linear, trec_eval
    ndcg and ndcg_cut.k; values <= 0 give no gain). IDCG sorts all judged gains of the topic descending; both
    sums stop at k (``None``: no cutoff). 0 when IDCG = 0."""
    if k is not None:
        _check_cutoff(k)
    cutoff = np.iinfo(np.int64).max if k is None else k
    gain = np.maximum(alignment.value, 0.0)
    retrieved = (alignment.position != NOT_RETRIEVED) & (alignment.position < cutoff) & (gain > 0)
    dcg = _sum_by_topic(
        alignment.judged_topic[retrieved],
        weights=gain[retrieved] / np.log2(alignment.position[retrieved] + 2.0),
        minlength=alignment.topic_count,
    )
    rows = np.flatnonzero(gain > 0)
    rows = rows[np.lexsort((-gain[rows], alignment.judged_topic[rows]))]
    topic = alignment.judged_topic[rows]
    ideal_position = np.arange(len(rows)) - np.searchsorted(topic, topic)
    in_cutoff = ideal_position < cutoff
    idcg = _sum_by_topic(
        topic[in_cutoff],
        weights=gain[rows][in_cutoff] / np.log2(ideal_position[in_cutoff] + 2.0),
        minlength=alignment.topic_count,
    )
    result: np.ndarray = np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)
    return result


def rbp(alignment: Alignment, p: float, threshold: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """Rank-biased precision (Moffat and Zobel 2008): (1 - p) * sum_f r_f * p^(f-1) over the whole run, binary
    r_f. Example: [a, x, b] with a, b relevant, p = 0.5 gives 0.625."""
    _check_p(p)
    hit = _is_relevant_retrieved(alignment, threshold)
    weight = np.where(hit, (1 - p) * p ** np.maximum(alignment.position, 0), 0.0)
    return _per_topic(alignment, weight)


def rbp_residual(alignment: Alignment, p: float) -> np.ndarray:
    """RBP residual: the most RBP could grow if unjudged items were relevant and the run went on forever,
    (1 - p) * sum_{f <= d, unjudged} p^(f-1) + p^d = 1 - (1 - p) * sum_{judged f} p^(f-1) (d = run length).
    Report RBP as [rbp, rbp + residual]. Example: [a, u, n], u unjudged, p = 0.5 gives 0.375 (Moffat and Zobel 2008, section 4)."""
    _check_p(p)
    judged = alignment.position != NOT_RETRIEVED
    weight = np.where(judged, (1 - p) * p ** np.maximum(alignment.position, 0), 0.0)
    return 1.0 - _per_topic(alignment, weight)


def expected_search_length(
    alignment: Alignment, corpus_size: int = 1000, threshold: float = DEFAULT_THRESHOLD
) -> np.ndarray:
    """Type-1 expected search length as in Diaz, "Best-Case Retrieval Evaluation" (lexiprecision): ESL = f_1,
    the rank of the first relevant item; lower is better. When no relevant item is retrieved, the worst case
    (docs/decisions.md, "ESL when nothing relevant is retrieved"): the m relevant items fill the last slots of
    a corpus of ``corpus_size`` items, so ESL = corpus_size - m + 1 (at least run length + 1, so an
    unretrieved item never beats a retrieved one). A topic without relevant items has ESL 0."""
    first = _first_relevant_rank(alignment, threshold)
    relevant_count = _per_topic(alignment, (alignment.value >= threshold).astype(np.float64)).astype(np.int64)
    worst = np.maximum(corpus_size - relevant_count + 1, alignment.run_length + 1)
    return np.where(first > 0, first, np.where(relevant_count > 0, worst, 0)).astype(np.float64)


def _first_relevant_rank(alignment: Alignment, threshold: float) -> np.ndarray:
    """1-based rank of each topic's first retrieved relevant item; 0 when there is none."""
    hit = _is_relevant_retrieved(alignment, threshold)
    first = np.full(alignment.topic_count, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, alignment.judged_topic[hit], alignment.position[hit] + 1)
    result: np.ndarray = np.where(first == np.iinfo(np.int64).max, 0, first)
    return result


def _is_relevant_retrieved(alignment: Alignment, threshold: float) -> np.ndarray:
    result: np.ndarray = (alignment.value >= threshold) & (alignment.position != NOT_RETRIEVED)
    return result


def _per_topic(alignment: Alignment, weights: np.ndarray) -> np.ndarray:
    return _sum_by_topic(alignment.judged_topic, weights=weights, minlength=alignment.topic_count)


def _sum_by_topic(topic: np.ndarray, *, weights: np.ndarray, minlength: int) -> np.ndarray:
    # np.bincount returns int64 for empty weights; every measure needs float64.
    return np.bincount(topic, weights=weights, minlength=minlength).astype(np.float64, copy=False)


def _check_cutoff(k: int) -> None:
    if k < 1:
        raise ValueError(f"cutoff must be at least 1, got {k}")


def _check_p(p: float) -> None:
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")

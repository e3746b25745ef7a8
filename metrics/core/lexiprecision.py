"""Lexicographic precision (Diaz, "Best-case retrieval evaluation: improving the sensitivity of reciprocal
rank with lexicographic precision", EVIA 2023): a preference between two rankings of the same topic.

Both lexiprecision and recall-paired preference (``metrics.core.rpp``) read a ranking only through its
*position vector*: ``f = (f_1, ..., f_m)``, the ascending 1-based ranks of the topic's ``m`` relevant
items, with ``inf`` for every relevant item the ranking does not retrieve. Two unretrieved items tie
(``inf == inf``), which is exactly the worst-case completion of the papers (unretrieved relevant items fill
the bottom of the corpus in the same slots for both rankings), so the corpus size never matters.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Literal

import numpy as np

from metrics.core.ranking import Alignment

Magnitude = Literal["sgn", "rr"]
MAGNITUDES: tuple[str, ...] = ("sgn", "rr")


def document_positions(ranking: Sequence[str], docids: Sequence[str]) -> np.ndarray:
    """1-based rank of each of ``docids`` in ``ranking``, ``inf`` where it is not retrieved.

    ``ranking`` is already ordered (the caller applies the run's tie rule and any depth cut). A docid that
    occurs twice in ``ranking`` takes its first position; the repeat still consumes a rank, as in the TREC
    run file. Shape: ``(len(docids),)`` float64, aligned with ``docids``.
    """
    first_rank: dict[str, int] = {}
    for rank, docid in enumerate(ranking, start=1):
        first_rank.setdefault(docid, rank)
    return np.array([first_rank.get(docid, np.inf) for docid in docids], dtype=np.float64)


def relevant_positions(ranking: Sequence[str], relevant: Iterable[str]) -> np.ndarray:
    """Position vector ``f`` of a ranking: the ascending ranks of the relevant items, ``inf`` for those not
    retrieved ([LP] section 2 ``p_i``; [RPP] section 3.1 "search length" ``f_i``). Shape ``(m,)``."""
    return np.sort(document_positions(ranking, list(dict.fromkeys(relevant))))


def _reciprocal(positions: np.ndarray) -> np.ndarray:
    # RR_i = 1/f_i, and 0 for an unretrieved item ([LP] section 2): 1/inf is exactly 0.0.
    return 1.0 / positions


def lexiprecision(
    positions: np.ndarray, other_positions: np.ndarray, *, magnitude: Magnitude = "sgn"
) -> float:
    """Lexiprecision LP(pi, pi') of two position vectors of the same topic ([LP] Eqs. 2 and 3).

    ``i* = min{i : RR_i(pi) != RR_i(pi')}`` with ``RR_i = 1/f_i`` (0 when unretrieved);
    ``rrLP = RR_{i*}(pi) - RR_{i*}(pi')`` and ``sgnLP = sgn(rrLP)``; both are 0 when no recall level differs
    (the relevant items sit at exactly the same ranks). Positive means ``pi`` (the first argument) is
    preferred. Antisymmetric: LP(a, b) = -LP(b, a). With ``m = 1`` rrLP is the difference in reciprocal rank.
    A topic without relevant items (``m = 0``) gives 0; callers drop such topics from averages ([LP] and
    pref_eval do).

    ``positions`` and ``other_positions``: sorted ascending, shape ``(m,)``, ``inf`` for unretrieved items
    (see ``relevant_positions``). ``magnitude``: ``"sgn"`` (sgnLP) or ``"rr"`` (rrLP).
    """
    if magnitude not in MAGNITUDES:
        raise ValueError(f"magnitude must be one of {MAGNITUDES}, not {magnitude!r}")
    positions = np.asarray(positions, dtype=np.float64)
    other_positions = np.asarray(other_positions, dtype=np.float64)
    if positions.shape != other_positions.shape:
        raise ValueError(
            f"position vectors of one topic must have the same length m, got {positions.shape} and {other_positions.shape}"
        )
    differs = positions != other_positions
    if not differs.any():
        return 0.0
    first = int(np.argmax(differs))
    difference = float(_reciprocal(positions[first]) - _reciprocal(other_positions[first]))
    return float(np.sign(difference)) if magnitude == "sgn" else difference


def lexiprecision_matrix(positions: np.ndarray, *, magnitude: Magnitude = "sgn") -> np.ndarray:
    """Lexiprecision between every pair of K rankings of one topic, vectorised.

    ``positions``: shape ``(K, m)``, row k the sorted position vector of ranking k. Returns ``(K, K)`` with
    ``[a, b] = LP(ranking a, ranking b)``: antisymmetric, zero diagonal. Same rule as ``lexiprecision``.
    """
    if magnitude not in MAGNITUDES:
        raise ValueError(f"magnitude must be one of {MAGNITUDES}, not {magnitude!r}")
    positions = np.asarray(positions, dtype=np.float64)
    if positions.ndim != 2:
        raise ValueError(f"positions must have shape (K, m), got {positions.shape}")
    runs, m = positions.shape
    if m == 0:
        return np.zeros((runs, runs))
    reciprocal = _reciprocal(positions)
    differs = positions[:, None, :] != positions[None, :, :]
    first = np.argmax(differs, axis=2)
    rows = np.arange(runs)
    difference = reciprocal[rows[:, None], first] - reciprocal[rows[None, :], first]
    difference = np.where(differs.any(axis=2), difference, 0.0)
    return np.sign(difference) if magnitude == "sgn" else difference


def topic_positions(
    alignments: Sequence[Alignment], *, depth: int | None = None
) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """The judged items of each topic seen by K runs, for the pairwise measures.

    ``alignments``: one per run, all built from the same qrels (``metrics.core.ranking.align``). Yields
    ``(topic, positions, values)`` for every judged topic in the first alignment's order: ``positions`` has
    shape ``(K, n)``, the 1-based rank of each of the topic's n judged items in each run (``inf`` when not
    retrieved, ranked below ``depth``, or when the run lacks the topic: the worst case of pref_eval),
    ``values`` shape ``(n,)`` the qrels values, columns in qrels order.
    """
    if not alignments:
        return
    slices = []
    for alignment in alignments:
        bounds = np.searchsorted(alignment.judged_topic, np.arange(alignment.topic_count + 1))
        slices.append({topic: slice(bounds[i], bounds[i + 1]) for i, topic in enumerate(alignment.topics)})
    first = alignments[0]
    for topic in first.topics:
        rows = slices[0][topic]
        values = first.value[rows]
        positions = np.empty((len(alignments), len(values)))
        for k, (alignment, by_topic) in enumerate(zip(alignments, slices, strict=True)):
            topic_rows = by_topic.get(topic)
            if topic_rows is None or topic_rows.stop - topic_rows.start != len(values):
                raise ValueError(
                    f"run {alignment.runid!r} was aligned with different qrels (topic {topic!r})"
                )
            position = alignment.position[topic_rows].astype(np.float64) + 1.0
            is_ranked = position >= 1 if depth is None else (position >= 1) & (position <= depth)
            positions[k] = np.where(is_ranked, position, np.inf)
        yield topic, positions, values


def lexiprecision_per_topic(
    alignments: Sequence[Alignment],
    *,
    magnitude: Magnitude = "sgn",
    threshold: float = 1.0,
    depth: int | None = None,
) -> tuple[list[str], np.ndarray]:
    """Lexiprecision between every pair of K runs on every topic: ``(topics, preferences)`` with
    ``preferences[q, a, b] = LP(run a, run b)`` on topic q, shape ``(Q, K, K)``.

    Relevant means ``value >= threshold`` (binary, [LP]; default 1 as trec_eval, measures.md A22). Topics
    without a relevant item are left out (undefined, [LP] and pref_eval); a run lacking a topic retrieves
    nothing for it. Alignments as in ``topic_positions`` (the trec_eval ordering: ties by docid descending).
    """
    topics, matrices = [], []
    for topic, positions, values in topic_positions(alignments, depth=depth):
        is_relevant = values >= threshold
        if not is_relevant.any():
            continue
        topics.append(topic)
        matrices.append(lexiprecision_matrix(np.sort(positions[:, is_relevant], axis=1), magnitude=magnitude))
    return topics, np.array(matrices).reshape(len(topics), len(alignments), len(alignments))

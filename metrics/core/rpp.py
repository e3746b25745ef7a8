"""Recall-paired preference (Diaz and Ferraro, "Offline retrieval evaluation without evaluation metrics",
SIGIR 2022): a preference between two rankings of the same topic, a weighted sign test over recall levels.

Rankings enter as position vectors (see ``metrics.core.lexiprecision``): ranks of the relevant items,
``inf`` when unretrieved, and two unretrieved items tie ([RPP] section 3, worst-case completion).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from metrics.core.lexiprecision import topic_positions
from metrics.core.ranking import Alignment

Weighting = Literal["uniform", "dcg", "inverse"]
WEIGHTINGS: tuple[str, ...] = ("uniform", "dcg", "inverse")


def recall_level_weights(m: int, weighting: Weighting = "uniform") -> np.ndarray:
    """Weights ``p(i)`` of the recall levels ``i = 1..m``, normalised to sum 1 ([RPP] section 5.3).

    ``uniform`` (RPP): ``1/m``; ``dcg`` (dcgRPP): ``proportional to 1/log2(i+1)``; ``inverse`` (invRPP):
    ``proportional to 1/i``. ``m = 0`` gives an empty array. Shape ``(m,)``.
    """
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, not {weighting!r}")
    levels = np.arange(1, m + 1, dtype=np.float64)
    if weighting == "uniform":
        raw = np.ones(m)
    elif weighting == "dcg":
        raw = 1.0 / np.log2(levels + 1.0)
    else:
        raw = 1.0 / levels
    return raw / raw.sum() if m else raw


def _earlier(positions: np.ndarray, other_positions: np.ndarray) -> np.ndarray:
    # sgn(f'_i - f_i) without inf - inf = nan: two unretrieved items tie.
    return (positions < other_positions).astype(np.float64) - (positions > other_positions).astype(np.float64)


def rpp(positions: np.ndarray, other_positions: np.ndarray, *, weighting: Weighting = "uniform") -> float:
    """Binary recall-paired preference ([RPP] Eqs. 3 and 4):
    ``RPP(pi, pi') = sum_{i=1..m} p(i) * sgn(f'_i - f_i)``.

    A term is +p(i) when ``pi`` reaches its i-th relevant item earlier (or ``pi'`` never does), -p(i) when
    later, 0 when both rank it equally or neither retrieves it. Range [-1, 1]; positive means ``pi`` (first
    argument) is preferred; antisymmetric; 0 when ``m = 0``. ``positions``/``other_positions``: sorted
    ascending position vectors of shape ``(m,)``. ``weighting``: see ``recall_level_weights``.
    """
    positions = np.asarray(positions, dtype=np.float64)
    other_positions = np.asarray(other_positions, dtype=np.float64)
    if positions.shape != other_positions.shape:
        raise ValueError(
            f"position vectors of one topic must have the same length m, got {positions.shape} and {other_positions.shape}"
        )
    weights = recall_level_weights(positions.shape[0], weighting)
    return float(weights @ _earlier(positions, other_positions))


def grade_thresholds(grades: np.ndarray) -> np.ndarray:
    """The set Lambda of graded RPP: the distinct positive grades of a topic, ascending ([RPP] Eq. 5, read
    as in measures.md A6 so that an unused grade of the scale is not counted twice)."""
    grades = np.asarray(grades, dtype=np.float64)
    return np.unique(grades[grades > 0])


def rpp_matrix(
    document_positions: np.ndarray,
    grades: np.ndarray,
    *,
    weighting: Weighting = "uniform",
    is_graded: bool = True,
) -> np.ndarray:
    """Recall-paired preference between every pair of K rankings of one topic.

    Graded RPP ([RPP] Eq. 5): ``sum_{lambda in Lambda} p(lambda) sum_{i=1..m_lambda} p(i|lambda) *
    sgn(f'_{i,lambda} - f_{i,lambda})`` where ``f_{i,lambda}`` is the rank of the i-th item with grade >=
    lambda, Lambda the distinct positive grades (``grade_thresholds``), ``m_lambda`` the number of items with
    grade >= lambda, ``p(lambda) = m_lambda / sum m_lambda'`` and ``p(i|lambda)`` the chosen weighting
    normalised over ``1..m_lambda``. Only the order of the grades matters, so preference levels (50, 40, ...)
    work unchanged. ``is_graded=False`` gives binary RPP with every positive grade relevant (Eq. 4).

    ``document_positions``: shape ``(K, n)``, the rank of each of the topic's n judged items in each ranking
    (``inf`` when unretrieved), columns aligned with ``grades`` (shape ``(n,)``; items with grade <= 0 are
    ignored). Returns ``(K, K)`` with ``[a, b] = RPP(a, b)``: antisymmetric, zero diagonal, all zero when
    the topic has no positive grade.
    """
    document_positions = np.asarray(document_positions, dtype=np.float64)
    grades = np.asarray(grades, dtype=np.float64)
    if document_positions.ndim != 2 or document_positions.shape[1] != grades.shape[0]:
        raise ValueError(
            f"document_positions must have shape (K, n) with n = len(grades) = {grades.shape[0]}, "
            f"got {document_positions.shape}"
        )
    runs = document_positions.shape[0]
    thresholds = grade_thresholds(grades) if is_graded else grade_thresholds(grades)[:1]
    result = np.zeros((runs, runs))
    if not len(thresholds):
        return result
    level_sizes = np.array([(grades >= threshold).sum() for threshold in thresholds], dtype=np.float64)
    level_weights = level_sizes / level_sizes.sum()
    for threshold, level_weight in zip(thresholds, level_weights, strict=True):
        level_positions = np.sort(document_positions[:, grades >= threshold], axis=1)
        weights = recall_level_weights(level_positions.shape[1], weighting)
        signs = _earlier(level_positions[:, None, :], level_positions[None, :, :])
        result += level_weight * (signs @ weights)
    return result


def graded_rpp(
    document_positions: np.ndarray,
    other_document_positions: np.ndarray,
    grades: np.ndarray,
    *,
    weighting: Weighting = "uniform",
) -> float:
    """Graded RPP(pi, pi') of two rankings of one topic ([RPP] Eq. 5; rule in ``rpp_matrix``).

    ``document_positions`` and ``other_document_positions``: shape ``(n,)``, the rank of each judged item in
    each ranking (``inf`` when unretrieved), aligned with ``grades`` (shape ``(n,)``).
    """
    stacked = np.vstack(
        [np.asarray(document_positions, dtype=np.float64), np.asarray(other_document_positions)]
    )
    return float(rpp_matrix(stacked, grades, weighting=weighting)[0, 1])


def rpp_per_topic(
    alignments: Sequence[Alignment],
    *,
    weighting: Weighting = "uniform",
    is_graded: bool = True,
    depth: int | None = None,
) -> tuple[list[str], np.ndarray]:
    """RPP between every pair of K runs on every topic: ``(topics, preferences)`` with
    ``preferences[q, a, b] = RPP(run a, run b)`` on topic q, shape ``(Q, K, K)`` (rule in ``rpp_matrix``).

    Topics without a positive value are left out ([RPP], pref_eval); a run lacking a topic retrieves
    nothing for it (worst case). Alignments as in ``metrics.core.lexiprecision.topic_positions``.
    """
    topics, matrices = [], []
    for topic, positions, values in topic_positions(alignments, depth=depth):
        if not (values > 0).any():
            continue
        topics.append(topic)
        matrices.append(rpp_matrix(positions, values, weighting=weighting, is_graded=is_graded))
    return topics, np.array(matrices).reshape(len(topics), len(alignments), len(alignments))


def mc4_scores(preferences: np.ndarray, *, iterations: int = 10) -> np.ndarray:
    """Order K runs from per-topic pairwise preferences by MC4 Markov-chain rank aggregation (Dwork et al.
    2001), as [RPP] section 5.4 does, following its reference code (measures.md 3.4 and A10).

    Per topic, runs are ranked by win rate ``sum_b P[q, a, b]`` ([RPP] Eq. 7); runs with equal win rates
    cast no vote for their pair. ``M[a, b]`` = #topics ranking a above b minus #topics ranking b above a;
    the chain moves from a to each b with ``M[a, b] < 0`` with probability ``1/K`` and stays otherwise.
    Starting from all ones, ``e <- e P`` is applied ``iterations`` times (10, as the reference code; the
    chain is not ergodic, a Condorcet winner absorbs the mass). Higher is better; shape ``(Q, K, K)`` in,
    ``(K,)`` out (the mass sums to K).
    """
    preferences = np.asarray(preferences, dtype=np.float64)
    runs = preferences.shape[1]
    win_rates = preferences.sum(axis=2)
    above = np.sign(win_rates[:, :, None] - win_rates[:, None, :]).sum(axis=0)
    transition = np.where(above < 0, 1.0 / runs, 0.0)
    np.fill_diagonal(transition, 0.0)
    transition[np.diag_indices(runs)] = 1.0 - transition.sum(axis=1)
    mass = np.ones(runs)
    for _ in range(iterations):
        mass = mass @ transition
    return mass

"""Meta-evaluation of measures: significance between runs, sensitivity (discriminative power), agreement
of system orderings (Kendall's tau), bootstrap confidence intervals.

Inputs are per-topic score matrices ``scores[q, k]`` (topic q, run k) for score measures, or per-topic
preference tensors ``preferences[q, a, b]`` (antisymmetric in a, b) for pairwise measures such as
lexiprecision and RPP. For a score measure the per-topic *difference* ``scores[q, a] - scores[q, b]`` plays
the role of the preference, so one set of tests serves both. Rows must be finite:
the caller drops topics where a measure is undefined before building the matrix.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator
from typing import Literal

import numpy as np
import numpy.typing as npt
import scipy  # scipy.stats loads on first use: the CLI starts faster without it

Test = Literal["t", "sign"]
TESTS: tuple[str, ...] = ("t", "sign")
Correction = Literal["none", "bonferroni"]
CORRECTIONS: tuple[str, ...] = ("none", "bonferroni")


def _finite(name: str, array: npt.ArrayLike) -> npt.NDArray[np.float64]:
    array = np.asarray(array, dtype=np.float64)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite (drop topics where the measure is undefined first)")
    return array


def t_test(differences: np.ndarray) -> np.ndarray:
    """Two-sided Student's t-test of per-topic differences (or preferences) against 0, column by column.

    Equal to scipy's paired ``ttest_rel(a, b)`` when ``differences = a - b`` ([C] section 5 uses it without
    correction; [LP] and [RPP] for rrLP and RPP). ``differences``: shape ``(Q, ...)``, topics along axis 0.
    Returns p-values of shape ``differences.shape[1:]``. All-zero differences give p = 1 (nothing to
    distinguish; scipy would give nan); constant non-zero differences give p = 0; fewer than 2 topics give 1.
    """
    differences = _finite("differences", differences)
    if differences.shape[0] < 2:
        return np.ones(differences.shape[1:])
    is_constant = np.all(differences == differences[:1], axis=0)
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        # constant columns are settled below; scipy only warns about their zero variance
        warnings.simplefilter("ignore", RuntimeWarning)
        p_values = scipy.stats.ttest_1samp(differences, 0.0, axis=0).pvalue
    constant_p = np.where(differences[0] == 0, 1.0, 0.0)
    return np.where(is_constant, constant_p, np.nan_to_num(p_values, nan=1.0))


def sign_test(differences: np.ndarray) -> np.ndarray:
    """Two-sided exact sign (binomial) test of per-topic differences, column by column ([LP] section 4.2
    for sgnLP): zeros are dropped, and with k positive among n non-zero values
    ``p = min(1, 2 * P[Binomial(n, 1/2) <= min(k, n - k)])``, as ``scipy.stats.binomtest(k, n)``. No non-zero
    value gives p = 1. Shapes as in ``t_test``.
    """
    differences = _finite("differences", differences)
    positive = (differences > 0).sum(axis=0)
    nonzero = (differences != 0).sum(axis=0)
    p_values = 2.0 * scipy.stats.binom.cdf(np.minimum(positive, nonzero - positive), nonzero, 0.5)
    return np.asarray(np.where(nonzero == 0, 1.0, np.minimum(p_values, 1.0)), dtype=np.float64)


def score_differences(scores: np.ndarray) -> np.ndarray:
    """Per-topic differences between every pair of runs: ``[q, a, b] = scores[q, a] - scores[q, b]``.
    ``scores``: shape ``(Q, K)``; returns ``(Q, K, K)``, the preference tensor of a score measure."""
    finite = _finite("scores", scores)
    return finite[:, :, None] - finite[:, None, :]


def pairwise_p_values(preferences: np.ndarray, *, test: Test = "t") -> np.ndarray:
    """p-value of every run pair from a per-topic preference tensor ``(Q, K, K)`` (``score_differences``
    for score measures). Returns a symmetric ``(K, K)`` matrix with ``nan`` on the diagonal; ``test`` is
    ``"t"`` (``t_test``) or ``"sign"`` (``sign_test``). No multiple-comparison correction ([C] Eq. 2)."""
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, not {test!r}")
    preferences = _finite("preferences", preferences)
    if preferences.ndim != 3 or preferences.shape[1] != preferences.shape[2]:
        raise ValueError(f"preferences must have shape (Q, K, K), got {preferences.shape}")
    runs = preferences.shape[1]
    upper = np.triu_indices(runs, 1)
    tested = (t_test if test == "t" else sign_test)(preferences[:, upper[0], upper[1]])
    p_values = np.full((runs, runs), np.nan)
    p_values[upper] = tested
    p_values[upper[1], upper[0]] = tested
    return p_values


def sensitivity(p_values: np.ndarray, *, alpha: float = 0.05, correction: Correction = "none") -> float:
    """Discriminative power ([C] Eq. 2, after Sakai): the share of run pairs with ``p < alpha``, over the
    ``K(K-1)/2`` pairs of the upper triangle of a ``(K, K)`` p-value matrix. ``correction="bonferroni"``
    divides alpha by the number of pairs, the family of [LP] and [RPP]; [C] uses none.
    ``nan`` when K < 2."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, not {correction!r}")
    p_values = np.asarray(p_values, dtype=np.float64)
    upper = p_values[np.triu_indices(p_values.shape[0], 1)]
    if not upper.size:
        return float("nan")
    level = alpha / upper.size if correction == "bonferroni" else alpha
    return float(np.mean(upper < level))


def kendall_tau(run_scores: np.ndarray, other_run_scores: np.ndarray) -> float:
    """Kendall's tau-b between the system orderings of two measures ([C] "consistency", [RPP] Table 2):
    ``run_scores`` and ``other_run_scores`` are one value per run (e.g. the mean over topics), shape
    ``(K,)``. tau-b handles tied scores (``scipy.stats.kendalltau``); ``nan`` when either
    measure gives every run the same score."""
    run_scores = _finite("run_scores", run_scores)
    other_run_scores = _finite("other_run_scores", other_run_scores)
    if run_scores.shape != other_run_scores.shape:
        raise ValueError(f"one score per run in both, got {run_scores.shape} and {other_run_scores.shape}")
    return float(scipy.stats.kendalltau(run_scores, other_run_scores).statistic)


def preference_scores(preferences: np.ndarray) -> np.ndarray:
    """A score per run from a pairwise measure, for orderings: the mean over topics of the run's win rate
    ``sum_b P[q, a, b] / (K - 1)`` ([RPP] Eq. 7, normalised to [-1, 1]). Shape
    ``(Q, K, K)`` in, ``(K,)`` out."""
    preferences = _finite("preferences", preferences)
    runs = preferences.shape[1]
    return np.asarray(preferences.sum(axis=2).mean(axis=0) / max(runs - 1, 1), dtype=np.float64)


def bootstrap_ci(
    scores: np.ndarray, *, confidence: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> np.ndarray:
    """Percentile bootstrap confidence interval of each run's mean score over topics ([C] Figure 9): topics
    are resampled with replacement ``resamples`` times (seeded, so the same input gives the same interval).
    ``scores``: shape ``(Q, K)``; returns ``(K, 2)`` rows ``(low, high)``. One topic gives the degenerate
    interval ``(score, score)``.

    The resamples are exactly ``scipy.stats.bootstrap``'s (method ``percentile``, ``rng=default_rng(seed)``:
    the same topic indices, drawn in the same order) and so are the intervals, up to the rounding of a mean;
    but a resample is kept as how often it draws each topic, so every run's resampled mean is one matrix
    product and the draws of one (topic count, resamples, seed) serve every measure of a leaderboard
    (``toppref compare``, the web leaderboard and ``toppref plot`` share this function)."""
    scores = _finite("scores", scores)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), not {confidence}")
    if scores.ndim != 2 or scores.shape[0] == 0:
        raise ValueError(f"scores must have shape (Q, K) with Q >= 1, got {scores.shape}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, not {resamples}")
    topics = scores.shape[0]
    if topics == 1:
        return np.repeat(scores[0][:, None], 2, axis=1)
    means = np.empty((resamples, scores.shape[1]))
    start = 0
    for counts in _resample_counts(topics, resamples, seed):
        means[start : start + len(counts)] = counts @ scores
        start += len(counts)
    means /= topics
    alpha = (1 - confidence) / 2
    return np.asarray(np.quantile(means, [alpha, 1 - alpha], axis=0).T, dtype=np.float64)


# Resamples drawn at once: 200,000 x 50 topics is 80 MB of indices, the largest batch kept in memory.
_RESAMPLE_CELLS = 10_000_000


def _resample_counts(topics: int, resamples: int, seed: int) -> Iterator[npt.NDArray[np.float64]]:
    """How often each resample draws each topic, shape (batch, topics), batch after batch: the indices of
    ``scipy.stats.bootstrap`` (``rng.integers(0, topics, (resamples, topics))``; the generator's stream does
    not depend on how the draws are split into batches), counted. The first batch is cached, so a
    leaderboard of many measures over the same topics draws once."""
    batch = max(1, _RESAMPLE_CELLS // topics)
    if resamples <= batch:
        yield _resample_counts_cached(topics, resamples, seed)
        return
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, batch):
        yield _counts(rng.integers(0, topics, (min(batch, resamples - start), topics)), topics)


@functools.lru_cache(maxsize=8)
def _resample_counts_cached(topics: int, resamples: int, seed: int) -> npt.NDArray[np.float64]:
    counts = _counts(np.random.default_rng(seed).integers(0, topics, (resamples, topics)), topics)
    counts.setflags(write=False)
    return counts


def _counts(indices: npt.NDArray[np.int64], topics: int) -> npt.NDArray[np.float64]:
    rows = len(indices)
    flat = (indices + np.arange(rows)[:, None] * topics).ravel()
    return np.bincount(flat, minlength=rows * topics).reshape(rows, topics).astype(np.float64)


def _permutation_batches(
    topics: int, runs: int, resamples: int, seed: int, cells: int
) -> Iterator[npt.NDArray[np.int64]]:
    """Yield batches of per-topic permutations of the run labels, shape (batch, topics, runs), seeded."""
    rng = np.random.default_rng(seed)
    batch = max(1, 2_000_000 // max(cells, 1))
    for start in range(0, resamples, batch):
        size = min(batch, resamples - start)
        yield rng.permuted(np.broadcast_to(np.arange(runs), (size, topics, runs)), axis=2)


def randomized_hsd(preferences: np.ndarray, *, resamples: int = 10_000, seed: int = 0) -> np.ndarray:
    """Randomized Tukey HSD (Carterette 2012; [RPP] and [LP] Tables 3-4), on a per-topic preference tensor
    ``(Q, K, K)``: each resample permutes the run labels independently within every topic and records
    ``D_b = max_{a,b} |mean_q P'[q, a, b]|``; then ``p(a, b) = #{b : D_b >= |mean_q P[q, a, b]|} / B``.
    For score differences (``score_differences``) ``D_b`` is the largest minus
    the smallest permuted run mean, i.e. the metric version; with K = 2 it is the sign-flip randomization
    test. Family-wise by construction (no further correction). Returns a symmetric ``(K, K)`` matrix,
    ``nan`` diagonal. Seeded; memory is bounded by resampling in batches."""
    preferences = _finite("preferences", preferences)
    topics, runs, _ = preferences.shape
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, not {resamples}")
    observed = np.abs(preferences.mean(axis=0)) if topics else np.zeros((runs, runs))
    exceed = np.zeros((runs, runs))
    topic_index = np.arange(topics)[None, :, None, None]
    for permutations in _permutation_batches(topics, runs, resamples, seed, topics * runs * runs):
        permuted = preferences[topic_index, permutations[:, :, :, None], permutations[:, :, None, :]]
        largest = np.abs(permuted.mean(axis=1)).max(axis=(1, 2))
        # a permutation equal to the identity must count: allow for rounding in the means
        exceed += (largest[:, None, None] >= observed[None] - 1e-12).sum(axis=0)
    p_values = exceed / resamples
    np.fill_diagonal(p_values, np.nan)
    return p_values


def randomized_hsd_scores(scores: np.ndarray, *, resamples: int = 10_000, seed: int = 0) -> np.ndarray:
    """``randomized_hsd`` of a score matrix ``(Q, K)`` without building the ``(Q, K, K)`` differences:
    ``D_b = max_k mean'_k - min_k mean'_k``. Same permutations for the same seed, so the same p-values."""
    scores = _finite("scores", scores)
    topics, runs = scores.shape
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, not {resamples}")
    means = scores.mean(axis=0) if topics else np.zeros(runs)
    observed = np.abs(means[:, None] - means[None, :])
    exceed = np.zeros((runs, runs))
    topic_index = np.arange(topics)[None, :, None]
    for permutations in _permutation_batches(topics, runs, resamples, seed, topics * runs * runs):
        permuted_means = scores[topic_index, permutations].mean(axis=1)
        largest = permuted_means.max(axis=1) - permuted_means.min(axis=1)
        exceed += (largest[:, None, None] >= observed[None] - 1e-12).sum(axis=0)
    p_values = exceed / resamples
    np.fill_diagonal(p_values, np.nan)
    return p_values

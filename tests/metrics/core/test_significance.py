"""Significance, sensitivity, Kendall's tau and bootstrap: against scipy directly and measures.md 6.9."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from metrics.core.significance import (
    bootstrap_ci,
    kendall_tau,
    pairwise_p_values,
    preference_scores,
    randomized_hsd,
    randomized_hsd_scores,
    score_differences,
    sensitivity,
    sign_test,
    t_test,
)


def test_t_test_worked_example_of_measures_md_6_9():
    # one-sample preferences (0.1, 0.2, 0.3, 0.4): t = 3.872983, df = 3, p = 0.030466
    assert t_test(np.array([0.1, 0.2, 0.3, 0.4]))[()] == pytest.approx(0.030466, abs=1e-6)
    a, b = np.array([0.5, 0.6, 0.7, 0.9]), np.array([0.4, 0.4, 0.4, 0.5])
    assert t_test(a - b)[()] == pytest.approx(stats.ttest_rel(a, b).pvalue, abs=1e-12)


def test_sign_test_worked_example_of_measures_md_6_9():
    assert sign_test(np.array([1, 1, 1, 1, 1, -1, 0.0]))[()] == pytest.approx(0.21875, abs=1e-12)


def test_degenerate_differences():
    # all zero: nothing distinguishes the runs; constant non-zero: certain
    assert t_test(np.zeros(5))[()] == 1.0
    assert sign_test(np.zeros(5))[()] == 1.0
    assert t_test(np.full(5, 0.1))[()] == 0.0
    assert t_test(np.array([0.3]))[()] == 1.0


@settings(max_examples=50)
@given(arrays(np.float64, (6, 4), elements=st.floats(0, 1, allow_nan=False)))
def test_pairwise_p_values_equal_scipy_per_pair(scores):
    t_matrix = pairwise_p_values(score_differences(scores), test="t")
    sign_matrix = pairwise_p_values(score_differences(scores), test="sign")
    for a in range(4):
        assert math.isnan(t_matrix[a, a])
        for b in range(a + 1, 4):
            differences = scores[:, a] - scores[:, b]
            if np.all(differences == 0):
                assert t_matrix[a, b] == 1.0
            elif np.ptp(differences) > 1e-9:
                expected = stats.ttest_rel(scores[:, a], scores[:, b]).pvalue
                assert t_matrix[a, b] == pytest.approx(expected, rel=1e-9, abs=1e-12)
            nonzero = differences[differences != 0]
            expected_sign = (
                stats.binomtest(int((nonzero > 0).sum()), len(nonzero)).pvalue if len(nonzero) else 1.0
            )
            assert sign_matrix[a, b] == pytest.approx(expected_sign, abs=1e-12)
            assert sign_matrix[b, a] == sign_matrix[a, b] and t_matrix[b, a] == t_matrix[a, b]


def test_sensitivity_counts_pairs_below_alpha():
    p_values = np.array([[np.nan, 0.01, 0.2], [0.01, np.nan, 0.049], [0.2, 0.049, np.nan]])
    assert sensitivity(p_values) == 2 / 3
    assert sensitivity(p_values, alpha=0.01) == 0.0
    assert math.isnan(sensitivity(np.full((1, 1), np.nan)))
    # Bonferroni over 3 pairs: only p < 0.05 / 3 counts
    assert sensitivity(p_values, correction="bonferroni") == 1 / 3
    with pytest.raises(ValueError, match="correction"):
        sensitivity(p_values, correction="holm")


def test_kendall_tau_of_measures_md_6_9():
    # orderings [1,2,3,4] vs [2,1,3,4]: tau = 4/6
    assert kendall_tau(np.array([4.0, 3, 2, 1]), np.array([3.0, 4, 2, 1])) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="one score per run"):
        kendall_tau(np.ones(3), np.ones(4))


def test_preference_scores_are_normalised_win_rates():
    # measures.md 6.7 q3 alone: S1 > S2 > S3, win rates 2, 0, -2 over K - 1 = 2 opponents
    q3 = np.array([[[0, 1, 1], [-1, 0, 1], [-1, -1, 0]]], dtype=float)
    assert preference_scores(q3).tolist() == [1.0, 0.0, -1.0]


def test_bootstrap_ci_is_seeded_and_contains_the_mean():
    rng = np.random.default_rng(7)
    scores = rng.random((30, 3))
    first = bootstrap_ci(scores, resamples=2000, seed=1)
    assert np.array_equal(first, bootstrap_ci(scores, resamples=2000, seed=1))
    means = scores.mean(axis=0)
    assert np.all(first[:, 0] < means) and np.all(means < first[:, 1])
    # against a slow percentile bootstrap with its own draws: the same interval within Monte-Carlo error
    draws = rng.integers(0, 30, size=(4000, 30))
    slow = np.percentile(scores[draws].mean(axis=1), [2.5, 97.5], axis=0).T
    assert np.allclose(first, slow, atol=0.02)


def test_bootstrap_single_topic_and_bad_input():
    assert bootstrap_ci(np.array([[0.3, 0.5]])).tolist() == [[0.3, 0.3], [0.5, 0.5]]
    with pytest.raises(ValueError, match="finite"):
        bootstrap_ci(np.array([[np.nan, 0.5], [0.1, 0.2]]))
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci(np.ones((3, 2)), confidence=95)


def test_randomized_hsd_with_two_runs_is_the_sign_flip_test_of_measures_md_6_9():
    # per-topic differences (0.1, 0.2, 0.3): 2 of the 8 sign patterns reach |mean| >= 0.2, exact p = 0.25
    scores = np.array([[0.1, 0.0], [0.2, 0.0], [0.3, 0.0]])
    p_value = randomized_hsd_scores(scores, resamples=20_000, seed=3)[0, 1]
    assert abs(p_value - 0.25) < 4 * math.sqrt(0.25 * 0.75 / 20_000)


@settings(max_examples=10, deadline=None)
@given(arrays(np.float64, (5, 4), elements=st.floats(0, 1, allow_nan=False)), st.integers(0, 100))
def test_randomized_hsd_of_differences_equals_the_metric_version(scores, seed):
    by_tensor = randomized_hsd(score_differences(scores), resamples=300, seed=seed)
    by_scores = randomized_hsd_scores(scores, resamples=300, seed=seed)
    assert np.array_equal(np.isnan(by_tensor), np.isnan(by_scores))
    assert np.allclose(by_tensor, by_scores, equal_nan=True)


def test_randomized_hsd_is_seeded_and_rejects_bad_resamples():
    rng = np.random.default_rng(1)
    preferences = score_differences(rng.random((8, 3)))
    assert np.array_equal(
        randomized_hsd(preferences, resamples=50, seed=2),
        randomized_hsd(preferences, resamples=50, seed=2),
        equal_nan=True,
    )
    with pytest.raises(ValueError, match="resamples"):
        randomized_hsd(preferences, resamples=0)


@pytest.mark.parametrize(
    ("topics", "runs", "resamples"), [(38, 23, 10_000), (5, 3, 2_000), (4, 2, 2_600_000)]
)
def test_bootstrap_ci_is_scipy_percentile_bootstrap_with_the_same_draws(topics, runs, resamples):
    # The vectorised bootstrap (resample counts times the score matrix) must give scipy's intervals: the
    # same seeded topic indices, drawn in one batch or in several (the last case spans batches).
    import scipy.stats

    scores = np.random.default_rng(topics).random((topics, runs))
    reference = scipy.stats.bootstrap(
        (scores,),
        np.mean,
        axis=0,
        confidence_level=0.95,
        n_resamples=resamples,
        method="percentile",
        rng=np.random.default_rng(7),
    ).confidence_interval
    expected = np.column_stack([reference.low, reference.high])
    assert np.abs(bootstrap_ci(scores, resamples=resamples, seed=7) - expected).max() < 1e-12

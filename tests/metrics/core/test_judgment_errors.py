"""The judgment-error model of Rashidi et al.: the verified numbers of measures.md sections 4 and 6.8,
and Monte-Carlo checks of the stated properties (seeded)."""

import math

import numpy as np
import pytest
from scipy import stats

from metrics.core.judgment_errors import (
    JUDGE_SETTINGS,
    flip_on_weights,
    inclusion_probabilities,
    judge_parameters,
    judge_rates,
    judgment_error_stability,
    meta_ap,
    perturb_relevance,
    retention_weights,
)


@pytest.mark.parametrize(
    ("setting", "tpr", "fpr"),
    [
        ("smart-neutral", 0.933193, 0.066807),
        ("extreme", 0.308538, 0.066807),
        ("nist-primary", 0.7823, 0.0643),
        ("crowd-secondary", 0.7910, 0.1379),
    ],
)
def test_judge_rates_of_the_paper_settings(setting, tpr, fpr):
    assert judge_rates(*JUDGE_SETTINGS[setting]) == pytest.approx((tpr, fpr), abs=1e-4)


@pytest.mark.parametrize(
    ("tpr", "fpr", "disc", "bias"),
    [(0.9, 0.01, 3.6079, 0.5224), (0.9, 0.05, 2.9264, 0.1817), (0.7, 0.03, 2.4052, 0.6782)],
)
def test_judge_parameters_of_table_3(tpr, fpr, disc, bias):
    assert judge_parameters(tpr, fpr) == pytest.approx((disc, bias), abs=1e-4)
    assert judge_rates(disc, bias) == pytest.approx((tpr, fpr), abs=1e-4)


def test_meta_ap_checks_of_the_paper():
    # rank 1 in all runs: H_1000 ("7.5"); rank 2: 6.9855 ("7.0"); rank 10 in half the runs: 2.7783 ("2.8")
    positions = np.array([[1.0, 2.0, 10.0, math.inf, 1001.0], [1.0, 2.0, math.inf, math.inf, math.inf]])
    assert meta_ap(positions).tolist() == pytest.approx([7.485471, 6.985471, 2.778251, 0.0, 0.0], abs=1e-6)


def test_logistic_weights_table_of_measures_md_4_3():
    meta_aps = np.array([0.0, 1.0, 2.0, 5.0, 7.4855])
    assert retention_weights(meta_aps).tolist() == pytest.approx(
        [0.3498, 0.4775, 0.6083, 0.8839, 0.9660], abs=1e-4
    )
    assert flip_on_weights(meta_aps).tolist() == pytest.approx(
        [0.0198, 0.0630, 0.1824, 0.8909, 0.9938], abs=1e-4
    )


def test_inclusion_probabilities_of_measures_md_6_8():
    weights = np.arange(1, 10) / 10
    main = inclusion_probabilities(weights, 2)
    complement = inclusion_probabilities(weights, 7)
    assert main.tolist() == pytest.approx((weights * 2 / 4.5).tolist(), abs=1e-12)
    assert main[-1] == pytest.approx(0.4) and main.sum() == pytest.approx(2)
    assert complement.tolist() == pytest.approx(
        [0.6, 0.6444, 0.6889, 0.7333, 0.7778, 0.8222, 0.8667, 0.9111, 0.9556], abs=1e-4
    )
    assert complement.sum() == pytest.approx(7)
    assert inclusion_probabilities(np.full(5, 0.3), 2).tolist() == pytest.approx([0.4] * 5)
    assert inclusion_probabilities(np.full(5, 0.3), 0.5).tolist() == pytest.approx([0.1] * 5)
    assert inclusion_probabilities(np.full(3, 0.3), 0).tolist() == [0.0] * 3
    assert inclusion_probabilities(np.full(3, 0.3), 3.5).tolist() == [1.0] * 3
    assert inclusion_probabilities(np.array([]), 1).tolist() == []


def _qrels(relevant_per_topic=40, other_per_topic=400, topics=5):
    relevance = np.concatenate(
        [np.r_[np.ones(relevant_per_topic), np.zeros(other_per_topic)]] * topics
    ).astype(bool)
    topic = np.repeat(np.arange(topics), relevant_per_topic + other_per_topic)
    return relevance, topic


@pytest.mark.parametrize("judge", ["random", "rank_biased"])
def test_error_rate_zero_leaves_judgments_unchanged(judge):
    relevance, topic = _qrels()
    meta_aps = np.linspace(0, 7, len(relevance))
    judgoids = perturb_relevance(
        relevance, topic, tpr=1.0, fpr=0.0, judge=judge, meta_aps=meta_aps, rng=np.random.default_rng(3)
    )
    assert np.array_equal(judgoids, relevance)


@pytest.mark.parametrize("judge", ["random", "rank_biased"])
def test_observed_flip_rates_match_the_judge_within_monte_carlo_error(judge):
    # given 200 relevant and 2000 non-relevant judged rows and a judge with TPR 0.9, FPR 0.05
    relevance, topic = _qrels()
    meta_aps = np.random.default_rng(0).uniform(0, 7.5, len(relevance))
    rng = np.random.default_rng(11)
    draws = [
        perturb_relevance(relevance, topic, tpr=0.9, fpr=0.05, judge=judge, meta_aps=meta_aps, rng=rng)
        for _ in range(200)
    ]
    flip_off = np.mean([(relevance & ~d).sum() / relevance.sum() for d in draws])
    flip_on = np.mean([(~relevance & d).sum() / (~relevance).sum() for d in draws])
    # then the rates are 1 - TPR and FPR within 4 standard errors of 200 x 2200 Bernoulli draws
    assert abs(flip_off - 0.1) < 4 * math.sqrt(0.1 * 0.9 / (200 * 200))
    assert abs(flip_on - 0.05) < 4 * math.sqrt(0.05 * 0.95 / (200 * 2000))


def test_rank_biased_judge_flips_popular_non_relevant_items_more():
    relevance, topic = _qrels()
    meta_aps = np.tile(np.r_[np.linspace(0, 7, 40), np.r_[np.zeros(200), np.full(200, 6.0)]], 5)
    rng = np.random.default_rng(5)
    draws = np.array(
        [
            perturb_relevance(
                relevance, topic, tpr=0.9, fpr=0.05, judge="rank_biased", meta_aps=meta_aps, rng=rng
            )
            for _ in range(100)
        ]
    )
    popular = ~relevance & (meta_aps == 6.0)
    unpopular = ~relevance & (meta_aps == 0.0)
    assert draws[:, popular].mean() > 5 * draws[:, unpopular].mean()


def test_perturb_rejects_bad_arguments():
    relevance, topic = _qrels(2, 2, 1)
    with pytest.raises(ValueError, match="meta-AP"):
        perturb_relevance(
            relevance, topic, tpr=0.9, fpr=0.1, judge="rank_biased", rng=np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="judge"):
        perturb_relevance(relevance, topic, tpr=0.9, fpr=0.1, judge="lazy", rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="TPR and FPR"):
        perturb_relevance(relevance, topic, tpr=1.5, fpr=0.1, rng=np.random.default_rng(0))


def _precision_at_5_scorer(topics=6, runs=5, judged_per_topic=30, seed=0):
    """A toy collection: each run ranks the judged rows of each topic at random ranks 1..60."""
    rng = np.random.default_rng(seed)
    topic = np.repeat(np.arange(topics), judged_per_topic)
    ranks = np.stack([rng.permutation(60)[:judged_per_topic] + 1 for _ in range(runs * topics)]).reshape(
        runs, topics, judged_per_topic
    )
    ranks = ranks.reshape(runs, -1)
    relevance = rng.random(topics * judged_per_topic) < 0.3

    def score(judged_relevance):
        hits = (ranks <= 5) & judged_relevance[None, :]
        return np.stack([hits[:, topic == t].sum(axis=1) / 5 for t in range(topics)])

    return score, relevance, topic


def test_stability_with_a_perfect_judge_keeps_every_conclusion():
    score, relevance, topic = _precision_at_5_scorer()
    stability = judgment_error_stability(score, relevance, topic, tpr=1.0, fpr=0.0, sets=3)
    assert stability.kendall_tau.tolist() == pytest.approx([1.0, 1.0, 1.0], abs=1e-12)
    assert stability.flip_rate == (0.0, 0.0)
    # every set sees the original judgments: the pairs significant under them (scipy's paired t-test), three
    # times, each ordered as the original judgments order it
    truth = score(relevance)
    runs = truth.shape[1]
    significant = sum(
        stats.ttest_rel(truth[:, a], truth[:, b]).pvalue < 0.05
        for a in range(runs)
        for b in range(a + 1, runs)
    )
    assert significant > 0
    assert stability.significant_pairs == 3 * significant and stability.agreement == 1.0


def test_stability_is_seeded_and_set_by_set():
    score, relevance, topic = _precision_at_5_scorer()
    three = judgment_error_stability(score, relevance, topic, tpr=0.7, fpr=0.2, sets=3, seed=4)
    two = judgment_error_stability(score, relevance, topic, tpr=0.7, fpr=0.2, sets=2, seed=4)
    assert np.array_equal(three.kendall_tau[:2], two.kendall_tau)
    assert np.all(three.kendall_tau < 1.0) and three.flip_rate[1] > 0


@pytest.mark.parametrize("name", ["ap", "ndcg@10", "compat@0.8"])
def test_judgment_error_input_scores_like_a_fresh_evaluation(cast_dir, name):
    # given three CAsT runs and a judgoid set drawn from the graded qrels
    from metrics.core.evaluate import EvaluationOptions, evaluate_run, parse_measure
    from metrics.core.judgment_errors import judgment_error_input
    from metrics.core.readers import Qrels, read_qrels, read_run

    qrels = read_qrels(cast_dir / "qrels.graded.txt")
    runs = [read_run(cast_dir / "runs" / f"decaf{n}.run") for n in ("01", "07", "12")]
    measure = parse_measure(name)
    prepared = judgment_error_input(qrels, runs, measure)
    judgoids = perturb_relevance(
        prepared.relevance, prepared.topic, tpr=0.8, fpr=0.1, rng=np.random.default_rng(2)
    )
    # when scored by swapping values, and by evaluating binary qrels written out from scratch
    fast = prepared.score(judgoids)
    keep = np.isin(qrels.topic, prepared.topics)
    rewritten = Qrels.from_records(
        zip(qrels.topic[keep], qrels.docid[keep], judgoids.astype(float), strict=True)
    )
    options = EvaluationOptions(missing_topics="zero")
    for k, run in enumerate(runs):
        (slow,) = evaluate_run(rewritten, run, [measure], options)
        by_topic = dict(zip(slow.topics, slow.values, strict=True))
        expected = [by_topic.get(topic, 0.0) for topic in prepared.topics]
        # then the same per-topic scores (a topic left without relevant items scores 0 in the simulation)
        assert fast[:, k].tolist() == pytest.approx(expected, abs=1e-12)
    assert len(prepared.topics) == 173 and prepared.relevance.sum() == 8120

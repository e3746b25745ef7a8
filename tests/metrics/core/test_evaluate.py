"""Measure names, the registry, topic policies and score matrices (metrics/core/evaluate.py)."""

import math

import numpy as np
import pytest

from metrics.core.evaluate import (
    MEASURES,
    EvaluationOptions,
    MeasureFamily,
    evaluate_run,
    evaluate_runs,
    parse_measure,
    register_measure,
    score_matrix,
)
from metrics.core.readers import Qrels, Run


@pytest.mark.parametrize(
    ("text", "name", "family", "parameter"),
    [
        ("compat", "compat@0.95", "compat", 0.95),
        ("compat@0.8", "compat@0.8", "compat", 0.8),
        ("compat@.80", "compat@0.8", "compat", 0.8),
        ("ndcg", "ndcg", "ndcg", None),
        ("ndcg@3", "ndcg@3", "ndcg", 3),
        ("NDCG@10", "ndcg@10", "ndcg", 10),
        ("ap", "ap", "ap", None),
        ("rr", "rr", "rr", None),
        ("p@5", "p@5", "p", 5),
        ("P@10", "p@10", "p", 10),
        ("rbp@0.8", "rbp@0.8", "rbp", 0.8),
        ("rbp", "rbp@0.95", "rbp", 0.95),
        ("rbp_residual@0.5", "rbp_residual@0.5", "rbp_residual", 0.5),
        ("esl", "esl@1000", "esl", 1000),
        ("esl@100", "esl@100", "esl", 100),
    ],
)
def test_parse_measure_names(text, name, family, parameter):
    measure = parse_measure(text)
    assert (measure.name, measure.family.name, measure.parameter) == (name, family, parameter)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nope", "unknown measure 'nope'"),
        ("p", "measure 'p' needs a parameter"),
        ("p@x", "parameter 'x' is not an integer"),
        ("p@0", "the cutoff must be at least 1, got 0"),
        ("compat@1.5", "p must be in \\(0, 1\\), got 1.5"),
        ("compat@nan", "is not finite"),
        ("ap@5", "measure 'ap' takes no parameter"),
        ("ndcg@@3", "bad measure name"),
    ],
)
def test_parse_measure_rejects_bad_names(text, message):
    with pytest.raises(ValueError, match=message):
        parse_measure(text)


def test_register_measure_is_one_entry_and_names_are_unique():
    # given a new family registered once
    family = MeasureFamily(
        name="test_retrieved",
        description="number of retrieved items (test only)",
        compute=lambda alignment, _, options: alignment.run_length.astype(float),
    )
    register_measure(family)
    try:
        # when evaluated by name
        (scores,) = evaluate_run(
            Qrels.from_records([("t", "a", 1)]),
            Run.from_records([("t", "a", 1), ("t", "b", 0)]),
            [parse_measure("test_retrieved")],
        )
        # then it is scored like any other measure, and a second registration is refused
        assert scores.values.tolist() == [2.0]
        with pytest.raises(ValueError, match="already registered"):
            register_measure(family)
    finally:
        del MEASURES["test_retrieved"]


QRELS = Qrels.from_records([("t1", "a", 2), ("t1", "b", 1), ("t2", "c", 1), ("t3", "d", 0), ("t4", "e", 1)])
# t2 and t4 missing from the run; t5 unjudged; t3 judged with zeros only
RUN = Run.from_records([("t5", "a", 1), ("t3", "d", 1), ("t1", "b", 2), ("t1", "a", 1)], runid="r1")


def test_drop_policy_scores_the_run_topics_judged_by_the_qrels():
    compat, ndcg = evaluate_run(QRELS, RUN, [parse_measure("compat@0.8"), parse_measure("ndcg")])
    # compatibility also needs a positive value (t3 has none), trec_eval measures do not
    assert compat.topics == ["t1"]
    assert ndcg.topics == ["t3", "t1"]
    assert ndcg.values[0] == 0.0


def test_zero_policy_counts_missing_topics_as_empty_rankings():
    options = EvaluationOptions(missing_topics="zero")
    compat, ap = evaluate_run(QRELS, RUN, [parse_measure("compat@0.8"), parse_measure("ap")], options)
    assert compat.topics == ["t1", "t2", "t4"]
    assert compat.values[1:].tolist() == [0.0, 0.0]
    assert ap.topics == ["t3", "t1", "t2", "t4"]
    # t1 ranks b then a, both relevant: AP 1
    assert ap.values.tolist() == [0.0, 1.0, 0.0, 0.0]
    assert ap.mean == 0.25


def test_unknown_policy_is_rejected():
    with pytest.raises(ValueError, match="missing_topics must be"):
        evaluate_run(QRELS, RUN, [parse_measure("ap")], EvaluationOptions(missing_topics="all"))


def test_threshold_option_sets_binary_relevance():
    (strict,) = evaluate_run(QRELS, RUN, [parse_measure("rr")], EvaluationOptions(threshold=2))
    # at threshold 2 only a (rank 2) is relevant in t1
    assert strict.values.tolist() == [0.0, 0.5]


def test_nan_marks_topics_a_measure_leaves_out():
    family = MeasureFamily(
        name="test_undefined",
        description="test only",
        compute=lambda alignment, _, options: np.where(alignment.run_length > 1, 1.0, math.nan),
    )
    register_measure(family)
    try:
        (scores,) = evaluate_run(QRELS, RUN, [parse_measure("test_undefined")])
        assert scores.topics == ["t1"] and scores.mean == 1.0
    finally:
        del MEASURES["test_undefined"]


def test_no_topics_has_mean_zero():
    (scores,) = evaluate_run(QRELS, Run.from_records([("t9", "a", 1)]), [parse_measure("compat")])
    assert scores.topics == [] and scores.mean == 0.0


def test_score_matrix_over_runs_with_different_topics():
    other = Run.from_records([("t2", "c", 1)], runid="r2")
    scores = evaluate_runs(QRELS, [RUN, other], [parse_measure("p@1"), parse_measure("rr")])
    runids, topics, matrix = score_matrix(scores, "p@1")
    assert runids == ["r1", "r2"] and topics == ["t3", "t1", "t2"]
    assert np.array_equal(matrix, [[0.0, 1.0, np.nan], [np.nan, np.nan, 1.0]], equal_nan=True)

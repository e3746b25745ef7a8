"""Recall-paired preference: the worked examples of measures.md sections 6.3, 6.4, 6.7 and 9.3, a slow
per-level loop, and invariance properties."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from metrics.core.lexiprecision import document_positions, lexiprecision, relevant_positions
from metrics.core.rpp import grade_thresholds, graded_rpp, recall_level_weights, rpp, rpp_matrix

INF = math.inf


@pytest.mark.parametrize(
    ("f", "g", "weighting", "expected"),
    [
        pytest.param((1, 3, 10), (2, 3, 5), "uniform", 0.0, id="P1"),
        pytest.param((1, 3, 10), (2, 3, 5), "dcg", 0.234639, id="P2"),
        pytest.param((1, 3, 10), (2, 3, 5), "inverse", 4 / 11, id="P3"),
        pytest.param((2, INF, INF), (4, 6, INF), "uniform", 0.0, id="P4"),
    ],
)
def test_binary_rpp_worked_examples(f, g, weighting, expected):
    assert rpp(np.array(f, float), np.array(g, float), weighting=weighting) == pytest.approx(
        expected, abs=1e-6
    )


def test_recall_level_weights_sum_to_one():
    assert recall_level_weights(3, "inverse").tolist() == pytest.approx([6 / 11, 3 / 11, 2 / 11], abs=1e-15)
    assert recall_level_weights(0, "dcg").tolist() == []


# measures.md 6.4: the paper's X/Y example. Relevant grades {1,1,1,2,3,3,4,4,5}; X retrieves grades
# 4,3,1,3 at ranks 2,3,7,9; Y retrieves 3,4,5,3,1,1 at ranks 1,3,4,5,8,9; the rest are non-relevant.
XY_GRADES = {"d5": 5, "d4a": 4, "d4b": 4, "d3a": 3, "d3b": 3, "d2": 2, "d1a": 1, "d1b": 1, "d1c": 1}
X_RUN = ["n1", "d4a", "d3a", "n2", "n3", "n4", "d1a", "n5", "d3b", "n6", "n7"]
Y_RUN = ["d3a", "n1", "d4a", "d5", "d3b", "n2", "n3", "d1a", "d1b", "n4", "n5"]


def _xy_positions():
    docids = list(XY_GRADES)
    grades = np.array([XY_GRADES[d] for d in docids], float)
    return document_positions(X_RUN, docids), document_positions(Y_RUN, docids), grades


@pytest.mark.parametrize(
    ("weighting", "expected"),
    [("uniform", -0.5), ("dcg", -0.538161), ("inverse", -0.572092)],
)
def test_graded_rpp_paper_example(weighting, expected):
    x, y, grades = _xy_positions()
    assert graded_rpp(x, y, grades, weighting=weighting) == pytest.approx(expected, abs=1e-6)
    assert graded_rpp(y, x, grades, weighting=weighting) == pytest.approx(-expected, abs=1e-6)


@pytest.mark.parametrize(
    ("weighting", "expected"),
    [("uniform", -5 / 9), ("dcg", -0.628450), ("inverse", -0.689297)],
)
def test_binary_rpp_paper_example(weighting, expected):
    x, y, grades = _xy_positions()
    stacked = np.vstack([x, y])
    assert rpp_matrix(stacked, grades, weighting=weighting, is_graded=False)[0, 1] == pytest.approx(
        expected, abs=1e-6
    )
    relevant = [d for d, grade in XY_GRADES.items() if grade > 0]
    binary = rpp(
        relevant_positions(X_RUN, relevant), relevant_positions(Y_RUN, relevant), weighting=weighting
    )
    assert binary == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("weighting", "is_graded", "expected"),
    [
        ("uniform", True, 1 / 3),
        ("dcg", True, 0.227645),
        ("inverse", True, 0.171717),
        ("uniform", False, 2 / 3),
    ],
)
def test_weak_order_example_of_measures_md_9_3(weighting, is_graded, expected):
    # levels a=3 (best), b=2, c=1; x, y level 0; pi = [b,a,x,c], pi' = [a,x,b,y,c]
    docids, grades = ["a", "b", "c", "x", "y"], np.array([3, 2, 1, 0, 0], float)
    stacked = np.vstack(
        [document_positions(["b", "a", "x", "c"], docids), document_positions(list("axbyc"), docids)]
    )
    assert rpp_matrix(stacked, grades, weighting=weighting, is_graded=is_graded)[0, 1] == pytest.approx(
        expected, abs=1e-6
    )


def test_aggregation_example_of_measures_md_6_7():
    # three systems, three topics, binary uniform RPP: per-topic values as tabulated in measures.md 6.7
    topics = {
        "q1": ({"a", "b", "c"}, [list("axbyc"), list("xabc"), list("abxyz")]),
        "q2": ({"d", "e"}, [list("xde"), list("dxye"), list("de")]),
        "q3": ({"f"}, [list("f"), list("xf"), list("xyf")]),
    }
    per_topic = {}
    for topic, (relevant, runs) in topics.items():
        docids = sorted(relevant)
        stacked = np.vstack([document_positions(run, docids) for run in runs])
        per_topic[topic] = rpp_matrix(stacked, np.ones(len(docids)))
    assert per_topic["q1"][0, 1:].tolist() == [0.0, 0.0] and per_topic["q1"][1, 2] == pytest.approx(-1 / 3)
    assert per_topic["q2"][0, 1:].tolist() == [0.0, -1.0] and per_topic["q2"][1, 2] == -0.5
    assert per_topic["q3"][0, 1:].tolist() == [1.0, 1.0] and per_topic["q3"][1, 2] == 1.0
    mean = np.mean(list(per_topic.values()), axis=0)
    assert (
        mean[0, 1] == pytest.approx(1 / 3)
        and mean[0, 2] == 0.0
        and mean[1, 2] == pytest.approx(0.055556, abs=1e-6)
    )


def test_grade_thresholds_are_the_distinct_positive_grades():
    assert grade_thresholds(np.array([0, 4, 1, 4, -1, 2.5])).tolist() == [1.0, 2.5, 4.0]


def test_topic_without_positive_grade_gives_zero_matrix():
    assert rpp_matrix(np.array([[1.0, 2.0], [2.0, 1.0]]), np.array([0.0, 0.0])).tolist() == [
        [0.0, 0.0],
        [0.0, 0.0],
    ]


def test_rpp_matrix_rejects_misaligned_grades():
    with pytest.raises(ValueError, match="shape"):
        rpp_matrix(np.ones((2, 3)), np.ones(2))


def slow_graded_rpp(run_a, run_b, grades, weighting):
    """Eq. 5 of [RPP] written out: every threshold, every recall level, one comparison at a time."""
    thresholds = sorted({g for g in grades.values() if g > 0})
    sizes = {t: sum(1 for g in grades.values() if g >= t) for t in thresholds}
    total = sum(sizes.values())
    result = 0.0
    for t in thresholds:
        relevant = [d for d, g in grades.items() if g >= t]
        fa = sorted(run_a.index(d) + 1 if d in run_a else INF for d in relevant)
        fb = sorted(run_b.index(d) + 1 if d in run_b else INF for d in relevant)
        raw = [
            1.0 if weighting == "uniform" else (1 / math.log2(i + 1) if weighting == "dcg" else 1 / i)
            for i in range(1, len(relevant) + 1)
        ]
        for i, (a, b) in enumerate(zip(fa, fb, strict=True)):
            sign = 0 if a == b else (1 if a < b else -1)
            result += sizes[t] / total * raw[i] / sum(raw) * sign
    return result


docs = "abcdefghijkl"
rankings = st.lists(st.sampled_from(docs), min_size=0, max_size=12, unique=True)
gradings = st.dictionaries(st.sampled_from(docs), st.sampled_from([0, 1, 2, 3, 10]), min_size=1)


@given(st.lists(rankings, min_size=2, max_size=4), gradings, st.sampled_from(["uniform", "dcg", "inverse"]))
def test_rpp_matrix_equals_slow_equation_5(runs, grades, weighting):
    docids = list(grades)
    stacked = np.vstack([document_positions(run, docids) for run in runs])
    matrix = rpp_matrix(stacked, np.array([grades[d] for d in docids], float), weighting=weighting)
    for a, run_a in enumerate(runs):
        for b, run_b in enumerate(runs):
            assert matrix[a, b] == pytest.approx(slow_graded_rpp(run_a, run_b, grades, weighting), abs=1e-12)
    assert np.array_equal(matrix, -matrix.T)
    assert np.all(np.abs(matrix) <= 1 + 1e-12)


@given(rankings, rankings, gradings)
def test_single_relevant_item_rpp_agrees_with_lexiprecision(run_a, run_b, grades):
    # measures.md 9.4: with one relevant item binary RPP = sgnLP
    best = max(grades, key=lambda d: (grades[d], d))
    single = {best: 1.0}
    stacked = np.vstack([document_positions(run_a, [best]), document_positions(run_b, [best])])
    assert rpp_matrix(stacked, np.array([1.0]))[0, 1] == lexiprecision(
        relevant_positions(run_a, single), relevant_positions(run_b, single)
    )


def test_cast_decaf07_vs_decaf12_equals_pref_eval(cast_dir):
    # given the official graded CAsT qrels and two DECAF runs, ordered as trec_eval / pref_eval do
    from metrics.core.lexiprecision import lexiprecision_per_topic
    from metrics.core.ranking import DOCID_DESCENDING, align, rank_run
    from metrics.core.readers import read_qrels, read_run
    from metrics.core.rpp import rpp_per_topic

    qrels = read_qrels(cast_dir / "qrels.graded.txt")
    alignments = [
        align(
            qrels,
            rank_run(
                read_run(cast_dir / "runs" / f"decaf{n}.run"), ties=DOCID_DESCENDING, duplicates="collapse"
            ),
        )
        for n in ("07", "12")
    ]
    # when the mean over the 173 judged turns is taken
    topics, graded = rpp_per_topic(alignments)
    _, binary = rpp_per_topic(alignments, is_graded=False)
    _, sgn = lexiprecision_per_topic(alignments, magnitude="sgn")
    # then the numbers pref_eval prints (metric-anchors.md section 4: pre-cache commit for graded RPP)
    assert len(topics) == 173
    assert round(graded[:, 0, 1].mean(), 4) == -0.1166
    assert round(binary[:, 0, 1].mean(), 4) == -0.0849
    assert round(sgn[:, 0, 1].mean(), 4) == -0.1214
    assert np.array_equal(graded[:, 1, 0], -graded[:, 0, 1])


def test_topic_positions_depth_and_missing_topic():
    from metrics.core.lexiprecision import topic_positions
    from metrics.core.ranking import DOCID_DESCENDING, align, rank_run
    from metrics.core.readers import Qrels, Run

    qrels = Qrels.from_records([("t1", "a", 2), ("t1", "b", 0), ("t2", "c", 1)])
    runs = [
        Run.from_records([("t1", "b", 3.0), ("t1", "a", 2.0)], runid="r1"),
        Run.from_records([("t1", "a", 1.0), ("t2", "c", 1.0)], runid="r2"),
    ]
    alignments = [align(qrels, rank_run(run, ties=DOCID_DESCENDING, duplicates="collapse")) for run in runs]
    seen = {
        topic: (positions.tolist(), values.tolist())
        for topic, positions, values in topic_positions(alignments, depth=1)
    }
    assert seen == {"t1": ([[INF, 1.0], [1.0, INF]], [2.0, 0.0]), "t2": ([[INF], [1.0]], [1.0])}


def test_mc4_of_measures_md_6_7():
    # per-topic binary uniform RPP of the 3-system example (S1, S2, S3), antisymmetric
    from metrics.core.rpp import mc4_scores

    def antisymmetric(s12, s13, s23):
        return [[0, s12, s13], [-s12, 0, s23], [-s13, -s23, 0]]

    preferences = np.array([antisymmetric(0, 0, -1 / 3), antisymmetric(0, -1, -0.5), antisymmetric(1, 1, 1)])
    mass = mc4_scores(preferences)
    # then [S3, S1, S2] with the tabulated mass after 10 iterations (S2 = (1/3)^10)
    assert mass.tolist() == pytest.approx([0.0347, 1.69e-5, 2.9653], abs=1e-4)
    assert mass[1] == pytest.approx(3.0**-10, rel=1e-12) and mass.sum() == pytest.approx(3.0)

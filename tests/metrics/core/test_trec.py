"""trec_eval-style measures (metrics/core/trec.py): hand-checked worked examples, and equality
with pytrec_eval-terrier per topic on all 23 CAsT 2019 runs."""

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.core import trec
from metrics.core.ideal import levels_from_values, map_gains
from metrics.core.ranking import DOCID_DESCENDING, align, rank_run
from metrics.core.readers import Qrels, Run, read_qrels, read_run


def alignment_of(ranking, judgments, qrels_transform=None):
    """One topic 't': ``ranking`` best first (distinct scores), ``judgments`` docid -> value."""
    run = Run.from_records([("t", d, float(len(ranking) - i)) for i, d in enumerate(ranking)])
    qrels = Qrels.from_records([("t", d, v) for d, v in judgments.items()])
    if qrels_transform is not None:
        qrels = qrels_transform(qrels)
    return align(qrels, rank_run(run, ties=DOCID_DESCENDING, duplicates="collapse"))


def binary(*relevant, judged_non_relevant=()):
    return {d: 1 for d in relevant} | {d: 0 for d in judged_non_relevant}


def one(values):
    assert len(values) == 1
    return float(values[0])


# hand-checked toy cases -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ranking", "judgments", "expected"),
    [
        (["a", "x", "b", "y", "z"], binary("a", "b"), 0.833333),  # M1
        (["x", "a", "y", "z", "b"], binary("a", "b", "c"), 0.3),  # M2
        (["x", "y"], binary("a", "b"), 0.0),  # M3
    ],
)
def test_average_precision_examples(ranking, judgments, expected):
    assert one(trec.average_precision(alignment_of(ranking, judgments))) == pytest.approx(expected, abs=5e-7)


def test_average_precision_without_relevant_items_is_zero():
    assert one(trec.average_precision(alignment_of(["a"], {"a": 0}))) == 0.0


@pytest.mark.parametrize(
    ("ranking", "judgments", "k", "expected"),
    [
        (["a", "x", "b"], binary("a", "b"), None, 0.919721),  # M4
        (["c", "a", "b"], {"a": 2, "b": 1, "c": 0}, None, 0.669672),  # M5
        (["c", "a", "b"], {"a": 2, "b": 1, "c": 0}, 1, 0.0),  # M5@1
        (["c", "a", "b"], {"a": 2, "b": 1, "c": 0}, 2, 0.479625),  # M5@2
        (["a", "x"], binary("a", "b", "c"), None, 0.469279),  # M6
    ],
)
def test_ndcg_examples(ranking, judgments, k, expected):
    assert one(trec.ndcg(alignment_of(ranking, judgments), k)) == pytest.approx(expected, abs=5e-7)


@pytest.mark.parametrize(
    ("ranking", "judgments", "p", "base", "residual"),
    [
        (["a", "x", "b"], binary("a", "b", judged_non_relevant="x"), 0.5, 0.625, 0.125),  # M7
        (["a", "u", "n"], binary("a", judged_non_relevant="n"), 0.5, 0.5, 0.375),  # M8
        ([f"d{i}" for i in range(10)], binary(*[f"d{i}" for i in range(10)]), 0.95, 0.401263, 0.598737),  # M9
    ],
)
def test_rbp_and_residual_examples(ranking, judgments, p, base, residual):
    alignment = alignment_of(ranking, judgments)
    assert one(trec.rbp(alignment, p)) == pytest.approx(base, abs=5e-7)
    assert one(trec.rbp_residual(alignment, p)) == pytest.approx(residual, abs=5e-7)


@pytest.mark.parametrize(
    ("ranking", "judgments", "expected"),
    [(["a", "b", "c", "d"], binary("c", "d"), 1 / 3), (["a", "b"], binary("c", "d"), 0.0)],  # M10, M11
)
def test_reciprocal_rank_examples(ranking, judgments, expected):
    assert one(trec.reciprocal_rank(alignment_of(ranking, judgments))) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize(
    ("ranking", "judgments", "k", "expected"),
    [
        (["a", "x"], binary("a"), 10, 0.1),  # M14: the denominator is k
        (["a", "x"], binary("a"), 2, 0.5),  # M15
        ([f"x{i}" for i in range(1, 11)], binary("a"), 10, 0.0),  # M16
    ],
)
def test_precision_examples(ranking, judgments, k, expected):
    assert one(trec.precision(alignment_of(ranking, judgments), k)) == pytest.approx(expected, abs=1e-15)


def test_expected_search_length_examples():
    # E1: first relevant at rank 3; E3: none retrieved, m = 2, corpus of 100: worst case 100 - 2 + 1 = 99
    assert one(trec.expected_search_length(alignment_of(["a", "b", "c", "d"], binary("c", "d")))) == 3.0
    assert (
        one(trec.expected_search_length(alignment_of(["x", "y"], binary("a", "b")), corpus_size=100)) == 99.0
    )


def test_expected_search_length_worst_case_never_beats_a_retrieved_item():
    ranking = [f"x{i}" for i in range(10)]
    assert one(trec.expected_search_length(alignment_of(ranking, binary("a")), corpus_size=5)) == 11.0


def test_cutoffs_and_p_are_checked():
    alignment = alignment_of(["a"], binary("a"))
    with pytest.raises(ValueError, match="cutoff must be at least 1"):
        trec.precision(alignment, 0)
    with pytest.raises(ValueError, match="p must be in"):
        trec.rbp(alignment, 1.5)


# a weak ordering (levels a=3, b=2, c=1) fed to binary and graded measures ------------------

WEAK_ORDER = {"a": 3, "b": 2, "c": 1}
PI = ["b", "a", "x", "c"]
PI_PRIME = ["a", "x", "b", "y", "c"]


@pytest.mark.parametrize(
    ("measure", "expected_pi", "expected_pi_prime"),
    [
        (lambda al: trec.average_precision(al, threshold=1), 0.916667, 0.755556),
        (lambda al: trec.ndcg(al), 0.907936, 0.921248),  # gain = level
        (lambda al: trec.reciprocal_rank(al, threshold=3), 0.5, 1.0),  # best item only
        (lambda al: trec.reciprocal_rank(al, threshold=1), 1.0, 1.0),
        (lambda al: trec.rbp(al, 0.8, threshold=1), 0.4624, 0.40992),
    ],
)
def test_weak_order_example(measure, expected_pi, expected_pi_prime):
    assert one(measure(alignment_of(PI, WEAK_ORDER, levels_from_values))) == pytest.approx(
        expected_pi, abs=5e-7
    )
    assert one(measure(alignment_of(PI_PRIME, WEAK_ORDER, levels_from_values))) == pytest.approx(
        expected_pi_prime, abs=5e-7
    )


def test_weak_order_example_with_exponential_gains():
    # gain 2^level - 1 through a level-to-gain map: 0.835448 vs 0.946136
    def exponential(qrels):
        return map_gains(levels_from_values(qrels), {1: 1, 2: 3, 3: 7})

    assert one(trec.ndcg(alignment_of(PI, WEAK_ORDER, exponential))) == pytest.approx(0.835448, abs=5e-7)
    assert one(trec.ndcg(alignment_of(PI_PRIME, WEAK_ORDER, exponential))) == pytest.approx(
        0.946136, abs=5e-7
    )


def test_preference_values_as_levels_equal_their_rank_not_their_size():
    # 50/40/10 top-k codes above grade 2: levels 4/3/2 over 1; the gap between 10 and 50 does not matter
    qrels = {"a": 50.0, "b": 40.0, "c": 10.0, "d": 2.0}
    alignment = alignment_of(["d", "c", "b", "a"], qrels, levels_from_values)
    assert sorted(alignment.value.tolist()) == [1.0, 2.0, 3.0, 4.0]


def test_topic_missing_from_the_run_scores_as_an_empty_ranking():
    qrels = Qrels.from_records([("t", "a", 1), ("s", "b", 1)])
    alignment = align(
        qrels, rank_run(Run.from_records([("t", "a", 1)]), ties=DOCID_DESCENDING, duplicates="collapse")
    )
    assert alignment.topics == ["t", "s"]
    assert trec.ndcg(alignment).tolist() == [1.0, 0.0]
    assert trec.rbp_residual(alignment, 0.5).tolist() == [0.5, 1.0]


# pytrec_eval-terrier on the real runs ----------------------------------------------------------------------

PYTREC_MEASURES = {
    "ndcg_cut_3": lambda al: trec.ndcg(al, 3),
    "ndcg_cut_5": lambda al: trec.ndcg(al, 5),
    "ndcg_cut_10": lambda al: trec.ndcg(al, 10),
    "ndcg_cut_20": lambda al: trec.ndcg(al, 20),
    "ndcg": lambda al: trec.ndcg(al),
    "map": trec.average_precision,
    "recip_rank": trec.reciprocal_rank,
    "P_5": lambda al: trec.precision(al, 5),
    "P_10": lambda al: trec.precision(al, 10),
}


@pytest.mark.parametrize("qrels_name", ["qrels.graded.txt", "qrels.preference.txt"])
def test_equal_to_pytrec_eval_on_all_cast_runs(cast_dir, qrels_name):
    qrels = read_qrels(cast_dir / qrels_name)
    qrels_dict: dict[str, dict[str, int]] = {}
    for topic, docid, value in zip(qrels.topic, qrels.docid, qrels.value, strict=True):
        assert value == int(value)  # the CAsT values are whole numbers, so pytrec_eval can read them
        qrels_dict.setdefault(topic, {})[docid] = int(value)
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels_dict, {"ndcg_cut.3,5,10,20", "ndcg", "map", "recip_rank", "P.5,10"}
    )
    run_paths = sorted((cast_dir / "runs").glob("*.run"))
    assert len(run_paths) == 23
    for run_path in run_paths:
        run = read_run(run_path)
        run_dict: dict[str, dict[str, float]] = {}
        for topic, docid, score in zip(
            run.topic.to_pylist(), run.docid.to_pylist(), run.score.tolist(), strict=True
        ):
            run_dict.setdefault(topic, {})[docid] = float(score)
        expected = evaluator.evaluate(run_dict)
        alignment = align(qrels, rank_run(run, ties=DOCID_DESCENDING, duplicates="collapse"))
        topics = [t for t, present in zip(alignment.topics, alignment.is_in_run, strict=True) if present]
        assert sorted(topics) == sorted(expected)
        for name, measure in PYTREC_MEASURES.items():
            values = measure(alignment)
            worst = max(abs(values[i] - expected[t][name]) for i, t in enumerate(topics))
            assert worst <= 1e-12, (run_path.name, name, worst)


# pytrec_eval-terrier on arbitrary small inputs: score ties, duplicate run lines, unjudged and missing topics ---

_docids = st.sampled_from([f"d{i}" for i in range(10)])
_topics = st.sampled_from(["t1", "t2", "t3"])


@settings(max_examples=150, deadline=None)
@given(
    qrels=st.lists(st.tuples(_topics, _docids, st.integers(0, 3)), min_size=1, max_size=20),
    run=st.lists(
        st.tuples(_topics, _docids, st.sampled_from([-1.0, 0.0, 0.5, 0.5, 2.0])), min_size=1, max_size=25
    ),
)
def test_equal_to_pytrec_eval_on_arbitrary_inputs(qrels, run):
    qrels_dict: dict[str, dict[str, int]] = {}
    for topic, docid, value in qrels:  # a repeated pair keeps its maximum, as our reader does
        qrels_dict.setdefault(topic, {})[docid] = max(value, qrels_dict.get(topic, {}).get(docid, value))
    run_dict: dict[str, dict[str, float]] = {}
    for topic, docid, score in run:  # a repeated pair keeps its last score (pytrec_eval's dict)
        run_dict.setdefault(topic, {})[docid] = score
    expected = pytrec_eval.RelevanceEvaluator(
        qrels_dict, {"ndcg_cut.3", "ndcg", "map", "recip_rank", "P.2"}
    ).evaluate(run_dict)
    alignment = align(
        Qrels.from_records(qrels),
        rank_run(Run.from_records(run), ties=DOCID_DESCENDING, duplicates="collapse"),
    )
    topics = [t for t, present in zip(alignment.topics, alignment.is_in_run, strict=True) if present]
    assert sorted(topics) == sorted(expected)
    for name, values in {
        "ndcg_cut_3": trec.ndcg(alignment, 3),
        "ndcg": trec.ndcg(alignment),
        "map": trec.average_precision(alignment),
        "recip_rank": trec.reciprocal_rank(alignment),
        "P_2": trec.precision(alignment, 2),
    }.items():
        for i, topic in enumerate(topics):
            assert values[i] == pytest.approx(expected[topic][name], abs=1e-12), (name, topic)

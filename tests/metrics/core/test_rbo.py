"""RBO and compatibility (metrics/core/rbo.py): worked examples, golden tables, properties."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.core.evaluate import EvaluationOptions, evaluate_run, parse_measure
from metrics.core.ranking import DOCID_ASCENDING, align, rank_run
from metrics.core.rbo import (
    P_PRESETS,
    compatibility,
    compatibility_of_ranking,
    compatibility_weights,
    ideal_rbo,
    rbo,
)
from metrics.core.readers import Qrels, Run
from tests.metrics.core import compat_oracle

# pipeline.md 1.3: RBO(I, I) at depth 1000 for an ideal of n items (6 decimals)
IDEAL_SELF_RBO = {
    0.80: {1: 0.402359, 5: 0.860864, 10: 0.969034, 50: 0.999999},
    0.85: {1: 0.334786, 5: 0.787400, 10: 0.933326, 50: 0.999968},
    0.90: {1: 0.255843, 5: 0.671989, 10: 0.855585, 50: 0.999229},
    0.95: {1: 0.157670, 5: 0.476300, 10: 0.672422, 50: 0.981277},
}


@pytest.mark.parametrize(
    ("p", "n", "expected"), [(p, n, v) for p, row in IDEAL_SELF_RBO.items() for n, v in row.items()]
)
def test_ideal_self_rbo_table(p, n, expected):
    assert ideal_rbo(n, p) == pytest.approx(expected, abs=5e-7)


@pytest.mark.parametrize("p", [0.5, 0.8, 0.85, 0.9, 0.95, 0.99])
def test_ideal_self_rbo_of_one_item_has_a_closed_form(p):
    # pipeline.md 1.3: ((1 - p) / p) * -ln(1 - p), up to the depth-1000 truncation (p^1000 is below 5e-5 for 0.99)
    closed = (1 - p) / p * -math.log(1 - p)
    truncation = p**1000 / (1 - p**1000)
    assert ideal_rbo(1, p) == pytest.approx(closed, abs=1e-12 + truncation)


@pytest.mark.parametrize(
    ("p", "plain", "normalized"), [(0.80, 0.458505, 0.568320), (0.95, 0.318630, 0.762020)]
)
def test_worked_example_d1_to_d5(p, plain, normalized):
    # pipeline.md 1.3: values {d1:3, d2:2, d3:2, d4:1, d5:0}, run [d3, d9, d1, d4, d2]
    values = {"d1": 3, "d2": 2, "d3": 2, "d4": 1, "d5": 0}
    run = ["d3", "d9", "d1", "d4", "d2"]
    assert compatibility_of_ranking(run, values, p=p, normalize=False) == pytest.approx(plain, abs=5e-7)
    assert compatibility_of_ranking(run, values, p=p) == pytest.approx(normalized, abs=5e-7)


def test_weak_order_example_of_measures_section_9_3():
    # levels a=3, b=2, c=1; pi = [b, a, x, c], pi' = [a, x, b, y, c]; compatibility prefers pi'
    values = {"a": 3, "b": 2, "c": 1}
    pi, pi_prime = ["b", "a", "x", "c"], ["a", "x", "b", "y", "c"]
    assert compatibility_of_ranking(pi, values, p=0.8, normalize=False) == pytest.approx(0.484412, abs=5e-7)
    assert compatibility_of_ranking(pi_prime, values, p=0.8, normalize=False) == pytest.approx(
        0.578812, abs=5e-7
    )
    assert compatibility_of_ranking(pi, values, p=0.8) == pytest.approx(0.666244, abs=5e-7)
    assert compatibility_of_ranking(pi_prime, values, p=0.8) == pytest.approx(0.796079, abs=5e-7)
    assert ideal_rbo(3, 0.8) == pytest.approx(0.727078, abs=5e-7)
    assert compatibility_of_ranking(pi, values, p=0.95, normalize=False) == pytest.approx(0.284219, abs=5e-7)
    assert compatibility_of_ranking(pi_prime, values, p=0.95, normalize=False) == pytest.approx(
        0.299752, abs=5e-7
    )


@pytest.mark.parametrize(("rank", "expected"), [(1, 1.0), (2, 0.502932), (3, 0.304105), (10, 0.025662)])
def test_single_best_item_at_rank_r(rank, expected):
    # measures.md 9.4 (p = 0.8): NRBO of a run with the one relevant item s at rank r
    run = [f"x{i}" for i in range(1, rank)] + ["s"] + ["y1", "y2"]
    assert compatibility_of_ranking(run, {"s": 1}, p=0.8) == pytest.approx(expected, abs=5e-7)


def test_single_best_item_absent_scores_zero():
    assert compatibility_of_ranking(["x", "y"], {"s": 1}, p=0.8) == 0.0


def test_rbo_system_ordering_example_of_rashidi():
    # measures.md 5.2: [s1,s2,s3] vs [s2,s1,s3], phi 0.9, depth 3: 0.171; identical: 0.271; 50 identical: 0.99485
    assert rbo(["s1", "s2", "s3"], ["s2", "s1", "s3"], p=0.9, depth=3) == pytest.approx(0.171, abs=1e-12)
    assert rbo(["s1", "s2", "s3"], ["s1", "s2", "s3"], p=0.9, depth=3) == pytest.approx(0.271, abs=1e-12)
    systems = list(range(50))
    assert rbo(systems, systems, p=0.9) == pytest.approx(1 - 0.9**50, abs=1e-12)


def test_rbo_rejects_p_outside_the_open_unit_interval():
    with pytest.raises(ValueError, match="p must be in"):
        rbo([1], [1], p=1.0)


def test_compatibility_weights_tail_sums():
    tail, total = compatibility_weights(0.5, 3)
    # w = 1, 0.5/2, 0.25/3; tails from d = 1, 2, 3, then 0
    assert tail.tolist() == pytest.approx([1 + 0.25 + 0.25 / 3, 0.25 + 0.25 / 3, 0.25 / 3, 0.0], abs=1e-15)
    assert total == 1.75


def test_p_presets_follow_table_1():
    assert P_PRESETS == {"ndcg@3": 0.80, "ndcg@5": 0.85, "ndcg@10": 0.90, "ndcg@20": 0.95}


def test_compatibility_topic_without_positive_value_scores_zero():
    qrels = Qrels.from_records([("t", "a", 0), ("s", "b", 1)])
    run = Run.from_records([("t", "a", 1), ("s", "b", 1)])
    alignment = align(qrels, rank_run(run, ties=DOCID_ASCENDING, duplicates="keep"))
    assert compatibility(alignment).tolist() == [0.0, 1.0]


def test_depth_cuts_the_sum():
    # with depth 1 only rank 1 counts: the relevant item at rank 2 earns nothing
    assert compatibility_of_ranking(["x", "s"], {"s": 1}, p=0.8, depth=1) == 0.0
    assert compatibility_of_ranking(["s", "x"], {"s": 1}, p=0.8, depth=1) == 1.0


# ---- properties (hypothesis) -------------------------------------------------------------------------------

docids = st.sampled_from([f"d{i}" for i in range(12)])
values = st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0, 2.0, 3.0, 50.0])
scores = st.sampled_from([-2.0, -0.5, 0.0, 0.0, 1.0, 1.5, 3.0])
topics = st.sampled_from(["t1", "t2", "t3"])
qrels_records = st.lists(st.tuples(topics, docids, values), max_size=25)
run_records = st.lists(st.tuples(topics, docids, scores), max_size=30)
ps = st.sampled_from([0.3, 0.8, 0.95])


def write_files(tmp_path, qrels, run, runid="r"):
    qrels_path, run_path = tmp_path / "q.txt", tmp_path / "r.txt"
    qrels_path.write_text("".join(f"{t} Q0 {d} {v}\n" for t, d, v in qrels))
    run_path.write_text("".join(f"{t} Q0 {d} {i} {s} {runid}\n" for i, (t, d, s) in enumerate(run)))
    return qrels_path, run_path


@settings(max_examples=150, deadline=None)
@given(
    qrels=qrels_records, run=run_records, p=ps, depth=st.sampled_from([3, 10, 1000]), normalize=st.booleans()
)
def test_fast_compatibility_equals_the_slow_reference(tmp_path_factory, qrels, run, p, depth, normalize):
    # given arbitrary qrels and runs (ties, negatives, duplicates, missing topics on either side)
    qrels_path, run_path = write_files(tmp_path_factory.mktemp("case"), qrels, run)
    # when both implementations score them
    expected = compat_oracle.compatibility_rows(qrels_path, run_path, p=p, normalize=normalize, depth=depth)
    options = EvaluationOptions(depth=depth, normalize=normalize)
    (scores,) = evaluate_run(
        Qrels.from_records(qrels), Run.from_records(run, runid="r"), [parse_measure(f"compat@{p}")], options
    )
    # then the topics, their order and the values agree
    assert scores.topics == [topic for _, topic, _ in expected[:-1]]
    assert scores.values.tolist() == pytest.approx([v for _, _, v in expected[:-1]], abs=1e-12)
    assert scores.mean == pytest.approx(expected[-1][2], abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(
    levels=st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=1, max_size=30),
    p=ps,
    noise=st.lists(st.integers(0, 5), max_size=10),
)
def test_an_ideal_run_scores_one(levels, p, noise):
    # given judged items with levels, and a run listing them level by level (any order inside a level) plus junk
    values = {f"d{i}": v for i, v in enumerate(levels)}
    ideal = sorted(values, key=lambda d: -values[d])
    run = ideal + [f"junk{j}" for j in noise]
    assert compatibility_of_ranking(run, values, p=p) == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(qrels=qrels_records, run=run_records, p=ps, normalize=st.booleans())
def test_compatibility_lies_in_the_unit_interval(qrels, run, p, normalize):
    alignment = align(
        Qrels.from_records(qrels), rank_run(Run.from_records(run), ties=DOCID_ASCENDING, duplicates="keep")
    )
    values = compatibility(alignment, p=p, normalize=normalize)
    assert np.all(values >= 0.0) and np.all(values <= 1.0 + 1e-12)


@settings(max_examples=100, deadline=None)
@given(
    qrels=qrels_records,
    run=st.lists(st.tuples(topics, docids), max_size=30, unique=True),
    p=ps,
    permutation=st.permutations(list(range(12))),
)
def test_relabelling_docids_changes_nothing(qrels, run, p, permutation):
    # given a run without score ties (ties are broken by docid, which a relabelling may reorder)
    scored = [(t, d, float(len(run) - i)) for i, (t, d) in enumerate(run)]
    rename = {f"d{i}": f"doc{permutation[i]:02d}" for i in range(12)}
    measure = [parse_measure(f"compat@{p}")]
    (before,) = evaluate_run(Qrels.from_records(qrels), Run.from_records(scored), measure)
    (after,) = evaluate_run(
        Qrels.from_records([(t, rename[d], v) for t, d, v in qrels]),
        Run.from_records([(t, rename[d], s) for t, d, s in scored]),
        measure,
    )
    assert after.topics == before.topics
    assert after.values.tolist() == pytest.approx(before.values.tolist(), abs=1e-15)


@settings(max_examples=100, deadline=None)
@given(a=st.lists(docids, max_size=15), b=st.lists(docids, max_size=15), p=ps)
def test_rbo_equals_the_literal_prefix_set_sum(a, b, p):
    depth = max(len(a), len(b))
    literal = (1 - p) * sum(p ** (d - 1) * len(set(a[:d]) & set(b[:d])) / d for d in range(1, depth + 1))
    assert rbo(a, b, p) == pytest.approx(literal, abs=1e-12)

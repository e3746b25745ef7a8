"""Thinning the herd (paper section 4.1 and the three-grade variant of section 7)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.thinning import thin_pool, thin_qrels
from pools.trec import read_qrels


def paper_loop(grades: dict[str, float], k: int) -> set[str]:
    """Section 4.1, transcribed line by line: i <- g; C <- {}; while |C| < k and i > 0: C <- G_i u C; i <- i-1,
    with G_i the items of the i-th distinct positive grade (1 = lowest)."""
    positive = sorted({grade for grade in grades.values() if grade > 0})
    sets = [set()] + [{docid for docid, grade in grades.items() if grade == level} for level in positive]
    i, candidates = len(positive), set()
    while len(candidates) < k and i > 0:
        candidates = sets[i] | candidates
        i = i - 1
    return candidates


def test_thin_pool_adds_whole_grades_until_at_least_k():
    # given two 4s, three 3s, one 2 and non-relevant items
    grades = {"a": 4, "b": 4, "c": 3, "d": 3, "e": 3, "f": 2, "g": 0, "h": -2}
    # then k=2 stops after grade 4, k=3 takes all of grade 3 (5 > k), k=6 everything positive
    assert thin_pool(grades, 2) == {"a": 4, "b": 4}
    assert thin_pool(grades, 3) == {"a": 4, "b": 4, "c": 3, "d": 3, "e": 3}
    assert thin_pool(grades, 6) == {"a": 4, "b": 4, "c": 3, "d": 3, "e": 3, "f": 2}
    assert thin_pool(grades, 100) == {"a": 4, "b": 4, "c": 3, "d": 3, "e": 3, "f": 2}


def test_thin_pool_never_adds_grade_zero_or_below_and_empty_input_gives_empty_pool():
    assert thin_pool({"a": 0, "b": 0.0, "c": -1}, 5) == {}
    assert thin_pool({}, 5) == {}
    assert thin_pool({"a": 3}, 0) == {}


def test_thin_pool_orders_float_grades_and_ignores_gaps():
    assert thin_pool({"a": 0.5, "b": 10, "c": 2.5, "d": 2.5}, 2) == {"b": 10, "c": 2.5, "d": 2.5}


def test_thin_pool_abc_takes_a_then_b_only_when_a_is_short():
    # given a three-grade file coded A=2, B=1, C=0
    grades = {"a1": 2, "a2": 2, "b1": 1, "b2": 1, "c1": 0}
    assert thin_pool(grades, 2, scheme="abc") == {"a1": 2, "a2": 2}
    assert thin_pool(grades, 3, scheme="abc") == {"a1": 2, "a2": 2, "b1": 1, "b2": 1}


def test_thin_pool_abc_on_a_graded_scale_merges_the_answer_grades():
    # given CAsT grades: 2, 3 and 4 "answer the turn" (A), 1 is related (B)
    grades = {"p": 4, "q": 3, "r": 2, "s": 1, "t": 0}
    assert thin_pool(grades, 1, scheme="abc") == {"p": 4, "q": 3, "r": 2}
    assert thin_pool(grades, 4, scheme="abc") == {"p": 4, "q": 3, "r": 2, "s": 1}
    assert thin_pool(grades, 1, scheme="abc", answer_grade=4) == {"p": 4}


def test_thin_pool_rejects_an_unknown_scheme():
    with pytest.raises(ValueError, match="unknown thinning scheme 'binary'"):
        thin_pool({"a": 1}, 1, scheme="binary")


@given(
    grades=st.dictionaries(
        st.text(min_size=1, max_size=3), st.integers(min_value=-1, max_value=5), max_size=30
    ),
    k=st.integers(min_value=0, max_value=12),
)
def test_thin_pool_matches_the_papers_loop(grades, k):
    pool = thin_pool(grades, k)
    assert set(pool) == paper_loop(grades, k)
    assert all(pool[docid] == grades[docid] for docid in pool)


@given(
    grades=st.dictionaries(st.text(min_size=1, max_size=3), st.sampled_from([0, 1, 2]), max_size=30),
    k=st.integers(min_value=0, max_value=12),
)
def test_thin_pool_abc_on_three_grades_is_the_graded_loop_with_g_2(grades, k):
    assert thin_pool(grades, k, scheme="abc") == thin_pool(grades, k)


def test_thin_qrels_leaves_out_topics_without_positive_grades():
    qrels = {"1": {"a": 2, "b": 1}, "2": {"c": 0}}
    assert thin_qrels(qrels, 1) == {"1": {"a": 2}}


def test_thin_qrels_on_cast_reproduces_the_papers_pool(cast_dir):
    # Section 4.1: k=5 gives 2,673 candidates over the 173 judged turns, largest 112 for turn 67_8.
    pools = thin_qrels(read_qrels(cast_dir / "qrels.graded.txt"), 5)
    assert len(pools) == 173
    assert sum(len(pool) for pool in pools.values()) == 2673
    assert max(pools, key=lambda topic_id: len(pools[topic_id])) == "67_8"
    assert len(pools["67_8"]) == 112

"""Lexiprecision: the worked examples of measures.md section 6.2, a slow reading of the algorithm in
measures.md section 2.1, and invariance properties."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from metrics.core.lexiprecision import (
    document_positions,
    lexiprecision,
    lexiprecision_matrix,
    relevant_positions,
)

INF = math.inf


def slow_lexiprecision(f, g, magnitude):
    """measures.md 2.1, loop form: the first recall level where the two vectors differ decides."""
    for a, b in zip(f, g, strict=True):
        if a == INF and b == INF:
            continue
        if a == INF:
            return -1.0 if magnitude == "sgn" else -1.0 / b
        if b == INF:
            return 1.0 if magnitude == "sgn" else 1.0 / a
        if a != b:
            return (1.0 if b > a else -1.0) if magnitude == "sgn" else 1.0 / a - 1.0 / b
    return 0.0


@pytest.mark.parametrize(
    ("f", "g", "sgn", "rr"),
    [
        pytest.param((1, 8, 10, 11, 12), (1, 4, 20, 21, 22), -1.0, -0.125, id="L1-LP-figure-4"),
        pytest.param((1, 4, 20, 21, 22), (1, 8, 10, 11, 12), 1.0, 0.125, id="L1-swapped"),
        pytest.param((2, 3, 7), (1, 9, 10), -1.0, -0.5, id="L2"),
        pytest.param((3, 5, INF), (3, 5, 20), -1.0, -0.05, id="L3"),
        pytest.param((3, INF, INF), (3, INF, INF), 0.0, 0.0, id="L4-tie"),
        pytest.param((4,), (2,), -1.0, -0.25, id="L5-m1"),
    ],
)
def test_lexiprecision_worked_examples(f, g, sgn, rr):
    # given the position vectors of measures.md 6.2 / when compared / then the tabulated values
    assert lexiprecision(np.array(f, float), np.array(g, float), magnitude="sgn") == sgn
    assert lexiprecision(np.array(f, float), np.array(g, float), magnitude="rr") == pytest.approx(
        rr, abs=1e-15
    )


def test_mean_rrlp_over_topics_matches_measures_md():
    # given L2, L3, L4 as three topics / when averaged / then (-0.5 - 0.05 + 0) / 3
    values = [
        lexiprecision(np.array(f, float), np.array(g, float), magnitude="rr")
        for f, g in [((2, 3, 7), (1, 9, 10)), ((3, 5, INF), (3, 5, 20)), ((3, INF, INF), (3, INF, INF))]
    ]
    assert np.mean(values) == pytest.approx(-0.183333, abs=1e-6)


def test_relevant_positions_sorts_and_marks_unretrieved():
    # given a ranking with a duplicate and a relevant item that is not retrieved
    ranking = ["x", "b", "a", "b", "y"]
    # when / then: ranks ascending, duplicate counted once at its first rank, inf for "c"
    assert relevant_positions(ranking, ["a", "c", "b"]).tolist() == [2.0, 3.0, INF]
    assert document_positions(ranking, ["a", "c", "b"]).tolist() == [3.0, INF, 2.0]


def test_lexiprecision_rejects_vectors_of_different_length():
    with pytest.raises(ValueError, match="same length m"):
        lexiprecision(np.array([1.0]), np.array([1.0, 2.0]))


def test_lexiprecision_rejects_unknown_magnitude():
    with pytest.raises(ValueError, match="magnitude"):
        lexiprecision(np.array([1.0]), np.array([1.0]), magnitude="log")


sorted_ranks = st.integers(min_value=1, max_value=6).flatmap(
    lambda m: st.tuples(
        st.lists(st.integers(1, 30), min_size=m, max_size=m, unique=True).map(sorted),
        st.lists(st.integers(1, 30), min_size=m, max_size=m, unique=True).map(sorted),
        st.integers(0, m),
        st.integers(0, m),
    )
)


def _with_unretrieved(ranks, unretrieved):
    # the last `unretrieved` relevant items are not in the ranking
    kept = ranks[: len(ranks) - unretrieved]
    return np.array(kept + [INF] * unretrieved, dtype=float)


@given(sorted_ranks)
def test_lexiprecision_equals_slow_loop_and_is_antisymmetric(case):
    ranks_a, ranks_b, missing_a, missing_b = case
    f, g = _with_unretrieved(ranks_a, missing_a), _with_unretrieved(ranks_b, missing_b)
    for magnitude in ("sgn", "rr"):
        fast = lexiprecision(f, g, magnitude=magnitude)
        assert fast == slow_lexiprecision(f.tolist(), g.tolist(), magnitude)
        assert lexiprecision(g, f, magnitude=magnitude) == -fast
        assert lexiprecision(f, f, magnitude=magnitude) == 0.0
    # sgnLP and rrLP always share their sign, and strict RR_1 preferences are kept (LP section 2)
    assert np.sign(lexiprecision(f, g, magnitude="rr")) == lexiprecision(f, g, magnitude="sgn")
    if 1 / f[0] != 1 / g[0]:
        assert lexiprecision(f, g) == np.sign(1 / f[0] - 1 / g[0])


@given(
    st.lists(st.sampled_from("abcdefghij"), min_size=1, max_size=10, unique=True),
    st.lists(st.sampled_from("abcdefghij"), min_size=1, max_size=10, unique=True),
    st.sets(st.sampled_from("abcdefghij"), min_size=1, max_size=5),
    st.permutations("abcdefghij"),
)
def test_relabelling_docids_changes_nothing(run_a, run_b, relevant, relabelled):
    mapping = dict(zip("abcdefghij", relabelled, strict=True))
    before = lexiprecision(
        relevant_positions(run_a, relevant), relevant_positions(run_b, relevant), magnitude="rr"
    )
    after = lexiprecision(
        relevant_positions([mapping[d] for d in run_a], {mapping[d] for d in relevant}),
        relevant_positions([mapping[d] for d in run_b], {mapping[d] for d in relevant}),
        magnitude="rr",
    )
    assert after == before


@given(st.integers(1, 6), st.integers(2, 5), st.randoms(use_true_random=False))
def test_matrix_equals_pairwise_function(m, runs, random):
    vectors = [
        _with_unretrieved(sorted(random.sample(range(1, 30), m)), random.randint(0, m)) for _ in range(runs)
    ]
    stacked = np.vstack(vectors)
    for magnitude in ("sgn", "rr"):
        matrix = lexiprecision_matrix(stacked, magnitude=magnitude)
        expected = [[lexiprecision(a, b, magnitude=magnitude) for b in vectors] for a in vectors]
        assert matrix.tolist() == expected

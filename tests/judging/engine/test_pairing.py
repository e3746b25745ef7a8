import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judging.engine import pairing_graph


def _degrees(pairs):
    return Counter(item for pair in pairs for item in pair)


def _assert_valid(candidates, pairs, opponents):
    degrees = _degrees(pairs)
    assert all(a != b for a, b in pairs)
    assert len({frozenset(p) for p in pairs}) == len(pairs)
    assert {a for p in pairs for a in p} <= set(candidates)
    assert all(degrees[c] in (opponents, opponents + 1) for c in candidates)
    extra = sum(1 for c in candidates if degrees[c] == opponents + 1)
    assert extra == (len(candidates) * opponents) % 2


@pytest.mark.parametrize("opponents", [1, 2, 3, 6, 7, 8])
def test_every_size_gets_p_opponents_and_at_most_one_p_plus_one(opponents):
    # Given pools of every size from P+1 to 130, when paired, then all degrees are P except exactly one
    # P+1 vertex when |C|*P is odd (the degree sum must be even) and none when it is even.
    rng = random.Random(opponents)
    for n in range(opponents + 1, 131):
        candidates = [f"d{i}" for i in range(n)]
        _assert_valid(candidates, pairing_graph(candidates, opponents, rng), opponents)


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=60),
    opponents=st.integers(min_value=1, max_value=12),
    seed=st.integers(0, 2**32),
)
def test_pairing_graph_property(n, opponents, seed):
    candidates = [f"x{i}" for i in range(n)]
    if n < opponents + 1:
        with pytest.raises(ValueError, match="needs at least"):
            pairing_graph(candidates, opponents, random.Random(seed))
        return
    _assert_valid(candidates, pairing_graph(candidates, opponents, random.Random(seed)), opponents)


def test_odd_product_gives_exactly_one_p_plus_one_candidate_with_p_7():
    # 23 * 7 is odd: 31_1 of the released data had 23 candidates in round 1.
    candidates = [f"c{i:02d}" for i in range(23)]
    pairs = pairing_graph(candidates, 7, random.Random(5))
    assert sorted(Counter(_degrees(pairs).values()).items()) == [(7, 22), (8, 1)]
    assert len(pairs) == (23 * 7 + 1) // 2


def test_smallest_pools_are_complete_graphs():
    # |C| = P+1: every other candidate is an opponent.
    assert len(pairing_graph([str(i) for i in range(8)], 7, random.Random(0))) == 28
    # |C| = P+2 with |C|*P odd: K9 minus a matching of 4 edges, one vertex keeps all 8 opponents.
    pairs = pairing_graph([str(i) for i in range(9)], 7, random.Random(0))
    assert len(pairs) == 32 and sorted(_degrees(pairs).values()) == [7] * 8 + [8]


def test_same_seed_same_graph_and_different_seeds_differ():
    candidates = [f"p{i}" for i in range(40)]
    first = pairing_graph(candidates, 7, random.Random(11))
    assert first == pairing_graph(candidates, 7, random.Random(11))
    assert first != pairing_graph(candidates, 7, random.Random(12))


def test_each_candidate_sees_a_uniformly_random_opponent_set():
    # A label-invariant generator makes a candidate's 7 opponents of 9 uniform: the chance that they
    # include 4 given others is C(5,3)/C(9,7) = 10/36 (the hypergeometric behind the paper's "12%", section 4.3).
    rng = random.Random(2)
    items = [str(i) for i in range(10)]
    trials = 3000
    hits = 0
    for _ in range(trials):
        opponents = {x for p in pairing_graph(items, 7, rng) if "4" in p for x in p} - {"4"}
        hits += {"0", "1", "2", "3"} <= opponents
    expected = 10 / 36
    assert abs(hits / trials - expected) < 4 * (expected * (1 - expected) / trials) ** 0.5


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="needs at least 8 candidates"):
        pairing_graph([str(i) for i in range(7)], 7, random.Random(0))
    with pytest.raises(ValueError, match="distinct"):
        pairing_graph(["a", "a", "b"], 1, random.Random(0))
    with pytest.raises(ValueError, match="at least 1"):
        pairing_graph(["a", "b"], 0, random.Random(0))

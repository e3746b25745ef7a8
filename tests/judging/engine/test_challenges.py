import random
from collections import Counter

from judging.engine import challenge_nonrelevant, challenge_pick, conversation_of


def test_pick_pairs_a_candidate_with_a_nonrelevant_item_expected_to_lose():
    candidate, nonrelevant = challenge_pick(["a", "b"], ["z"], random.Random(0))
    assert candidate in ("a", "b") and nonrelevant == "z"


def test_pick_is_uniform_over_both_lists():
    rng = random.Random(1)
    counts = Counter(challenge_pick(["a", "b", "c"], ["x", "y"], rng) for _ in range(6000))
    assert set(counts) == {(c, n) for c in "abc" for n in "xy"}
    assert all(abs(count - 1000) < 4 * (1000 * 5 / 6) ** 0.5 for count in counts.values())


def test_no_challenge_without_candidates_or_nonrelevant_items():
    assert challenge_pick([], ["x"], random.Random(0)) is None
    assert challenge_pick(["a"], [], random.Random(0)) is None


def test_nonrelevant_come_from_the_topic_then_its_conversation():
    grades = {
        "31_1": {"a": 4, "z1": 0, "z0": 0},
        "31_2": {"b": 3, "y": 2},
        "31_3": {"y": 0, "c": 2},
        "32_1": {"w": 0},
        "40_1": {"d": 1},
    }
    assert challenge_nonrelevant("31_1", grades) == ["z0", "z1"]
    # y is non-relevant for 31_3 but relevant for 31_2 itself, so it is no challenge there
    assert challenge_nonrelevant("31_2", grades) == ["z0", "z1"]
    assert challenge_nonrelevant("31_3", grades) == ["y"]
    assert challenge_nonrelevant("40_1", grades) == []
    assert challenge_nonrelevant("unknown", grades) == []


def test_conversation_of_cast_turn_ids():
    assert [conversation_of(t) for t in ("31_1", "67_8", "a_b_3", "q7")] == ["31", "67", "a_b", "q7"]

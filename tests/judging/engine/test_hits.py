import random
from collections import Counter

import pytest

from judging.engine import hit_layout, pack_hits

PAIRS = [(f"a{i}", f"b{i}") for i in range(10)]
CHALLENGES = [("good0", "bad0"), ("good1", "bad1"), ("good2", "bad2")]


def test_layout_has_every_pair_and_challenge_once_at_positions_0_to_12():
    slots = hit_layout(PAIRS, CHALLENGES, rng=random.Random(0))
    assert [s.position for s in slots] == list(range(13))
    assert sorted((s.source_index, s.is_challenge) for s in slots) == sorted(
        [(i, False) for i in range(10)] + [(i, True) for i in range(3)]
    )
    for slot in slots:
        source = (CHALLENGES if slot.is_challenge else PAIRS)[slot.source_index]
        assert {slot.left, slot.right} == set(source)
    # pairs keep their queue order
    assert [s.source_index for s in slots if not s.is_challenge] == list(range(10))


def test_challenge_positions_and_sides_are_random():
    rng = random.Random(7)
    positions = Counter()
    good_left = 0
    trials = 2600
    for _ in range(trials):
        for slot in hit_layout(PAIRS, CHALLENGES, rng=rng):
            if slot.is_challenge:
                positions[slot.position] += 1
                good_left += slot.left.startswith("good")
    # each of 13 positions holds a challenge with probability 3/13: 600 expected of 2600 HITs
    assert set(positions) == set(range(13))
    assert all(abs(c - 600) < 4 * (2600 * 3 / 13 * 10 / 13) ** 0.5 for c in positions.values())
    assert abs(good_left - 3 * trials / 2) < 4 * (3 * trials / 4) ** 0.5


def test_layout_without_challenges():
    slots = hit_layout(PAIRS[:4], [], rng=random.Random(0))
    assert [s.is_challenge for s in slots] == [False] * 4


def test_pack_hits_chunks_the_queue_with_a_partial_last_hit():
    queue = list(range(23))
    assert pack_hits(queue) == [list(range(10)), list(range(10, 20)), [20, 21, 22]]
    assert pack_hits([]) == []
    assert pack_hits(queue, preferences_per_hit=23) == [queue]
    with pytest.raises(ValueError, match="at least one preference"):
        pack_hits(queue, preferences_per_hit=0)

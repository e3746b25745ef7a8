import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judging.engine import RankedItem, Tournament, tournament_judgment_bound


def _run(tournament, better):
    """Drive a tournament with an assessor that prefers the item for which ``better`` is larger."""
    while (pair := tournament.next_pair()) is not None:
        a, b = pair
        winner, loser = (a, b) if better(a) > better(b) else (b, a)
        tournament.record(winner, loser)
    return tournament


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=130),
    k=st.integers(min_value=1, max_value=12),
    seed=st.integers(0, 2**32),
)
def test_consistent_assessor_gets_the_true_top_k_within_the_papers_bound(n, k, seed):
    # "Assessing top-k preferences", section 4.2: at most |C| + (k-1)*ceil(log2 |C|) judgments with a consistent assessor.
    rng = random.Random(seed)
    items = [f"d{i}" for i in range(n)]
    strength = {item: rng.random() for item in items}
    tournament = _run(Tournament.start(items, k=k, rng=rng), strength.get)
    assert tournament.is_done
    assert tournament.top_k() == sorted(items, key=strength.get, reverse=True)[:k]
    bound = n + (k - 1) * math.ceil(math.log2(n)) if n else 0
    assert tournament.judgment_count <= bound
    # the replay tightens it: n-1 for the champion, at most ceil(log2 n)-1 per later place
    if n:
        assert tournament.judgment_count <= n - 1 + (k - 1) * max(math.ceil(math.log2(n)) - 1, 0)


def test_top_one_takes_exactly_n_minus_one_judgments():
    tournament = _run(Tournament.start([str(i) for i in range(23)], k=1, rng=random.Random(1)), int)
    assert (tournament.top_k(), tournament.judgment_count) == (["22"], 22)


@pytest.mark.parametrize("size", [0, 1])
def test_pools_of_zero_and_one_need_no_judgment(size):
    tournament = Tournament.start(["x"][:size], k=5, rng=random.Random(0))
    assert tournament.is_done and tournament.next_pair() is None
    assert (tournament.top_k(), tournament.judgment_count) == (["x"][:size], 0)


def test_k_larger_than_the_pool_orders_the_whole_pool():
    tournament = _run(Tournament.start(list("cab"), k=5, rng=random.Random(0)), ord)
    assert tournament.top_k() == ["c", "b", "a"]


def test_ranking_numbers_the_placed_items_with_the_judgments_each_won():
    pair = _run(Tournament.start(list("ab"), k=2, rng=random.Random(0)), ord)
    assert pair.ranking() == [RankedItem(docid="b", rank=1, wins=1), RankedItem(docid="a", rank=2, wins=0)]
    whole = _run(Tournament.start(list("cab"), k=5, rng=random.Random(0)), ord)
    ranking = whole.ranking()
    assert [(item.docid, item.rank) for item in ranking] == [("c", 1), ("b", 2), ("a", 3)]
    assert ranking[2].wins == 0 and sum(item.wins for item in ranking) == whole.judgment_count


def test_next_pair_repeats_until_recorded_and_cache_answers_replays():
    tournament = Tournament.start(list("abcd"), k=2, rng=random.Random(0))
    first = tournament.next_pair()
    assert tournament.next_pair() == first
    tournament.record(*first)
    assert tournament.next_pair() != first


def test_resumes_from_json_state_exactly():
    # Given a tournament interrupted halfway and saved as JSON, when resumed in a new object, then it asks
    # the same remaining pairs and ends with the same top-k and judgment count as an uninterrupted one.
    items = [f"p{i:02d}" for i in range(37)]
    strength = {item: (i * 7919) % 101 for i, item in enumerate(items)}
    whole = _run(Tournament.start(items, k=5, rng=random.Random(9)), strength.get)

    partial = Tournament.start(items, k=5, rng=random.Random(9))
    for _ in range(20):
        a, b = partial.next_pair()
        partial.record(*((a, b) if strength[a] > strength[b] else (b, a)))
    resumed = _run(Tournament.from_state(json.loads(json.dumps(partial.to_state()))), strength.get)
    assert resumed.to_state() == whole.to_state()
    assert (resumed.top_k(), resumed.judgment_count) == (whole.top_k(), whole.judgment_count)


def test_record_is_idempotent_and_rejects_contradictions_and_strangers():
    tournament = Tournament.start(list("abc"), k=1, rng=random.Random(0))
    tournament.record("a", "b")
    tournament.record("a", "b")
    assert tournament.judgment_count == 1
    with pytest.raises(ValueError, match="already judged with winner a"):
        tournament.record("b", "a")
    with pytest.raises(ValueError, match="not a pair of two candidates"):
        tournament.record("a", "z")
    with pytest.raises(ValueError, match="unsupported tournament state version"):
        Tournament.from_state({"version": 99, "k": 1, "order": [], "judgments": []})


def test_inconsistent_assessor_still_finishes_without_asking_a_pair_twice():
    rng = random.Random(4)
    tournament = Tournament.start([f"d{i}" for i in range(50)], k=5, rng=rng)
    asked = set()
    while (pair := tournament.next_pair()) is not None:
        assert frozenset(pair) not in asked
        asked.add(frozenset(pair))
        tournament.record(*(pair if rng.random() < 0.5 else pair[::-1]))
    assert len(tournament.top_k()) == 5 and len(set(tournament.top_k())) == 5


def test_bound_reproduces_table_2_arithmetic():
    # "Assessing top-k preferences", Table 2: 2,673 candidates and sum ceil(log2|C|) = 689 give 5,429 for k=5.
    assert tournament_judgment_bound(112, 5) == 112 + 4 * 7
    assert [tournament_judgment_bound(n, 5) for n in (0, 1, 2, 3, 4, 5)] == [0, 1, 6, 11, 12, 17]


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=70),
    k=st.integers(min_value=1, max_value=8),
    seed=st.integers(0, 2**32),
    consistent=st.booleans(),
)
def test_remaining_bound_is_never_exceeded_and_reaches_zero_exactly_when_done(n, k, seed, consistent):
    # Given any assessor, consistent or answering at random
    rng = random.Random(seed)
    items = [f"d{i}" for i in range(n)]
    strength = {item: rng.random() for item in items}
    tournament = Tournament.start(items, k=k, rng=rng)
    bounds = [tournament.remaining_bound()]
    while (pair := tournament.next_pair()) is not None:
        a, b = pair
        prefers_a = strength[a] > strength[b] if consistent else rng.random() < 0.5
        tournament.record(*((a, b) if prefers_a else (b, a)))
        bounds.append(tournament.remaining_bound())
    # then each bound covers the judgments that followed it, and the last is 0
    total = tournament.judgment_count
    assert all(bound >= total - done for done, bound in enumerate(bounds))
    assert bounds[-1] == 0 and all(bound > 0 for bound in bounds[:-1])
    depth = max((n - 1).bit_length() - 1, 0) if n else 0
    assert bounds[0] == (n - 1 + (min(k, n) - 1) * depth if n > 1 else 0)
    assert bounds[0] <= tournament_judgment_bound(n, k)


def test_remaining_bound_by_hand_and_the_items_read():
    # 4 items, bracket (a b)(c d), k=2: 3 matches for the champion, then at most 1 more
    tournament = Tournament(["a", "b", "c", "d"], k=2)
    assert tournament.remaining_bound() == 3 + 1 and tournament.judged_items() == frozenset()
    tournament.record("a", "b")
    assert tournament.remaining_bound() == 2 + 1 and tournament.judged_items() == {"a", "b"}
    tournament.record("c", "d")
    tournament.record("a", "c")  # a placed first; the replay asks b against c
    assert tournament.next_pair() == ("b", "c") and tournament.remaining_bound() == 1
    tournament.record("c", "b")
    assert tournament.is_done and tournament.remaining_bound() == 0 and tournament.target == 2

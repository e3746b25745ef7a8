"""The routing rule of a hybrid campaign: pairs whose items the model puts highest go to people first."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judging.engine.routing import provisional_ranks, route_to_people, routing_order

# Topic t: the model says a > b, a > c, c > d; it tied (b, c) and had no answer for (b, d).
# Wins: a 2, c 1, b 0, d 0 -> competition ranks a 1, c 2, b 3, d 3.
ANSWERS = {
    ("t", "a", "b"): "a",
    ("t", "a", "c"): "a",
    ("t", "c", "d"): "c",
    ("t", "b", "c"): None,
    ("t", "b", "d"): None,
    ("u", "x", "y"): None,
}


def test_provisional_ranks_by_hand():
    assert provisional_ranks(ANSWERS) == {
        ("t", "a"): 1,
        ("t", "c"): 2,
        ("t", "b"): 3,
        ("t", "d"): 3,
        ("u", "x"): 1,
        ("u", "y"): 1,
    }


def test_routing_order_by_hand():
    # (deeper rank, shallower rank, decided?): (u: x, y) (1, 1, no); (a, c) (2, 1, yes); (a, b) (3, 1, yes);
    # (b, c) (3, 2, no) before (c, d) (3, 2, yes); (b, d) (3, 3, no).
    assert routing_order(ANSWERS) == [
        ("u", "x", "y"),
        ("t", "a", "c"),
        ("t", "a", "b"),
        ("t", "b", "c"),
        ("t", "c", "d"),
        ("t", "b", "d"),
    ]


def test_route_to_people_takes_the_longest_prefix_within_the_budget():
    votes = {("u", "x", "y"): 3, ("t", "a", "c"): 1, ("t", "a", "b"): 2}
    cost = lambda key: votes.get(key, 1)  # noqa: E731
    assert route_to_people(ANSWERS, budget=0) == []
    assert route_to_people(ANSWERS, budget=2.5, cost=cost) == []
    assert route_to_people(ANSWERS, budget=4, cost=cost) == [("u", "x", "y"), ("t", "a", "c")]
    # the third pair costs 2 and does not fit in 5: the cheaper pairs after it stay with the model too
    assert route_to_people(ANSWERS, budget=5, cost=cost) == [("u", "x", "y"), ("t", "a", "c")]
    assert len(route_to_people(ANSWERS, budget=100)) == len(ANSWERS)


def test_bad_budget_and_bad_winner_are_errors():
    with pytest.raises(ValueError, match="budget must be non-negative"):
        route_to_people(ANSWERS, budget=-1)
    with pytest.raises(ValueError, match="topic t: winner z is neither a nor b"):
        routing_order({("t", "a", "b"): "z"})


answers_strategy = st.dictionaries(
    st.tuples(st.sampled_from("tu"), st.sampled_from("abcde"), st.sampled_from("abcde")).filter(
        lambda key: key[1] < key[2]
    ),
    st.sampled_from([0, 1, None]),
    max_size=12,
).map(lambda raw: {key: None if side is None else key[1 + side] for key, side in raw.items()})


@given(answers_strategy, st.integers(0, 12), st.integers(0, 12))
def test_a_larger_budget_only_adds_pairs_and_order_ignores_insertion(answers, low, extra):
    smaller = route_to_people(answers, budget=low)
    larger = route_to_people(answers, budget=low + extra)
    assert larger[: len(smaller)] == smaller
    assert routing_order(dict(reversed(list(answers.items())))) == routing_order(answers)
    assert sorted(routing_order(answers)) == sorted(answers)

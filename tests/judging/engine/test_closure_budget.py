"""The closure rounds at a budget (``adaptive.budget_params``): cheaper contender and elimination pairs, a deciding
vote for the first two candidates' evenly split pair, and a topic cut at the budget ranked by its closure state."""

import random
from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judging.engine import AdaptiveParams, AdaptiveState, NoisyOracle, budget_params, simulate_adaptive
from judging.engine.adaptive import (
    ErrorModel,
    adaptive_rank,
    adaptive_round_close,
    adaptive_round_open,
)
from tests.judging.engine.worlds import shuffled_world


def test_budget_params_change_only_the_budget_rules():
    params = AdaptiveParams(k=3, F=4, max_votes=4, confidence=0.9, pairs_per_round=2, max_rounds=7)
    budgeted = budget_params(params)
    budget_rules = {"contender_risk_share", "elimination_risk_share", "elimination_losses", "break_best_ties"}
    for field in fields(AdaptiveParams):
        same = getattr(budgeted, field.name) == getattr(params, field.name)
        assert same != (field.name in budget_rules), field.name
    budgeted.validate()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"contender_risk_share": 0.0}, "contender risk share"),
        ({"elimination_risk_share": 1.5}, "elimination risk share"),
        ({"elimination_losses": 0}, "elimination losses"),
    ],
)
def test_budget_rules_out_of_range_are_refused(change, message):
    with pytest.raises(ValueError, match=message):
        AdaptiveParams(**change).validate()


def test_a_contender_pair_at_a_budget_is_confirmed_by_two_agreeing_votes():
    # given a crowd estimated to err 8% of the time: two agreeing votes carry a log-likelihood ratio of 4.88,
    # short of the tenth of the risk (5.29) and past the fifth (4.60)
    errors = ErrorModel(rate=0.08)
    state = AdaptiveState(topic="t", candidates=("a", "b", "c", "d"))
    votes = [("a", "b", "a", "w1"), ("a", "b", "a", "w2")]
    for params, confirmed in ((AdaptiveParams(k=2), False), (budget_params(AdaptiveParams(k=2)), True)):
        # when the first round closes with them (every pair of a first round is between two contenders)
        closed = adaptive_round_close(state, number=1, stage=1, votes=votes, params=params, errors=errors)
        # then only the budget's rules confirm the pair
        assert (closed.decided.get(("a", "b")) == "a") == confirmed


def _split_top_state():
    # a and b are above c through decisive pairs; their own pair ended 2-2, a tie
    decisive = lambda winner, first: tuple((winner, f"w{first + n}") for n in range(3))  # noqa: E731
    return AdaptiveState(
        topic="t",
        candidates=("a", "b", "c"),
        rounds=3,
        votes={
            ("a", "b"): (("a", "w1"), ("b", "w2"), ("a", "w3"), ("b", "w4")),
            ("a", "c"): decisive("a", 10),
            ("b", "c"): decisive("b", 20),
        },
        decided={("a", "b"): None, ("a", "c"): "a", ("b", "c"): "b"},
        final_stage=True,
    )


def test_the_first_two_candidates_evenly_split_pair_gets_one_deciding_vote_at_a_budget():
    errors = ErrorModel(rate=0.1)
    state = _split_top_state()
    plain = AdaptiveParams(k=2, F=2)
    # without a budget the topic ends with a and b tied first
    ending = adaptive_round_open(state, params=plain, seed=0, errors=errors)
    assert ending.is_final and [(i.docid, i.rank) for i in ending.ranked] == [("a", 1), ("b", 1)]
    # at a budget the split pair is asked once more
    params = budget_params(plain)
    opening = adaptive_round_open(state, params=params, seed=0, errors=errors)
    assert not opening.is_final
    assert [(r.pair, r.votes) for r in opening.requests] == [(("a", "b"), 1)]
    # a worker who judged the pair cannot give that vote
    with pytest.raises(ValueError, match="already judged"):
        adaptive_round_close(
            state, number=4, stage=2, votes=[("a", "b", "b", "w2")], params=params, errors=errors
        )
    # a new worker's vote gives b the majority: the pair stays a tie, b is first on its share
    closed = adaptive_round_close(
        state, number=4, stage=2, votes=[("a", "b", "b", "w9")], params=params, errors=errors
    )
    assert closed.decided[("a", "b")] is None and len(closed.votes[("a", "b")]) == 5
    final = adaptive_round_open(closed, params=params, seed=0, errors=errors)
    assert final.is_final and [(i.docid, i.rank) for i in final.ranked] == [("b", 1), ("a", 2)]


def test_a_tie_gets_no_vote_outside_the_budget_rules():
    state = _split_top_state()
    with pytest.raises(ValueError, match="already decided"):
        adaptive_round_close(
            state,
            number=4,
            stage=2,
            votes=[("a", "b", "b", "w9")],
            params=AdaptiveParams(k=2, F=2),
            errors=ErrorModel(rate=0.1),
        )


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 1000), budget=st.integers(100, 900))
def test_closure_rounds_at_a_budget_stop_there_within_the_caps_and_rank_by_their_state(seed, budget):
    # given a crowd reversing 10% of pairs at random on five topics of 12 candidates (the decisive level is
    # within reach, so every budget rule is in play)
    values, pools, nonrelevant = shuffled_world(5, 12, seed)
    oracle = NoisyOracle(values, rng=random.Random(seed), error_rate=0.1)
    params = AdaptiveParams(k=3, max_votes=5)
    # when judged at a budget
    result = simulate_adaptive(
        pools, oracle, params=params, seed=seed, nonrelevant=nonrelevant, max_judgments=budget
    )
    # then it ends within the budget and the caps hold
    assert result.judgments <= budget
    counts = result.vote_counts()
    assert counts["max_votes_per_pair"] <= 5
    assert counts["repeat_pairs_same_worker"] == 0
    # and every topic, finished or cut at the budget, is ranked by its closure state
    for topic, outcome in result.topics.items():
        assert outcome.ranked == adaptive_rank(result.adaptive_states[topic], k=3)
        assert len(outcome.ranked) >= 3

"""The closure rounds at a budget (``adaptive.budget_params``): cheaper contender and elimination pairs, a deciding
vote for the first two candidates' evenly split pair, a candidate's only direct loss asked again when it puts the
candidate out, the ranking by majorities, and a topic cut at the budget ranked by the judge model."""

import random
from dataclasses import fields, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judging.engine import (
    AdaptiveParams,
    AdaptiveState,
    NoisyOracle,
    budget_params,
    closure_cut_fit,
    closure_cut_ranking,
    simulate_adaptive,
)
from judging.engine.adaptive import (
    ErrorModel,
    Request,
    adaptive_rank,
    adaptive_round_close,
    adaptive_round_open,
    lone_loss_rechecks,
    open_candidates,
)
from tests.judging.engine.worlds import shuffled_world


def test_budget_params_change_only_the_budget_rules():
    params = AdaptiveParams(k=3, F=4, max_votes=4, confidence=0.9, pairs_per_round=2, max_rounds=7)
    budgeted = budget_params(params)
    budget_rules = {
        "contender_risk_share",
        "elimination_risk_share",
        "elimination_losses",
        "break_best_ties",
        "contender_wins",
        "recheck_lone_losses",
        "verify_every_top_pair",
        "rank_by_majorities",
        "verify_first_at_crowd_rate",
        "verify_load_bearing_only",
        "verify_next_out",
        "one_vote_below_first",
    }
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
        ({"contender_wins": -1}, "contender wins"),
    ],
)
def test_budget_rules_out_of_range_are_refused(change, message):
    with pytest.raises(ValueError, match=message):
        AdaptiveParams(**change).validate()


def test_a_contender_pair_at_a_budget_is_confirmed_by_two_agreeing_votes():
    # given a crowd estimated to err 8% of the time: two agreeing votes carry a log-likelihood ratio of 4.88,
    # short of the tenth of the risk (5.29) and past the fifth (4.60); a and b have each won a pair, so theirs
    # is a contender pair under either rule
    errors = ErrorModel(rate=0.08)
    decisive = lambda winner, first: tuple((winner, f"w{first + n}") for n in range(3))  # noqa: E731
    state = AdaptiveState(
        topic="t",
        candidates=("a", "b", "c", "d"),
        rounds=1,
        votes={("a", "c"): decisive("a", 10), ("b", "d"): decisive("b", 20)},
        decided={("a", "c"): "a", ("b", "d"): "b"},
    )
    votes = [("a", "b", "a", "w1"), ("a", "b", "a", "w2")]
    for params, confirmed in ((AdaptiveParams(k=2), False), (budget_params(AdaptiveParams(k=2)), True)):
        # when the next round closes with them
        closed = adaptive_round_close(state, number=2, stage=1, votes=votes, params=params, errors=errors)
        # then only the budget's rules confirm the pair
        assert (closed.decided.get(("a", "b")) == "a") == confirmed


def test_a_first_round_pair_at_a_budget_is_confirmed_at_the_plain_level():
    # given a crowd estimated to err 12% of the time: two agreeing votes carry 3.98, past the plain level (2.94)
    # and short of the fifth of the risk (4.60); in a topic's first round nobody has won yet
    errors = ErrorModel(rate=0.12)
    state = AdaptiveState(topic="t", candidates=("a", "b", "c", "d", "e", "f"))
    votes = [("a", "b", "a", "w1"), ("a", "b", "a", "w2")]
    for params, confirmed in ((AdaptiveParams(k=2), False), (budget_params(AdaptiveParams(k=2)), True)):
        closed = adaptive_round_close(state, number=1, stage=1, votes=votes, params=params, errors=errors)
        # then without a budget every first-round pair is held to the contenders' level, at a budget only once
        # both have won
        assert (closed.decided.get(("a", "b")) == "a") == confirmed


def _lone_loss_state():
    # six candidates, k = 2: a and b are above c through decisive pairs, and d lost its only pair, to c, on two
    # votes; so d has three others above it and is out through that one pair
    decisive = lambda winner, first: tuple((winner, f"w{first + n}") for n in range(3))  # noqa: E731
    return AdaptiveState(
        topic="t",
        candidates=("a", "b", "c", "d", "e", "f"),
        rounds=2,
        votes={
            ("a", "c"): decisive("a", 10),
            ("b", "c"): decisive("b", 20),
            ("c", "d"): (("c", "w1"), ("c", "w2")),
        },
        decided={("a", "c"): "a", ("b", "c"): "b", ("c", "d"): "c"},
    )


def test_a_candidate_out_through_its_only_loss_has_it_asked_again_at_a_budget():
    errors = ErrorModel(rate=0.1)
    state = _lone_loss_state()
    plain = AdaptiveParams(k=2, F=2)
    params = budget_params(plain)
    assert lone_loss_rechecks(state, params=params, errors=errors) == [("c", "d")]
    # without a budget the pair is not asked again in a selection round, and a vote on it is refused
    opening = adaptive_round_open(state, params=plain, seed=0, errors=errors)
    assert ("c", "d") not in [request.pair for request in opening.requests]
    with pytest.raises(ValueError, match="already decided"):
        adaptive_round_close(
            state, number=3, stage=1, votes=[("c", "d", "d", "w9")], params=plain, errors=errors
        )
    # at a budget it is asked again with the selection round's pairs, one vote short of the decisive level
    opening = adaptive_round_open(state, params=params, seed=0, errors=errors)
    assert opening.stage == 1 and Request(pair=("c", "d"), votes=1) in opening.requests
    # a dissenting vote of a new worker leaves the pair short of that level: it stays confirmed and is asked again
    closed = adaptive_round_close(
        state, number=3, stage=1, votes=[("c", "d", "d", "w9")], params=params, errors=errors
    )
    assert closed.decided[("c", "d")] == "c" and lone_loss_rechecks(closed, params=params, errors=errors)
    # a second dissent makes it an even split no vote can settle: a tie, and d is back in
    closed = adaptive_round_close(
        closed, number=4, stage=1, votes=[("c", "d", "d", "w8")], params=params, errors=errors
    )
    assert closed.decided[("c", "d")] is None
    assert "d" in open_candidates(closed, k=2)
    assert lone_loss_rechecks(closed, params=params, errors=errors) == []


def test_a_lone_loss_confirmed_to_the_decisive_level_is_not_asked_again():
    errors = ErrorModel(rate=0.1)
    params = budget_params(AdaptiveParams(k=2, F=2))
    closed = adaptive_round_close(
        _lone_loss_state(), number=3, stage=1, votes=[("c", "d", "c", "w9")], params=params, errors=errors
    )
    assert closed.decided[("c", "d")] == "c"
    assert lone_loss_rechecks(closed, params=params, errors=errors) == []
    # and a candidate with two losses is not a lone loss: d's loss to c, two votes short as before, is not
    # asked again once d has also lost to e
    short = _lone_loss_state()
    two = AdaptiveState(
        topic="t",
        candidates=short.candidates,
        rounds=3,
        votes={**short.votes, ("d", "e"): (("e", "w1"), ("e", "w2"))},
        decided={**short.decided, ("d", "e"): "e"},
    )
    assert lone_loss_rechecks(short, params=params, errors=errors) == [("c", "d")]
    assert lone_loss_rechecks(two, params=params, errors=errors) == []


def test_the_ranking_by_majorities_puts_the_item_that_led_the_runner_up_first():
    # a, b and c are open; a led b 3-2 and c 3-2 (two ties), b beat c through a confirmed pair; by vote shares
    # b scores 0.4 + 1 = 1.4 and a 0.6 + 0.6 = 1.2, by majorities a won both its pairs
    votes = lambda winner, loser, first: tuple(  # noqa: E731
        (w, f"w{first + n}") for n, w in enumerate((winner, loser, winner, loser, winner))
    )
    state = AdaptiveState(
        topic="t",
        candidates=("a", "b", "c"),
        rounds=3,
        votes={
            ("a", "b"): votes("a", "b", 0),
            ("a", "c"): votes("a", "c", 10),
            ("b", "c"): (("b", "w20"),) * 1,
        },
        decided={("a", "b"): None, ("a", "c"): None, ("b", "c"): "b"},
        final_stage=True,
    )
    assert [(i.docid, i.rank) for i in adaptive_rank(state, k=3)] == [("b", 1), ("a", 2), ("c", 3)]
    assert [(i.docid, i.rank) for i in adaptive_rank(state, k=3, by_majorities=True)] == [
        ("a", 1),
        ("b", 2),
        ("c", 3),
    ]


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
def test_closure_rounds_at_a_budget_stop_there_within_the_caps_and_rank_the_cut_topics_by_the_model(
    seed, budget
):
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
    # and every topic is ranked by its closure state or, cut at the budget (or ended by the judge model's rounds,
    # should the crowd be taken for one that errs on close pairs), by the model: exactly k items
    for topic, outcome in result.topics.items():
        if outcome.ranked != adaptive_rank(result.adaptive_states[topic], k=3, by_majorities=True):
            assert [item.rank for item in outcome.ranked] == [1, 2, 3]
        assert len(outcome.ranked) >= 3


def test_a_topic_cut_at_the_budget_in_the_closure_rounds_is_ranked_by_the_judge_model():
    # given five topics of 12 candidates and a crowd reversing 10% of pairs at random, cut at 100 judgments
    values, pools, nonrelevant = shuffled_world(5, 12, 0)
    oracle = NoisyOracle(values, rng=random.Random(0), error_rate=0.1)
    result = simulate_adaptive(
        pools,
        oracle,
        params=AdaptiveParams(k=3, max_votes=5),
        seed=0,
        nonrelevant=nonrelevant,
        max_judgments=100,
    )
    assert result.judgments == 100
    # then every topic, cut in its closure rounds, names the 3 items the model fitted to every vote and
    # challenge holds most likely in the top 3, the most likely best first
    model = closure_cut_fit(
        result.adaptive_states, grades={}, challenges=result.challenge_answers, k=3, seed=0
    )
    assert model.link == "noisy-sorting"
    for topic, outcome in result.topics.items():
        assert outcome.ranked == closure_cut_ranking(model, topic)
        confidence = {item.docid: item for item in model.topics[topic].items}
        named = [item.docid for item in outcome.ranked]
        assert min(confidence[d].p_top_k for d in named) >= max(
            (c.p_top_k for d, c in confidence.items() if d not in named), default=0.0
        )
        assert confidence[named[0]].p_best == max(c.p_best for c in confidence.values()) or (
            max(confidence.values(), key=lambda c: c.p_best).docid not in named
        )
    # (which is not what their closure state would have named)
    assert any(
        outcome.ranked != adaptive_rank(result.adaptive_states[topic], k=3, by_majorities=True)
        for topic, outcome in result.topics.items()
    )


def test_the_verification_of_the_first_item_counts_no_worker_above_the_crowd_at_a_budget():
    # given a topic ended with a over b over c (k = 2), a over b on two votes of workers whose records make each
    # vote weigh more than the crowd's (an estimated 5% against the crowd's 10%): 2 x 2.94 = 5.89 passes the
    # decisive level (5.29), two votes at the crowd's rate (4.39) do not
    errors = ErrorModel(rate=0.1, per_worker={"w1": 0.05, "w2": 0.05})
    decisive = lambda winner, first: tuple((winner, f"w{first + n}") for n in range(3))  # noqa: E731
    state = AdaptiveState(
        topic="t",
        candidates=("a", "b", "c"),
        rounds=3,
        votes={
            ("a", "b"): (("a", "w1"), ("a", "w2")),
            ("a", "c"): decisive("a", 10),
            ("b", "c"): decisive("b", 20),
        },
        decided={("a", "b"): "a", ("a", "c"): "a", ("b", "c"): "b"},
        final_stage=True,
    )
    plain = AdaptiveParams(k=2, F=2)
    # then without a budget the topic ends as it is
    assert adaptive_round_open(state, params=plain, seed=0, errors=errors).is_final
    # and at a budget the pair of the item ranked first is asked once more
    opening = adaptive_round_open(state, params=budget_params(plain), seed=0, errors=errors)
    assert not opening.is_final
    assert [(r.pair, r.votes) for r in opening.requests] == [(("a", "b"), 1)]


def test_a_boundary_pair_its_loser_does_not_need_to_stay_out_is_not_verified_at_a_budget():
    # given a topic (k = 2) ended with a over b (decisive), each of them over c on 2-0 votes (short of the
    # decisive level at 10% reversals), and c over d
    errors = ErrorModel(rate=0.1)
    state = _decided_state(
        {("a", "b"): ("a", 3), ("a", "c"): ("a", 2), ("b", "c"): ("b", 2), ("c", "d"): ("c", 3)},
        candidates=("a", "b", "c", "d"),
        rounds=5,
        final_stage=True,
    )
    plain = AdaptiveParams(k=2, F=2)
    budgeted = budget_params(plain)
    assert sorted(open_candidates(state, k=2)) == ["a", "b"]
    # then c, out with exactly k above it, has both its losses verified without the rule; with it only (b, c):
    # were (a, c) a tie, a would still be above c through b, while were (b, c) a tie, c would have one above it
    assert _pairs_asked(state, replace(budgeted, verify_load_bearing_only=False), errors) == [
        ("a", "c"),
        ("b", "c"),
    ]
    assert _pairs_asked(state, budgeted, errors) == [("b", "c")]


def test_a_candidate_one_further_out_that_won_a_pair_has_its_holding_loss_verified_at_a_budget():
    # given a topic (k = 2) ended with a over b over c, decisive, and d out by a 2-0 loss to c (short of the
    # decisive level at 10% reversals): c is the first candidate out, and d has three others above it, k + 1
    errors = ErrorModel(rate=0.1)
    wins = {("a", "b"): ("a", 3), ("b", "c"): ("b", 3), ("c", "d"): ("c", 2)}
    state = _decided_state(wins, candidates=("a", "b", "c", "d"), rounds=6, final_stage=True)
    budgeted = budget_params(AdaptiveParams(k=2, F=2))
    # then d, which has won nothing, is left out: a candidate that never won is seldom a lost top-k item
    assert _pairs_asked(state, budgeted, errors) == []
    # and once d has beaten f (decisive), the loss that holds it out is asked again, to the decisive level;
    # without the rule it is not, since its winner c is out of the top-k too
    won = _decided_state(
        {**wins, ("d", "f"): ("d", 3)}, candidates=("a", "b", "c", "d", "f"), rounds=6, final_stage=True
    )
    opening = adaptive_round_open(won, params=budgeted, seed=0, errors=errors)
    assert [(r.pair, r.votes) for r in opening.requests] == [(("c", "d"), 1)]
    assert _pairs_asked(won, replace(budgeted, verify_next_out=False), errors) == []
    # and a candidate two further out (e, four above it) that won a pair does not have its 2-0 loss asked
    further = _decided_state(
        {**wins, ("d", "e"): ("d", 2), ("e", "g"): ("e", 3)},
        candidates=("a", "b", "c", "d", "e", "g"),
        rounds=6,
        final_stage=True,
    )
    assert _pairs_asked(further, budgeted, errors) == [("c", "d")]


def test_the_all_pairs_stage_at_a_budget_confirms_only_rank_1_and_orders_the_rest_by_one_vote():
    # given a topic (k = 3) with d out below a, b and c, and a over c: a and b are unbeaten, c is not
    errors = ErrorModel(rate=0.1)
    state = _decided_state(
        {("a", "c"): ("a", 3), ("a", "d"): ("a", 3), ("b", "d"): ("b", 3), ("c", "d"): ("c", 3)},
        candidates=("a", "b", "c", "d"),
        rounds=4,
    )
    plain = AdaptiveParams(k=3, F=3)
    budgeted = budget_params(plain)
    votes = lambda opening: {r.pair: r.votes for r in opening.requests}  # noqa: E731
    # then without the rule both open pairs are asked to be confirmed; with it (b, c), which cannot decide rank 1,
    # gets one vote
    assert votes(
        adaptive_round_open(
            state, params=replace(budgeted, one_vote_below_first=False), seed=0, errors=errors
        )
    ) == {
        ("a", "b"): 3,
        ("b", "c"): 2,
    }
    opening = adaptive_round_open(state, params=budgeted, seed=0, errors=errors)
    assert opening.stage == 2 and votes(opening) == {("a", "b"): 3, ("b", "c"): 1}
    # and once that vote is in, (b, c) is not asked again, though it stays unconfirmed
    after = adaptive_round_close(
        state,
        number=opening.number,
        stage=2,
        votes=[
            ("a", "b", "a", "w40"),
            ("a", "b", "a", "w41"),
            ("a", "b", "a", "w42"),
            ("b", "c", "c", "w43"),
        ],
        params=budgeted,
        errors=errors,
    )
    assert ("b", "c") not in after.decided
    following = adaptive_round_open(after, params=budgeted, seed=0, errors=errors)
    assert ("b", "c") not in votes(following)
    # and the topic ends ranked by it: a first, then c, which led b on that one vote
    assert following.is_final
    assert [item.docid for item in following.ranked] == ["a", "c", "b"]


def _pairs_asked(state: AdaptiveState, params: AdaptiveParams, errors: ErrorModel) -> list:
    """The pairs the topic's next round asks, sorted."""
    return sorted(r.pair for r in adaptive_round_open(state, params=params, seed=0, errors=errors).requests)


def _decided_state(wins: dict, *, candidates: tuple, rounds: int, final_stage: bool = False) -> AdaptiveState:
    """A topic whose every pair in ``wins`` ((a, b) -> (winner, agreeing votes)) is confirmed for its winner on
    that many votes of distinct workers."""
    votes = {
        key: tuple((winner, f"w{10 * n + m}") for m in range(count))
        for n, (key, (winner, count)) in enumerate(sorted(wins.items()))
    }
    decided = {key: winner for key, (winner, _) in wins.items()}
    return AdaptiveState(
        topic="t", candidates=candidates, rounds=rounds, votes=votes, decided=decided, final_stage=final_stage
    )

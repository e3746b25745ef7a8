"""The topic machine that the simulator and the database services both drive."""

import pytest

from judging.engine import (
    CrowdParams,
    PerfectOracle,
    RoundPlan,
    TopicState,
    candidate_order,
    round_rng,
    topic_round_close,
    topic_round_open,
)

PARAMS = CrowdParams()


def drive(state, oracle, *, params=PARAMS, seed=0):
    """Open and close rounds until the machine ranks the pool; returns (ranking, rounds as (stage, pairs))."""
    history = []
    while True:
        opening = topic_round_open(state, params=params, seed=seed)
        if opening.ranked is not None:
            return opening.ranked, history
        outcomes = [
            (winner, b if winner == a else a)
            for a, b in opening.plan.pairs
            for winner in [oracle.prefer(state.topic, a, b)]
        ]
        history.append((opening.plan.stage, opening.plan.pairs))
        closing = topic_round_close(
            state, number=opening.number, plan=opening.plan, outcomes=outcomes, params=params
        )
        if closing.ranked is not None:
            return closing.ranked, history
        state = closing.state


@pytest.mark.parametrize("size", [0, 1])
def test_a_pool_of_at_most_one_is_ranked_at_once(size):
    state = TopicState(topic="t", candidates=tuple(f"d{i}" for i in range(size)))

    opening = topic_round_open(state, params=PARAMS, seed=0)

    assert opening.plan.pairs == [] and opening.number == 1
    assert [item.docid for item in opening.ranked] == [f"d{i}" for i in range(size)]


def test_a_consistent_crowd_gets_the_true_top_k_through_several_stage_1_rounds():
    # Given 40 candidates whose true order is not their docid order
    docids = candidate_order(f"d{i:02d}" for i in range(40))
    values = {"t": {docid: float((i * 17) % 41) for i, docid in enumerate(docids)}}
    oracle = PerfectOracle(values)

    ranked, history = drive(TopicState(topic="t", candidates=tuple(docids)), oracle)

    assert [stage for stage, _ in history][-1] == 2 and sum(stage == 1 for stage, _ in history) >= 2
    assert [item.docid for item in ranked] == oracle.ranking("t", docids)[:5]
    assert [item.rank for item in ranked] == [1, 2, 3, 4, 5]


def test_round_pairs_depend_on_seed_topic_and_round_only():
    state = TopicState(topic="31_1", candidates=tuple(f"d{i:02d}" for i in range(20)), rounds=2)

    first = topic_round_open(state, params=PARAMS, seed=5)
    again = topic_round_open(state, params=PARAMS, seed=5)
    other_topic = topic_round_open(
        TopicState(topic="31_2", candidates=state.candidates, rounds=2), params=PARAMS, seed=5
    )
    other_seed = topic_round_open(state, params=PARAMS, seed=6)

    assert first.number == 3 and first.plan == again.plan
    assert first.plan.pairs != other_topic.plan.pairs and first.plan.pairs != other_seed.plan.pairs
    assert (
        round_rng(seed=5, topic_id="31_1", number=3).random()
        == round_rng(seed=5, topic_id="31_1", number=3).random()
    )


def test_the_round_cap_forces_stage_2():
    # Given a pool above F and a cap of one stage-1 round
    params = CrowdParams(max_rounds=1, reinstate=True)
    docids = tuple(f"d{i:02d}" for i in range(30))
    oracle = PerfectOracle({"t": {docid: float(i) for i, docid in enumerate(docids)}})
    state = TopicState(topic="t", candidates=docids)
    opening = topic_round_open(state, params=params, seed=1)
    outcomes = [
        (oracle.prefer("t", a, b), b if oracle.prefer("t", a, b) == a else a) for a, b in opening.plan.pairs
    ]

    closing = topic_round_close(state, number=1, plan=opening.plan, outcomes=outcomes, params=params)

    assert closing.stage1 is not None and len(closing.state.candidates) > params.F
    assert closing.state.forced_stage == 2 and closing.state.rounds == 1
    assert topic_round_open(closing.state, params=params, seed=1).plan.stage == 2


def test_closing_with_outcomes_that_do_not_match_the_pairs_raises():
    state = TopicState(topic="t", candidates=("a", "b", "c"))
    plan = RoundPlan(stage=2, pairs=[("a", "b"), ("a", "c"), ("b", "c")])

    with pytest.raises(ValueError, match="no outcome"):
        topic_round_close(state, number=1, plan=plan, outcomes=[("a", "b")], params=PARAMS)

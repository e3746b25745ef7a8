"""The adaptive mode at a budget: model-chosen rounds for a noisy crowd, the closure rounds for a reliable one."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from judging.engine import (
    AdaptiveParams,
    AdaptiveState,
    ErrorEvidence,
    NoisyOracle,
    PerfectOracle,
    simulate_adaptive,
)
from judging.engine.judges import ItemConfidence, JudgeModel, TopicConfidence, model_round_pairs
from judging.engine.simulator import noise_depends_on_items


def _world(topics, size, seed):
    rng = random.Random(seed)
    values = {}
    for t in range(topics):
        scores = list(range(size))
        rng.shuffle(scores)
        values[f"t{t}"] = {f"d{i:02d}": float(v) for i, v in enumerate(scores)}
    pools = {topic: sorted(v) for topic, v in values.items()}
    nonrelevant = {topic: ["zz"] for topic in values}
    return values, pools, nonrelevant


@settings(max_examples=4)
@given(seed=st.integers(0, 1000), budget=st.integers(40, 400), max_votes=st.integers(2, 4))
def test_a_noisy_crowd_at_a_budget_stops_there_within_the_caps(seed, budget, max_votes):
    # given a crowd erring 25% of the time on four topics of 12 candidates
    values, pools, nonrelevant = _world(4, 12, seed)
    oracle = NoisyOracle(values, rng=random.Random(seed), error_rate=0.25)
    params = AdaptiveParams(k=3, max_votes=max_votes)
    # when judged at a budget
    result = simulate_adaptive(
        pools, oracle, params=params, seed=seed, nonrelevant=nonrelevant, max_judgments=budget
    )
    # then it ends within the budget, every topic has a top-3, and the caps hold
    assert result.judgments <= budget
    assert all(len(outcome.ranked) >= 3 for outcome in result.topics.values())
    counts = result.vote_counts()
    assert counts["max_votes_per_pair"] <= max_votes
    assert counts["repeat_pairs_same_worker"] == 0
    assert sum(len(v) for v in result.judge_votes.values()) == result.judgments


def test_a_crowd_erring_on_close_pairs_spends_the_budget_and_beats_guessing():
    values, pools, nonrelevant = _world(6, 14, 3)
    oracle = NoisyOracle(values, rng=random.Random(3), discriminability=0.3)
    result = simulate_adaptive(
        pools,
        oracle,
        params=AdaptiveParams(k=3),
        seed=3,
        nonrelevant=nonrelevant,
        max_judgments=600,
    )
    assert result.judgments == 600
    found = sum(
        len({i.docid for i in outcome.ranked} & set(PerfectOracle(values).ranking(topic, pools[topic])[:3]))
        for topic, outcome in result.topics.items()
    )
    # 18 true top-3 places; guessing 3 of 14 finds about 3.9
    assert found >= 12


def test_a_reliable_crowd_keeps_the_closure_rounds_under_a_budget():
    values, pools, nonrelevant = _world(5, 15, 1)
    params = AdaptiveParams(k=3)
    free = simulate_adaptive(pools, PerfectOracle(values), params=params, seed=1, nonrelevant=nonrelevant)
    budgeted = simulate_adaptive(
        pools, PerfectOracle(values), params=params, seed=1, nonrelevant=nonrelevant, max_judgments=10_000
    )
    assert budgeted.judgments == free.judgments and budgeted.rounds == free.rounds
    assert {t: o.ranked for t, o in budgeted.topics.items()} == {t: o.ranked for t, o in free.topics.items()}


def _item(docid, score, p_top_k, p_best, sd=0.5):
    return ItemConfidence(docid=docid, score=score, sd=sd, p_top_k=p_top_k, p_best=p_best)


def test_model_round_pairs_keeps_items_pairs_and_votes_within_their_caps():
    doubtful = TopicConfidence(
        topic="a",
        k=2,
        items=tuple(_item(f"d{i}", 1.0 - i * 0.1, 0.5, 0.2) for i in range(6)),
    )
    settled = TopicConfidence(
        topic="b", k=1, items=(_item("x", 3.0, 1.0, 1.0, sd=0.1), _item("y", -3.0, 0.0, 0.0, sd=0.1))
    )
    model = JudgeModel(
        topics={"a": doubtful, "b": settled}, judges={}, crowd_eta=0.8, grade_scale=0.5, prior_sd=1
    )
    chosen = model_round_pairs(
        model, {"a": {("d0", "d1"): 3}}, max_votes=3, confidence=0.95, pairs_per_item=2, limit=5
    )
    assert set(chosen) == {"a"}  # the settled topic gets nothing
    pairs = chosen["a"]
    assert len(pairs) == 5 and ("d0", "d1") not in pairs
    assert all(a < b for a, b in pairs)
    for docid in (f"d{i}" for i in range(6)):
        assert sum(docid in pair for pair in pairs) <= 2


def _evidence(challenges, failures, pair_votes):
    evidence = ErrorEvidence()
    for n in range(challenges):
        evidence.challenge(f"w{n % 7}", failed=n < failures)
    votes = {(f"a{n}", f"b{n}"): tuple(pair) for n, pair in enumerate(pair_votes)}
    candidates = tuple(sorted({d for key in votes for d in key}))
    return evidence, [AdaptiveState(topic="t", candidates=candidates, votes=votes)]


def test_model_rounds_are_for_a_crowd_that_errs_on_close_pairs():
    split = [((f"a{n}", "w1"), (f"b{n}", "w2")) for n in range(150)]
    agreed = [((f"a{n}", "w1"), (f"a{n}", "w2")) for n in range(150, 400)]
    # repeated pairs split far more often than challenges fail: errors on close pairs
    evidence, states = _evidence(1000, 60, split + agreed)
    assert noise_depends_on_items(evidence, states, waves=2)
    # not before the audit rounds have shown the crowd
    assert not noise_depends_on_items(evidence, states, waves=1)
    # a crowd failing challenges as often as it splits pairs reverses at random
    evidence, states = _evidence(1000, 180, split + agreed)
    assert not noise_depends_on_items(evidence, states, waves=2)
    # and a clean crowd keeps the closure rounds
    evidence, states = _evidence(1000, 0, agreed)
    assert not noise_depends_on_items(evidence, states, waves=2)

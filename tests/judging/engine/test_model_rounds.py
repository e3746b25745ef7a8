"""The adaptive mode at a budget: model-chosen rounds for a noisy crowd, the closure rounds for a reliable one."""

import random

import pytest
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
from judging.engine.adaptive import MAX_MODEL_ROUNDS, MODEL_ROUNDS
from judging.engine.judges import (
    ItemConfidence,
    JudgeModel,
    TopicConfidence,
    errs_on_close_pairs,
    model_round_anchors,
    model_round_limit,
    model_round_pairs,
    vote_variance_share,
)
from judging.engine.simulator import MODEL_SWITCH_WAVES, noise_depends_on_items
from tests.judging.engine.worlds import shuffled_world


@settings(max_examples=4)
@given(seed=st.integers(0, 1000), budget=st.integers(40, 400), max_votes=st.integers(2, 4))
def test_a_noisy_crowd_at_a_budget_stops_there_within_the_caps(seed, budget, max_votes):
    # given a crowd erring 25% of the time on four topics of 12 candidates
    values, pools, nonrelevant = shuffled_world(4, 12, seed)
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
    # given twelve topics: enough repeated pairs for the switch to the model rounds to see, beyond chance, that
    # the crowd splits close pairs more often than it fails challenges (six topics never show it within 600)
    values, pools, nonrelevant = shuffled_world(12, 14, 3)
    oracle = NoisyOracle(values, rng=random.Random(3), discriminability=0.3)
    result = simulate_adaptive(
        pools,
        oracle,
        params=AdaptiveParams(k=3),
        seed=3,
        nonrelevant=nonrelevant,
        max_judgments=1200,
    )
    assert result.judgments == 1200
    found = sum(
        len({i.docid for i in outcome.ranked} & set(PerfectOracle(values).ranking(topic, pools[topic])[:3]))
        for topic, outcome in result.topics.items()
    )
    # 36 true top-3 places; guessing 3 of 14 finds about 7.7
    assert found >= 24


def test_a_reliable_crowd_keeps_the_closure_rounds_under_a_budget():
    values, pools, nonrelevant = shuffled_world(5, 15, 1)
    params = AdaptiveParams(k=3)
    free = simulate_adaptive(pools, PerfectOracle(values), params=params, seed=1, nonrelevant=nonrelevant)
    budgeted = simulate_adaptive(
        pools, PerfectOracle(values), params=params, seed=1, nonrelevant=nonrelevant, max_judgments=10_000
    )
    assert budgeted.judgments == free.judgments and budgeted.rounds == free.rounds
    assert {t: o.ranked for t, o in budgeted.topics.items()} == {t: o.ranked for t, o in free.topics.items()}


def _item(docid, score, p_top_k, p_best, sd=0.5):
    return ItemConfidence(docid=docid, score=score, sd=sd, p_top_k=p_top_k, p_best=p_best)


def _model(*topics):
    """A judge model of these topics' confidences and no judges."""
    return JudgeModel(
        topics={topic.topic: topic for topic in topics}, judges={}, crowd_eta=0.8, grade_scale=0.5, prior_sd=1
    )


def test_model_round_pairs_keeps_items_pairs_and_votes_within_their_caps():
    doubtful = TopicConfidence(
        topic="a",
        k=2,
        items=tuple(_item(f"d{i}", 1.0 - i * 0.1, 0.5, 0.2) for i in range(6)),
    )
    settled = TopicConfidence(
        topic="b", k=1, items=(_item("x", 3.0, 1.0, 1.0, sd=0.1), _item("y", -3.0, 0.0, 0.0, sd=0.1))
    )
    model = _model(doubtful, settled)
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
    assert noise_depends_on_items(evidence, states, waves=MODEL_SWITCH_WAVES)
    # not before the first wave has shown the crowd
    assert not noise_depends_on_items(evidence, states, waves=MODEL_SWITCH_WAVES - 1)
    # a crowd failing challenges as often as it splits pairs reverses at random
    evidence, states = _evidence(1000, 180, split + agreed)
    assert not noise_depends_on_items(evidence, states, waves=2)
    # and a clean crowd keeps the closure rounds
    evidence, states = _evidence(1000, 0, agreed)
    assert not noise_depends_on_items(evidence, states, waves=2)


def test_the_switch_wants_the_splits_beyond_the_failures_by_chance():
    # given a crowd that reverses at random 10% of the time, whose challenges happened to fail less often than its
    # pairs split: 71 failures in 854 challenges, 299 minority votes in 2,918 (a ratio of 1.45 once the prior is
    # counted in, past ITEM_NOISE_RATIO, but 1.8 standard errors of the two rates)
    split = [((f"a{n}", "w1"), (f"b{n}", "w2")) for n in range(299)]
    agreed = [((f"a{n}", "w1"), (f"a{n}", "w2")) for n in range(299, 1459)]
    evidence, states = _evidence(854, 71, split + agreed)
    assert errs_on_close_pairs(
        pair_errors=299, pair_answers=2918, challenge_failures=71, challenge_answers=854
    )
    # then it keeps the closure rounds
    assert not noise_depends_on_items(evidence, states, waves=2)
    # while the same split rate against half the failures, 7.0 standard errors apart, switches
    evidence, states = _evidence(854, 35, split + agreed)
    assert noise_depends_on_items(evidence, states, waves=2)


@settings(max_examples=50)
@given(budget=st.integers(0, 30_000), rounds_done=st.integers(0, 20), max_rounds=st.integers(1, 20))
def test_model_round_limits_spread_the_budget_and_end_by_the_last_round(budget, rounds_done, max_rounds):
    # given a budget left after some rounds, when every later round asks its limit in full
    left, limits, round_number = budget, [], rounds_done
    while (limit := model_round_limit(budget_left=left, rounds_done=round_number, max_rounds=max_rounds)) > 0:
        limits.append(limit)
        left -= limit
        round_number += 1
    # then the rounds end by max_rounds, spend the whole budget when any round was left, and stay even
    assert round_number <= max(max_rounds, rounds_done)
    assert sum(limits) == (budget if rounds_done < max_rounds else 0)
    assert max(limits, default=0) - min(limits, default=0) <= 1


def test_a_round_limit_leaves_what_a_short_round_did_not_ask_to_the_rounds_after_it():
    assert model_round_limit(budget_left=9_700, rounds_done=2, max_rounds=15) == 747
    # a round that asked only 100 leaves 9,600 over 12 rounds
    assert model_round_limit(budget_left=9_600, rounds_done=3, max_rounds=15) == 800
    assert model_round_limit(budget_left=9_600, rounds_done=14, max_rounds=15) == 9_600
    assert model_round_limit(budget_left=9_600, rounds_done=15, max_rounds=15) == 0
    assert model_round_limit(budget_left=0, rounds_done=3, max_rounds=15) == 0


def test_model_round_pairs_compare_doubtful_items_with_the_anchors_within_their_caps():
    # given a doubtful topic of 10 items, k = 3: anchors d0 (best), d2 (k-th) and d3 ((k+1)-th)
    items = tuple(_item(f"d{i}", 1.0 - i * 0.1, 0.5, 0.2) for i in range(10))
    model = _model(TopicConfidence(topic="a", k=3, items=items))
    assert model_round_anchors(model.topics["a"]) == ["d0", "d2", "d3"]
    # when a round is chosen with anchors in at most 4 pairs and other items in at most 1
    chosen = model_round_pairs(
        model, {}, max_votes=5, confidence=0.95, pairs_per_item=1, anchor_pairs=4, limit=100
    )
    pairs = chosen["a"]
    # then every pair holds an anchor, the anchors hold at most 4 pairs and the others at most 1
    assert all({"d0", "d2", "d3"} & set(pair) for pair in pairs)
    for docid in (f"d{i}" for i in range(10)):
        assert sum(docid in pair for pair in pairs) <= (4 if docid in {"d0", "d2", "d3"} else 1)
    # and the anchors' places are all taken (12 places, 2 for each pair of two anchors)
    assert sum(2 if set(pair) <= {"d0", "d2", "d3"} else 1 for pair in pairs) == 12


def test_the_best_doubt_weight_sends_pairs_to_rank_one():
    # given a topic sure of its top-3 (k = 3) but not of its best
    items = (
        _item("a", 2.0, 1.0, 0.7),
        _item("b", 1.9, 1.0, 0.3),
        _item("c", 1.0, 0.5, 0.0),
        _item("d", 0.9, 0.5, 0.0),
        _item("e", -1.0, 0.0, 0.0),
    )
    model = _model(TopicConfidence(topic="t", k=3, items=items))

    def first(weight):
        return model_round_pairs(model, {}, max_votes=5, confidence=0.95, best_weight=weight, limit=1)["t"]

    # then the boundary pair goes first with doubts weighed alike, the pair for rank 1 when best weighs 3
    assert first(1.0) == [("c", "d")]
    assert first(3.0) == [("a", "b")]


def test_a_pair_pinned_down_by_its_votes_yields_to_an_equally_close_pair_still_loose():
    # given two boundary pairs of a topic (k = 3), both a coin flip and equally doubtful, one (c, d) pinned down
    # by many votes (small posterior sd) and one (e, f) hardly judged
    items = (
        _item("a", 3.0, 1.0, 0.5, sd=0.3),
        _item("b", 3.0, 1.0, 0.5, sd=0.3),
        _item("c", 1.0, 0.5, 0.0, sd=0.1),
        _item("d", 1.0, 0.5, 0.0, sd=0.1),
        _item("e", 1.0, 0.5, 0.0, sd=1.0),
        _item("f", 1.0, 0.5, 0.0, sd=1.0),
    )
    model = _model(TopicConfidence(topic="t", k=3, items=items))
    # then one more vote removes a larger share of the loose pair's variance, and that pair goes first among
    # pairs with the k-th anchor c
    assert vote_variance_share(2.0, p=0.5) > 5 * vote_variance_share(0.02, p=0.5)
    assert vote_variance_share(0.0, p=0.5) == 0.0
    chosen = model_round_pairs(model, {}, max_votes=5, confidence=0.95, best_weight=0.0, limit=10)["t"]
    with_c = [pair for pair in chosen if "c" in pair]
    assert with_c[0] in {("c", "e"), ("c", "f")} and ("c", "d") not in with_c[:1]


def test_a_crowd_erring_on_close_pairs_ends_within_the_model_rounds_and_their_limits():
    # given a crowd whose errors depend on the items' closeness, judged at a budget
    # (twelve topics, so that the switch sees it beyond chance)
    values, pools, nonrelevant = shuffled_world(12, 14, 3)
    oracle = NoisyOracle(values, rng=random.Random(3), discriminability=0.4)
    result = simulate_adaptive(
        pools, oracle, params=AdaptiveParams(k=3), seed=3, nonrelevant=nonrelevant, max_judgments=1200
    )
    # then it spends the budget over MODEL_ROUNDS rounds in all, within the caps, which may leave it short:
    # every pair holds one of a topic's 3 anchors, each in at most MODEL_ANCHOR_PAIRS pairs, so a round asks at
    # most 12 x 12 = 144 votes, and the last rounds cannot take up what the earlier ones left
    assert 1100 <= result.judgments <= 1200
    assert result.rounds == MODEL_ROUNDS
    counts = result.vote_counts()
    assert counts["max_votes_per_pair"] <= 5 and counts["repeat_pairs_same_worker"] == 0


def test_the_model_rounds_spread_the_budget_over_the_rounds_asked_for():
    # given the same crowd erring on close pairs, at the same budget, with model rounds ending by round 10 and by
    # round 30 (closure waves included)
    values, pools, nonrelevant = shuffled_world(12, 14, 3)

    def run(model_rounds: int):
        oracle = NoisyOracle(values, rng=random.Random(3), discriminability=0.4)
        params = AdaptiveParams(k=3, model_rounds=model_rounds)
        return simulate_adaptive(
            pools, oracle, params=params, seed=3, nonrelevant=nonrelevant, max_judgments=1200
        )

    fewer, more = run(10), run(30)
    # then each ends by its own last round, within the budget and the caps; the fewer rounds leave budget to the
    # per-round caps, the smaller rounds spend it all
    assert (fewer.rounds, more.rounds) == (10, 30)
    assert fewer.judgments < more.judgments == 1200
    for result in (fewer, more):
        counts = result.vote_counts()
        assert counts["max_votes_per_pair"] <= 5 and counts["repeat_pairs_same_worker"] == 0
    # and a count the closure waves have already reached when the crowd is seen to err on close pairs ends
    # judging there: each topic still open is ranked by the model
    early = run(3)
    assert early.rounds < fewer.rounds and early.judgments < fewer.judgments
    assert all(outcome.ranked for outcome in early.topics.values())


def test_model_rounds_out_of_range_are_refused():
    for model_rounds in (0, MAX_MODEL_ROUNDS + 1):
        with pytest.raises(ValueError, match="model rounds must be in"):
            AdaptiveParams(model_rounds=model_rounds).validate()

"""The adaptive mode's promises (judging/engine/adaptive.py): it always ends, no worker judges a pair twice, no
pair gets more than max votes, a consistent crowd gets the oracle's top-k; and the sequential test itself."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judging.engine import (
    AdaptiveParams,
    AdaptiveState,
    ErrorModel,
    NoisyOracle,
    PerfectOracle,
    adaptive_round_close,
    adaptive_round_open,
    simulate_adaptive,
)
from judging.engine.adaptive import (
    comparison_graph,
    decide,
    decisive_within_reach,
    open_candidates,
    votes_wanted,
)


@st.composite
def campaigns(draw):
    """A few topics with random pools and random oracle values (ties between values included)."""
    topics = {}
    values = {}
    for t in range(draw(st.integers(1, 3))):
        size = draw(st.integers(0, 24))
        pool = [f"d{t}-{i:02d}" for i in range(size)]
        topics[f"t{t}"] = pool
        values[f"t{t}"] = {d: float(draw(st.integers(0, 4))) for d in pool}
    nonrelevant = {topic: [f"{topic}-junk"] for topic in topics}
    for topic in topics:
        values[topic][f"{topic}-junk"] = -1.0
    return topics, values, nonrelevant


def _truth(values, topic, pool, k):
    return PerfectOracle(values).ranking(topic, pool)[:k]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    campaigns(),
    st.integers(1, 4),
    st.integers(0, 2**16),
    st.integers(1, 5),
    st.sampled_from([0.0, 0.1, 0.3]),
)
def test_any_crowd_ends_without_a_repeated_pair_for_a_worker_or_too_many_votes(
    campaign, k, seed, max_votes, error
):
    # Given random pools, oracle values and a judge that reverses each answer with probability 0, 0.1 or 0.3,
    # when the adaptive mode runs, then it ends, every topic of 2+ candidates has a ranking, no worker judged
    # one pair twice and no pair got more than max votes.
    pools, values, nonrelevant = campaign
    oracle = (
        NoisyOracle(values, rng=random.Random(seed), error_rate=error) if error else PerfectOracle(values)
    )
    params = AdaptiveParams(k=k, F=max(k, 5), max_votes=max_votes)
    result = simulate_adaptive(pools, oracle, params=params, seed=seed, nonrelevant=nonrelevant, workers=7)
    counts = result.vote_counts()
    assert counts["repeat_pairs_same_worker"] == 0
    assert counts["max_votes_per_pair"] <= max_votes
    for topic, pool in pools.items():
        ranked = result.topics[topic].ranked
        assert len(ranked) >= min(k, len(pool))
        assert {item.docid for item in ranked} <= set(pool)
    for state in result.adaptive_states.values():
        for votes in state.votes.values():
            assert len({worker for _, worker in votes}) == len(votes) <= max_votes


@settings(max_examples=40, deadline=None, derandomize=True)
@given(campaigns(), st.integers(1, 4), st.integers(0, 2**16))
def test_a_consistent_crowd_gets_the_oracles_top_k(campaign, k, seed):
    # Given random pools and values and a judge that never errs, then every topic's top-k is the oracle's
    # (its docid tie-break included), in the oracle's order, with one vote per pair but the audits' two.
    pools, values, nonrelevant = campaign
    result = simulate_adaptive(
        pools,
        PerfectOracle(values),
        params=AdaptiveParams(k=k, F=max(k, 5)),
        seed=seed,
        nonrelevant=nonrelevant,
    )
    for topic, pool in pools.items():
        ranked = result.topics[topic].ranked
        assert [item.docid for item in ranked] == _truth(values, topic, pool, k)
        assert [item.rank for item in ranked] == list(range(1, len(ranked) + 1))
    assert result.vote_counts()["max_votes_per_pair"] <= 2
    assert result.vote_counts()["pairs_tied"] == 0


def test_the_sequential_test_needs_one_vote_from_a_reliable_crowd_and_a_margin_from_a_noisy_one():
    # Given a pair and the default confidence 0.95, when the crowd errs 0.4% of the time one vote confirms
    # it; when it errs 10% of the time one vote does not, two agreeing votes do, and 1-1 stays open.
    params = AdaptiveParams()
    pair = ("a", "b")
    limits = (2.944, 2.944)  # log(0.95 / 0.05)
    reliable, noisy = ErrorModel(rate=0.004), ErrorModel(rate=0.1)
    assert decide([("a", "w1")], pair, params=params, errors=reliable, limits=limits) == "a"
    assert decide([("b", "w1")], pair, params=params, errors=noisy, limits=limits) is False
    assert decide([("b", "w1"), ("b", "w2")], pair, params=params, errors=noisy, limits=limits) == "b"
    assert decide([("a", "w1"), ("b", "w2")], pair, params=params, errors=noisy, limits=limits) is False
    assert votes_wanted([], pair, params=params, errors=noisy, limits=limits) == 2


def test_a_pair_split_at_max_votes_is_a_tie_and_is_never_asked_again():
    # Given max votes 3 and a crowd erring 10%, a pair voted a, b, a is a tie (no side can reach the margin);
    # a further vote on it is refused.
    params = AdaptiveParams(max_votes=3)
    state = AdaptiveState(topic="t", candidates=tuple(f"d{i}" for i in range(8)))
    votes = [("d0", "d1", "d0", "w1"), ("d0", "d1", "d1", "w2"), ("d0", "d1", "d0", "w3")]
    after = adaptive_round_close(
        state, number=1, stage=1, votes=votes, params=params, errors=ErrorModel(rate=0.1)
    )
    assert after.decided[("d0", "d1")] is None
    with pytest.raises(ValueError, match="already decided"):
        adaptive_round_close(
            after,
            number=2,
            stage=1,
            votes=[("d0", "d1", "d0", "w4")],
            params=params,
            errors=ErrorModel(rate=0.1),
        )


def _final_five(weak_votes):
    """Five candidates d0 > d1 > ... > d4 with every pair confirmed by three agreeing votes (the decisive level
    for a crowd erring 10%), except (d0, d1), confirmed for d0 with ``weak_votes``."""
    docids = tuple(f"d{i}" for i in range(5))
    votes = {
        (a, b): tuple((a, f"w{n}") for n in range(1, 4))
        for x, a in enumerate(docids)
        for b in docids[x + 1 :]
    }
    votes[("d0", "d1")] = tuple(weak_votes)
    return AdaptiveState(
        topic="t", candidates=docids, rounds=3, votes=votes, decided={pair: pair[0] for pair in votes}
    )


def test_a_weakly_confirmed_pair_of_the_top_k_is_asked_again_before_the_topic_ends():
    # Given a crowd erring 10%, the pair deciding the best item confirmed 2-0 (posterior about 0.988, under
    # the decisive level) is asked again in stage 2 to a new worker; a dissenting vote keeps it open, and
    # a 2-3 split at max votes makes it a tie, ranked by its vote shares: d1 (3 of 5) over d0.
    params, errors = AdaptiveParams(), ErrorModel(rate=0.1)
    state = _final_five([("d0", "w1"), ("d0", "w2")])
    opening = adaptive_round_open(state, params=params, seed=1, errors=errors)
    assert (opening.stage, opening.ranked) == (2, None)
    assert [(r.pair, r.votes) for r in opening.requests] == [(("d0", "d1"), 1)]
    state = adaptive_round_close(
        state, number=4, stage=2, votes=[("d0", "d1", "d1", "w3")], params=params, errors=errors
    )
    assert state.decided[("d0", "d1")] == "d0"
    opening = adaptive_round_open(state, params=params, seed=1, errors=errors)
    assert [(r.pair, r.votes) for r in opening.requests] == [(("d0", "d1"), 2)]
    state = adaptive_round_close(
        state,
        number=5,
        stage=2,
        votes=[("d0", "d1", "d1", "w4"), ("d0", "d1", "d1", "w5")],
        params=params,
        errors=errors,
    )
    assert state.decided[("d0", "d1")] is None
    final = adaptive_round_open(state, params=params, seed=1, errors=errors)
    assert [(item.docid, item.rank) for item in final.ranked] == [
        ("d1", 1),
        ("d0", 2),
        ("d2", 3),
        ("d3", 4),
        ("d4", 5),
    ]


def test_a_crowd_too_noisy_for_the_decisive_level_confirms_every_pair_at_the_plain_level():
    # Given the default 5 votes and confidence 0.95, a crowd erring 10% reaches the decisive level 4-1 (one
    # dissent within 5 votes), one erring 15% only 4-0: then a topic's first pairs, which a 10% crowd must
    # confirm 3-0, are confirmed 2-0 like any other, and the best pair confirmed 3-0 is not verified.
    params = AdaptiveParams()
    within, beyond = ErrorModel(rate=0.1), ErrorModel(rate=0.15)
    assert decisive_within_reach(params, within) and not decisive_within_reach(params, beyond)
    assert not decisive_within_reach(AdaptiveParams(max_votes=4), within)
    first = AdaptiveState(topic="t", candidates=tuple(f"d{i}" for i in range(8)))
    opening = adaptive_round_open(first, params=params, seed=1, errors=within)
    assert {request.votes for request in opening.requests} == {3}  # log(199) needs 3 votes of log 9
    votes = [(*request.pair, request.pair[0], f"w{n}") for request in opening.requests for n in range(2)]
    noisy = adaptive_round_close(first, number=1, stage=1, votes=votes, params=params, errors=beyond)
    assert set(noisy.decided) == {request.pair for request in opening.requests}
    careful = adaptive_round_close(first, number=1, stage=1, votes=votes, params=params, errors=within)
    assert not careful.decided
    final = adaptive_round_open(
        _final_five([("d0", "w1"), ("d0", "w2"), ("d0", "w3")]), params=params, seed=1, errors=beyond
    )
    assert final.ranked is not None and final.ranked[0].docid == "d0"


def test_a_cycle_of_confirmed_pairs_puts_none_of_its_candidates_out():
    # Given a noisy crowd's contradiction, a > b > c > a confirmed, and d below c, then with k = 2 a, b and c
    # stay open (none is confirmed better than another) while d has all three above it; with k = 1 the topic
    # still ends with a ranking, by the cycle's votes.
    votes = {("a", "b"): (("a", "w1"),), ("b", "c"): (("b", "w2"),), ("a", "c"): (("c", "w3"),)}
    votes[("c", "d")] = (("c", "w4"),)
    state = AdaptiveState(
        topic="t",
        candidates=("a", "b", "c", "d"),
        rounds=2,
        votes=votes,
        decided={pair: pair_votes[0][0] for pair, pair_votes in votes.items()},
    )
    graph = comparison_graph(state)
    assert [graph.above_count(i) for i in range(4)] == [0, 0, 0, 3]
    assert open_candidates(state, k=2) == ["a", "b", "c"]
    params = AdaptiveParams(k=1, F=5)
    opening = adaptive_round_open(state, params=params, seed=1, errors=ErrorModel(rate=0.004))
    while not opening.is_final:
        answers = [
            (*r.pair, r.pair[0], f"v{opening.number}-{n}") for r in opening.requests for n in range(r.votes)
        ]
        state = adaptive_round_close(
            state,
            number=opening.number,
            stage=opening.stage,
            votes=answers,
            params=params,
            errors=ErrorModel(rate=0.004),
        )
        opening = adaptive_round_open(state, params=params, seed=1, errors=ErrorModel(rate=0.004))
    assert opening.ranked and opening.ranked[0].docid in {"a", "b", "c"}


def test_a_decisively_confirmed_top_k_ends_without_verification_and_stage_1_refuses_confirmed_pairs():
    params, errors = AdaptiveParams(), ErrorModel(rate=0.1)
    state = _final_five([("d0", "w1"), ("d0", "w2"), ("d0", "w3")])
    final = adaptive_round_open(state, params=params, seed=1, errors=errors)
    assert [item.docid for item in final.ranked] == ["d0", "d1", "d2", "d3", "d4"]
    with pytest.raises(ValueError, match="already decided"):
        adaptive_round_close(
            _final_five([("d0", "w1"), ("d0", "w2")]),
            number=4,
            stage=1,
            votes=[("d0", "d1", "d0", "w4")],
            params=params,
            errors=errors,
        )


def test_a_weakly_confirmed_pair_at_the_k_boundary_is_asked_again_and_a_tie_lets_its_loser_back_in():
    # Given d0 > ... > d4 decisively confirmed and d5 out with exactly k = 5 confirmed betters, the last of
    # them (d4 over d5) only 2-0: before the topic ends that pair is asked again; split 2-3 at max votes it
    # is a tie, d5 is open again and, leading that pair on votes, takes the fifth place from d4.
    params, errors = AdaptiveParams(), ErrorModel(rate=0.1)
    five = _final_five([("d0", "w1"), ("d0", "w2"), ("d0", "w3")])
    votes = dict(five.votes)
    for better in ("d0", "d1", "d2", "d3"):
        votes[(better, "d5")] = tuple((better, f"w{n}") for n in range(1, 4))
    votes[("d4", "d5")] = (("d4", "w1"), ("d4", "w2"))
    state = AdaptiveState(
        topic="t",
        candidates=(*five.candidates, "d5"),
        rounds=3,
        votes=votes,
        decided={pair: pair[0] for pair in votes},
    )
    asked = []
    for number, new_votes in (
        (4, [("d4", "d5", "d5", "w3")]),
        (5, [("d4", "d5", "d5", "w4"), ("d4", "d5", "d5", "w5")]),
    ):
        opening = adaptive_round_open(state, params=params, seed=1, errors=errors)
        asked.append([(r.pair, r.votes) for r in opening.requests])
        state = adaptive_round_close(
            state, number=number, stage=opening.stage, votes=new_votes, params=params, errors=errors
        )
    assert asked == [[(("d4", "d5"), 1)], [(("d4", "d5"), 2)]]
    assert state.decided[("d4", "d5")] is None
    final = adaptive_round_open(state, params=params, seed=1, errors=errors)
    assert [item.docid for item in final.ranked] == ["d0", "d1", "d2", "d3", "d5"]


def test_one_worker_cannot_vote_twice_on_a_pair():
    state = AdaptiveState(topic="t", candidates=("a", "b", "c"))
    with pytest.raises(ValueError, match="already judged"):
        adaptive_round_close(
            state,
            number=1,
            stage=1,
            votes=[("a", "b", "a", "w1"), ("b", "a", "b", "w1")],
            params=AdaptiveParams(),
            errors=ErrorModel(rate=0.2),
        )


def test_the_state_survives_its_json_form():
    state = AdaptiveState(
        topic="t",
        candidates=("a", "b", "c"),
        rounds=2,
        votes={("a", "b"): (("a", "w1"), ("b", "w2"))},
        decided={("a", "c"): "c", ("a", "b"): None},
        final_stage=True,
    )
    assert AdaptiveState.from_json("t", ("a", "b", "c"), state.to_json()) == state


def test_a_noisy_crowd_gets_sparser_selection_rounds_than_a_reliable_one():
    # Six confirmed stars (each head above three others): many open candidates, pairs of unequal worth.
    candidates = tuple(f"d{i:02d}" for i in range(24))
    decided = {
        (candidates[i], candidates[j]): candidates[i] for i in range(0, 24, 4) for j in range(i + 1, i + 4)
    }
    state = AdaptiveState(
        topic="t",
        candidates=candidates,
        rounds=3,
        votes={pair: ((winner, "w1"),) for pair, winner in decided.items()},
        decided=decided,
    )
    clean = adaptive_round_open(state, params=AdaptiveParams(), seed=1, errors=ErrorModel(rate=0.004))
    noisy = adaptive_round_open(state, params=AdaptiveParams(), seed=1, errors=ErrorModel(rate=0.1))
    assert clean.stage == noisy.stage == 1
    # A reliable crowd pairs every open candidate with one vote each; a noisy one, whose every confirmed edge
    # costs several votes, asks only the most useful pairs (still keeping an eighth of the candidates busy).
    assert len(clean.requests) == 12 and all(request.votes == 1 for request in clean.requests)
    assert len(candidates) // 8 <= len(noisy.requests) < len(clean.requests)
    assert all(request.votes >= 2 for request in noisy.requests)


def _chain_with_open_tail(tail: int) -> AdaptiveState:
    """d0 > d1 > d2 > d3 confirmed, and ``tail`` candidates each confirmed under d3 only (k - 1 above each, all
    open, unordered among themselves)."""
    head = [f"d{i}" for i in range(4)]
    rest = [f"e{i}" for i in range(tail)]
    decided = {(head[i], head[i + 1]): head[i] for i in range(3)}
    decided.update({(head[3], e): head[3] for e in rest})
    return AdaptiveState(
        topic="t",
        candidates=tuple(head + rest),
        rounds=4,
        votes={pair: ((winner, "w1"),) for pair, winner in decided.items()},
        decided=decided,
    )


def test_a_clean_crowd_asks_the_last_few_unordered_pairs_in_one_all_pairs_round():
    params = AdaptiveParams(k=5, F=5)
    # Seven open candidates (more than F) but only the three pairs among e0-e2 unordered.
    state = _chain_with_open_tail(3)
    clean = adaptive_round_open(state, params=params, seed=1, errors=ErrorModel(rate=0.004))
    assert clean.stage == 2
    assert sorted(request.pair for request in clean.requests) == [("e0", "e1"), ("e0", "e2"), ("e1", "e2")]
    # A noisy crowd keeps its selection rounds there, and with six unordered pairs so does a clean one.
    noisy = adaptive_round_open(state, params=params, seed=1, errors=ErrorModel(rate=0.1))
    assert noisy.stage == 1
    wider = adaptive_round_open(
        _chain_with_open_tail(4), params=params, seed=1, errors=ErrorModel(rate=0.004)
    )
    assert wider.stage == 1


def test_the_second_rounds_audits_wait_for_an_observed_error():
    candidates = tuple(f"d{i:03d}" for i in range(200))
    state = AdaptiveState(topic="t", candidates=candidates, rounds=1)
    params = AdaptiveParams()

    def audited(errors: ErrorModel) -> int:
        opening = adaptive_round_open(state, params=params, seed=3, errors=errors)
        assert opening.stage == 1 and len(opening.requests) == 100
        return sum(request.votes == 2 for request in opening.requests)

    # Nothing seen but the prior: no audit. One worker estimated above the crowd (an error seen): audits again.
    assert audited(ErrorModel()) == 0
    assert audited(ErrorModel(per_worker={"w1": 0.05})) > 0


def test_workers_are_read_at_the_crowds_rate_until_their_records_differ_beyond_chance():
    from judging.engine.adaptive import ErrorEvidence, error_estimate, workers_differ

    # given twenty workers of one crowd reversing 10% of the challenges, drawn at random: some look clean by luck
    rng = random.Random(7)
    evidence = ErrorEvidence()
    for n in range(20 * 180):
        evidence.challenge(f"w{n % 20}", failed=rng.random() < 0.1)
    failures = sorted(failed for _, failed in evidence.challenges.values())
    assert failures[0] < 0.75 * 18 < 1.25 * 18 < failures[-1]
    # then every worker is read at the crowd's rate
    errors = error_estimate(evidence, [])
    assert errors.per_worker == {}
    assert all(errors.of(f"w{n}") == errors.rate for n in range(20))
    # but one worker failing half of its challenges makes the records differ, and each worker has its own rate
    for _ in range(180):
        evidence.challenge("careless", failed=rng.random() < 0.5)
    errors = error_estimate(evidence, [])
    assert errors.of("careless") > 2 * errors.rate
    assert len({round(errors.of(f"w{n}"), 6) for n in range(20)}) > 1
    # the test itself: no error seen, or a single worker, cannot differ
    assert not workers_differ([(100, 0), (100, 0)])
    assert not workers_differ([(100, 30)])
    assert workers_differ([(100, 2), (100, 30)])

"""The per-wave decisions of a budgeted campaign as pure functions (``judging.engine.simulator``), which the
simulator and the database's waves both call."""

import json
import random
from dataclasses import replace

from judging.engine import (
    AdaptiveOpening,
    AdaptiveParams,
    AdaptiveState,
    ErrorEvidence,
    NoisyOracle,
    closure_rounds_end,
    closure_wave_queue,
    judge_model_start_from_json,
    judge_model_start_to_json,
    model_round_close,
    model_round_fit,
    model_round_open,
    model_round_queue,
    model_round_vote_counts,
)
from judging.engine.adaptive import MODEL_ROUNDS, Request


def _opening(*requests):
    return AdaptiveOpening(
        number=1, stage=1, requests=[Request(pair=pair, votes=votes) for pair, votes in requests]
    )


def test_a_wave_asks_every_first_vote_before_any_second_and_is_cut_at_the_budget():
    openings = {
        "t1": _opening((("a", "b"), 2), (("a", "c"), 1)),
        "t2": _opening((("x", "y"), 3)),
    }
    full = closure_wave_queue(openings, budget_left=None)
    assert full == [
        ("t1", ("a", "b")),
        ("t1", ("a", "c")),
        ("t2", ("x", "y")),
        ("t1", ("a", "b")),
        ("t2", ("x", "y")),
        ("t2", ("x", "y")),
    ]
    assert closure_wave_queue(openings, budget_left=4) == full[:4]


def test_closure_rounds_never_end_without_a_budget_and_end_once_it_is_spent():
    states = [AdaptiveState(topic="t", candidates=("a", "b"))]
    evidence = ErrorEvidence()
    assert not closure_rounds_end(evidence, states, judgments=10**6, max_judgments=None, waves=9)
    assert not closure_rounds_end(evidence, states, judgments=99, max_judgments=100, waves=9)
    assert closure_rounds_end(evidence, states, judgments=100, max_judgments=100, waves=0)


def _voted_states(seed):
    """Three topics of eight candidates, every pair asked once or twice by a crowd erring 20% of the time, each
    vote from a worker of its own."""
    rng = random.Random(seed)
    values = {f"t{t}": {f"d{i}": float(rng.random()) for i in range(8)} for t in range(3)}
    oracle = NoisyOracle(values, rng=random.Random(seed), error_rate=0.2)
    states, worker = {}, 0
    for topic, items in values.items():
        docids = sorted(items)
        votes = {}
        for x, a in enumerate(docids):
            for b in docids[x + 1 :]:
                ballots = []
                for _ in range(1 + (x % 2)):
                    worker += 1
                    ballots.append((oracle.prefer(topic, a, b), f"w{worker}"))
                votes[(a, b)] = tuple(ballots)
        states[topic] = AdaptiveState(topic=topic, candidates=tuple(docids), rounds=2, votes=votes)
    grades = {
        topic: {docid: float(i % 3) for i, docid in enumerate(sorted(items))}
        for topic, items in values.items()
    }
    return states, grades


def test_a_refit_from_the_stored_start_gives_the_numbers_of_a_refit_from_the_fit_itself():
    # Given a first fit, and its start stored as JSON (as Campaign.wave_state keeps it) and read back
    states, grades = _voted_states(4)
    challenges = [(f"w{n}", n % 7 != 0) for n in range(1, 40)]
    first = model_round_fit(states, grades=grades, challenges=challenges, k=3, seed=4)
    stored = json.loads(json.dumps(judge_model_start_to_json(first)))

    # When the next round's refit starts from the fit itself and from what was stored
    direct = model_round_fit(states, grades=grades, challenges=challenges, k=3, seed=4, start=first)
    restored = model_round_fit(
        states, grades=grades, challenges=challenges, k=3, seed=4, start=judge_model_start_from_json(stored)
    )

    # Then both give the same scores, probabilities and reliabilities, to the last bit
    assert restored.topics == direct.topics and restored.judges == direct.judges
    assert restored.crowd_eta == direct.crowd_eta


def test_a_model_round_asks_only_open_topics_within_the_budget_and_adds_one_round_of_votes():
    states, grades = _voted_states(5)
    model = model_round_fit(states, grades=grades, challenges=[], k=3, seed=5)
    params = AdaptiveParams(k=3, max_votes=4)
    counts = model_round_vote_counts(states, ["t0", "t2"])

    assert model_round_open(model, counts, budget_left=0, rounds_done=3, params=params) == {}
    # the rounds spent (MODEL_ROUNDS in all), judging stops whatever the budget left
    assert model_round_open(model, counts, budget_left=50, rounds_done=MODEL_ROUNDS, params=params) == {}
    # a campaign given more model rounds goes on, and ends by its own last
    longer = replace(params, model_rounds=MODEL_ROUNDS + 5)
    assert model_round_open(model, counts, budget_left=50, rounds_done=MODEL_ROUNDS, params=longer) != {}
    assert model_round_open(model, counts, budget_left=50, rounds_done=MODEL_ROUNDS + 5, params=longer) == {}
    chosen = model_round_open(model, counts, budget_left=5, rounds_done=MODEL_ROUNDS - 1, params=params)
    queue = model_round_queue(chosen)
    assert 0 < len(queue) <= 5 and {topic for topic, _ in queue} <= {"t0", "t2"}
    assert [topic for topic, _ in queue] == sorted(topic for topic, _ in queue)
    assert all(counts[topic][pair] < params.max_votes for topic, pair in queue)

    topic, (a, b) = queue[0]
    after = model_round_close(states[topic], [(a, b, a, "new-worker")])
    assert after.rounds == states[topic].rounds + 1 and after.decided == states[topic].decided
    assert after.votes[(a, b)] == (*states[topic].votes[(a, b)], (a, "new-worker"))

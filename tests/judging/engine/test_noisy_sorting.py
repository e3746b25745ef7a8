"""The noisy sorting reading of the judge model: a crowd that reverses answers at random, whatever the pair."""

import itertools
import math
import random
from statistics import NormalDist

import numpy as np
import pytest

from judging.engine.judges import (
    ChallengeAnswer,
    JudgeModelParams,
    crowd_reverses_at_random,
    fit_judge_model,
)
from judging.engine.noisy_sorting import noisy_sorting_draws, noisy_sorting_evidence


def draws_for(n, votes, *, prior_mean=None, samples=8000, seed=0):
    """Posterior draws for ``votes`` ``(winner, loser, q)`` over n items."""
    winners = np.asarray([w for w, _, _ in votes], dtype=np.int64)
    losers = np.asarray([lo for _, lo, _ in votes], dtype=np.int64)
    log_odds = np.asarray([math.log(q / (1 - q)) for _, _, q in votes])
    evidence = noisy_sorting_evidence(n, winners, losers, log_odds)
    mean = np.zeros(n) if prior_mean is None else np.asarray(prior_mean, dtype=np.float64)
    return noisy_sorting_draws(evidence, mean, samples=samples, rng=np.random.default_rng(seed))


@pytest.mark.parametrize(
    ("wins", "losses", "expected"),
    [(1, 0, 0.9), (2, 1, 0.9), (3, 0, 0.9**3 / (0.9**3 + 0.1**3)), (0, 2, 0.1**2 / (0.1**2 + 0.9**2))],
)
def test_votes_on_one_pair_read_at_the_judges_accuracy(wins, losses, expected):
    # given two items of equal prior and a judge right 90% of the time whatever the pair
    votes = [(0, 1, 0.9)] * wins + [(1, 0, 0.9)] * losses
    # when sampled
    draws = draws_for(2, votes)
    # then the order's probability is the exact posterior (Bradley-Terry reads 1-0 as about 0.76)
    assert float(np.mean(draws[:, 0] > draws[:, 1])) == pytest.approx(expected, abs=0.015)


def test_the_prior_weighs_as_its_gaussian_says():
    # given item 0's prior mean one sd above item 1's and one vote against it
    prior = NormalDist().cdf(1 / math.sqrt(2))
    draws = draws_for(2, [(1, 0, 0.8)], prior_mean=[1.0, 0.0])
    # then P(0 above 1) = prior odds times the vote's likelihood ratio, normalised
    expected = prior * 0.2 / (prior * 0.2 + (1 - prior) * 0.8)
    assert float(np.mean(draws[:, 0] > draws[:, 1])) == pytest.approx(expected, abs=0.015)
    # and without votes the draws are the prior's
    free = draws_for(2, [], prior_mean=[1.0, 0.0])
    assert float(np.mean(free[:, 0] > free[:, 1])) == pytest.approx(prior, abs=0.015)


def test_four_items_match_the_exact_posterior_over_orders():
    # given four items of equal prior (every order equally likely) and votes that disagree with each other
    votes = [(0, 1, 0.9), (1, 2, 0.9), (2, 0, 0.7), (3, 2, 0.8), (1, 3, 0.6), (0, 3, 0.9)]
    weights = {}
    for order in itertools.permutations(range(4)):
        rank = {item: position for position, item in enumerate(order)}
        weights[order] = math.prod(q if rank[w] < rank[lo] else 1 - q for w, lo, q in votes)
    total = sum(weights.values())
    exact_top2 = [sum(p for order, p in weights.items() if item in order[:2]) / total for item in range(4)]
    exact_best = [sum(p for order, p in weights.items() if order[0] == item) / total for item in range(4)]
    # when sampled
    draws = draws_for(4, votes, samples=8000, seed=3)
    second = -np.partition(-draws, 1, axis=1)[:, 1:2]
    # then every item's probability of the top-2 and of first place is the exact one
    assert np.mean(draws >= second, axis=0) == pytest.approx(exact_top2, abs=0.02)
    assert np.mean(draws >= draws.max(axis=1, keepdims=True), axis=0) == pytest.approx(exact_best, abs=0.02)


AUTO = JudgeModelParams(link="auto")


def strict_world(*, seed, topics, items, error, pairs, repeats, judges=40):
    """Topics of ``items`` in a random strict order; ``pairs`` random pairs a topic, each voted ``repeats``
    times by distinct judges who reverse every answer with probability ``error``, and 50 challenges a judge
    failed with the same probability: (order, votes, challenges)."""
    rng = random.Random(seed)
    names = [f"w{n}" for n in range(judges)]
    order, votes = {}, {}
    for t in range(topics):
        topic = f"t{t}"
        docids = [f"d{i:02d}" for i in range(items)]
        rng.shuffle(docids)
        order[topic] = docids
        rank = {d: n for n, d in enumerate(docids)}
        topic_votes = []
        for _ in range(pairs):
            a, b = rng.sample(docids, 2)
            right = a if rank[a] < rank[b] else b
            for judge in rng.sample(names, repeats):
                wrong = rng.random() < error
                topic_votes.append((a, b, (b if right == a else a) if wrong else right, judge))
        votes[topic] = topic_votes
    challenges = [ChallengeAnswer(judge, rng.random() >= error) for judge in names for _ in range(50)]
    return order, votes, challenges


def test_the_reading_follows_the_crowd():
    order, votes, challenges = strict_world(seed=1, topics=40, items=8, error=0.15, pairs=10, repeats=3)
    # a crowd that splits its repeated pairs as often as it fails challenges reverses at random
    assert crowd_reverses_at_random(votes, challenges)
    # one that splits them but passes every challenge errs on close pairs: Bradley-Terry
    passing = [ChallengeAnswer(judge, True) for judge, _ in challenges]
    assert not crowd_reverses_at_random(votes, passing)
    assert fit_judge_model(votes, challenges=passing, k=3, params=AUTO).link == "bradley-terry"
    # without challenges nothing tells the two apart: Bradley-Terry
    assert not crowd_reverses_at_random(votes, [])
    assert fit_judge_model(votes, k=3, params=AUTO).link == "bradley-terry"
    # and "auto", the default, follows the crowd; a reading can be chosen
    assert fit_judge_model(votes, challenges=challenges, k=3).link == "noisy-sorting"
    chosen = JudgeModelParams(link="bradley-terry")
    assert fit_judge_model(votes, challenges=challenges, k=3, params=chosen).link == "bradley-terry"


def test_a_chain_of_single_votes_reads_as_the_exact_posterior():
    # given a reliable crowd (every challenge passed) that put eight items in a chain, one vote a pair
    docids = [f"d{i}" for i in range(8)]
    votes = {"t": [(docids[n], docids[n + 1], docids[n], f"w{n}") for n in range(7)]}
    challenges = [ChallengeAnswer(f"w{n}", True) for n in range(7) for _ in range(30)]
    # when fitted
    model = fit_judge_model(votes, challenges=challenges, k=3, params=AUTO)
    assert model.link == "noisy-sorting"
    q = (1 + model.crowd_eta) / 2
    # then p_top_k is the exact posterior over the 8! orders (no grades: every order equally likely a priori).
    # Items compared once each are not sure of their place: d7 anywhere above d6 breaks one vote only.
    weights = {}
    for order in itertools.permutations(range(8)):
        rank = {item: position for position, item in enumerate(order)}
        broken = sum(rank[n] > rank[n + 1] for n in range(7))
        weights[order] = q ** (7 - broken) * (1 - q) ** broken
    total = sum(weights.values())
    exact = [sum(w for order, w in weights.items() if item in order[:3]) / total for item in range(8)]
    p = {item.docid: item.p_top_k for item in model.topics["t"].items}
    assert [p[d] for d in docids] == pytest.approx(exact, abs=0.03)
    assert exact[2] < 0.8


def test_an_unknown_link_is_refused():
    with pytest.raises(ValueError, match="link must be one of auto, bradley-terry, noisy-sorting"):
        fit_judge_model({}, params=JudgeModelParams(link="thurstone"))

"""End to end: simulated workers through the services reproduce the pure engine for the same seed, on a
tiny collection and on real CAsT topics."""

import random

import pytest

from judging.engine import (
    CrowdParams,
    NoisyOracle,
    PerfectOracle,
    Tournament,
    crowd_round_plan,
    simulate_crowd,
    simulate_tournament,
    stage1_close,
    stage2_rank,
)
from judging.models import Campaign, Judgment, Pair, Round, TournamentJudgment
from judging.selectors import campaign_preferences, campaign_progress, campaign_ranked
from judging.services import campaign_create, campaign_start
from judging.services.rounds import round_rng
from judging.services.simulation import campaign_simulate, tournament_simulate
from judging.services.tournaments import tournament_rng
from pools.services import collection_create, qrels_import
from pools.thinning import thin_pool
from pools.trec import read_qrels
from tests.judging.factories import collection_with_grades

# Pool sizes 0, 1, k, F, F+1 and one needing several stage-1 rounds; values are a scrambled order so the
# oracle's best is not the first docid.
SIZES = {"1_1": 0, "1_2": 1, "1_3": 5, "1_4": 9, "2_1": 10, "2_2": 37}


def tiny_collection():
    grades, values = {}, {}
    for topic, size in SIZES.items():
        relevant = {f"{topic}-r{i:02d}": 2 for i in range(size)}
        grades[topic] = relevant | {f"{topic}-n{i}": 0 for i in range(3)}
        values[topic] = {docid: float((i * 17) % 41 + 1) for i, docid in enumerate(relevant)}
    return collection_with_grades(grades), grades, values


def engine_crowd(pools, oracle, params, seed):
    """The pure engine run topic by topic with the Django layer's per-(seed, topic, round) random source."""
    ranked, judgments = {}, 0
    for topic, candidates in pools.items():
        number, stage = 0, None
        while True:
            number += 1
            plan = crowd_round_plan(
                candidates,
                params=params,
                rng=round_rng(seed=seed, topic_id=topic, number=number),
                stage=stage,
            )
            outcomes = [(w, b if w == a else a) for a, b in plan.pairs for w in [oracle.prefer(topic, a, b)]]
            judgments += len(outcomes)
            if plan.stage == 2:
                ranked[topic] = stage2_rank(candidates, outcomes, k=params.k)
                break
            result = stage1_close(candidates, plan.pairs, outcomes, params=params, round_number=number)
            candidates, stage = result.survivors, (2 if result.next_stage == 2 else None)
    return ranked, judgments


@pytest.mark.django_db
def test_crowd_campaign_reproduces_the_engine_for_the_same_seed():
    collection, grades, values = tiny_collection()
    oracle = PerfectOracle(values)
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="crowd", seed=2024))

    report = campaign_simulate(campaign=campaign, oracle=oracle, worker_count=3)

    pools = {topic: list(thin_pool(grades[topic], 5)) for topic in SIZES}
    expected, expected_judgments = engine_crowd(pools, oracle, CrowdParams(), 2024)
    assert campaign_ranked(campaign=campaign) == {topic: items for topic, items in expected.items() if items}
    assert Pair.objects.filter(winner__isnull=False).count() == expected_judgments
    assert report.discarded_hits == 0 and report.answers == Judgment.objects.count()
    campaign.refresh_from_db()
    assert campaign.status == "done"
    assert Round.objects.filter(campaign_topic__topic__topic_id="2_2", stage=1).count() >= 2


@pytest.mark.django_db
def test_crowd_campaign_matches_simulate_crowd_where_no_pool_needs_stage_1():
    # Stage 2 uses no randomness, so the engine's own simulator must agree exactly (ranks, wins, judgments)
    collection, grades, values = tiny_collection()
    oracle = PerfectOracle(values)
    small = {topic: list(thin_pool(grades[topic], 5)) for topic in ("1_1", "1_2", "1_3", "1_4")}
    campaign = campaign_create(collection=collection, name="small", seed=1)
    campaign_start(campaign=campaign)
    campaign_simulate(campaign=campaign, oracle=oracle)

    engine = simulate_crowd(small, oracle, params=CrowdParams(), rng=random.Random(1))

    ranked = campaign_ranked(campaign=campaign)
    assert {topic: ranked.get(topic, []) for topic in small} == {
        t: o.ranked for t, o in engine.topics.items()
    }
    stage2 = Pair.objects.filter(
        round__campaign_topic__topic__topic_id__in=small, winner__isnull=False
    ).count()
    assert stage2 == engine.judgments


@pytest.mark.django_db
def test_tournament_campaign_reproduces_the_engine_for_the_same_seed():
    collection, grades, values = tiny_collection()
    oracle = PerfectOracle(values)
    campaign = campaign_start(
        campaign=campaign_create(collection=collection, name="t", mode="tournament", seed=9)
    )

    judgments = tournament_simulate(campaign=campaign, oracle=oracle)

    expected, expected_judgments = {}, 0
    for topic in SIZES:
        tournament = Tournament.start(
            list(thin_pool(grades[topic], 5)), k=5, rng=tournament_rng(seed=9, topic_id=topic)
        )
        while (pair := tournament.next_pair()) is not None:
            winner = oracle.prefer(topic, *pair)
            tournament.record(winner, pair[1] if winner == pair[0] else pair[0])
        expected[topic] = tournament.top_k()
        expected_judgments += tournament.judgment_count
    ranked = campaign_ranked(campaign=campaign)
    assert {topic: [item.docid for item in ranked.get(topic, [])] for topic in SIZES} == expected
    assert judgments == TournamentJudgment.objects.count() == expected_judgments
    # and the same top-k as the engine's simulator, which draws brackets from one shared random source
    engine = simulate_tournament(
        {t: list(thin_pool(grades[t], 5)) for t in SIZES}, oracle, k=5, rng=random.Random(9)
    )
    assert {t: [i.docid for i in o.ranked] for t, o in engine.topics.items()} == expected


@pytest.mark.django_db
def test_a_noisy_crowd_still_finishes_and_excluded_workers_are_replaced():
    collection, grades, values = tiny_collection()
    oracle = NoisyOracle(values, error_rate=0.1, rng=random.Random(3))
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="noisy", seed=3))

    report = campaign_simulate(campaign=campaign, oracle=oracle, worker_count=2)

    progress = campaign_progress(campaign=campaign)
    campaign.refresh_from_db()
    assert campaign.status == "done" and report.discarded_hits > 0
    assert report.workers == 2 + report.discarded_hits
    assert progress["hits"] == {
        "accepted": report.hits - report.discarded_hits,
        "discarded": report.discarded_hits,
    }
    assert (
        progress["paid_hits"] == report.hits
        and progress["pairs_in_hits"] == 0
        and progress["pairs_queued"] == 0
    )


@pytest.mark.django_db
def test_cast_topics_crowd_puts_the_oracles_best_first(cast_dir, tmp_path):
    # Given three CAsT turns with the released preference qrels as a consistent crowd (issue 4 "must show")
    topics = {"31_1", "31_2", "32_1"}
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(
        "".join(
            line + "\n"
            for line in (cast_dir / "qrels.graded.txt").read_text().splitlines()
            if line.split()[0] in topics
        )
    )
    collection = collection_create(name="cast-sample", is_strict=False)
    qrels_import(collection=collection, path=qrels)
    released = read_qrels(cast_dir / "qrels.preference.txt")
    values = {topic: released[topic] for topic in topics}
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="cast", seed=1))

    oracle = PerfectOracle(values)

    campaign_simulate(campaign=campaign, oracle=oracle)

    ranked = campaign_ranked(campaign=campaign)
    assert {topic: ranked[topic][0].docid for topic in topics} == {
        topic: oracle.ranking(topic, values[topic])[0] for topic in topics
    }
    preferences = campaign_preferences(campaign=campaign)
    assert set(preferences) == topics and max(preferences["31_2"].values()) == 50.0
    assert Campaign.objects.get().status == "done"

"""A budgeted adaptive campaign (``max_judgments``) through the database equals ``simulate_adaptive`` with the same
budget and seed: the closure rounds cut at the budget, the switch to the judge model's rounds when the crowd errs on
close pairs, the model rounds, and the final top-k ranked by the model (docs/judge-model.md, "A budget in a live
campaign")."""

import json
from collections import Counter

import pytest
from django.core.management import call_command

from judging.engine import MODEL_ROUNDS, challenge_nonrelevant, simulate_adaptive, simulator
from judging.models import Campaign, Judgment, Pair, Round
from judging.selectors import campaign_preferences, campaign_progress, campaign_ranked
from judging.selectors.confidence import campaign_challenge_answers
from judging.services import campaign_create, campaign_start
from judging.services import waves as waves_service
from judging.services.simulated_crowd import campaign_simulate
from judging.services.topic_state import adaptive_params
from pools.models import Collection
from pools.services import demo_load
from pools.thinning import thin_qrels
from pools.trec import read_qrels
from tests.conftest import DEMO_DIR
from tests.judging.test_pipeline import PairHashNoisyOracle

# A crowd erring 25% of the time on candidate pairs and seed 5 on the demo collection: after two waves its repeated
# pairs disagree far more often than it fails challenges, so the judge model's rounds take over (guarded below), and
# 400 judgments run out in them.
SEED, ERROR_RATE, BUDGET = 5, 0.25, 400


def demo_campaign(name, **options):
    demo_load(directory=DEMO_DIR)
    collection = Collection.objects.get(name="demo")
    return campaign_create(collection=collection, name=name, mode="adaptive", seed=SEED, **options)


def database_votes(campaign):
    """Every counted vote, ``{topic: Counter((left, right, winner))}``."""
    votes: dict[str, Counter] = {}
    for topic, left, right, winner in Pair.objects.filter(
        round__campaign_topic__campaign=campaign, winner__isnull=False
    ).values_list("round__campaign_topic__topic__topic_id", "left__docid", "right__docid", "winner__docid"):
        votes.setdefault(topic, Counter())[(left, right, winner)] += 1
    return votes


def simulated_votes(result):
    return {
        topic: Counter((a, b, winner) for a, b, winner, _ in topic_votes)
        for topic, topic_votes in result.judge_votes.items()
        if topic_votes
    }


def run_both(monkeypatch=None, budget=BUDGET, error_rate=ERROR_RATE, name="demo-budget", model_rounds=None):
    """The budgeted campaign through the services, each HIT to a worker of its own, and the simulator with a new
    worker per HIT (``workers=0``): the judge model weighs each judge by what that judge answered, so both paths
    give it the same judges."""
    graded = read_qrels(DEMO_DIR / "qrels.graded.txt")
    values = read_qrels(DEMO_DIR / "qrels.preference.txt")
    campaign = campaign_start(campaign=demo_campaign(name, max_judgments=budget, model_rounds=model_rounds))
    pools = {topic: sorted(pool) for topic, pool in thin_qrels(graded, campaign.k).items()}
    report = campaign_simulate(
        campaign=campaign,
        oracle=PairHashNoisyOracle(values, pools, error_rate=error_rate, salt=SEED),
        worker_count=200,
    )
    engine = simulate_adaptive(
        pools,
        PairHashNoisyOracle(values, pools, error_rate=error_rate, salt=SEED),
        params=adaptive_params(campaign),
        seed=SEED,
        nonrelevant={topic: challenge_nonrelevant(topic, graded) for topic in pools},
        workers=0,
        max_judgments=budget,
        grades=graded,
    )
    campaign.refresh_from_db()
    return campaign, report, engine, graded


@pytest.mark.django_db
@pytest.mark.parametrize("model_rounds", [None, MODEL_ROUNDS + 10])
def test_a_budgeted_noisy_campaign_equals_the_simulator_through_the_judge_models_rounds(
    monkeypatch, model_rounds
):
    # Given the demo collection, an adaptive campaign with a budget of 400 judgments and a crowd erring 25% of the
    # time on candidate pairs (the same answers for the same pair and repeat whichever path asks it), its model
    # rounds ending by the default round or by a later one
    fits = []
    original_fit = simulator.model_round_fit

    def counted_fit(*args, **kwargs):
        fits.append(kwargs.get("start") is not None)
        return original_fit(*args, **kwargs)

    monkeypatch.setattr(waves_service, "model_round_fit", counted_fit)

    # When simulated workers judge it through the services, and the pure simulator runs it
    campaign, report, engine, graded = run_both(model_rounds=model_rounds)

    # Then (guard) the judge model's rounds ran in the database: fitted more than once, each refit from the last
    assert campaign.wave_state["phase"] == "model" and fits[0] is False and fits.count(True) >= 2
    assert report.discarded_hits == 0
    # and both paths judged the same votes, spent the budget, ran as many rounds per topic and ranked the same top-k
    assert database_votes(campaign) == simulated_votes(engine)
    counted = Pair.objects.filter(round__campaign_topic__campaign=campaign, winner__isnull=False).count()
    assert counted == engine.judgments == BUDGET
    assert campaign.wave_state["waves"] == engine.rounds
    assert engine.rounds == (model_rounds or MODEL_ROUNDS)
    assert {
        topic: Round.objects.filter(
            campaign_topic__campaign=campaign, campaign_topic__topic__topic_id=topic
        ).count()
        for topic in engine.topics
    } == {topic: len(outcome.rounds) for topic, outcome in engine.topics.items()}
    assert campaign.status == "done"
    ranked = campaign_ranked(campaign=campaign)
    assert {topic: ranked.get(topic, []) for topic in engine.topics} == {
        topic: outcome.ranked for topic, outcome in engine.topics.items()
    }
    assert campaign_preferences(campaign=campaign) == engine.preferences(graded)


@pytest.mark.django_db
def test_a_campaign_cut_at_its_budget_in_the_closure_rounds_ranks_its_open_topics_as_the_simulator():
    # Given a crowd that reverses 5% of its answers at random (it keeps the closure rounds) and a budget that
    # runs out before its topics end
    campaign, _, engine, graded = run_both(budget=150, error_rate=0.05, name="demo-budget-closure")

    # Then (guard) the closure rounds were cut with topics still open, never switching to the model's rounds
    assert campaign.wave_state["phase"] == "closure" and engine.judgments == 150
    unbudgeted = simulate_adaptive(
        {topic: list(engine.adaptive_states[topic].candidates) for topic in engine.topics},
        PairHashNoisyOracle(
            read_qrels(DEMO_DIR / "qrels.preference.txt"),
            {topic: sorted(engine.adaptive_states[topic].candidates) for topic in engine.topics},
            error_rate=0.05,
            salt=SEED,
        ),
        params=adaptive_params(campaign),
        seed=SEED,
        workers=0,
    )
    assert unbudgeted.judgments > 150
    # and the database judged the same votes and ranked every topic as the simulator, its open ones by their state
    assert database_votes(campaign) == simulated_votes(engine)
    ranked = campaign_ranked(campaign=campaign)
    assert {topic: ranked.get(topic, []) for topic in engine.topics} == {
        topic: outcome.ranked for topic, outcome in engine.topics.items()
    }
    assert campaign_preferences(campaign=campaign) == engine.preferences(graded)


@pytest.mark.django_db
def test_the_equality_fails_when_the_database_refits_without_the_last_fit(monkeypatch):
    # Given the budgeted campaign whose database path fits the judge model from scratch every model round (a
    # divergence from the simulator, which refits from the last fit)
    original_fit = simulator.model_round_fit
    monkeypatch.setattr(
        waves_service,
        "model_round_fit",
        lambda *args, **kwargs: original_fit(*args, **{**kwargs, "start": None}),
    )

    campaign, _, engine, graded = run_both()

    # Then the two paths differ: the equality test above can see a database that leaves the engine's path
    assert campaign.wave_state["phase"] == "model"
    ranked = campaign_ranked(campaign=campaign)
    assert database_votes(campaign) != simulated_votes(engine) or {
        topic: ranked.get(topic, []) for topic in engine.topics
    } != {topic: outcome.ranked for topic, outcome in engine.topics.items()}


@pytest.mark.django_db
def test_a_budgeted_campaign_never_passes_its_budget_and_no_worker_judges_a_pair_twice():
    # Given a budget short of what the campaign would spend (the simulator cuts its third wave, 19 votes, to 9),
    # judged by three workers who take turns
    graded = read_qrels(DEMO_DIR / "qrels.graded.txt")
    values = read_qrels(DEMO_DIR / "qrels.preference.txt")
    campaign = campaign_start(campaign=demo_campaign("demo-budget-cut", max_judgments=150))
    pools = {topic: sorted(pool) for topic, pool in thin_qrels(graded, campaign.k).items()}

    campaign_simulate(
        campaign=campaign, oracle=PairHashNoisyOracle(values, pools, error_rate=0.1, salt=1), worker_count=3
    )

    # Then it stopped at exactly its budget, every topic finished, and each pair's votes came from distinct workers
    campaign.refresh_from_db()
    assert campaign.status == "done"
    assert Pair.objects.filter(round__campaign_topic__campaign=campaign, winner__isnull=False).count() == 150
    assert not Pair.objects.filter(round__campaign_topic__campaign=campaign, winner__isnull=True).exists()
    workers: dict[tuple, list[int]] = {}
    for topic, left, right, worker in Judgment.objects.filter(
        assignment__campaign=campaign, slot__pair__isnull=False, assignment__status="accepted"
    ).values_list("slot__topic_id", "slot__pair__left_id", "slot__pair__right_id", "assignment__worker_id"):
        workers.setdefault((topic, left, right), []).append(worker)
    assert any(len(judges) > 1 for judges in workers.values())
    assert all(len(set(judges)) == len(judges) for judges in workers.values())
    assert max(len(judges) for judges in workers.values()) <= campaign.max_votes
    # and the status shows the budget beside what was spent
    progress = campaign_progress(campaign=campaign)
    assert (progress.max_judgments, progress.judgments) == (150, 150)


@pytest.mark.django_db
def test_campaign_create_takes_max_judgments_and_model_rounds_and_campaign_status_shows_them(capsys):
    demo_load(directory=DEMO_DIR)
    call_command(
        "campaign_create", "budgeted", "--collection", "demo", "--mode", "adaptive", "--max-judgments", "120",
        "--model-rounds", "30",
    )  # fmt: skip
    assert "max_judgments=120 model_rounds=30" in capsys.readouterr().out
    campaign = Campaign.objects.get(name="budgeted")
    assert (campaign.max_judgments, campaign.model_rounds) == (120, 30)
    campaign_start(campaign=campaign)

    call_command("campaign_status", "budgeted", "--json")
    status = json.loads(capsys.readouterr().out)

    call_command("campaign_status", "budgeted")
    text = capsys.readouterr().out

    queued = Pair.objects.filter(round__campaign_topic__campaign=campaign).count()
    assert (status["max_judgments"], status["judgments"], status["judge_model_rounds"]) == (120, 0, False)
    assert (status["waves"], status["model_rounds"]) == (1, 30)
    assert "judgments: 0 crowd, 0 tournament (budget 120, wave 1)" in text
    assert 0 < queued <= 120


@pytest.mark.django_db
def test_a_budget_is_refused_outside_the_adaptive_mode_and_below_one():
    from judging.services import CampaignConfigError

    demo_load(directory=DEMO_DIR)
    collection = Collection.objects.get(name="demo")
    with pytest.raises(CampaignConfigError, match="adaptive mode"):
        campaign_create(collection=collection, name="crowd-budget", max_judgments=100)
    with pytest.raises(CampaignConfigError, match="at least 1"):
        campaign_create(collection=collection, name="zero-budget", mode="adaptive", max_judgments=0)
    assert not Campaign.objects.exists()


@pytest.mark.django_db
def test_a_budgeted_campaign_of_a_consistent_crowd_exports_what_toppref_simulate_writes(tmp_path, capsys):
    # Given the demo collection judged in waves under a budget it never reaches, by its preference qrels as a
    # consistent crowd
    from config.cli import main
    from judging.engine import PerfectOracle

    values = read_qrels(DEMO_DIR / "qrels.preference.txt")
    campaign = campaign_start(campaign=demo_campaign("demo-budget-cli", max_judgments=10_000))
    campaign_simulate(campaign=campaign, oracle=PerfectOracle(values))

    # When toppref simulate runs the same campaign with the same budget and seed
    out, exported = tmp_path / "simulated.txt", tmp_path / "exported.txt"
    status = main(
        [
            "simulate",
            "--qrels",
            str(DEMO_DIR / "qrels.graded.txt"),
            "--oracle",
            str(DEMO_DIR / "qrels.preference.txt"),
            "--mode",
            "adaptive",
            "--max-judgments",
            "10000",
            "--seed",
            str(SEED),
            "--out",
            str(out),
        ]
    )
    summary = json.loads(capsys.readouterr().out)
    call_command("campaign_export", campaign.name, "--out", str(exported))

    # Then the export is byte for byte the command's qrels, for as many judgments and campaign rounds
    campaign.refresh_from_db()
    assert status == 0 and campaign.status == "done"
    assert exported.read_bytes() == out.read_bytes()
    counted = Pair.objects.filter(round__campaign_topic__campaign=campaign, winner__isnull=False).count()
    assert (counted, campaign.wave_state["waves"]) == (summary["judgments"], summary["rounds"])
    assert campaign.wave_state["phase"] == "closure"


# 40 CAsT topics, 3,000 judgments through the services with the judge model's fits: about a minute on SQLite.
@pytest.mark.cast_scale
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.django_db
def test_a_budgeted_noisy_cast_campaign_equals_the_simulator(cast_dir, tmp_path):
    from pools.services import collection_create, qrels_import

    # Given the first 40 CAsT turns, a budget of 3,000 judgments and a crowd erring 25% of the time on pairs
    graded_all = read_qrels(cast_dir / "qrels.graded.txt")
    topics = sorted(graded_all)[:40]
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(
        "".join(
            f"{topic} Q0 {docid} {grade}\n" for topic in topics for docid, grade in graded_all[topic].items()
        )
    )
    graded = read_qrels(qrels)
    values = {topic: read_qrels(cast_dir / "qrels.preference.txt")[topic] for topic in topics}
    collection = collection_create(name="cast-slice", is_strict=False)
    qrels_import(collection=collection, path=qrels)
    campaign = campaign_start(
        campaign=campaign_create(
            collection=collection, name="cast-budget", mode="adaptive", seed=1, max_judgments=3000
        )
    )
    pools = {topic: sorted(pool) for topic, pool in thin_qrels(graded, campaign.k).items()}
    # the challenges' passages as the campaign's HITs draw them: first those that ordinary pairs show too
    shown = {docid for pool in pools.values() for docid in pool}

    # When the services and the simulator run it, each HIT to a worker of its own
    campaign_simulate(
        campaign=campaign,
        oracle=PairHashNoisyOracle(values, pools, error_rate=0.25, salt=1),
        worker_count=400,
    )
    engine = simulate_adaptive(
        pools,
        PairHashNoisyOracle(values, pools, error_rate=0.25, salt=1),
        params=adaptive_params(campaign),
        seed=1,
        nonrelevant={topic: challenge_nonrelevant(topic, graded, shown=shown) for topic in pools},
        workers=0,
        max_judgments=3000,
        grades=graded,
    )

    # Then (guard) the judge model chose rounds, and both paths judged and ranked the same
    campaign.refresh_from_db()
    assert campaign.wave_state["phase"] == "model" and campaign.status == "done"
    # the judge model of both paths read the same challenge answers: no HIT shows a passage in two challenges
    assert len(campaign_challenge_answers(campaign=campaign)) == len(engine.challenge_answers)
    assert database_votes(campaign) == simulated_votes(engine)
    assert campaign.wave_state["waves"] == engine.rounds
    ranked = campaign_ranked(campaign=campaign)
    assert {topic: ranked.get(topic, []) for topic in engine.topics} == {
        topic: outcome.ranked for topic, outcome in engine.topics.items()
    }


@pytest.mark.django_db
def test_a_budgeted_campaign_whose_crowd_fails_challenges_still_spends_exactly_its_budget():
    # Given a budgeted campaign and a crowd reversing 20% of every answer, challenges included: discarded HITs put
    # their pairs back into the open wave
    import random

    from judging.engine import NoisyOracle

    values = read_qrels(DEMO_DIR / "qrels.preference.txt")
    campaign = campaign_start(campaign=demo_campaign("demo-budget-discards", max_judgments=250))

    report = campaign_simulate(
        campaign=campaign, oracle=NoisyOracle(values, rng=random.Random(2), error_rate=0.2), worker_count=4
    )

    # Then the campaign finishes with exactly its budget counted, nothing left queued or open
    campaign.refresh_from_db()
    progress = campaign_progress(campaign=campaign)
    assert report.discarded_hits > 0 and campaign.status == "done"
    assert (progress.judgments, progress.pairs_queued, progress.pairs_in_hits) == (250, 0, 0)
    assert not Round.objects.filter(campaign_topic__campaign=campaign, closed_at__isnull=True).exists()

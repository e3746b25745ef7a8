"""The campaigns API: list, create, detail with progress, start/pause/resume, topics, judgments, workers."""

import pytest

from judging.models import Campaign, Judgment, Worker, WorkerExclusion
from tests.api.conftest import token_client

pytestmark = pytest.mark.django_db


def test_anonymous_gets_401_and_basic_auth_is_refused(client, researcher, draft_campaign):
    # given no credentials, or HTTP Basic ones
    response = client.get("/api/campaigns/")
    basic = client.get("/api/campaigns/", HTTP_AUTHORIZATION="Basic YWxpY2U6cHctYWxpY2U=")
    # then both are unauthenticated, with a JSON body
    assert response.status_code == 401 and response.json()["detail"]
    assert response["WWW-Authenticate"] == "Token"
    assert basic.status_code == 401


def test_researcher_lists_only_their_campaigns_and_staff_all(
    api, staff, other_researcher, demo_collection, draft_campaign
):
    Campaign.objects.create(collection=demo_collection, name="bobs", owner=other_researcher)
    mine = api.get("/api/campaigns/").json()
    everything = token_client(staff).get("/api/campaigns/").json()
    assert [c["name"] for c in mine["results"]] == ["demo-draft"] and mine["count"] == 1
    assert mine["results"][0]["owner"] == "alice"
    assert sorted(c["name"] for c in everything["results"]) == ["bobs", "demo-draft"]


def test_assessor_and_crowd_user_get_403_on_lists(assessor, crowd_user, draft_campaign):
    for user in (assessor, crowd_user):
        for url in ("/api/campaigns/", "/api/collections/"):
            assert token_client(user).get(url).status_code == 403


def test_create_campaign_sets_the_caller_as_owner(api, researcher, demo_collection):
    response = api.post(
        "/api/campaigns/",
        {"name": "fresh", "collection": "demo", "k": 5, "final_stage_size": 9, "opponents": 7},
        format="json",
    )
    assert response.status_code == 201, response.json()
    campaign = Campaign.objects.get(name="fresh")
    assert campaign.owner == researcher and campaign.status == "draft"
    assert response.json()["owner"] == "alice"


def test_create_an_adaptive_campaign_with_a_judgment_budget(api, demo_collection):
    # Given an adaptive campaign posted with a budget of 120 judgments, and a crowd-mode one posted with a budget
    created = api.post(
        "/api/campaigns/",
        {
            "name": "budgeted",
            "collection": "demo",
            "mode": "adaptive",
            "max_judgments": 120,
            "model_rounds": 30,
        },
        format="json",
    )
    refused = api.post(
        "/api/campaigns/", {"name": "crowd-budget", "collection": "demo", "max_judgments": 120}, format="json"
    )
    # and an adaptive one given model rounds without a budget to spread over them
    no_budget = api.post(
        "/api/campaigns/",
        {"name": "rounds-only", "collection": "demo", "mode": "adaptive", "model_rounds": 30},
        format="json",
    )
    # Then the first is created with its budget, which its detail and its progress carry; the second is refused
    assert created.status_code == 201, created.json()
    assert Campaign.objects.get(name="budgeted").max_judgments == 120
    body = api.get("/api/campaigns/budgeted/").json()
    assert (body["max_judgments"], body["model_rounds"]) == (120, 30)
    assert (body["progress"]["max_judgments"], body["progress"]["judge_model_rounds"]) == (120, False)
    assert (body["progress"]["waves"], body["progress"]["model_rounds"]) == (0, 30)
    assert refused.status_code == 400 and "adaptive mode" in str(refused.json())
    assert not Campaign.objects.filter(name="crowd-budget").exists()
    assert no_budget.status_code == 400 and "give max_judgments too" in str(no_budget.json())
    assert not Campaign.objects.filter(name="rounds-only").exists()


def test_create_campaign_with_bad_parameters_names_the_field_and_creates_nothing(api, demo_collection):
    unknown = api.post("/api/campaigns/", {"name": "x", "collection": "nope"}, format="json")
    broken = api.post(
        "/api/campaigns/",
        {"name": "y", "collection": "demo", "k": 5, "final_stage_size": 9, "opponents": 4},
        format="json",
    )
    assert unknown.status_code == 400 and "collection" in unknown.json()
    assert broken.status_code == 400 and "P" in broken.json()["non_field_errors"][0]
    assert not Campaign.objects.filter(name__in=["x", "y"]).exists()


def test_campaign_detail_has_progress_and_is_404_for_another_researcher(api, outsiders, draft_campaign):
    body = api.get("/api/campaigns/demo-draft/").json()
    assert body["name"] == "demo-draft" and body["status"] == "draft"
    assert body["progress"]["topics_total"] == 0 and body["progress"]["pairs_judged"] == 0
    for client, expected in outsiders:
        assert client.get("/api/campaigns/demo-draft/").status_code == expected
    assert api.get("/api/campaigns/missing/").status_code == 404


def test_an_adaptive_campaigns_detail_has_its_crowd_as_the_engine_sees_it(api, researcher, demo_collection):
    import math
    import random

    from judging.engine import NoisyOracle
    from judging.services import campaign_create, campaign_start
    from judging.services.simulated_crowd import campaign_simulate
    from pools.trec import read_qrels
    from tests.conftest import DEMO_DIR

    # Given an adaptive campaign judged by a crowd reversing 8% of its answers, and a crowd-mode draft
    campaign = campaign_start(
        campaign=campaign_create(
            collection=demo_collection, name="adaptive-api", mode="adaptive", seed=4, owner=researcher
        )
    )
    values = read_qrels(DEMO_DIR / "qrels.preference.txt")
    campaign_simulate(campaign=campaign, oracle=NoisyOracle(values, rng=random.Random(4), error_rate=0.08))
    campaign_create(collection=demo_collection, name="crowd-api", owner=researcher)
    # When their details are read, then the adaptive one carries the estimate, its challenges and the vote
    # leads that confirm a pair (within reach at this rate: the stricter lead is the larger), the other null
    crowd = api.get("/api/campaigns/adaptive-api/").json()["crowd"]
    assert 0 < crowd["error_rate"] < 0.146 and crowd["challenges"] > crowd["challenge_failures"] > 0
    assert crowd["decisive_within_reach"] is True
    vote = math.log((1 - crowd["error_rate"]) / crowd["error_rate"])
    # log(0.95 / 0.05) and, at the risk cut tenfold, log(0.995 / 0.005), in whole votes
    assert crowd["plain_margin"] == math.ceil(math.log(19) / vote)
    assert crowd["decisive_margin"] == math.ceil(math.log(199) / vote) >= crowd["plain_margin"]
    assert crowd["error_percent"] == round(100 * crowd["error_rate"], 1)
    assert api.get("/api/campaigns/crowd-api/").json()["crowd"] is None


def test_start_pause_resume(api, outsiders, draft_campaign, django_capture_on_commit_callbacks):
    for client, expected in outsiders:
        assert client.post("/api/campaigns/demo-draft/start/").status_code == expected
    draft_campaign.refresh_from_db()
    assert draft_campaign.status == "draft"
    with django_capture_on_commit_callbacks(execute=True):
        started = api.post("/api/campaigns/demo-draft/start/")
    assert started.status_code == 200 and started.json()["status"] == "running"
    assert started.json()["progress"]["topics_total"] > 0
    assert api.post("/api/campaigns/demo-draft/pause/").json()["status"] == "paused"
    draft_campaign.refresh_from_db()
    assert draft_campaign.status == "paused"
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post("/api/campaigns/demo-draft/resume/").json()["status"] == "running"
    # resuming a running campaign changes nothing; starting it again neither
    assert api.post("/api/campaigns/demo-draft/resume/").json()["status"] == "running"


def test_pausing_a_draft_is_a_409(api, draft_campaign):
    response = api.post("/api/campaigns/demo-draft/pause/")
    assert response.status_code == 409 and "draft" in response.json()["detail"]


def test_topics_list_state_and_top_k(api, outsiders, finished_campaign):
    body = api.get("/api/campaigns/demo-done/topics/").json()
    assert body["count"] == finished_campaign.campaign_topics.count()
    topic = body["results"][0]
    assert topic["state"] in ("done", "nothing_to_judge")
    if topic["state"] == "done":
        assert [item["rank"] for item in topic["top_k"]] == sorted(item["rank"] for item in topic["top_k"])
        assert len(topic["top_k"]) >= min(5, topic["pool_sizes"][0])
    for client, expected in outsiders:
        assert client.get("/api/campaigns/demo-done/topics/").status_code == expected


def test_judgments_paginated_and_filtered(api, outsiders, finished_campaign):
    total = Judgment.objects.filter(assignment__campaign=finished_campaign).count()
    page = api.get("/api/campaigns/demo-done/judgments/?limit=7").json()
    assert page["count"] == total and len(page["results"]) == 7 and page["next"]
    first = page["results"][0]
    assert set(first) >= {
        "topic",
        "left",
        "right",
        "winner",
        "round",
        "stage",
        "hit",
        "worker",
        "milliseconds",
    }
    topic = first["topic"]
    filtered = api.get(f"/api/campaigns/demo-done/judgments/?topic={topic}&limit=1000").json()
    assert (
        filtered["count"]
        == Judgment.objects.filter(
            assignment__campaign=finished_campaign, slot__topic__topic_id=topic
        ).count()
    )
    assert {j["topic"] for j in filtered["results"]} == {topic}
    worker = first["worker"]
    by_worker = api.get(f"/api/campaigns/demo-done/judgments/?worker={worker}&round=1").json()
    assert all(j["worker"] == worker and j["round"] in (1, None) for j in by_worker["results"])
    bad = api.get("/api/campaigns/demo-done/judgments/?round=first")
    assert bad.status_code == 400 and "round" in bad.json()
    for client, expected in outsiders:
        assert client.get("/api/campaigns/demo-done/judgments/").status_code == expected


def test_workers_table_and_exclusion(api, outsiders, finished_campaign):
    body = api.get("/api/campaigns/demo-done/workers/").json()
    assert body["count"] == Worker.objects.filter(assignments__campaign=finished_campaign).distinct().count()
    row = body["results"][0]
    # a perfect crowd agrees with the final ordering and passes its challenges
    assert row["agreement"] == 1.0 and row["challenge_pass_rate"] == 1.0
    for client, expected in outsiders:
        response = client.post(
            f"/api/campaigns/demo-done/workers/{row['worker_id']}/exclude/", {"reason": "x"}
        )
        assert response.status_code == expected
    assert not Worker.objects.get(pk=row["worker_id"]).is_excluded
    response = api.post(
        f"/api/campaigns/demo-done/workers/{row['worker_id']}/exclude/", {"reason": "spam"}, format="json"
    )
    assert response.status_code == 200 and response.json()["is_excluded"] is True
    # the owner's exclusion (her campaigns only, see tests/api/test_tenancy.py), not a global one
    assert response.json()["excluded_by"] == "owner"
    exclusion = WorkerExclusion.objects.get(worker_id=row["worker_id"])
    assert exclusion.reason == "spam" and exclusion.owner == finished_campaign.owner


def test_collections_list_and_create(api, assessor, demo_collection):
    body = api.get("/api/collections/").json()
    assert body["results"][0]["name"] == "demo" and body["results"][0]["run_count"] == 4
    created = api.post("/api/collections/", {"name": "new-one", "description": "d"}, format="json")
    assert created.status_code == 201 and created.json()["topic_count"] == 0
    duplicate = api.post("/api/collections/", {"name": "new-one"}, format="json")
    assert duplicate.status_code == 400 and "name" in duplicate.json()
    assert (
        token_client(assessor).post("/api/collections/", {"name": "nope"}, format="json").status_code == 403
    )


def test_plan_returns_the_planner_numbers(api, crowd_user, demo_collection):
    response = api.post("/api/plan/", {"pool_size": 20, "trials": 3, "seed": 1}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["judgments"] > 0 and body["hits"] > 0 and 0 <= body["p_miss"] <= 1
    on_collection = api.post("/api/plan/", {"collection": "demo", "trials": 2}, format="json")
    assert on_collection.status_code == 200 and on_collection.json()["cost_usd"] > 0
    bad = api.post("/api/plan/", {"pool_size": 20, "k": 5, "F": 9, "P": 3}, format="json")
    assert bad.status_code == 400
    missing = api.post("/api/plan/", {}, format="json")
    assert missing.status_code == 400 and "collection" in missing.json()
    assert token_client(crowd_user).post("/api/plan/", {"pool_size": 5}, format="json").status_code == 403


def test_create_an_adaptive_campaign_with_its_votes_and_confidence(api, demo_collection):
    response = api.post(
        "/api/campaigns/",
        {"name": "adapt", "collection": "demo", "mode": "adaptive", "max_votes": 3, "confidence": 0.9},
        format="json",
    )
    assert response.status_code == 201, response.json()
    campaign = Campaign.objects.get(name="adapt")
    assert (campaign.mode, campaign.max_votes, campaign.confidence) == ("adaptive", 3, 0.9)
    assert response.json()["max_votes"] == 3 and response.json()["confidence"] == 0.9
    bad = api.post(
        "/api/campaigns/",
        {"name": "adapt2", "collection": "demo", "mode": "adaptive", "confidence": 1.0},
        format="json",
    )
    assert bad.status_code == 400 and "confidence" in bad.json()["non_field_errors"][0]

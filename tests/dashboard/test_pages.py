"""The researchers' dashboard: access by role and owner, a fixed number of queries per page, actions
through the services, plots and the CSV download."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from judging.models import Campaign, Export
from pools.models import Run

pytestmark = pytest.mark.django_db

PAGES = [
    "/dashboard/campaigns/{name}/",
    "/dashboard/campaigns/{name}/workers/",
    "/dashboard/campaigns/{name}/leaderboard/",
    "/dashboard/campaigns/{name}/progress.json",
    "/dashboard/campaigns/{name}/leaderboard.csv",
    "/dashboard/campaigns/{name}/plots/scatter.png",
    "/dashboard/campaigns/{name}/plots/intervals.png",
]


def test_anonymous_assessor_and_crowd_user_are_sent_to_login(client, assessor, crowd_user, finished_campaign):
    for user in (None, assessor, crowd_user):
        client.logout()
        if user is not None:
            client.force_login(user)
        for url in ["/dashboard/", *[p.format(name="demo-done") for p in PAGES]]:
            response = client.get(url)
            assert response.status_code == 302 and "login" in response["Location"], url


def test_another_researcher_gets_404_and_changes_nothing(client, other_researcher, finished_campaign):
    client.force_login(other_researcher)
    for url in PAGES:
        assert client.get(url.format(name="demo-done")).status_code == 404
    assert client.post("/dashboard/campaigns/demo-done/action/", {"action": "pause"}).status_code == 404
    assert client.post("/dashboard/campaigns/demo-done/exports/", {"kind": "combined"}).status_code == 404
    assert not Export.objects.exists()
    assert "demo-done" not in client.get("/dashboard/").content.decode()


def test_owner_sees_every_page(client, researcher, finished_campaign):
    client.force_login(researcher)
    for url in PAGES:
        response = client.get(url.format(name="demo-done"))
        assert response.status_code == 200, url
    page = client.get("/dashboard/campaigns/demo-done/").content.decode()
    assert "Top-k of finished topics" in page and "<script>" not in page
    assert client.get("/dashboard/campaigns/demo-done/plots/scatter.png")["Content-Type"] == "image/png"
    assert client.get("/dashboard/campaigns/demo-done/plots/intervals.png").content.startswith(b"\x89PNG")
    csv_lines = client.get("/dashboard/campaigns/demo-done/leaderboard.csv").content.decode().splitlines()
    assert csv_lines[0].startswith("run,measure,qrels,mean,ci_low,ci_high,rank")
    assert len(csv_lines) == 1 + Run.objects.count() * 9 * 2


def test_passages_are_escaped(client, researcher, finished_campaign):
    from pools.models import Item

    candidate = finished_campaign.campaign_topics.filter(state="done").first().candidates.get(rank=1)
    Item.objects.filter(pk=candidate.item_id).update(text="<script>alert(1)</script>")
    client.force_login(researcher)
    page = client.get("/dashboard/campaigns/demo-done/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_query_count_is_bounded(client, researcher, finished_campaign, django_assert_max_num_queries):
    client.force_login(researcher)
    for url in [*PAGES[:4], "/dashboard/", "/"]:
        client.get(url.format(name="demo-done"))  # warm the caches of the leaderboard and the forecast
        # 31: the campaign page reads the stored forecast and the stored confidence, one query each
        with django_assert_max_num_queries(31):
            assert client.get(url.format(name="demo-done")).status_code == 200


def test_a_one_topic_campaign_takes_as_many_queries_as_the_demo_one(
    client, researcher, finished_campaign, django_capture_on_commit_callbacks
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from judging.services import campaign_create, campaign_start

    with django_capture_on_commit_callbacks(execute=True):
        small = campaign_create(collection=finished_campaign.collection, name="one-topic", owner=researcher)
        campaign_start(campaign=small, topic_ids=["d1"])
    client.force_login(researcher)
    for url in PAGES[:4]:
        counts = []
        for name in ("one-topic", "demo-done"):
            client.get(url.format(name=name))
            with CaptureQueriesContext(connection) as queries:
                client.get(url.format(name=name))
            counts.append(len(queries))
        assert counts[0] == counts[1], url


def test_workers_table_sorts(client, researcher, finished_campaign):
    client.force_login(researcher)
    ascending = client.get("/dashboard/campaigns/demo-done/workers/?sort=median_seconds").context["rows"]
    descending = client.get("/dashboard/campaigns/demo-done/workers/?sort=median_seconds&dir=desc").context[
        "rows"
    ]
    values = [r["median_seconds"] for r in ascending if r["median_seconds"] is not None]
    assert values == sorted(values)
    assert [r["worker"] for r in descending if r["median_seconds"] is not None] != [] or values == []


def test_create_start_pause_resume_from_the_dashboard(
    client, researcher, demo_collection, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    response = client.post(
        "/dashboard/campaigns/new/",
        {
            "name": "from-page",
            "collection": "demo",
            "mode": "crowd",
            "k": 5,
            "final_stage_size": 9,
            "opponents": 7,
            "seed": 1,
        },
    )
    assert response.status_code == 302
    campaign = Campaign.objects.get(name="from-page")
    assert campaign.owner == researcher and campaign.status == "draft"
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/dashboard/campaigns/from-page/action/", {"action": "start"})
    campaign.refresh_from_db()
    assert campaign.status == "running"
    client.post("/dashboard/campaigns/from-page/action/", {"action": "pause"})
    campaign.refresh_from_db()
    assert campaign.status == "paused"
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/dashboard/campaigns/from-page/action/", {"action": "resume"})
    campaign.refresh_from_db()
    assert campaign.status == "running"
    # a GET never changes anything
    assert client.get("/dashboard/campaigns/from-page/action/?action=pause").status_code == 405


def test_duplicate_campaign_name_is_refused_on_the_form(client, researcher, finished_campaign):
    client.force_login(researcher)
    response = client.post(
        "/dashboard/campaigns/new/",
        {
            "name": "demo-done",
            "collection": "demo",
            "mode": "crowd",
            "k": 5,
            "final_stage_size": 9,
            "opponents": 7,
            "seed": 1,
        },
    )
    assert response.status_code == 200 and "exists already" in response.content.decode()
    assert Campaign.objects.filter(name="demo-done").count() == 1


def test_upload_run_and_export_from_the_dashboard(
    client, researcher, finished_campaign, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    content = Run.objects.first().file.open("rb").read()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            "/dashboard/campaigns/demo-done/runs/",
            {"name": "uploaded", "file": SimpleUploadedFile("uploaded.txt", content)},
        )
    assert Run.objects.get(name="uploaded").status == "ready"
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/dashboard/campaigns/demo-done/exports/", {"kind": "top_k"})
    export = Export.objects.get()
    assert export.status == "ready"
    download = client.get(f"/dashboard/exports/{export.pk}/download/")
    assert download.status_code == 200 and b"".join(download.streaming_content).count(b" Q0 ") > 0


def test_home_page_lists_collections_and_the_researchers_campaigns(client, researcher, finished_campaign):
    anonymous = client.get("/").content.decode()
    assert "demo" in anonymous and "demo-done" not in anonymous
    client.force_login(researcher)
    assert "demo-done" in client.get("/").content.decode()


def test_media_is_not_served(client, finished_campaign):
    run = Run.objects.first()
    assert client.get(f"/media/{run.file.name}").status_code == 404


def test_an_adaptive_campaign_from_the_form_shows_open_out_and_tied_per_topic(
    client, researcher, demo_collection, django_capture_on_commit_callbacks
):
    from judging.engine import PerfectOracle
    from judging.services.simulated_crowd import campaign_simulate
    from pools.trec import read_qrels
    from tests.conftest import DEMO_DIR

    client.force_login(researcher)
    response = client.post(
        "/dashboard/campaigns/new/",
        {
            "name": "adaptive-page",
            "collection": "demo",
            "mode": "adaptive",
            "k": 5,
            "final_stage_size": 9,
            "opponents": 7,
            "max_votes": 4,
            "confidence": 0.9,
            "seed": 1,
        },
    )
    assert response.status_code == 302
    campaign = Campaign.objects.get(name="adaptive-page")
    assert (campaign.mode, campaign.max_votes, campaign.confidence) == ("adaptive", 4, 0.9)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/dashboard/campaigns/adaptive-page/action/", {"action": "start"})
    campaign_simulate(campaign=campaign, oracle=PerfectOracle(read_qrels(DEMO_DIR / "qrels.preference.txt")))
    page = client.get("/dashboard/campaigns/adaptive-page/")
    rows = page.context["adaptive_topics"]
    assert rows and all(len(row["open"]) + len(row["out"]) >= len(row["open"]) for row in rows)
    assert any(row["out"] for row in rows) and all(row["tied"] == [] for row in rows)
    html = page.content.decode()
    assert 'id="adaptive-topics"' in html and "max 4 votes a pair" in html
    # the crowd as the engine sees it: a consistent one fails no challenge and one vote confirms any pair
    crowd = page.context["adaptive_crowd"]
    assert crowd["challenges"] > 0 and crowd["challenge_failures"] == 0
    assert (crowd["decisive_within_reach"], crowd["plain_margin"], crowd["decisive_margin"]) == (True, 1, 1)
    assert 'data-decisive="within-reach"' in html and "leads by 1 vote;" in html


def test_the_campaign_page_says_when_a_crowd_is_too_noisy_for_the_decisive_level(
    client, researcher, demo_collection
):
    import random

    from judging.engine import NoisyOracle
    from judging.models import Campaign
    from judging.services import campaign_create, campaign_start
    from judging.services.simulated_crowd import campaign_simulate
    from pools.trec import read_qrels
    from tests.conftest import DEMO_DIR

    # Given an adaptive campaign on the demo judged by a crowd that reverses 30% of its answers
    campaign = campaign_start(
        campaign=campaign_create(
            collection=demo_collection, name="noisy", mode="adaptive", seed=2, owner=researcher
        )
    )
    values = read_qrels(DEMO_DIR / "qrels.preference.txt")
    campaign_simulate(campaign=campaign, oracle=NoisyOracle(values, rng=random.Random(2), error_rate=0.3))
    assert Campaign.objects.get(pk=campaign.pk).status == "done"
    # When its owner opens its page, then it shows the estimate, its challenges and that every pair is held to
    # the plain level only, with the command that compares the paper's procedure for such a crowd
    client.force_login(researcher)
    page = client.get("/dashboard/campaigns/noisy/")
    crowd = page.context["adaptive_crowd"]
    assert crowd["error_rate"] > 0.15 and crowd["challenge_failures"] > 0
    assert not crowd["decisive_within_reach"] and crowd["plain_margin"] == crowd["decisive_margin"] >= 3
    html = page.content.decode()
    assert 'data-decisive="out-of-reach"' in html and "Too noisy for the stricter level" in html
    assert f"toppref plan --mode adaptive --error-rate {crowd['error_rate']:.2f}" in html


def test_the_campaign_page_shows_held_assignments_and_their_age(client, researcher, finished_campaign):
    from judging.models import HitSlot
    from judging.services import campaign_create, campaign_start, hit_assign_next, hit_build, judgment_submit
    from tests.judging.factories import WorkerFactory

    running = campaign_start(
        campaign=campaign_create(collection=finished_campaign.collection, name="running", owner=researcher)
    )
    hit_build(campaign=running)  # (inside the test's transaction the queued build does not run)
    assignment = hit_assign_next(campaign=running, worker=WorkerFactory(external_id="walked-away"))
    slot = HitSlot.objects.filter(hit_id=assignment.hit_id).order_by("position").first()
    judgment_submit(assignment=assignment, slot=slot, winner_id=slot.left_id)
    client.force_login(researcher)

    page = client.get("/dashboard/campaigns/running/").content.decode()

    assert "Assignments in progress (1)" in page and "local:walked-away" in page
    held = client.get("/dashboard/campaigns/running/").context["held"]
    assert [(row["hit_number"], row["answered"]) for row in held] == [(assignment.hit.number, 1)]
    assert held[0]["age_seconds"] >= 0 and held[0]["idle_seconds"] >= 0
    assert "No HIT is held right now." in client.get("/dashboard/campaigns/demo-done/").content.decode()


def test_a_budgeted_adaptive_campaign_from_the_form_shows_its_budget_and_spend(
    client, researcher, demo_collection, django_capture_on_commit_callbacks
):
    from judging.engine import PerfectOracle
    from judging.services.simulated_crowd import campaign_simulate
    from pools.trec import read_qrels
    from tests.conftest import DEMO_DIR

    client.force_login(researcher)
    form = {"name": "budget-page", "collection": "demo", "mode": "adaptive", "k": 5, "final_stage_size": 9}
    response = client.post(
        "/dashboard/campaigns/new/",
        form | {"opponents": 7, "max_judgments": 60, "model_rounds": 20, "seed": 1},
    )
    assert response.status_code == 302
    campaign = Campaign.objects.get(name="budget-page")
    assert (campaign.max_judgments, campaign.model_rounds) == (60, 20)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/dashboard/campaigns/budget-page/action/", {"action": "start"})
    campaign_simulate(campaign=campaign, oracle=PerfectOracle(read_qrels(DEMO_DIR / "qrels.preference.txt")))

    html = client.get("/dashboard/campaigns/budget-page/").content.decode()

    assert 'data-max-judgments="60"' in html and "60 of 60" in html
    assert 'data-model-rounds="20"' in html and "rounds end by wave 20" in html

"""Tenancy (issue 15, "Researchers write into each other's data" and "Exclusion leaks across owners"): a
collection is changed only by its owner or staff, in a new version once a started campaign uses it (issue 28:
another's campaign never freezes it); a run uploaded to a campaign is that campaign's only; a researcher's exclusion keeps a worker out of
that researcher's campaigns and no one else's."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from judging.models import Campaign, Worker, WorkerExclusion
from judging.services import (
    WorkerExcludedError,
    assignment_submit,
    campaign_create,
    campaign_start,
    hit_assign_next,
    hit_build,
    worker_get_or_create,
)
from judging.services.exclusions import worker_list_excluded_for
from metrics.leaderboard import campaign_runs_score
from pools.models import Collection, GradedJudgment, Item, Run, Topic
from tests.api.conftest import token_client
from tests.judging.test_judgments import honest_answers

pytestmark = pytest.mark.django_db

HACKED = "Visit evil.example for free tickets"


def _post_file(client, collection: str, kind: str, name: str, content: bytes):
    return client.post(
        f"/api/collections/{collection}/{kind}/",
        {"file": SimpleUploadedFile(name, content)},
        format="multipart",
    )


def _passage_line(docid: str, text: str) -> bytes:
    return (json.dumps({"id": docid, "text": text}) + "\n").encode()


@pytest.fixture
def owned_demo(demo_collection, researcher):
    demo_collection.owner = researcher
    demo_collection.save(update_fields=["owner"])
    return demo_collection


def _live_campaign(collection, owner, name: str) -> Campaign:
    campaign = campaign_create(collection=collection, name=name, seed=1, owner=owner)
    campaign = campaign_start(campaign=campaign, topic_ids=["d1"])
    if not campaign.hits.exists():
        hit_build(campaign=campaign)
    return campaign


# --- collections -----------------------------------------------------------------------------------------


def test_another_researcher_cannot_rewrite_a_passage_of_anothers_collection(owned_demo, other_researcher):
    before = Item.objects.get(collection=owned_demo, docid="d1-p02").text

    response = _post_file(
        token_client(other_researcher), "demo", "passages", "p.jsonl", _passage_line("d1-p02", HACKED)
    )

    assert response.status_code == 403
    assert "owner of collection demo" in response.json()["detail"]
    assert Item.objects.get(collection=owned_demo, docid="d1-p02").text == before


def test_another_researchers_topics_upload_is_refused(owned_demo, other_researcher):
    before = Topic.objects.get(collection=owned_demo, topic_id="d1").question

    response = _post_file(
        token_client(other_researcher), "demo", "topics", "topics.tsv", b"d1\tWhat is evil?\n"
    )

    assert response.status_code == 403
    assert Topic.objects.get(collection=owned_demo, topic_id="d1").question == before


def test_a_collection_without_owner_is_changed_by_staff_only(demo_collection, researcher, staff):
    line = _passage_line("d1-p02", "A staff correction.")

    assert _post_file(token_client(researcher), "demo", "passages", "p.jsonl", line).status_code == 403
    assert _post_file(token_client(staff), "demo", "passages", "p.jsonl", line).status_code == 200
    assert Item.objects.get(collection=demo_collection, docid="d1-p02").text == "A staff correction."


def test_a_collection_created_through_the_api_is_the_callers(api, researcher):
    response = api.post("/api/collections/", {"name": "mine", "description": "x"}, format="json")

    assert response.status_code == 201 and response.json()["owner"] == "alice"
    assert Collection.objects.get(name="mine").owner == researcher


def test_a_collection_in_use_is_changed_in_a_new_version(api, owned_demo, researcher):
    # given a started campaign on alice's collection
    live = _live_campaign(owned_demo, researcher, "live")
    before = Item.objects.get(collection=owned_demo, docid="d1-p02").text
    # the same file again (nothing would change) is fine and makes no version
    same = _passage_line("d1-p02", before)
    assert _post_file(api, "demo", "passages", "p.jsonl", same).json() == {
        "created": 0,
        "updated": 0,
        "unchanged": 1,
        "version": 1,
        "new_version": False,
    }
    assert Collection.objects.filter(name="demo").count() == 1
    # when alice changes a passage
    response = _post_file(api, "demo", "passages", "p.jsonl", _passage_line("d1-p02", "Corrected."))
    # then the change is made in version 2, which the name now means
    assert response.status_code == 200
    assert response.json() == {"created": 0, "updated": 1, "unchanged": 0, "version": 2, "new_version": True}
    current = Collection.objects.current().get(name="demo")
    assert current.version == 2 and current.owner == researcher and current.previous_id == owned_demo.pk
    assert Item.objects.get(collection=current, docid="d1-p02").text == "Corrected."
    assert current.topics.count() == owned_demo.topics.count()
    assert current.runs.count() == owned_demo.runs.filter(campaign__isnull=True).count()
    # and the started campaign keeps the version its workers saw
    live.refresh_from_db()
    assert live.collection_id == owned_demo.pk
    assert api.get("/api/campaigns/live/").json()["collection_version"] == 1
    api.force_login(researcher)
    assert "version 1, which its owner has changed" in api.get("/dashboard/campaigns/live/").content.decode()
    assert Item.objects.get(collection=owned_demo, docid="d1-p02").text == before
    listed = api.get("/api/collections/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [(row["name"], row["version"]) for row in rows if row["name"] == "demo"] == [("demo", 2)]
    # a copy is still a collection of one's own, from the current version
    copied = api.post("/api/collections/demo/copy/", {"name": "demo-v2"}, format="json")
    assert copied.status_code == 201
    assert copied.json()["owner"] == "alice" and copied.json()["topic_count"] == current.topics.count()
    assert Item.objects.get(collection__name="demo-v2", docid="d1-p02").text == "Corrected."
    # the copy's runs are readable files of their own
    run = Run.objects.filter(collection__name="demo-v2").first()
    assert run.file.name.startswith("runs/demo-v2/") and run.file.size > 0


def test_anothers_started_campaign_does_not_freeze_a_collection(owned_demo, researcher, other_researcher):
    # given bob's campaign started on alice's collection (any researcher may run one on it)
    bobs = _live_campaign(owned_demo, other_researcher, "bob-secret-study")
    grades_before = sorted(
        GradedJudgment.objects.filter(topic__collection=owned_demo).values_list(
            "topic__topic_id", "item__docid", "grade"
        )
    )
    # when alice imports passages, topics and qrels
    alice = token_client(researcher)
    passages = _post_file(alice, "demo", "passages", "p.jsonl", _passage_line("d1-p02", "Corrected."))
    topics = _post_file(alice, "demo", "topics", "topics.tsv", b"new1\tA new question?\n")
    qrels = _post_file(alice, "demo", "qrels", "q.txt", b"new1 Q0 d1-p02 3\n")
    # then every import succeeds, into one new version, and no answer names bob's campaign
    for response in (passages, topics, qrels):
        assert response.status_code == 200, response.content
        assert "bob" not in response.content.decode()
    assert [response.json()["version"] for response in (passages, topics, qrels)] == [2, 2, 2]
    current = Collection.objects.current().get(name="demo")
    assert Topic.objects.filter(collection=current, topic_id="new1").exists()
    # and bob's campaign keeps its version: topics, passages, grades as they were when it started
    bobs.refresh_from_db()
    assert bobs.collection_id == owned_demo.pk and bobs.collection.is_current is False
    assert Item.objects.get(collection=owned_demo, docid="d1-p02").text != "Corrected."
    assert not Topic.objects.filter(collection=owned_demo, topic_id="new1").exists()
    assert (
        sorted(
            GradedJudgment.objects.filter(topic__collection=owned_demo).values_list(
                "topic__topic_id", "item__docid", "grade"
            )
        )
        == grades_before
    )


def test_a_copy_needs_a_free_name(api, owned_demo):
    response = api.post("/api/collections/demo/copy/", {"name": "demo"}, format="json")

    assert response.status_code == 400 and "name" in response.json()


def test_collection_create_owner_contract(researcher, assessor, capsys):
    call_command("collection_create", "labdata", "--owner", "alice")
    assert Collection.objects.get(name="labdata").owner == researcher

    for username, problem in (("carol", "neither a researcher"), ("nobody", "no user named")):
        with pytest.raises(CommandError) as error:
            call_command("collection_create", f"other-{username}", "--owner", username)
        assert problem in str(error.value) and "\n" not in str(error.value)
    assert not Collection.objects.filter(name__startswith="other-").exists()


def test_import_commands_with_an_owner_check_the_owner(owned_demo, other_researcher, researcher, tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(_passage_line("d1-p02", HACKED))

    with pytest.raises(CommandError, match="only the owner of collection demo"):
        call_command("passages_import", "demo", str(path), "--owner", "bob", "--quiet")
    assert Item.objects.get(collection=owned_demo, docid="d1-p02").text != HACKED
    call_command("passages_import", "demo", str(path), "--owner", "alice", "--quiet")
    assert Item.objects.get(collection=owned_demo, docid="d1-p02").text == HACKED


def test_collection_copy_command(owned_demo, other_researcher):
    call_command("collection_copy", "demo", "demo-bob", "--owner", "bob")

    copy = Collection.objects.get(name="demo-bob")
    assert copy.owner == other_researcher
    assert copy.items.count() == owned_demo.items.count()
    assert sorted(copy.topics.values_list("topic_id", "question", "conversation_id", "turn")) == sorted(
        owned_demo.topics.values_list("topic_id", "question", "conversation_id", "turn")
    )
    assert sorted(copy.items.values_list("docid", "text")) == sorted(
        owned_demo.items.values_list("docid", "text")
    )

    def grades(collection):
        return sorted(
            GradedJudgment.objects.filter(topic__collection=collection).values_list(
                "topic__topic_id", "item__docid", "grade"
            )
        )

    assert grades(copy) == grades(owned_demo) and len(grades(copy)) > 0


# --- runs and scores -------------------------------------------------------------------------------------


def _upload(client, campaign: str, name: str, content: bytes):
    return client.post(
        f"/api/campaigns/{campaign}/runs/",
        {"name": name, "file": SimpleUploadedFile(f"{name}.run", content)},
        format="multipart",
    )


def _run_bytes(collection) -> bytes:
    with Run.objects.filter(collection=collection, campaign__isnull=True).first().file.open("rb") as handle:
        return handle.read()


def test_runs_uploaded_to_a_campaign_are_that_campaigns_only(
    api, finished_campaign, other_researcher, django_capture_on_commit_callbacks
):
    bob = token_client(other_researcher)
    bobs = campaign_create(
        collection=finished_campaign.collection, name="bobs", seed=1, owner=other_researcher
    )
    content = _run_bytes(finished_campaign.collection)
    with django_capture_on_commit_callbacks(execute=True):
        assert _upload(api, "demo-done", "alice-secret", content).status_code == 202
        assert _upload(bob, "bobs", "bob-run", content).status_code == 202
    # bob may even reuse alice's run name in his own campaign
    with django_capture_on_commit_callbacks(execute=True):
        assert _upload(bob, "bobs", "alice-secret", content).status_code == 202
    # scoring bob's campaign stores graded scores of bob's runs (rows without a campaign)
    campaign_runs_score(campaign=bobs)

    bob_runs = {r["name"] for r in bob.get("/api/campaigns/bobs/runs/").json()["results"]}
    alice_runs = {r["name"] for r in api.get("/api/campaigns/demo-done/runs/").json()["results"]}
    shared = set(Run.objects.filter(campaign__isnull=True).values_list("name", flat=True))
    assert bob_runs == shared | {"bob-run", "alice-secret"}
    assert alice_runs == shared | {"alice-secret"}
    assert Run.objects.get(name="alice-secret", campaign=finished_campaign).uploaded_by.username == "alice"

    leaderboard = api.get("/api/campaigns/demo-done/leaderboard/").json()["results"]
    assert "bob-run" not in {row["run"] for row in leaderboard}
    assert {row["run"] for row in leaderboard} == shared | {"alice-secret"}
    # one row per run, measure and qrels: bob's run of the same name never doubles alice's
    keys = [(row["run"], row["measure"], row["qrels"]) for row in leaderboard]
    assert len(keys) == len(set(keys))


def test_run_import_refuses_a_name_a_campaign_uses(
    finished_campaign, api, django_capture_on_commit_callbacks, tmp_path
):
    content = _run_bytes(finished_campaign.collection)
    with django_capture_on_commit_callbacks(execute=True):
        assert _upload(api, "demo-done", "mine", content).status_code == 202
    path = tmp_path / "mine.run"
    path.write_bytes(content)

    with pytest.raises(CommandError, match="a campaign of collection demo has a run 'mine'"):
        call_command("run_import", "demo", str(path), "--quiet")
    assert Run.objects.filter(name="mine").count() == 1


# --- exclusions ------------------------------------------------------------------------------------------


@pytest.fixture
def two_owners(finished_campaign, researcher, other_researcher):
    """alice's finished campaign (its workers), alice's live campaign and bob's live campaign."""
    return {
        "alice_done": finished_campaign,
        "alice_live": _live_campaign(finished_campaign.collection, researcher, "alice-live"),
        "bob_live": _live_campaign(finished_campaign.collection, other_researcher, "bob-live"),
    }


def _a_worker(campaign) -> Worker:
    return Worker.objects.filter(assignments__campaign=campaign).order_by("pk").first()


def test_a_researchers_exclusion_applies_to_their_campaigns_only(api, two_owners, other_researcher):
    worker = _a_worker(two_owners["alice_done"])

    response = api.post(
        f"/api/campaigns/demo-done/workers/{worker.pk}/exclude/", {"reason": "spam"}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["is_excluded"] is True and response.json()["excluded_by"] == "owner"
    with pytest.raises(WorkerExcludedError):
        hit_assign_next(campaign=two_owners["alice_live"], worker=worker)
    assert hit_assign_next(campaign=two_owners["bob_live"], worker=worker) is not None
    rows = token_client(other_researcher).get("/api/campaigns/bob-live/workers/").json()["results"]
    row = next(r for r in rows if r["worker_id"] == worker.pk)
    assert row["is_excluded"] is False and row["excluded_by"] is None
    assert not Worker.objects.get(pk=worker.pk).is_excluded
    # the provider's exclusion qualification of each campaign carries its own owner's exclusions only
    assert worker in worker_list_excluded_for(campaign=two_owners["alice_live"])
    assert worker not in worker_list_excluded_for(campaign=two_owners["bob_live"])


def test_only_staff_exclude_globally(api, staff, two_owners):
    worker = _a_worker(two_owners["alice_done"])
    url = f"/api/campaigns/demo-done/workers/{worker.pk}/exclude/"

    refused = api.post(url, {"reason": "spam", "scope": "global"}, format="json")
    assert refused.status_code == 403 and "only staff" in refused.json()["detail"]
    assert not WorkerExclusion.objects.exists() and not Worker.objects.get(pk=worker.pk).is_excluded

    response = token_client(staff).post(url, {"reason": "fraud", "scope": "global"}, format="json")
    assert response.status_code == 200 and response.json()["excluded_by"] == "global"
    with pytest.raises(WorkerExcludedError):
        hit_assign_next(campaign=two_owners["bob_live"], worker=worker)


def test_a_bad_scope_is_named(api, two_owners):
    worker = _a_worker(two_owners["alice_done"])
    response = api.post(
        f"/api/campaigns/demo-done/workers/{worker.pk}/exclude/", {"scope": "everyone"}, format="json"
    )
    assert response.status_code == 400 and "scope" in response.json()


def test_a_failed_challenge_excludes_in_the_owners_scope(two_owners, researcher):
    worker = worker_get_or_create(provider="local", external_id="cheater")
    assignment = hit_assign_next(campaign=two_owners["alice_live"], worker=worker)
    assignment_submit(assignment=assignment, winners=honest_answers(assignment.hit, fail_challenges=1))

    assert WorkerExclusion.objects.filter(worker=worker, owner=researcher).exists()
    assert not Worker.objects.get(pk=worker.pk).is_excluded
    assert hit_assign_next(campaign=two_owners["bob_live"], worker=worker) is not None


def test_the_dashboards_workers_table_says_whose_exclusion(
    api, two_owners, other_researcher, researcher, client
):
    worker = _a_worker(two_owners["alice_done"])
    api.post(f"/api/campaigns/demo-done/workers/{worker.pk}/exclude/", {"reason": "spam"}, format="json")
    hit_assign_next(campaign=two_owners["bob_live"], worker=worker)  # the worker is now in bob's table too

    client.force_login(researcher)
    alices = client.get("/dashboard/campaigns/demo-done/workers/").content.decode()
    client.force_login(other_researcher)
    bobs = client.get("/dashboard/campaigns/bob-live/workers/").content.decode()

    assert "excluded (owner: all of alice's campaigns)" in alices
    assert str(worker) in bobs and "excluded" not in bobs.split("<tbody>")[1]


def test_a_crowd_user_excluded_by_one_owner_still_judges_for_another(two_owners, crowd_user, client):
    from judging.services import worker_exclude, worker_for_user

    worker = worker_for_user(user=crowd_user)
    worker_exclude(worker=worker, reason="spam", campaign=two_owners["alice_live"])
    client.force_login(crowd_user)
    client.post("/judge/instructions/")

    page = client.get("/judge/next/")

    assert page.status_code == 200 and "judging/excluded.html" not in [t.name for t in page.templates]
    assert worker.assignments.get().campaign == two_owners["bob_live"]

"""Collection versions (docs/decisions.md, "Collection versions"): a started campaign keeps the version it
started on; a change to that version is made in a new one that takes the name; a change that changes
nothing makes none; drafts move on with the name; a version no campaign uses any more goes."""

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from judging.models import Campaign
from judging.services import campaign_create, campaign_delete, campaign_start
from pools.models import Collection, Item, Topic
from pools.services import collection_delete, demo_load, passages_import, run_import, topics_import
from tests.migrations import latest_targets, migrate_to

pytestmark = pytest.mark.django_db

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"


@pytest.fixture
def demo(media_root):
    return demo_load(directory=DEMO_DIR).collection


def _started(collection, name: str = "live") -> Campaign:
    return campaign_start(
        campaign=campaign_create(collection=collection, name=name, seed=1), topic_ids=["d1"]
    )


def _passages(tmp_path, text: str) -> Path:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "d1-p02", "text": text}) + "\n")
    return path


def test_a_collection_no_started_campaign_uses_is_changed_in_place(demo, tmp_path):
    campaign_create(collection=demo, name="draft", seed=1)

    result = passages_import(collection=demo, path=_passages(tmp_path, "Changed."))

    assert (result.version, result.new_version) == (1, False)
    assert Collection.objects.filter(name="demo").count() == 1
    assert Item.objects.get(collection=demo, docid="d1-p02").text == "Changed."


def test_loading_the_same_files_again_makes_no_version(demo):
    _started(demo)

    again = demo_load(directory=DEMO_DIR)

    assert again.collection.pk == demo.pk
    assert (again.passages.version, again.passages.new_version) == (1, False)
    assert Collection.objects.filter(name="demo").count() == 1


def test_a_change_makes_one_version_that_later_imports_go_on_into(demo, tmp_path):
    live = _started(demo)
    draft = campaign_create(collection=demo, name="draft", seed=1)
    before = Item.objects.get(collection=demo, docid="d1-p02").text

    first = passages_import(collection=demo, path=_passages(tmp_path, "Changed."))
    topics = tmp_path / "topics.tsv"
    topics.write_text("new1\tA new question?\n")
    # the caller's object is the old version: the import goes on into the current one
    second = topics_import(collection=demo, path=topics)

    current = Collection.objects.current().get(name="demo")
    assert (first.version, first.new_version, second.version, second.new_version) == (2, True, 2, False)
    assert Collection.objects.filter(name="demo").count() == 2
    assert current.previous_id == demo.pk and current.topics.filter(topic_id="new1").exists()
    assert Item.objects.get(collection=current, docid="d1-p02").text == "Changed."
    # the started campaign keeps version 1 as it was; the draft moves on with the name
    live.refresh_from_db()
    draft.refresh_from_db()
    assert live.collection_id == demo.pk and draft.collection_id == current.pk
    assert Item.objects.get(collection=demo, docid="d1-p02").text == before
    assert not Topic.objects.filter(collection=demo, topic_id="new1").exists()
    assert campaign_start(campaign=draft, topic_ids=["d1"]).collection_id == current.pk
    assert "made version 2" in str(first)


def test_a_run_replaced_in_a_new_version_leaves_the_old_versions_file(demo, tmp_path):
    _started(demo)
    passages_import(collection=demo, path=_passages(tmp_path, "Changed."))
    current = Collection.objects.current().get(name="demo")
    old_run = demo.runs.get(name="bm25ish")
    old_text = old_run.file.read()
    path = tmp_path / "bm25ish.run"
    path.write_text("d1 Q0 d1-p02 1 9.0 bm25ish\n")

    run = run_import(collection=demo, path=path, replace=True)

    assert run.collection_id == current.pk and run.file.name == "runs/demo/v2/bm25ish.run"
    old_run.refresh_from_db()
    assert old_run.file.name == "runs/demo/bm25ish.run"
    with old_run.file.open("rb") as handle:
        assert handle.read() == old_text


def test_a_version_goes_with_the_last_campaign_that_used_it(
    demo, tmp_path, django_capture_on_commit_callbacks
):
    live = _started(demo)
    passages_import(collection=demo, path=_passages(tmp_path, "Changed."))
    current = Collection.objects.current().get(name="demo")

    with django_capture_on_commit_callbacks(execute=True):
        campaign_delete(campaign=live)

    assert list(Collection.objects.filter(name="demo")) == [current]
    # the current version's runs still read their files, which were the old version's too
    run = current.runs.get(name="bm25ish")
    assert run.file.storage.exists(run.file.name)


def test_deleting_the_current_version_keeps_those_campaigns_use(demo, tmp_path):
    live = _started(demo)
    passages_import(collection=demo, path=_passages(tmp_path, "Changed."))

    collection_delete(collection=Collection.objects.current().get(name="demo"))

    assert list(Collection.objects.filter(name="demo").values_list("pk", flat=True)) == [demo.pk]
    assert Campaign.objects.get(pk=live.pk).collection_id == demo.pk
    # the name is free for a new collection, numbered past the version that lives on
    fresh = demo_load(directory=DEMO_DIR).collection
    assert (fresh.version, fresh.is_current) == (2, True)


def test_the_import_commands_report_the_new_version(demo, tmp_path, capsys):
    _started(demo)

    call_command("passages_import", "demo", str(_passages(tmp_path, "Changed.")), "--quiet")

    assert "made version 2" in capsys.readouterr().out


@pytest.mark.django_db(transaction=True)
def test_existing_collections_and_campaigns_migrate():
    apps = migrate_to([("pools", "0004_tenancy"), ("judging", "0007_assignment_challenge_counts")])
    User = apps.get_model("auth", "User")
    Collection = apps.get_model("pools", "Collection")
    Campaign = apps.get_model("judging", "Campaign")
    alice = User.objects.create(username="alice")
    mine = Collection.objects.create(name="mine", owner=alice)
    Campaign.objects.create(collection=mine, name="a-mturk", owner=alice, status="running")

    apps = migrate_to(latest_targets())
    Collection = apps.get_model("pools", "Collection")
    Campaign = apps.get_model("judging", "Campaign")
    bob = apps.get_model("auth", "User").objects.create(username="bob")

    migrated = Collection.objects.get(name="mine")
    assert (migrated.version, migrated.is_current, migrated.previous_id) == (1, True, None)
    # names are unique per owner from now on: bob may use alice's campaign name
    Campaign.objects.create(collection=migrated, name="a-mturk", owner=bob)
    assert Campaign.objects.filter(name="a-mturk").count() == 2


def test_starting_a_started_campaign_again_changes_nothing_on_an_old_version(demo, tmp_path):
    live = _started(demo)
    passages_import(collection=demo, path=_passages(tmp_path, "Changed."))
    collection_delete(collection=Collection.objects.current().get(name="demo"))

    again = campaign_start(campaign=live)

    assert (again.pk, again.status, again.collection_id) == (live.pk, "running", demo.pk)

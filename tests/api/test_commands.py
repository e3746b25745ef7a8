"""Commands for scripts: campaign_pause, campaign_resume, run_upload, runs_score, api_token, and
campaign_create --owner. Bad arguments exit 2 with a one-line error and change nothing."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token

from judging.models import Campaign
from metrics.models import RunScore
from pools.models import Run

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def refused(*args) -> CommandError:
    with pytest.raises(CommandError) as error:
        run(*args)
    assert "\n" not in str(error.value).strip()
    return error.value


def test_campaign_create_with_owner(researcher, demo_collection):
    run("campaign_create", "owned", "--collection", "demo", "--owner", "alice")
    assert Campaign.objects.get(name="owned").owner == researcher
    error = refused("campaign_create", "unowned", "--collection", "demo", "--owner", "nobody")
    assert error.returncode == 2 and "--owner" in str(error)
    assert not Campaign.objects.filter(name="unowned").exists()


def test_campaign_create_refuses_an_owner_who_is_not_a_researcher(
    researcher, crowd_user, assessor, staff, demo_collection
):
    for user in (crowd_user, assessor):
        error = refused(
            "campaign_create", f"by-{user.username}", "--collection", "demo", "--owner", user.username
        )
        assert error.returncode == 2 and "is not a researcher" in str(error)
        assert not Campaign.objects.filter(name=f"by-{user.username}").exists()
    run("campaign_create", "by-staff", "--collection", "demo", "--owner", staff.username)
    assert Campaign.objects.get(name="by-staff").owner == staff


def test_pause_and_resume(draft_campaign, django_capture_on_commit_callbacks):
    assert refused("campaign_pause", "demo-draft").returncode == 2
    assert refused("campaign_resume", "nope").returncode == 2
    with django_capture_on_commit_callbacks(execute=True):
        call_command("campaign_start", "demo-draft", stdout=StringIO())
    assert "paused" in run("campaign_pause", "demo-draft")
    draft_campaign.refresh_from_db()
    assert draft_campaign.status == "paused"
    with django_capture_on_commit_callbacks(execute=True):
        assert "running" in run("campaign_resume", "demo-draft")
    draft_campaign.refresh_from_db()
    assert draft_campaign.status == "running"


def test_paused_campaign_hands_out_no_new_hit(draft_campaign, django_capture_on_commit_callbacks):
    from judging.services import campaign_pause, campaign_start, hit_assign_next, worker_get_or_create

    with django_capture_on_commit_callbacks(execute=True):
        campaign_start(campaign=draft_campaign)
    first = worker_get_or_create(provider="local", external_id="w1")
    second = worker_get_or_create(provider="local", external_id="w2")
    held = hit_assign_next(campaign=draft_campaign, worker=first)
    assert held is not None
    campaign_pause(campaign=draft_campaign)
    assert hit_assign_next(campaign=draft_campaign, worker=second) is None
    # the worker who holds a HIT keeps it
    assert hit_assign_next(campaign=draft_campaign, worker=first) == held


def test_run_upload_and_runs_score(finished_campaign, tmp_path):
    source = Run.objects.order_by("name").first()
    path = tmp_path / "copy.run"
    path.write_bytes(source.file.open("rb").read())
    assert "ready" in run("run_upload", "demo-done", str(path))
    assert Run.objects.get(name="copy").status == "ready"
    RunScore.objects.all().delete()
    assert "scores stored" in run("runs_score", "demo-done")
    assert RunScore.objects.filter(run__name="copy", campaign=finished_campaign).count() == 9
    assert RunScore.objects.filter(run__name="copy", campaign__isnull=True).count() == 9


def test_run_upload_refusals(finished_campaign, tmp_path):
    before = Run.objects.count()
    assert refused("run_upload", "nope", str(tmp_path / "x.run")).returncode == 2
    assert refused("run_upload", "demo-done", str(tmp_path / "missing.run")).returncode == 2
    bad = tmp_path / "bad.run"
    bad.write_text("d1 Q0 doc 1 1.0 tag\nd1 Q0 doc 1\n")
    error = refused("run_upload", "demo-done", str(bad))
    assert error.returncode == 1 and str(error).startswith("bad.run:2: ")
    assert Run.objects.count() == before
    assert refused("runs_score", "nope").returncode == 2


def test_api_token_prints_the_same_token_twice(researcher):
    first = run("api_token", "alice").strip()
    assert first == run("api_token", "alice").strip() == Token.objects.get(user=researcher).key
    assert refused("api_token", "nobody").returncode == 2


def test_campaign_create_adaptive_with_max_votes_and_confidence(demo_collection):
    out = run("campaign_create", "adapt", "--collection", "demo", "--mode", "adaptive", "--max-votes", "3")
    campaign = Campaign.objects.get(name="adapt")
    assert (campaign.mode, campaign.max_votes, campaign.confidence) == ("adaptive", 3, 0.95)
    assert "max_votes=3 confidence=0.95" in out
    error = refused(
        "campaign_create", "adapt2", "--collection", "demo", "--mode", "adaptive", "--confidence", "0.4"
    )
    assert error.returncode == 2 and "confidence" in str(error)
    assert not Campaign.objects.filter(name="adapt2").exists()

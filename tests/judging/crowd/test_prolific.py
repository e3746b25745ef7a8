"""Prolific against a fake HTTP server on 127.0.0.1: study creation and publishing, places set (never added)
on a retried publish, two pages of submissions under throttling, approval of stored work, returned and
timed-out submissions requeued, failed workers excluded through the campaign's participant group."""

from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from judging.models import Assignment, Campaign, Hit, HitSlot
from judging.services import (
    assignment_start,
    campaign_create,
    campaign_start,
    hit_assign_next,
    hit_build,
    hit_discard,
    worker_get_or_create,
)
from judging.services.crowd_sync import campaign_sync
from judging.services.publishing import campaign_publish
from tests.judging.crowd.conftest import PUBLIC_URL, complete_hit, running_campaign
from tests.judging.crowd.fake_prolific import TOKEN, FakeProlific
from tests.judging.factories import collection_with_grades, graded_pool


@pytest.fixture
def fake_prolific(settings, monkeypatch):
    with FakeProlific(page_size=2) as fake:
        settings.TOPPREF_PROLIFIC_API_URL = fake.url
        settings.TOPPREF_PROLIFIC_WORKSPACE_ID = ""
        monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
        yield fake


@pytest.mark.django_db
def test_publish_creates_a_study_with_the_entry_url_and_one_place_per_hit(fake_prolific):
    campaign = running_campaign(provider="prolific", hits=3)

    report = campaign_publish(campaign=campaign)

    campaign.refresh_from_db()
    (study,) = fake_prolific.studies.values()
    assert study["status"] == "ACTIVE" and study["total_available_places"] == 3
    assert study["external_study_url"] == (
        f"{PUBLIC_URL}/hits/campaign/{campaign.public_id}/"
        "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    assert study["prolific_id_option"] == "url_parameters" and study["reward"] == 200
    code = campaign.provider_state["completion_code"]
    assert len(code) == 12
    assert study["completion_codes"] == [
        {
            "code": code,
            "code_type": "COMPLETED",
            "actor": "participant",
            "actions": [{"action": "MANUALLY_REVIEW"}],
        }
    ]
    group_id = campaign.provider_state["participant_group_id"]
    assert study["filters"] == [{"filter_id": "participant_group_blocklist", "selected_values": [group_id]}]
    assert fake_prolific.groups[group_id]["workspace_id"] == "workspace-1"
    assert campaign.provider_state["studies"] == {"stage-2": study["id"]}
    # The fee is the study cost calculator's, not a constant rate: the fake account pays 33.33% ($0.67)
    # plus 20% VAT on it ($0.13) on a $2.00 reward.
    assert report.fee_usd == Decimal("0.80") and report.total_usd == Decimal("8.40")
    assert set(Hit.objects.filter(campaign=campaign).values_list("external_id", "fee_usd")) == {
        (study["id"], Decimal("0.80"))
    }
    assert fake_prolific.calls_of("POST", "/api/v1/study-cost-calculator/") == [
        {"reward": 200, "total_available_places": 1}
    ]
    # Created in the configured (here: the workspace's only) project, given at least Prolific's minimum
    # time: 2 + 2*10 + 2*sqrt(10) = 28.3 minutes for a 10-minute estimate, over the 1-hour assignment.
    assert study["project"] == "project-1"
    assert study["maximum_allowed_time"] >= 29


@pytest.mark.django_db
def test_a_publish_retried_after_a_crash_sets_the_same_number_of_places(fake_prolific):
    campaign = running_campaign(provider="prolific", hits=3)
    campaign_publish(campaign=campaign)
    # The places were added, then the worker died before recording the HITs as published.
    Hit.objects.filter(campaign=campaign).update(published_at=None, external_id="")

    report = campaign_publish(campaign=campaign)

    (study,) = fake_prolific.studies.values()
    assert report.hit_numbers == [1, 2, 3] and study["total_available_places"] == 3
    assert len(fake_prolific.calls_of("POST", "/api/v1/studies/")) == 1


@pytest.mark.django_db
def test_sync_approves_stored_work_requeues_returned_and_timed_out_and_excludes_failed(fake_prolific):
    campaign = running_campaign(provider="prolific", hits=3)
    campaign_publish(campaign=campaign)
    first, second, third = Hit.objects.filter(campaign=campaign).order_by("number")
    study_id = first.external_id
    complete_hit(first, "pid-good", provider="prolific")
    complete_hit(second, "pid-failed", provider="prolific", fail_challenges=True)
    returned = assignment_start(
        hit=third, worker=worker_get_or_create(provider="prolific", external_id="pid-ret")
    )
    fake_prolific.submit(study_id, "pid-good")
    fake_prolific.submit(study_id, "pid-failed")
    fake_prolific.submit(study_id, "pid-ret", status="RETURNED")
    fake_prolific.faults = [("GET", "/api/v1/submissions/", "429")]

    report = campaign_sync(campaign=campaign)

    assert (report.collected, report.approved, report.paid, report.returned, report.excluded) == (
        3,
        2,
        2,
        1,
        1,
    )
    assert fake_prolific.faults == []  # the throttled page was retried
    assert sorted(s["status"] for s in fake_prolific.submissions.values()) == [
        "APPROVED",
        "APPROVED",
        "RETURNED",
    ]
    assert fake_prolific.groups[campaign.provider_state["participant_group_id"]]["participants"] == [
        "pid-failed"
    ]
    returned.refresh_from_db()
    assert (returned.status, returned.provider_status) == ("expired", "RETURNED")
    # HIT 3 is back in the queue: the next participant gets it, and times out in turn.
    late = worker_get_or_create(provider="prolific", external_id="pid-late")
    taken = hit_assign_next(campaign=campaign, worker=late)
    assert taken.hit_id == third.pk
    fake_prolific.submit(study_id, "pid-late", status="TIMED-OUT")

    again = campaign_sync(campaign=campaign)

    taken.refresh_from_db()
    assert (again.collected, again.approved, again.returned) == (4, 0, 1)
    assert (taken.status, taken.provider_status) == ("expired", "TIMED-OUT")
    third.refresh_from_db()
    assert third.status == Hit.Status.OPEN and not third.assignments.filter(status="in_progress").exists()
    paid = Assignment.objects.filter(campaign=campaign, paid_at__isnull=False)
    assert sorted(paid.values_list("worker__external_id", "paid_usd")) == [
        ("pid-failed", Decimal("2.00")),
        ("pid-good", Decimal("2.00")),
    ]


@pytest.mark.django_db
def test_publishing_stops_at_the_balance(fake_prolific):
    campaign = running_campaign(provider="prolific", hits=3)
    fake_prolific.balance_cents = 600  # $6.00 pays for two HITs at $2.80

    report = campaign_publish(campaign=campaign)

    campaign.refresh_from_db()
    assert report.hit_numbers == [1, 2] and report.waiting == 1
    assert campaign.publish_note == "balance: $6.00 at prolific pays for 2 HIT(s) at $2.80"
    (study,) = fake_prolific.studies.values()
    assert study["total_available_places"] == 2


@pytest.mark.django_db
def test_a_missing_token_is_a_clear_error_at_publish_time(fake_prolific, monkeypatch):
    campaign = running_campaign(provider="prolific", hits=3)
    monkeypatch.delenv("PROLIFIC_API_TOKEN")

    with pytest.raises(CommandError, match="set PROLIFIC_API_TOKEN"):
        call_command("campaign_publish", campaign.name)

    assert not Hit.objects.filter(campaign=campaign, published_at__isnull=False).exists()
    assert fake_prolific.calls == []


@pytest.mark.django_db
def test_pausing_stops_the_study_and_a_later_publish_reopens_it_with_more_places(fake_prolific):
    campaign = running_campaign(provider="prolific", hits=3)
    campaign_publish(campaign=campaign)
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.PAUSED)

    paused = campaign_sync(campaign=campaign)

    (study,) = fake_prolific.studies.values()
    assert paused.expired == 1 and study["status"] == "COMPLETED"
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.RUNNING)
    hit_discard(hit=Hit.objects.get(campaign=campaign, number=1))
    hit_build(campaign=campaign)

    resumed = campaign_sync(campaign=campaign)

    assert resumed.published.hit_numbers == [4]
    assert study["status"] == "ACTIVE" and study["total_available_places"] == 4
    campaign.refresh_from_db()
    assert campaign.provider_state["expired_hits"] == []


@pytest.mark.django_db
def test_a_participant_given_an_unpublished_hit_by_the_entry_page_is_still_paid(fake_prolific):
    campaign = running_campaign(provider="prolific", hits=3)
    campaign_publish(campaign=campaign, max_hits=2)
    study_id = Hit.objects.get(campaign=campaign, number=1).external_id
    complete_hit(Hit.objects.get(campaign=campaign, number=3), "pid-3", provider="prolific")
    submission = fake_prolific.submit(study_id, "pid-3")

    report = campaign_sync(campaign=campaign)

    assignment = Assignment.objects.get(campaign=campaign)
    assert (report.approved, report.paid) == (1, 1)
    assert (assignment.external_id, assignment.paid_usd) == (submission, Decimal("2.00"))


@pytest.mark.django_db
def test_work_returned_after_its_answers_were_stored_is_not_paid_nor_waited_for(fake_prolific):
    campaign = running_campaign(provider="prolific", hits=3)
    campaign_publish(campaign=campaign)
    complete_hit(Hit.objects.get(campaign=campaign, number=1), "pid-gone", provider="prolific")
    fake_prolific.submit(
        Hit.objects.get(campaign=campaign, number=1).external_id, "pid-gone", status="RETURNED"
    )

    first = campaign_sync(campaign=campaign)
    second = campaign_sync(campaign=campaign)

    assignment = Assignment.objects.get(campaign=campaign)
    assert (first.collected, first.approved, second.collected) == (1, 0, 0)
    # Returned: Prolific never confirms it, so its stored answers stay unconfirmed and do not count.
    assert (assignment.status, assignment.provider_status, assignment.paid_at) == (
        "expired",
        "RETURNED",
        None,
    )


@pytest.mark.django_db
def test_hits_of_each_stage_go_to_that_stages_study(fake_prolific):
    # Topic 1_1 has 12 candidates (stage 1), topic 1_2 has 6 (stage 2 at once).
    collection = collection_with_grades({"1_1": graded_pool("a", 12), "1_2": graded_pool("b", 6)})
    campaign = campaign_start(
        campaign=campaign_create(collection=collection, name="stages", seed=3, provider="prolific")
    )
    hit_build(campaign=campaign)

    campaign_publish(campaign=campaign)

    campaign.refresh_from_db()
    studies = campaign.provider_state["studies"]
    assert set(studies) == {"stage-1", "stage-2"}
    for hit in Hit.objects.filter(campaign=campaign):
        stage = max(
            HitSlot.objects.filter(hit=hit, pair__isnull=False).values_list("pair__round__stage", flat=True)
        )
        assert hit.external_id == studies[f"stage-{stage}"]
    places = {study_id: study["total_available_places"] for study_id, study in fake_prolific.studies.items()}
    assert places == {
        study_id: Hit.objects.filter(campaign=campaign, external_id=study_id).count()
        for study_id in studies.values()
    }
    assert fake_prolific.studies[studies["stage-2"]]["name"].endswith("(stage 2)")

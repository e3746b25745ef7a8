"""Provisional until the provider confirms (issue 15): answers from an MTurk or Prolific page are stored at
once but count toward rounds, payments and exports only once the provider lists the assignment; a forged
claim never turns the real worker away, returns its HIT when its deadline passes, and invented Prolific
participant ids cannot drain a campaign's HITs. Through the real pages, with MTurk and Prolific replaced by
the fake servers on 127.0.0.1."""

import io
import json
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judging.models import Assignment, Hit, HitSlot, Judgment, Pair
from judging.selectors import campaign_progress
from judging.services import hit_expire_overdue
from judging.services.crowd_sync import campaign_sync
from judging.services.exports import export_content
from judging.services.publishing import campaign_publish
from judging.tasks import campaign_publish_task
from tests.judging.crowd.conftest import running_campaign

SANDBOX = "https://workersandbox.mturk.com"


def hidden(html: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', html).group(1)


def answer_everything(client, hit: Hit, html: str) -> str:
    """Answer every question of the HIT page (challenges right), as a careful worker would."""
    slots = {slot.position: slot for slot in HitSlot.objects.filter(hit=hit)}
    while 'name="position"' in html:
        slot = slots[int(hidden(html, "position"))]
        side = "right" if slot.is_challenge and slot.expected_winner_id == slot.right_id else "left"
        response = client.post(
            f"/hits/{hit.public_id}/answer/",
            {"token": hidden(html, "token"), "position": slot.position, "side": side},
        )
        assert response.status_code == 303
        html = client.get(response["Location"]).content.decode()
    return html


def mturk_page(client, hit: Hit, *, assignment: str, worker: str):
    return client.get(
        f"/hits/{hit.public_id}/",
        {
            "assignmentId": assignment,
            "hitId": hit.external_id,
            "workerId": worker,
            "turkSubmitTo": SANDBOX,
            "begin": "1",
        },
    )


def counted_pairs(hit: Hit) -> int:
    return Pair.objects.filter(slots__hit=hit, winner__isnull=False).distinct().count()


@pytest.mark.django_db
def test_a_forged_mturk_assignment_counts_for_nothing_and_the_real_worker_takes_the_hit(client, fake_mturk):
    campaign = running_campaign(hits=3)
    campaign_publish_task.apply(args=[campaign.pk]).get()
    hit = Hit.objects.get(campaign=campaign, number=1)
    slots = HitSlot.objects.filter(hit=hit).count()

    # A forger opens the HIT with an assignment id MTurk never issued, answers everything and submits.
    forged_page = mturk_page(client, hit, assignment="FORGEDASSIGN1", worker="AFORGED1")
    assert forged_page.status_code == 200
    answer_everything(client, hit, forged_page.content.decode())
    token = hidden(forged_page.content.decode(), "token")
    assert client.post(f"/hits/{hit.public_id}/submit/", {"token": token}).status_code == 200

    forged = Assignment.objects.get(external_id="FORGEDASSIGN1")
    progress = campaign_progress(campaign=campaign)
    assert Judgment.objects.filter(assignment=forged).count() == slots  # stored: nothing is ever lost
    assert (forged.status, forged.earned_usd, forged.confirmed_at) == ("submitted", None, None)
    assert counted_pairs(hit) == 0 and Hit.objects.get(pk=hit.pk).status == Hit.Status.OPEN
    assert (progress.judgments, progress.judgments_unconfirmed, progress.hits_awaiting_confirmation) == (
        0,
        slots,
        1,
    )
    assert progress.spend_usd == Decimal("7.20")  # three published HITs reserved, nothing earned

    # The real worker, whom MTurk gave the HIT, is not turned away and counts once MTurk lists the work.
    real_id = fake_mturk.submit(hit.external_id, "AREAL1")
    real_page = mturk_page(client, hit, assignment=real_id, worker="AREAL1")
    assert real_page.status_code == 200
    answer_everything(client, hit, real_page.content.decode())
    report = campaign_sync(campaign=campaign)

    real, forged = Assignment.objects.get(external_id=real_id), Assignment.objects.get(pk=forged.pk)
    assert report.confirmed == 1 and fake_mturk.approved == [real_id]
    assert (real.status, real.paid_usd) == ("accepted", Decimal("2.00"))
    assert (forged.status, forged.earned_usd, forged.paid_usd) == ("submitted", None, None)
    assert counted_pairs(hit) == slots - campaign.challenges_per_hit
    log = export_content(campaign=campaign, kind="judgments").decode()
    assert log.count("\n") == 1 + slots  # the header and the real worker's answers only
    assert "AFORGED1" not in export_content(campaign=campaign, kind="workers").decode()
    # A second sync changes nothing: nobody confirmed or paid twice.
    again = campaign_sync(campaign=campaign)
    assert (again.confirmed, again.paid, fake_mturk.approved) == (0, 0, [real_id])


@pytest.mark.django_db
def test_a_claim_mturk_never_confirms_gives_its_hit_back_when_its_deadline_passes(client, fake_mturk):
    campaign = running_campaign(hits=3)
    campaign_publish_task.apply(args=[campaign.pk]).get()
    hit = Hit.objects.get(campaign=campaign, number=1)
    page = mturk_page(client, hit, assignment="FORGEDASSIGN1", worker="AFORGED1")
    answer_everything(client, hit, page.content.decode())
    pairs = set(HitSlot.objects.filter(hit=hit, pair__isnull=False).values_list("pair_id", flat=True))

    # Past its deadline but within the HIT's lifetime: the claim expires, the HIT stays open to anyone.
    after_deadline = timezone.now() + campaign.assignment_duration + timedelta(minutes=1)
    hit_expire_overdue(campaign=campaign, now=after_deadline)
    assert Assignment.objects.get().status == Assignment.Status.EXPIRED
    assert Hit.objects.get(pk=hit.pk).status == Hit.Status.OPEN
    # Past the HIT's lifetime too: it expires and its pairs go back to the queue, uncounted.
    hit_expire_overdue(campaign=campaign, now=timezone.now() + campaign.hit_lifetime + timedelta(minutes=1))
    assert Hit.objects.get(pk=hit.pk).status == Hit.Status.EXPIRED
    assert (
        set(
            Pair.objects.filter(pk__in=pairs, hit__isnull=True, winner__isnull=True).values_list(
                "pk", flat=True
            )
        )
        == pairs
    )
    progress = campaign_progress(campaign=campaign)
    # The answers are kept and shown as unconfirmed.
    assert (progress.judgments_unconfirmed, progress.hits_awaiting_confirmation) == (
        HitSlot.objects.filter(hit=hit).count(),
        0,
    )


def prolific_entry(client, campaign, *, participant: str, session: str, study: str):
    return client.get(
        f"/hits/campaign/{campaign.public_id}/",
        {"PROLIFIC_PID": participant, "STUDY_ID": study, "SESSION_ID": session},
    )


@pytest.mark.django_db
def test_invented_prolific_participants_cannot_drain_a_campaigns_hits(client, fake_prolific):
    campaign = running_campaign(provider="prolific", hits=3)
    campaign_publish(campaign=campaign)
    campaign.refresh_from_db()
    (study,) = campaign.provider_state["studies"].values()
    other = prolific_entry(client, campaign, participant="1" * 24, session="OTHER1", study="otherstudy")
    assert other.status_code == 400 and not Assignment.objects.exists()  # not a link to this campaign

    for index in range(10):
        forged = prolific_entry(
            client, campaign, participant=f"{index:024x}", session=f"FAKE{index}", study=study
        )
        assert forged.status_code == 303
    real_session = fake_prolific.submit(study, "e" * 24, status="ACTIVE")
    real = prolific_entry(client, campaign, participant="e" * 24, session=real_session, study=study)

    assert real.status_code == 303 and real["Location"].startswith("/hits/")  # a HIT, not "nothing left"
    # The next sync confirms the real participant and expires the claims Prolific does not know.
    Assignment.objects.exclude(external_id=real_session).update(
        started_at=timezone.now() - timedelta(minutes=5)
    )
    report = campaign_sync(campaign=campaign)
    assert (report.confirmed, report.refuted) == (1, 10)
    mine = Assignment.objects.get(external_id=real_session)
    assert mine.confirmed_at is not None and mine.status == Assignment.Status.IN_PROGRESS
    # Confirmed while in progress: the answers count as soon as they are all in.
    html = client.get(real["Location"] + "&begin=1").content.decode()
    answer_everything(client, mine.hit, html)
    assert Assignment.objects.get(pk=mine.pk).status == Assignment.Status.ACCEPTED
    assert counted_pairs(mine.hit) > 0
    # Every other HIT is free again for the next real participant.
    second_session = fake_prolific.submit(study, "d" * 24, status="ACTIVE")
    second = prolific_entry(client, campaign, participant="d" * 24, session=second_session, study=study)
    assert second.status_code == 303
    assert Assignment.objects.get(external_id=second_session).hit_id != mine.hit_id


@pytest.mark.django_db
def test_prolific_answers_count_once_the_participants_submission_is_listed(client, fake_prolific):
    campaign = running_campaign(provider="prolific", hits=3)
    campaign_publish(campaign=campaign)
    campaign.refresh_from_db()
    (study,) = campaign.provider_state["studies"].values()
    session = fake_prolific.submit(study, "c" * 24, status="ACTIVE")
    entry = prolific_entry(client, campaign, participant="c" * 24, session=session, study=study)
    assignment = Assignment.objects.get(external_id=session)
    answer_everything(client, assignment.hit, client.get(entry["Location"] + "&begin=1").content.decode())

    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.SUBMITTED
    assert counted_pairs(assignment.hit) == 0
    fake_prolific.submissions[session]["status"] = "AWAITING REVIEW"
    campaign_sync(campaign=campaign)

    assignment.refresh_from_db()
    assert (assignment.status, assignment.paid_usd) == ("accepted", Decimal("2.00"))
    assert fake_prolific.submissions[session]["status"] == "APPROVED"
    assert counted_pairs(assignment.hit) == 5
    assert campaign_progress(campaign=campaign).judgments_unconfirmed == 0


@pytest.mark.django_db
def test_a_forger_using_a_real_workers_id_first_never_turns_them_away(client, fake_mturk):
    campaign = running_campaign(hits=3)
    campaign_publish_task.apply(args=[campaign.pk]).get()
    first, second = Hit.objects.filter(campaign=campaign).order_by("number")[:2]
    # The forger claims two HITs under the real worker's id, answering some of one.
    forged = mturk_page(client, first, assignment="FORGEDASSIGN1", worker="AREAL1")
    mturk_page(client, second, assignment="FORGEDASSIGN2", worker="AREAL1")
    html = forged.content.decode()
    client.post(
        f"/hits/{first.public_id}/answer/",
        {"token": hidden(html, "token"), "position": hidden(html, "position"), "side": "left"},
    )

    # MTurk gives the real worker the first HIT: they get it, with a page of their own.
    real_id = fake_mturk.submit(first.external_id, "AREAL1")
    page = mturk_page(client, first, assignment=real_id, worker="AREAL1")

    assert page.status_code == 200 and "0 of" in page.content.decode()


@pytest.mark.django_db
def test_the_wait_is_shown_by_campaign_status_the_api_and_the_dashboard(client, fake_mturk):
    campaign = running_campaign(hits=3)
    campaign_publish_task.apply(args=[campaign.pk]).get()
    hit = Hit.objects.get(campaign=campaign, number=1)
    answer_everything(
        client, hit, mturk_page(client, hit, assignment="FORGEDASSIGN1", worker="AFORGED1").content.decode()
    )
    slots = HitSlot.objects.filter(hit=hit).count()
    owner = User.objects.create_user("owner", password="pw-owner-123")
    owner.groups.add(Group.objects.get_or_create(name="researchers")[0])
    campaign.owner = owner
    campaign.save(update_fields=["owner"])

    out = io.StringIO()
    call_command("campaign_status", campaign.name, "--json", stdout=out)
    status = json.loads(out.getvalue())
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    progress = api.get(f"/api/campaigns/{campaign.name}/").json()["progress"]
    client.force_login(owner)
    page = client.get(f"/dashboard/campaigns/{campaign.name}/").content.decode()

    for found in (status, progress):
        assert (found["hits_awaiting_confirmation"], found["judgments_unconfirmed"]) == (1, slots)
    assert re.search(r'data-field="hits_awaiting_confirmation">1<', page)
    assert re.search(rf'data-field="judgments_unconfirmed">{slots}<', page)

"""Forged claims change no figure and turn nobody away: the exports number only confirmed workers, from one
pseudonym table, so the files join; a live Prolific session is never ended by another session under the
same participant id (the forged one waits); ``workers_active`` counts confirmed workers only. Through the
real pages, with MTurk and Prolific replaced by the fake servers on 127.0.0.1."""

import csv
import io
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from judging.models import Assignment, Hit
from judging.selectors import campaign_progress
from judging.services.crowd_sync import campaign_sync
from judging.services.exports import export_content
from judging.services.publishing import campaign_publish
from judging.tasks import campaign_publish_task
from judging.views.tokens import token_read
from tests.judging.crowd.conftest import running_campaign
from tests.judging.crowd.test_confirmation import answer_everything, hidden, mturk_page, prolific_entry


def _rows(content: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(content.decode())))


def _prolific_campaign():
    campaign = running_campaign(provider="prolific", hits=3)
    campaign_publish(campaign=campaign)
    campaign.refresh_from_db()
    (study,) = campaign.provider_state["studies"].values()
    return campaign, study


@pytest.mark.django_db
def test_the_judgments_and_workers_exports_join_after_forged_claims(client, fake_mturk):
    # given forgers who answered a whole HIT each before the real worker answered anything
    campaign = running_campaign(hits=3)
    campaign_publish_task.apply(args=[campaign.pk]).get()
    first, second = Hit.objects.filter(campaign=campaign).order_by("number")[:2]
    for number, hit in enumerate((first, second)):
        page = mturk_page(client, hit, assignment=f"FORGEDASSIGN{number}", worker=f"AFORGED{number}")
        answer_everything(client, hit, page.content.decode())
    real_id = fake_mturk.submit(first.external_id, "AREAL1")
    answer_everything(
        client, first, mturk_page(client, first, assignment=real_id, worker="AREAL1").content.decode()
    )
    campaign_sync(campaign=campaign)

    # when both exports are made
    log = _rows(export_content(campaign=campaign, kind="judgments"))
    workers = _rows(export_content(campaign=campaign, kind="workers"))

    # then the real worker is w1 in both, and every answer of the log joins one row of the workers file
    assert {row["worker"] for row in log} == {"w1"}
    assert [row["worker"] for row in workers] == ["w1"]
    joined = {row["worker"]: row for row in workers}
    assert all(row["worker"] in joined for row in log)
    assert int(joined["w1"]["hits_submitted"]) == 1


def hit_page(location: str) -> tuple:
    """The HIT page a redirect leads to and the claims of its token; the token's text also holds the second it
    was signed, so two redirects to the same page a second apart differ in text, not in what they carry."""
    url = urlsplit(location)
    (token,) = parse_qs(url.query)["token"]
    public_id = url.path.strip("/").split("/")[-1]
    return url.path, token_read(token, hit_public_id=public_id)


@pytest.mark.django_db
def test_a_live_prolific_session_is_not_ended_by_another_session_under_the_same_id(
    client, fake_prolific, django_capture_on_commit_callbacks
):
    # given a real participant mid-HIT, before any sync confirmed them
    campaign, study = _prolific_campaign()
    participant = "e" * 24
    real_session = fake_prolific.submit(study, participant, status="ACTIVE")
    entry = prolific_entry(client, campaign, participant=participant, session=real_session, study=study)
    page = client.get(entry["Location"] + "&begin=1").content.decode()
    mine = Assignment.objects.get(external_id=real_session)
    first_answer = client.post(
        f"/hits/{mine.hit.public_id}/answer/",
        {"token": hidden(page, "token"), "position": hidden(page, "position"), "side": "left"},
    )
    assert first_answer.status_code == 303

    # when someone who knows their id opens the study link with an invented session
    with django_capture_on_commit_callbacks() as queued:
        forged = prolific_entry(client, campaign, participant=participant, session="INVENTED1", study=study)

    # then the forged session waits for a sync (queued) to say which session Prolific knows, and the
    # participant answers on and reloads their HIT as before
    assert forged.status_code == 409 and "another session" in forged.content.decode()
    assert len(queued) == 1
    assert not Assignment.objects.filter(external_id="INVENTED1").exists()
    page = client.get(first_answer["Location"]).content.decode()
    second_answer = client.post(
        f"/hits/{mine.hit.public_id}/answer/",
        {"token": hidden(page, "token"), "position": hidden(page, "position"), "side": "left"},
    )
    reload = prolific_entry(client, campaign, participant=participant, session=real_session, study=study)
    assert second_answer.status_code == 303
    assert reload.status_code == 303 and hit_page(reload["Location"]) == hit_page(entry["Location"])
    assert Assignment.objects.get(pk=mine.pk).status == Assignment.Status.IN_PROGRESS


@pytest.mark.django_db
def test_a_confirmed_prolific_session_is_never_ended_by_another_session(client, fake_prolific):
    # given a participant whose session Prolific confirmed, idle for an hour
    campaign, study = _prolific_campaign()
    participant = "c" * 24
    real_session = fake_prolific.submit(study, participant, status="ACTIVE")
    prolific_entry(client, campaign, participant=participant, session=real_session, study=study)
    campaign_sync(campaign=campaign)
    Assignment.objects.filter(external_id=real_session).update(started_at=timezone.now() - timedelta(hours=1))

    # when another session under their id opens the link
    forged = prolific_entry(client, campaign, participant=participant, session="INVENTED2", study=study)

    # then it waits, and the confirmed session keeps its HIT
    mine = Assignment.objects.get(external_id=real_session)
    assert forged.status_code == 409
    assert mine.confirmed_at is not None and mine.status == Assignment.Status.IN_PROGRESS


@pytest.mark.django_db
def test_a_forgers_session_first_makes_the_real_participant_wait_only_until_the_sync(client, fake_prolific):
    # given a forger who opened the link under a real participant's id first, and answers on
    campaign, study = _prolific_campaign()
    participant = "d" * 24
    prolific_entry(client, campaign, participant=participant, session="INVENTED3", study=study)
    real_session = fake_prolific.submit(study, participant, status="ACTIVE")

    # when the real participant arrives, then after the sync (which expires the claim Prolific does not list)
    waiting = prolific_entry(client, campaign, participant=participant, session=real_session, study=study)
    Assignment.objects.filter(external_id="INVENTED3").update(
        started_at=timezone.now() - timedelta(minutes=1)
    )
    report = campaign_sync(campaign=campaign)
    again = prolific_entry(client, campaign, participant=participant, session=real_session, study=study)

    # then they waited a sync, and got a HIT
    assert waiting.status_code == 409 and report.refuted == 1
    assert again.status_code == 303 and again["Location"].startswith("/hits/")
    assert Assignment.objects.get(external_id="INVENTED3").status == Assignment.Status.EXPIRED


@pytest.mark.django_db
def test_an_idle_unconfirmed_session_is_superseded_by_a_new_one(client, fake_prolific, settings):
    # given a claim under a participant's id with no answer for longer than the idle time
    settings.TOPPREF_IDLE_RELEASE_SECONDS = 600
    campaign, study = _prolific_campaign()
    participant = "f" * 24
    prolific_entry(client, campaign, participant=participant, session="INVENTED4", study=study)
    Assignment.objects.filter(external_id="INVENTED4").update(started_at=timezone.now() - timedelta(hours=1))

    # when a new session opens the link
    entry = prolific_entry(client, campaign, participant=participant, session="NEWSESSION", study=study)

    # then the idle claim expired and the new session has a HIT
    assert entry.status_code == 303
    assert Assignment.objects.get(external_id="INVENTED4").status == Assignment.Status.EXPIRED
    assert Assignment.objects.get(external_id="NEWSESSION").status == Assignment.Status.IN_PROGRESS


@pytest.mark.django_db
def test_workers_active_counts_confirmed_workers_only(client, fake_prolific):
    # given forty invented participants and one real participant who was confirmed
    campaign, study = _prolific_campaign()
    for index in range(40):
        prolific_entry(client, campaign, participant=f"{index:024x}", session=f"FAKE{index}", study=study)
    real_session = fake_prolific.submit(study, "a" * 24, status="ACTIVE")
    prolific_entry(client, campaign, participant="a" * 24, session=real_session, study=study)
    before_sync = campaign_progress(campaign=campaign).workers_active
    campaign_sync(campaign=campaign)

    # then only the real participant is an active worker, before the sync refuted the others and after
    assert before_sync == 0
    assert campaign_progress(campaign=campaign).workers_active == 1

"""Abandoned work is released: a local judge's assignment without an answer for ``TOPPREF_IDLE_RELEASE_SECONDS``
(default 600) is released by the sweep, its HIT goes to the next judge, the answers given are kept and only
the assignment that completes the HIT counts; an answer within the window keeps the assignment; crowd
platforms' assignments keep their own clock; the default ``assignment_duration`` fits a 13-question HIT."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from judging.models import Assignment, Campaign, Hit, HitSlot, Judgment, Pair
from judging.services import assignment_submit, hit_assign_next, judgment_submit
from judging.services.sweep import campaign_advance_running
from tests.judging.factories import WorkerFactory
from tests.judging.pages_fixtures import crowd_campaign
from tests.judging.test_judgments import honest_answers


def answer(assignment: Assignment, count: int) -> None:
    for slot in HitSlot.objects.filter(hit_id=assignment.hit_id).order_by("position")[:count]:
        judgment_submit(assignment=assignment, slot=slot, winner_id=slot.right_id)


@pytest.mark.django_db
def test_an_abandoned_local_assignment_is_released_and_its_answers_count_once(settings):
    assert settings.TOPPREF_IDLE_RELEASE_SECONDS == 600
    campaign = crowd_campaign()
    first = hit_assign_next(campaign=campaign, worker=WorkerFactory())
    answer(first, 2)  # then the judge closes the tab

    campaign_advance_running(now=timezone.now() + timedelta(seconds=601))

    first.refresh_from_db()
    assert first.status == Assignment.Status.EXPIRED
    assert Hit.objects.get(pk=first.hit_id).status == Hit.Status.OPEN  # back in the queue
    second = hit_assign_next(campaign=campaign, worker=WorkerFactory())
    assert second.hit_id == first.hit_id
    assignment_submit(assignment=second, winners=honest_answers(second.hit))
    # the two answers given are kept (not counted); every pair's winner is the second judge's answer
    assert Judgment.objects.filter(assignment=first).count() == 2
    pairs = Pair.objects.filter(hit_id=first.hit_id)
    counted = dict(
        Judgment.objects.filter(assignment=second, slot__pair__isnull=False).values_list(
            "slot__pair", "winner"
        )
    )
    assert {pair.pk: pair.winner_id for pair in pairs} == counted


@pytest.mark.django_db
def test_an_answer_within_the_window_keeps_the_assignment_and_platforms_keep_their_clock(settings):
    local = crowd_campaign(name="local")
    mturk = crowd_campaign(name="mturk", provider=Campaign.Provider.MTURK)
    active = hit_assign_next(campaign=local, worker=WorkerFactory())
    crowd = hit_assign_next(campaign=mturk, worker=WorkerFactory(provider="mturk"))
    answer(active, 1)

    # 9 minutes after the answer (and after the start) nothing is idle
    campaign_advance_running(now=timezone.now() + timedelta(seconds=540))
    assert Assignment.objects.get(pk=active.pk).status == Assignment.Status.IN_PROGRESS

    # an hour's quarter later the local one is released; the MTurk one keeps MTurk's own deadline
    campaign_advance_running(now=timezone.now() + timedelta(seconds=900))
    assert Assignment.objects.get(pk=active.pk).status == Assignment.Status.EXPIRED
    assert Assignment.objects.get(pk=crowd.pk).status == Assignment.Status.IN_PROGRESS

    # and 0 turns the release off
    settings.TOPPREF_IDLE_RELEASE_SECONDS = 0
    again = hit_assign_next(campaign=local, worker=WorkerFactory())
    campaign_advance_running(now=timezone.now() + timedelta(seconds=1200))
    assert Assignment.objects.get(pk=again.pk).status == Assignment.Status.IN_PROGRESS


@pytest.mark.django_db
def test_the_default_assignment_duration_fits_a_thirteen_question_hit():
    campaign = crowd_campaign()
    # 13 questions at up to two minutes each, and no more (an abandoned HIT waits at most this long on a
    # platform, and TOPPREF_IDLE_RELEASE_SECONDS locally)
    assert timedelta(minutes=26) <= campaign.assignment_duration <= timedelta(minutes=30)

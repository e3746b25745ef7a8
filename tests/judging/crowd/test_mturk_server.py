"""Retries and idempotency against a real HTTP server on 127.0.0.1 standing in for MTurk: throttling, a 5xx
and a timeout after the HIT was created create no duplicate HIT; paginated, throttled collection loses no
assignment; a second sync pays nobody twice; an outage longer than botocore's retries is retried by Celery."""

from collections import Counter
from decimal import Decimal

import pytest

from judging.models import Assignment, Campaign, Hit
from judging.services import hit_build, hit_discard
from judging.tasks import campaign_publish_task, crowd_sync_task
from tests.judging.crowd.conftest import complete_hit, running_campaign
from tests.judging.crowd.fake_mturk import FakeMTurk


@pytest.fixture
def fake_mturk(settings):
    # The client waits 2 s for an answer; the "timeout" fault answers after 3 s.
    with FakeMTurk(timeout_sleep=3.0, page_size=1) as fake:
        settings.TOPPREF_MTURK_ENDPOINT_URL = fake.url
        settings.TOPPREF_MTURK_MAX_ATTEMPTS = 4
        settings.TOPPREF_CROWD_TIMEOUT_SECONDS = 2.0
        yield fake


@pytest.mark.django_db
def test_throttling_a_5xx_and_a_timeout_after_creating_a_hit_create_no_duplicate(fake_mturk):
    campaign = running_campaign(hits=3)
    fake_mturk.faults = [
        ("CreateHITWithHITType", "throttle"),
        ("CreateHITWithHITType", "5xx"),
        ("CreateHITWithHITType", "timeout"),
    ]

    numbers = campaign_publish_task.apply(args=[campaign.pk]).get()

    assert numbers == [1, 2, 3]
    assert len(fake_mturk.hits) == 3 and fake_mturk.faults == []
    tokens = Counter(body["UniqueRequestToken"] for body in fake_mturk.calls_of("CreateHITWithHITType"))
    first = str(Hit.objects.get(campaign=campaign, number=1).public_id)
    # HIT 1: throttled, 5xx, created but timed out, then the replayed token answered "already exists"
    # (a slow machine may add retries, never HITs).
    assert tokens[first] >= 4 and len(tokens) == 3
    by_annotation = {hit["RequesterAnnotation"]: hit_id for hit_id, hit in fake_mturk.hits.items()}
    for hit in Hit.objects.filter(campaign=campaign):
        assert hit.external_id == by_annotation[str(hit.public_id)]
        assert (hit.reward_usd, hit.fee_usd) == (Decimal("2.00"), Decimal("0.40"))

    # Publishing again publishes nothing more.
    assert campaign_publish_task.apply(args=[campaign.pk]).get() == []
    assert len(fake_mturk.hits) == 3


@pytest.mark.django_db
def test_throttled_paginated_collection_loses_no_assignment_and_pays_each_once(fake_mturk):
    campaign = running_campaign(hits=3)
    campaign_publish_task.apply(args=[campaign.pk]).get()
    hits = list(Hit.objects.filter(campaign=campaign).order_by("number"))
    for index, hit in enumerate(hits):
        complete_hit(hit, f"A{index}WORKER")
        fake_mturk.submit(hit.external_id, f"A{index}WORKER")
    # One more assignment on HIT 1 than we have answers for: two pages of one assignment each.
    fake_mturk.submit(hits[0].external_id, "A9STRANGER")
    fake_mturk.faults = [("ListAssignmentsForHIT", "throttle"), ("ApproveAssignment", "5xx")]

    counts = crowd_sync_task.apply(args=[campaign.pk]).get()
    again = crowd_sync_task.apply(args=[campaign.pk]).get()

    assert counts == {"collected": 4, "approved": 3, "paid": 3}
    assert again == {"collected": 0, "approved": 0, "paid": 0}  # settled HITs are not listed again
    assert sorted(fake_mturk.approved) == sorted(
        Assignment.objects.filter(campaign=campaign).values_list("external_id", flat=True)
    )
    assert len(fake_mturk.approved) == 3
    paid = Assignment.objects.filter(campaign=campaign, paid_at__isnull=False)
    assert paid.count() == 3 and {a.paid_usd for a in paid} == {Decimal("2.00")}


@pytest.mark.django_db
def test_an_outage_longer_than_the_client_retries_is_retried_by_the_task(fake_mturk, settings):
    settings.TOPPREF_MTURK_MAX_ATTEMPTS = 2
    campaign = running_campaign(hits=3)
    fake_mturk.faults = [("GetAccountBalance", "5xx")] * 2

    numbers = campaign_publish_task.apply(args=[campaign.pk]).get()

    assert numbers == [1, 2, 3] and len(fake_mturk.calls_of("GetAccountBalance")) >= 3


@pytest.mark.django_db
def test_a_paused_campaign_expires_its_open_hits_at_mturk_once(fake_mturk):
    campaign = running_campaign(hits=3)
    campaign_publish_task.apply(args=[campaign.pk]).get()
    complete_hit(Hit.objects.get(campaign=campaign, number=1), "A1WORKER")
    fake_mturk.submit(Hit.objects.get(campaign=campaign, number=1).external_id, "A1WORKER")
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.PAUSED)

    crowd_sync_task.apply(args=[campaign.pk]).get()
    crowd_sync_task.apply(args=[campaign.pk]).get()

    open_ids = set(
        Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN).values_list("external_id", flat=True)
    )
    assert len(open_ids) == 2 and sorted(fake_mturk.expired) == sorted(open_ids)


@pytest.mark.django_db
def test_a_hit_discarded_here_is_withdrawn_from_mturk_once(fake_mturk):
    campaign = running_campaign(hits=3)
    campaign_publish_task.apply(args=[campaign.pk]).get()
    discarded = Hit.objects.get(campaign=campaign, number=2)
    hit_discard(hit=discarded)
    hit_build(campaign=campaign)  # the task hit_discard queues on commit

    crowd_sync_task.apply(args=[campaign.pk]).get()
    crowd_sync_task.apply(args=[campaign.pk]).get()

    assert fake_mturk.expired == [discarded.external_id]
    # Its pairs went back to the queue, into HIT 4, which the sync published (auto-publish after the first).
    assert Hit.objects.get(campaign=campaign, number=4).external_id in fake_mturk.hits


@pytest.mark.django_db
def test_a_refused_approval_holds_up_nobody_and_is_tried_again_by_the_next_sync(fake_mturk):
    campaign = running_campaign(hits=3)
    campaign_publish_task.apply(args=[campaign.pk]).get()
    for number, hit in enumerate(Hit.objects.filter(campaign=campaign).order_by("number")):
        complete_hit(hit, f"A{number}WORKER", fail_challenges=number == 0)
        fake_mturk.submit(hit.external_id, f"A{number}WORKER")
    fake_mturk.faults = [("ApproveAssignment", "refuse"), ("AssociateQualificationWithWorker", "refuse")]

    first = crowd_sync_task.apply(args=[campaign.pk]).get()
    second = crowd_sync_task.apply(args=[campaign.pk]).get()

    assert first == {"collected": 3, "approved": 2, "paid": 2}
    assert second == {"collected": 1, "approved": 1, "paid": 1}
    assert len(fake_mturk.approved) == 3 and fake_mturk.associations == []
    assert not Assignment.objects.filter(campaign=campaign, paid_at__isnull=True).exists()
    campaign.refresh_from_db()
    # The refused exclusion is not tried at every sync; our own check keeps the worker out.
    assert campaign.provider_state["excluded_workers"] == ["A0WORKER"]

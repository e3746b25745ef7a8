"""Celery wiring: services enqueue tasks on commit (eager in tests), and running any task twice changes nothing."""

import pytest
from django.apps import apps

from judging import tasks
from judging.models import Campaign, CampaignTopic, Hit, HitSlot, Round
from judging.services import assignment_start, assignment_submit, campaign_create, campaign_start, hit_build
from tests.judging.factories import WorkerFactory, collection_with_grades, graded_pool, judge_round


def snapshot():
    """Every row of every judging table."""
    return {
        model.__name__: list(model.objects.order_by("pk").values())
        for model in apps.get_app_config("judging").get_models()
    }


def honest(hit):
    return {
        slot.position: slot.expected_winner_id if slot.is_challenge else min(slot.left_id, slot.right_id)
        for slot in HitSlot.objects.filter(hit=hit)
    }


@pytest.mark.django_db
def test_campaign_start_builds_hits_through_the_task_after_commit(django_capture_on_commit_callbacks):
    collection = collection_with_grades({"1_1": graded_pool("a", 9)})
    campaign = campaign_create(collection=collection, name="c")

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        campaign_start(campaign=campaign)

    assert len(callbacks) == 1 and Hit.objects.count() == 4


@pytest.mark.django_db
def test_the_last_counted_hit_closes_the_round_through_the_task(django_capture_on_commit_callbacks):
    collection = collection_with_grades({"1_1": graded_pool("a", 6)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c"))
    first, last = hit_build(campaign=campaign)
    assignment_submit(assignment=assignment_start(hit=first, worker=WorkerFactory()), winners=honest(first))

    with django_capture_on_commit_callbacks(execute=True):
        assignment_submit(assignment=assignment_start(hit=last, worker=WorkerFactory()), winners=honest(last))

    campaign.refresh_from_db()
    assert campaign.status == "done" and Round.objects.get().closed_at is not None


@pytest.mark.django_db
def test_a_failed_challenge_rebuilds_a_hit_through_the_task(django_capture_on_commit_callbacks):
    collection = collection_with_grades({"1_1": graded_pool("a", 6)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c"))
    hit = hit_build(campaign=campaign)[0]
    winners = honest(hit)
    challenge = HitSlot.objects.filter(hit=hit, is_challenge=True).first()
    winners[challenge.position] = (
        challenge.left_id if challenge.expected_winner_id == challenge.right_id else challenge.right_id
    )

    with django_capture_on_commit_callbacks(execute=True):
        assignment_submit(assignment=assignment_start(hit=hit, worker=WorkerFactory()), winners=winners)

    assert list(Hit.objects.order_by("number").values_list("number", "status")) == [
        (1, "discarded"),
        (2, "open"),
        (3, "open"),
    ]


def started_crowd_campaign():
    collection = collection_with_grades({"1_1": graded_pool("a", 12), "1_2": graded_pool("b", 6)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c", seed=8))
    hit_build(campaign=campaign, max_hits=2)
    judge_round(Round.objects.get(campaign_topic__topic__topic_id="1_1"), lambda a, b: min(a, b))
    return campaign


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("task", "argument"),
    [
        (tasks.campaign_start_task, lambda c: c.pk),
        (
            tasks.round_generate_task,
            lambda c: CampaignTopic.objects.get(campaign=c, topic__topic_id="1_2").pk,
        ),
        (tasks.hit_build_task, lambda c: c.pk),
        (
            tasks.round_close_if_complete_task,
            lambda c: Round.objects.get(campaign_topic__topic__topic_id="1_1").pk,
        ),
        (tasks.hit_expire_overdue_task, None),
        (tasks.campaign_advance_task, lambda c: c.pk),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_running_a_task_twice_changes_nothing_the_second_time(task, argument):
    campaign = started_crowd_campaign()
    arguments = [] if argument is None else [argument(campaign)]
    task.delay(*arguments)
    after_first = snapshot()

    task.delay(*arguments)

    assert snapshot() == after_first


@pytest.mark.django_db
def test_tasks_for_deleted_objects_do_nothing():
    campaign = started_crowd_campaign()
    campaign_id = campaign.pk
    Campaign.objects.filter(pk=campaign_id).delete()

    for task in (tasks.campaign_start_task, tasks.hit_build_task, tasks.campaign_advance_task):
        task.delay(campaign_id)

    assert Hit.objects.count() == 0


def test_tasks_acknowledge_late():
    for task in (
        tasks.campaign_start_task,
        tasks.round_generate_task,
        tasks.hit_build_task,
        tasks.round_close_if_complete_task,
        tasks.hit_expire_overdue_task,
        tasks.campaign_advance_task,
    ):
        assert task.acks_late is True

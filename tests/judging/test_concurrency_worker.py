"""One worker, several concurrent requests (a double click, a retry, two tabs), with real threads against
PostgreSQL: the worker's row lock gives one assignment in progress per worker and campaign. Skipped on
SQLite, whose IMMEDIATE transactions serialise writers anyway."""

import pytest
from django.db import connection

from judging.models import Assignment
from judging.services import (
    WorkerBusyError,
    assignment_start,
    assignment_submit,
    campaign_create,
    campaign_start,
    hit_assign_next,
    hit_build,
)
from tests.judging.factories import WorkerFactory, collection_with_grades, graded_pool
from tests.judging.test_concurrency import run_together
from tests.judging.test_judgments import honest_answers

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks")


def running_campaign():
    collection = collection_with_grades({"1_1": graded_pool("a", 9), "1_2": graded_pool("b", 9)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c"))
    if not campaign.hits.exists():
        hit_build(campaign=campaign)
    return campaign


@pytest.mark.django_db(transaction=True)
def test_four_concurrent_hit_requests_of_one_worker_give_one_assignment():
    campaign = running_campaign()
    worker = WorkerFactory()

    results = run_together([lambda: hit_assign_next(campaign=campaign, worker=worker)] * 4)

    assert all(isinstance(result, Assignment) for result in results), results
    assert len({result.pk for result in results}) == 1
    assert Assignment.objects.filter(worker=worker).count() == 1


@pytest.mark.django_db(transaction=True)
def test_one_worker_taking_four_hits_at_once_gets_one_and_is_told_of_it_for_the_others():
    campaign = running_campaign()
    hits = list(campaign.hits.order_by("number")[:4])
    worker = WorkerFactory()

    results = run_together([lambda hit=hit: assignment_start(hit=hit, worker=worker) for hit in hits])

    taken = [result for result in results if isinstance(result, Assignment)]
    busy = [result for result in results if isinstance(result, WorkerBusyError)]
    assert (len(taken), len(busy)) == (1, 3), results
    assert {error.assignment_id for error in busy} == {taken[0].pk}
    assert Assignment.objects.filter(worker=worker, status="in_progress").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_worker_asking_for_work_while_submitting_neither_deadlocks_nor_hoards():
    # The same worker submits their HIT and asks for the next one at the same moment (two tabs): both finish,
    # and the worker ends with at most one assignment in progress.
    campaign = running_campaign()
    worker = WorkerFactory()
    held = hit_assign_next(campaign=campaign, worker=worker)
    winners = honest_answers(held.hit)

    results = run_together(
        [
            lambda: assignment_submit(assignment=held, winners=winners),
            lambda: hit_assign_next(campaign=campaign, worker=worker),
        ]
    )

    assert not any(isinstance(result, Exception) for result in results), results
    assert Assignment.objects.filter(worker=worker, status="in_progress").count() <= 1
    assert Assignment.objects.get(pk=held.pk).status == "accepted"

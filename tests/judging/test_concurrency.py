"""Concurrency with real threads against PostgreSQL (row locks, SKIP LOCKED): a round completed by two
judgments at once advances exactly once; concurrent workers and assessors never get the same HIT or pair.
Skipped on SQLite, whose IMMEDIATE transactions serialise writers anyway."""

import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections

from judging.models import CampaignTopic, Candidate, HitSlot, Pair, Round
from judging.services import (
    AssignmentClosedError,
    assignment_start,
    assignment_submit,
    campaign_create,
    campaign_start,
    hit_assign_next,
    hit_build,
    hit_expire,
    round_close_if_complete,
    tournament_next_pair,
)
from tests.judging.factories import WorkerFactory, collection_with_grades, graded_pool, judge_round

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks")


def run_together(functions):
    """Run the callables in threads released at the same moment; return their results (or exceptions)."""
    barrier = threading.Barrier(len(functions))
    results = [None] * len(functions)

    def run(index, function):
        try:
            barrier.wait()
            results[index] = function()
        except Exception as error:  # noqa: BLE001 - reported to the test
            results[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, f)) for i, f in enumerate(functions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.mark.django_db(transaction=True)
def test_concurrent_closes_of_a_complete_round_advance_it_once():
    collection = collection_with_grades({"1_1": graded_pool("a", 12)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c", seed=3))
    round = Round.objects.get()
    judge_round(round, lambda a, b: min(a, b))

    results = run_together([lambda: round_close_if_complete(round=round)] * 4)

    assert sorted(results) == [False, False, False, True]
    assert Round.objects.filter(campaign_topic__campaign=campaign).count() == 2
    assert CampaignTopic.objects.get().round_number == 2
    assert (
        Candidate.objects.filter(culled_in_round=1).count()
        == 12 - Candidate.objects.filter(is_active=True).count()
    )


@pytest.mark.django_db(transaction=True)
def test_two_hits_finishing_a_round_at_once_advance_it_once():
    # Given a stage-1 round of 12 candidates (42 pairs) packed into HITs; all but the last two are counted
    collection = collection_with_grades({"1_1": graded_pool("a", 12)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c", seed=3))
    hits = list(campaign.hits.order_by("number")) or hit_build(campaign=campaign)

    def honest(hit):
        return {
            slot.position: slot.expected_winner_id if slot.is_challenge else min(slot.left_id, slot.right_id)
            for slot in HitSlot.objects.filter(hit=hit)
        }

    assignments = [assignment_start(hit=hit, worker=WorkerFactory()) for hit in hits]
    for hit, assignment in zip(hits[:-2], assignments[:-2], strict=True):
        assignment_submit(assignment=assignment, winners=honest(hit))

    # When the last two are submitted at the same moment (each enqueues the round's close on commit)
    results = run_together(
        [
            lambda a=a, h=h: assignment_submit(assignment=a, winners=honest(h))
            for h, a in zip(hits[-2:], assignments[-2:], strict=True)
        ]
    )

    assert all(result.status == "accepted" for result in results)
    first = Round.objects.get(number=1)
    assert first.closed_at is not None
    assert list(Round.objects.order_by("number").values_list("number", flat=True)) == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_concurrent_workers_get_different_hits():
    collection = collection_with_grades({"1_1": graded_pool("a", 9), "1_2": graded_pool("b", 9)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c"))
    if not campaign.hits.exists():
        hit_build(campaign=campaign)
    workers = [WorkerFactory() for _ in range(6)]

    results = run_together([lambda w=w: hit_assign_next(campaign=campaign, worker=w) for w in workers])

    hit_ids = [result.hit_id for result in results]
    assert len(set(hit_ids)) == 6


@pytest.mark.django_db(transaction=True)
def test_concurrent_assessors_never_receive_the_same_pair():
    collection = collection_with_grades({f"1_{i}": graded_pool(f"t{i}", 6) for i in range(1, 5)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="t", mode="tournament"))
    assessors = [get_user_model().objects.create(username=f"assessor{i}") for i in range(6)]

    results = run_together(
        [lambda a=a: tournament_next_pair(campaign=campaign, assessor=a) for a in assessors]
    )

    questions = [result for result in results if result is not None]
    assert not any(isinstance(result, Exception) for result in results)
    assert len(questions) == 4 and len({q.campaign_topic.pk for q in questions}) == 4
    held = CampaignTopic.objects.filter(assessor__isnull=False).values_list("assessor_id", flat=True)
    assert len(set(held)) == 4


@pytest.mark.django_db(transaction=True)
def test_a_submit_racing_an_expiry_ends_in_exactly_one_of_them():
    collection = collection_with_grades({"1_1": graded_pool("a", 9), "1_2": graded_pool("b", 9)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c"))
    hits = list(campaign.hits.order_by("number")) or hit_build(campaign=campaign)
    assignments = [assignment_start(hit=hit, worker=WorkerFactory()) for hit in hits]
    answers = [
        {slot.position: slot.expected_winner_id or slot.left_id for slot in HitSlot.objects.filter(hit=hit)}
        for hit in hits
    ]

    results = run_together(
        [
            lambda a=a, w=w: assignment_submit(assignment=a, winners=w)
            for a, w in zip(assignments, answers, strict=True)
        ]
        + [lambda h=h: hit_expire(hit=h) for h in hits]
    )

    submits, expiries = results[: len(hits)], results[len(hits) :]
    for hit, submit, expiry in zip(hits, submits, expiries, strict=True):
        hit.refresh_from_db()
        assert not isinstance(expiry, Exception)
        if isinstance(submit, AssignmentClosedError):
            assert hit.status == "expired" and not Pair.objects.filter(hit=hit).exists()
        else:
            assert submit.status == "accepted" and hit.status == "accepted"
            assert (
                Pair.objects.filter(hit=hit, winner__isnull=False).count()
                == HitSlot.objects.filter(hit=hit, is_challenge=False).count()
            )

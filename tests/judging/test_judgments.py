"""Crowd work: taking HITs, idempotent submits, challenge failures (paid, discarded, worker excluded, pairs
requeued) and counted HITs (pairs get their winner, complete rounds close)."""

import pytest

from judging.models import Assignment, Hit, HitSlot, Judgment, Pair, Round, Worker
from judging.services import (
    AssignmentClosedError,
    HitNotOpenError,
    HitTakenError,
    InvalidWinnerError,
    SlotMismatchError,
    WorkerExcludedError,
    assignment_start,
    assignment_submit,
    campaign_create,
    campaign_start,
    hit_assign_next,
    hit_build,
    hit_expire,
    judgment_submit,
    round_close_if_complete,
    worker_exclude,
    worker_get_or_create,
)
from tests.judging.factories import WorkerFactory, collection_with_grades, graded_pool


def first_hit(grades=None, **options):
    collection = collection_with_grades(grades or {"1_1": graded_pool("a", 6)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c", seed=2, **options))
    return hit_build(campaign=campaign)[0]


def honest_answers(hit, *, fail_challenges=0):
    """Winners by slot position: the expected side of challenges (except the first ``fail_challenges``),
    the smaller docid for pairs."""
    winners, failed = {}, 0
    for slot in HitSlot.objects.filter(hit=hit).select_related("left", "right").order_by("position"):
        if slot.is_challenge:
            if failed < fail_challenges:
                winners[slot.position] = (
                    slot.right_id if slot.expected_winner_id == slot.left_id else slot.left_id
                )
                failed += 1
            else:
                winners[slot.position] = slot.expected_winner_id
        else:
            winners[slot.position] = slot.left_id if slot.left.docid < slot.right.docid else slot.right_id
    return winners


@pytest.mark.django_db
def test_judgment_submit_twice_counts_once():
    hit = first_hit()
    assignment = assignment_start(hit=hit, worker=WorkerFactory())
    slot = HitSlot.objects.filter(hit=hit).first()

    first = judgment_submit(assignment=assignment, slot=slot, winner_id=slot.left_id)
    second = judgment_submit(assignment=assignment, slot=slot, winner_id=slot.right_id)

    assert second.pk == first.pk and second.winner_id == slot.left_id and Judgment.objects.count() == 1


@pytest.mark.django_db
def test_judgment_submit_refuses_an_item_not_shown_and_a_slot_of_another_hit():
    collection = collection_with_grades({"1_1": graded_pool("a", 9)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c"))
    hit, other = hit_build(campaign=campaign)[:2]
    assignment = assignment_start(hit=hit, worker=WorkerFactory())
    slot = HitSlot.objects.filter(hit=hit).first()
    foreign = HitSlot.objects.filter(hit=other).first()

    with pytest.raises(InvalidWinnerError):
        judgment_submit(
            assignment=assignment,
            slot=slot,
            winner_id=foreign.left_id
            if foreign.left_id not in (slot.left_id, slot.right_id)
            else foreign.right_id,
        )
    with pytest.raises(SlotMismatchError):
        judgment_submit(assignment=assignment, slot=foreign, winner_id=foreign.left_id)

    assert Judgment.objects.count() == 0


@pytest.mark.django_db
def test_answering_every_slot_one_by_one_counts_the_hit():
    hit = first_hit()
    assignment = assignment_start(hit=hit, worker=WorkerFactory())
    winners = honest_answers(hit)

    for slot in HitSlot.objects.filter(hit=hit):
        judgment_submit(assignment=assignment, slot=slot, winner_id=winners[slot.position])

    assignment.refresh_from_db()
    hit.refresh_from_db()
    assert assignment.status == "accepted" and assignment.earned_usd is not None and hit.status == "accepted"
    judged = {pair.pk: pair.winner_id for pair in Pair.objects.filter(hit=hit)}
    expected = {
        slot.pair_id: winners[slot.position] for slot in HitSlot.objects.filter(hit=hit, is_challenge=False)
    }
    assert judged == expected


@pytest.mark.django_db
def test_assignment_submit_counts_pairs_and_a_repeat_changes_nothing():
    hit = first_hit()
    assignment = assignment_start(hit=hit, worker=WorkerFactory())
    winners = honest_answers(hit)

    assignment_submit(assignment=assignment, winners=winners)
    snapshot = sorted(Pair.objects.values_list("pk", "winner_id", "judged_at"))
    again = assignment_submit(assignment=assignment, winners={p: w for p, w in winners.items()})

    assert again.status == "accepted"
    assert sorted(Pair.objects.values_list("pk", "winner_id", "judged_at")) == snapshot
    assert Judgment.objects.count() == 13


@pytest.mark.django_db
def test_assignment_submit_with_a_missing_answer_changes_nothing():
    hit = first_hit()
    assignment = assignment_start(hit=hit, worker=WorkerFactory())
    winners = honest_answers(hit)
    del winners[0]

    with pytest.raises(SlotMismatchError, match="missing \\[0\\]"):
        assignment_submit(assignment=assignment, winners=winners)

    assignment.refresh_from_db()
    assert assignment.status == "in_progress" and Judgment.objects.count() == 0
    assert not Pair.objects.filter(winner__isnull=False).exists()


@pytest.mark.django_db
def test_failing_a_challenge_discards_the_hit_pays_and_excludes_the_worker_and_requeues_pairs():
    hit = first_hit()
    worker = WorkerFactory()
    assignment = assignment_start(hit=hit, worker=worker)
    pair_ids = set(HitSlot.objects.filter(hit=hit, is_challenge=False).values_list("pair_id", flat=True))

    assignment_submit(assignment=assignment, winners=honest_answers(hit, fail_challenges=1))

    assignment.refresh_from_db()
    hit.refresh_from_db()
    worker.refresh_from_db()
    assert (assignment.status, assignment.earned_usd is not None, hit.status) == (
        "discarded",
        True,
        "discarded",
    )
    assert worker.is_excluded and "challenge" in worker.exclusion_reason
    assert not Pair.objects.filter(winner__isnull=False).exists()
    assert set(Pair.objects.filter(hit__isnull=True).values_list("pk", flat=True)) >= pair_ids
    assert Judgment.objects.filter(assignment=assignment).count() == 13  # kept for audit, not counted
    with pytest.raises(WorkerExcludedError):
        assignment_start(hit=hit_build(campaign=hit.campaign)[0], worker=worker)


@pytest.mark.django_db
def test_an_excluded_worker_finishing_another_hit_is_discarded_too():
    # One worker holds one HIT per campaign at a time, so the second HIT is in another campaign: exclusion
    # is of the worker, not of the campaign.
    collection = collection_with_grades({"1_1": graded_pool("a", 9)})
    first = hit_build(campaign=campaign_start(campaign=campaign_create(collection=collection, name="c")))[0]
    second = hit_build(campaign=campaign_start(campaign=campaign_create(collection=collection, name="d")))[0]
    worker = WorkerFactory()
    a1 = assignment_start(hit=first, worker=worker)
    a2 = assignment_start(hit=second, worker=worker)
    assignment_submit(assignment=a1, winners=honest_answers(first, fail_challenges=1))

    assignment_submit(assignment=a2, winners=honest_answers(second))

    a2.refresh_from_db()
    assert a2.status == "discarded" and a2.earned_usd is not None
    assert not Pair.objects.filter(winner__isnull=False).exists()


@pytest.mark.django_db
def test_a_hit_goes_to_one_worker_at_a_time():
    hit = first_hit()
    first, second = WorkerFactory(), WorkerFactory()
    assignment = assignment_start(hit=hit, worker=first)

    same = assignment_start(hit=hit, worker=first)
    with pytest.raises(HitTakenError):
        assignment_start(hit=hit, worker=second)

    assert same.pk == assignment.pk and Assignment.objects.count() == 1


@pytest.mark.django_db
def test_an_expired_hit_takes_no_more_work():
    hit = first_hit()
    assignment = assignment_start(hit=hit, worker=WorkerFactory())
    hit_expire(hit=hit)

    with pytest.raises(AssignmentClosedError):
        assignment_submit(assignment=assignment, winners=honest_answers(hit))
    with pytest.raises(HitNotOpenError):
        assignment_start(hit=hit, worker=WorkerFactory())

    assert Judgment.objects.count() == 0


@pytest.mark.django_db
def test_hit_assign_next_gives_workers_different_hits_and_resumes_their_own():
    collection = collection_with_grades({"1_1": graded_pool("a", 9)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c"))
    hit_build(campaign=campaign)
    first, second = WorkerFactory(), WorkerFactory()

    a = hit_assign_next(campaign=campaign, worker=first)
    b = hit_assign_next(campaign=campaign, worker=second)
    again = hit_assign_next(campaign=campaign, worker=first)

    assert (a.hit.number, b.hit.number) == (1, 2) and again.pk == a.pk


@pytest.mark.django_db
def test_counted_hits_completing_a_round_let_it_close():
    # Given a 6-candidate stage-2 topic: 15 pairs in HITs of 10 and 5
    collection = collection_with_grades({"1_1": graded_pool("a", 6)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c"))
    hits = hit_build(campaign=campaign)
    round = Round.objects.get()

    for hit, worker in zip(hits, (WorkerFactory(), WorkerFactory()), strict=True):
        assignment_submit(assignment=assignment_start(hit=hit, worker=worker), winners=honest_answers(hit))

    assert round_close_if_complete(round=round) is True
    campaign.refresh_from_db()
    assert campaign.status == "done"
    assert (
        Worker.objects.filter(is_excluded=True).count() == 0
        and Hit.objects.filter(status="accepted").count() == 2
    )


@pytest.mark.django_db
def test_worker_exclude_keeps_the_first_reason_and_bars_new_hits():
    hit = first_hit()
    worker = worker_get_or_create(provider="mturk", external_id="A1B2")

    worker_exclude(worker=worker, reason="spam")
    again = worker_exclude(worker=worker, reason="later")

    assert (again.is_excluded, again.exclusion_reason) == (True, "spam")
    assert worker_get_or_create(provider="mturk", external_id="A1B2").pk == worker.pk
    with pytest.raises(WorkerExcludedError):
        hit_assign_next(campaign=hit.campaign, worker=worker)
    assert Assignment.objects.count() == 0

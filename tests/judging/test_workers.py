"""Services behind the browser pages: a worker never gets a pair they already judged, external assignment ids
are bound to one worker, and the final submit issues the completion code once."""

from __future__ import annotations

import pytest

from judging.models import Assignment, Campaign, HitSlot
from judging.services import (
    AssignmentClosedError,
    AssignmentSubmittedError,
    HitTakenError,
    PairAlreadyJudgedError,
    assignment_confirm,
    assignment_finish_external,
    assignment_start_external,
    hit_assign_next,
    hit_build,
    hit_expire,
    judgment_submit,
    worker_for_user,
    worker_get_or_create,
)
from tests.judging.pages_fixtures import crowd_campaign, user_with_role


def judge_first(assignment, count):
    slots = list(HitSlot.objects.filter(hit=assignment.hit).order_by("position")[:count])
    for slot in slots:
        judgment_submit(assignment=assignment, slot=slot, winner_id=slot.left_id, milliseconds=700)
    return {slot.pair_id for slot in slots if slot.pair_id}


@pytest.mark.django_db
def test_requeued_pairs_a_worker_judged_are_never_offered_to_them_again():
    campaign = crowd_campaign()
    worker = worker_for_user(user=user_with_role("cat", "crowd"))
    first = hit_assign_next(campaign=campaign, worker=worker)
    judged = judge_first(first, 4)
    hit_expire(hit=first.hit)  # their HIT expires: its pairs go back to the queue
    rebuilt = hit_build(campaign=campaign)
    holding = {hit.pk for hit in rebuilt if HitSlot.objects.filter(hit=hit, pair_id__in=judged).exists()}
    assert holding

    again = hit_assign_next(campaign=campaign, worker=worker)
    other = hit_assign_next(campaign=campaign, worker=worker_get_or_create(provider="local", external_id="x"))

    assert again is None or again.hit_id not in holding
    assert other is not None and other.hit_id in holding


@pytest.mark.django_db
def test_mturk_worker_cannot_take_a_hit_holding_a_pair_they_judged():
    campaign = crowd_campaign(provider=Campaign.Provider.MTURK)
    worker = worker_get_or_create(provider="mturk", external_id="AONE")
    first = assignment_start_external(
        hit=campaign.hits.order_by("number").first(), worker=worker, external_id="A1"
    )
    judged = judge_first(first, 3)
    assignment_confirm(assignment=first)  # MTurk listed it: its answers are the worker's own
    hit_expire(hit=first.hit)
    hit = next(
        h for h in hit_build(campaign=campaign) if HitSlot.objects.filter(hit=h, pair_id__in=judged).exists()
    )

    with pytest.raises(PairAlreadyJudgedError):
        assignment_start_external(hit=hit, worker=worker, external_id="A2")
    assert not Assignment.objects.filter(hit=hit).exists()


@pytest.mark.django_db
def test_an_assignment_id_belongs_to_one_worker():
    hit = crowd_campaign(provider=Campaign.Provider.MTURK).hits.first()
    owner = worker_get_or_create(provider="mturk", external_id="AOWNER")
    assignment = assignment_start_external(hit=hit, worker=owner, external_id="ASSIGN1")

    assert assignment_start_external(hit=hit, worker=owner, external_id="ASSIGN1").pk == assignment.pk
    with pytest.raises(HitTakenError):
        assignment_start_external(
            hit=hit, worker=worker_get_or_create(provider="mturk", external_id="AX"), external_id="ASSIGN1"
        )
    # A second id for the same worker is a claim of its own (the first may be a forger's, made with the
    # worker's id): both wait for MTurk's confirmation, neither turns the other away.
    second = assignment_start_external(hit=hit, worker=owner, external_id="ASSIGN2")
    assert second.pk != assignment.pk
    assert sorted(Assignment.objects.values_list("external_id", flat=True)) == ["ASSIGN1", "ASSIGN2"]


@pytest.mark.django_db
def test_completion_code_only_after_every_answer_and_only_once():
    campaign = crowd_campaign(provider=Campaign.Provider.PROLIFIC)
    Campaign.objects.filter(pk=campaign.pk).update(provider_state={"completion_code": "CODE7"})
    worker = worker_get_or_create(provider="prolific", external_id="a" * 24)
    assignment = hit_assign_next(campaign=campaign, worker=worker)

    with pytest.raises(AssignmentClosedError):
        assignment_finish_external(assignment=assignment)
    slots = HitSlot.objects.filter(hit=assignment.hit)
    for slot in slots:
        winner = slot.expected_winner_id if slot.is_challenge else slot.left_id
        judgment_submit(assignment=assignment, slot=slot, winner_id=winner)
    finished = assignment_finish_external(assignment=assignment)
    with pytest.raises(AssignmentSubmittedError):
        assignment_finish_external(assignment=assignment)

    assert finished.completion_code == "CODE7"
    # Stored, and counted once Prolific confirms the participant's submission.
    assert Assignment.objects.get().status == Assignment.Status.SUBMITTED
    assignment_confirm(assignment=finished)
    assert Assignment.objects.get().status == Assignment.Status.ACCEPTED


@pytest.mark.django_db
def test_a_prolific_session_is_one_hit_even_after_it_was_submitted():
    from judging.services import hit_assign_next_external

    campaign = crowd_campaign(
        provider=Campaign.Provider.PROLIFIC, grades={"1_1": {f"a-r{i}": 3 for i in range(7)}}
    )
    worker = worker_get_or_create(provider="prolific", external_id="b" * 24)
    assignment = hit_assign_next_external(campaign=campaign, worker=worker, session_id="S1")
    for slot in HitSlot.objects.filter(hit=assignment.hit):
        judgment_submit(assignment=assignment, slot=slot, winner_id=slot.expected_winner_id or slot.left_id)

    again = hit_assign_next_external(campaign=campaign, worker=worker, session_id="S1")
    next_session = hit_assign_next_external(campaign=campaign, worker=worker, session_id="S2")

    assert again.pk == assignment.pk and again.submitted_at is not None
    assert next_session is not None and next_session.hit_id != assignment.hit_id

"""Undo of a judge's last answer (``judgment_undo``, ``tournament_judgment_undo``): the answer is kept as a
correction, the pair is asked again, the new answer is the one that counts; never a lost or a double answer,
and the HIT's count and the round's closing stay right."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from judging.models import (
    Assignment,
    CampaignTopic,
    Correction,
    HitSlot,
    Judgment,
    Pair,
    Round,
    TournamentJudgment,
)
from judging.selectors import hit_question_next
from judging.services import (
    AssignmentClosedError,
    AssignmentOverdueError,
    TopicLeasedError,
    UndoRefusedError,
    assignment_start,
    judgment_submit,
    judgment_undo,
    round_close_if_complete,
    tournament_judgment_submit,
    tournament_judgment_undo,
    tournament_next_pair,
)
from tests.judging.factories import WorkerFactory, graded_pool
from tests.judging.test_judgments import first_hit, honest_answers
from tests.judging.test_tournaments import start


def slots_of(hit):
    return list(HitSlot.objects.filter(hit=hit).order_by("position"))


def answer(assignment, slot, winners):
    return judgment_submit(
        assignment=assignment, slot=slot, winner_id=winners[slot.position], milliseconds=900
    )


@pytest.mark.django_db
def test_undo_keeps_the_answer_as_a_correction_and_the_new_answer_counts_once():
    # Given a worker who answered the first two questions of a HIT
    hit = first_hit()
    assignment = assignment_start(hit=hit, worker=WorkerFactory())
    slots, winners = slots_of(hit), honest_answers(hit)
    answer(assignment, slots[0], winners)
    wrong = judgment_submit(
        assignment=assignment,
        slot=slots[1],
        winner_id=slots[1].left_id if winners[1] == slots[1].right_id else slots[1].right_id,
        milliseconds=450,
    )
    # When they take the second answer back, twice (a double click), and answer it again
    first = judgment_undo(assignment=assignment, judgment_id=wrong.pk)
    again = judgment_undo(assignment=assignment, judgment_id=wrong.pk)
    assert hit_question_next(assignment=assignment)["done"] == 1
    assert hit_question_next(assignment=assignment)["question"]["position"] == slots[1].position
    answer(assignment, slots[1], winners)
    # Then one correction holds the withdrawn answer as it was, and the slot has one answer: the new one
    assert again.pk == first.pk and Correction.objects.count() == 1
    assert (first.kind, first.judgment_id, first.slot_id, first.winner_id, first.milliseconds) == (
        "hit",
        wrong.pk,
        slots[1].pk,
        wrong.winner_id,
        450,
    )
    assert first.assignment_id == assignment.pk and first.answered_at == wrong.created_at
    stored = Judgment.objects.filter(assignment=assignment, slot=slots[1])
    assert [j.winner_id for j in stored] == [winners[1]]
    assert Judgment.objects.filter(assignment=assignment).count() == 2


@pytest.mark.django_db
def test_after_an_undo_the_hit_counts_its_answers_and_its_round_closes_as_usual():
    # Given a HIT holding a whole round, answered honestly, with one answer taken back and given again
    hit = first_hit({"1_1": graded_pool("a", 4)})
    assignment = assignment_start(hit=hit, worker=WorkerFactory())
    slots, winners = slots_of(hit), honest_answers(hit)
    for slot in slots[:-1]:
        judgment = answer(assignment, slot, winners)
    judgment_undo(assignment=assignment, judgment_id=judgment.pk)
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.IN_PROGRESS
    answer(assignment, slots[-2], winners)
    answer(assignment, slots[-1], winners)
    # Then the HIT counted once, each pair has the winner of its one stored answer
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ACCEPTED
    assert Judgment.objects.filter(assignment=assignment).count() == len(slots)
    for slot in slots:
        if slot.pair_id:
            assert Pair.objects.get(pk=slot.pair_id).winner_id == winners[slot.position]
    # and every round of its pairs closes exactly when all its pairs have their winner
    rounds = Round.objects.filter(pk__in=Pair.objects.filter(hit=hit).values("round_id"))
    assert rounds.exists()
    for round_ in rounds:
        round_close_if_complete(round=round_)
        complete = not Pair.objects.filter(round=round_, winner__isnull=True).exists()
        assert (Round.objects.get(pk=round_.pk).closed_at is not None) == complete
        assert complete


@pytest.mark.django_db
def test_undo_is_refused_for_an_answer_that_is_not_the_last_or_once_the_hit_is_submitted():
    hit = first_hit()
    assignment = assignment_start(hit=hit, worker=WorkerFactory())
    slots, winners = slots_of(hit), honest_answers(hit)
    first = answer(assignment, slots[0], winners)
    answer(assignment, slots[1], winners)

    with pytest.raises(UndoRefusedError):
        judgment_undo(assignment=assignment, judgment_id=first.pk)
    for slot in slots[2:]:
        last = answer(assignment, slot, winners)
    with pytest.raises(AssignmentClosedError):  # the last answer submitted the HIT: it counts
        judgment_undo(assignment=assignment, judgment_id=last.pk)

    assert Correction.objects.count() == 0
    assert Judgment.objects.filter(assignment=assignment).count() == len(slots)


@pytest.mark.django_db
def test_undo_is_refused_past_the_deadline_and_for_another_workers_answer():
    hit = first_hit()
    assignment = assignment_start(hit=hit, worker=WorkerFactory())
    slots, winners = slots_of(hit), honest_answers(hit)
    judgment = answer(assignment, slots[0], winners)
    Assignment.objects.filter(pk=assignment.pk).update(deadline_at=timezone.now() - timedelta(seconds=1))

    with pytest.raises(AssignmentOverdueError):
        judgment_undo(assignment=assignment, judgment_id=judgment.pk)
    with pytest.raises(UndoRefusedError):
        Assignment.objects.filter(pk=assignment.pk).update(deadline_at=timezone.now() + timedelta(hours=1))
        judgment_undo(assignment=assignment, judgment_id=judgment.pk + 1000)

    assert Correction.objects.count() == 0 and Judgment.objects.filter(pk=judgment.pk).exists()


def tournament_with_answers(count):
    values = {f"a-r{i:02d}": i for i in range(6)}
    campaign = start({"1_1": dict.fromkeys(values, 3)}, k=2)
    assessor = get_user_model().objects.create(username="ann")
    judgments, questions = [], []
    for _ in range(count):
        question = tournament_next_pair(campaign=campaign, assessor=assessor)
        left, right = question.left, question.right
        winner, loser = (left, right) if values[left.docid] > values[right.docid] else (right, left)
        questions.append(question)
        judgments.append(
            tournament_judgment_submit(
                campaign_topic=question.campaign_topic, assessor=assessor, winner=winner, loser=loser
            )
        )
    return campaign, assessor, questions, judgments


@pytest.mark.django_db
def test_tournament_undo_asks_the_same_pair_again_and_keeps_the_answer_as_a_correction():
    # Given an assessor three answers into a topic's tournament
    campaign, assessor, questions, judgments = tournament_with_answers(3)
    campaign_topic = questions[0].campaign_topic
    # When they take the third back, twice
    first = tournament_judgment_undo(
        campaign_topic=campaign_topic, assessor=assessor, judgment_id=judgments[2].pk
    )
    again = tournament_judgment_undo(
        campaign_topic=campaign_topic, assessor=assessor, judgment_id=judgments[2].pk
    )
    # Then the tournament is where it was before that answer, and the answer is a correction
    question = tournament_next_pair(campaign=campaign, assessor=assessor)
    assert {question.left.docid, question.right.docid} == {questions[2].left.docid, questions[2].right.docid}
    assert question.done == 2
    stored = CampaignTopic.objects.get(pk=campaign_topic.pk).tournament_state["judgments"]
    assert len(stored) == 2 and TournamentJudgment.objects.count() == 2
    assert again.pk == first.pk and Correction.objects.count() == 1
    assert (first.kind, first.judgment_id, first.winner_id, first.assessor_id) == (
        "tournament",
        judgments[2].pk,
        judgments[2].winner_id,
        assessor.pk,
    )
    # and the answer given again is stored once
    tournament_judgment_submit(
        campaign_topic=campaign_topic, assessor=assessor, winner=judgments[2].left, loser=judgments[2].right
    )
    assert TournamentJudgment.objects.count() == 3


@pytest.mark.django_db
def test_tournament_undo_is_refused_for_an_earlier_answer_another_assessor_or_a_finished_topic():
    campaign, assessor, questions, judgments = tournament_with_answers(2)
    campaign_topic = questions[0].campaign_topic
    bob = get_user_model().objects.create(username="bob")

    with pytest.raises(UndoRefusedError):
        tournament_judgment_undo(
            campaign_topic=campaign_topic, assessor=assessor, judgment_id=judgments[0].pk
        )
    with pytest.raises(TopicLeasedError):
        tournament_judgment_undo(campaign_topic=campaign_topic, assessor=bob, judgment_id=judgments[1].pk)
    CampaignTopic.objects.filter(pk=campaign_topic.pk).update(
        assessor_lease_until=timezone.now() - timedelta(1)
    )
    with pytest.raises(UndoRefusedError):  # the lease ran out, but the answer is still not bob's
        tournament_judgment_undo(campaign_topic=campaign_topic, assessor=bob, judgment_id=judgments[1].pk)
    CampaignTopic.objects.filter(pk=campaign_topic.pk).update(state=CampaignTopic.State.DONE)
    with pytest.raises(UndoRefusedError):
        tournament_judgment_undo(
            campaign_topic=campaign_topic, assessor=assessor, judgment_id=judgments[1].pk
        )

    assert Correction.objects.count() == 0 and TournamentJudgment.objects.count() == 2
    assert len(CampaignTopic.objects.get(pk=campaign_topic.pk).tournament_state["judgments"]) == 2

"""HIT building (10 pairs + 3 challenges, one open HIT per pair, challenge material) and requeueing pairs of
discarded or expired HITs."""

from collections import Counter
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from judging.models import Assignment, Hit, HitSlot, Pair
from judging.selectors import hit_question_next
from judging.services import (
    assignment_start,
    campaign_create,
    campaign_start,
    hit_build,
    hit_discard,
    hit_expire,
    hit_expire_overdue,
)
from tests.judging.factories import WorkerFactory, collection_with_grades, graded_pool


def start(grades, conversations=None, **options):
    collection = collection_with_grades(grades, conversations=conversations)
    return campaign_start(campaign=campaign_create(collection=collection, name="c", seed=11, **options))


@pytest.mark.django_db
def test_hit_build_packs_queued_pairs_of_all_topics_into_10_plus_3():
    # Given 36 + 15 = 51 queued pairs of two topics (stage 2 on 9 and on 6 candidates)
    campaign = start({"1_1": graded_pool("a", 9), "1_2": graded_pool("b", 6)})

    hits = hit_build(campaign=campaign)

    assert [hit.number for hit in hits] == [1, 2, 3, 4, 5, 6]
    shapes = [
        (
            HitSlot.objects.filter(hit=hit, is_challenge=False).count(),
            HitSlot.objects.filter(hit=hit, is_challenge=True).count(),
        )
        for hit in hits
    ]
    assert shapes == [(10, 3)] * 5 + [(1, 3)]
    assert Pair.objects.filter(hit__isnull=True).count() == 0
    # every pair sits in exactly one slot, and positions are 0..12 in every full HIT
    assert (
        Counter(HitSlot.objects.filter(is_challenge=False).values_list("pair_id", flat=True)).most_common(1)[
            0
        ][1]
        == 1
    )
    assert sorted(HitSlot.objects.filter(hit=hits[0]).values_list("position", flat=True)) == list(range(13))
    topics = set(HitSlot.objects.filter(is_challenge=False).values_list("topic__topic_id", flat=True))
    assert topics == {"1_1", "1_2"}


@pytest.mark.django_db
def test_hit_slots_show_the_pair_items_on_either_side_and_challenges_at_varying_positions():
    campaign = start({"1_1": graded_pool("a", 9), "1_2": graded_pool("b", 9)})

    hit_build(campaign=campaign)

    slots = list(HitSlot.objects.filter(is_challenge=False).select_related("pair"))
    assert all({slot.left_id, slot.right_id} == {slot.pair.left_id, slot.pair.right_id} for slot in slots)
    swapped = sum(1 for slot in slots if slot.left_id != slot.pair.left_id)
    assert 0 < swapped < len(slots)
    challenge_positions = set(HitSlot.objects.filter(is_challenge=True).values_list("position", flat=True))
    assert len(challenge_positions) > 3


@pytest.mark.django_db
def test_challenges_pit_a_current_candidate_against_a_grade_0_item_of_the_topic():
    campaign = start({"1_1": graded_pool("a", 9, nonrelevant=4)})

    hit_build(campaign=campaign)

    challenges = list(
        HitSlot.objects.filter(is_challenge=True).select_related("left", "right", "expected_winner")
    )
    assert len(challenges) == 12
    for slot in challenges:
        expected, other = (
            (slot.left, slot.right) if slot.expected_winner_id == slot.left_id else (slot.right, slot.left)
        )
        assert slot.expected_winner_id in (slot.left_id, slot.right_id)
        assert expected.docid.startswith("a-r") and other.docid.startswith("a-n")


@pytest.mark.django_db
def test_challenges_fall_back_to_the_conversation_then_to_none():
    # 1_1 has no grade-0 item but its conversation sibling 1_2 has; 2_1 has none anywhere in conversation 2
    grades = {
        "1_1": graded_pool("a", 9, nonrelevant=0),
        "1_2": graded_pool("b", 1, nonrelevant=3),
        "2_1": graded_pool("c", 9, nonrelevant=0),
    }
    campaign = start(grades, conversations={"1_1": "1", "1_2": "1", "2_1": "2"}, preferences_per_hit=36)

    hits = hit_build(campaign=campaign)

    by_topic = {
        HitSlot.objects.filter(hit=hit, is_challenge=False)
        .values_list("topic__topic_id", flat=True)
        .first(): hit
        for hit in hits
    }
    fallback = HitSlot.objects.filter(hit=by_topic["1_1"], is_challenge=True).select_related("left", "right")
    assert fallback.count() == 3
    assert all({slot.left.docid[:3], slot.right.docid[:3]} == {"a-r", "b-n"} for slot in fallback)
    # no non-relevant passage twice in a HIT (so no challenge pair twice either)
    assert (
        len(
            {slot.left_id if slot.expected_winner_id == slot.right_id else slot.right_id for slot in fallback}
        )
        == 3
    )
    assert HitSlot.objects.filter(hit=by_topic["2_1"], is_challenge=True).count() == 0


@pytest.mark.django_db
def test_hit_build_twice_puts_each_pair_in_one_open_hit():
    campaign = start({"1_1": graded_pool("a", 9)})
    first = hit_build(campaign=campaign)

    second = hit_build(campaign=campaign)

    assert len(first) == 4 and second == [] and Hit.objects.count() == 4
    assert HitSlot.objects.filter(is_challenge=False).count() == 36


@pytest.mark.django_db
def test_hit_build_respects_max_hits():
    campaign = start({"1_1": graded_pool("a", 9)})

    hits = hit_build(campaign=campaign, max_hits=2)

    assert len(hits) == 2 and Pair.objects.filter(hit__isnull=True).count() == 16


@pytest.mark.django_db
@pytest.mark.parametrize(("close", "status"), [(hit_discard, "discarded"), (hit_expire, "expired")])
def test_closing_an_open_hit_requeues_its_pairs(close, status):
    campaign = start({"1_1": graded_pool("a", 9)})
    hit = hit_build(campaign=campaign)[0]
    assignment = assignment_start(hit=hit, worker=WorkerFactory())
    pair_ids = set(HitSlot.objects.filter(hit=hit, pair__isnull=False).values_list("pair_id", flat=True))

    closed = close(hit=hit)

    assignment.refresh_from_db()
    assert closed.status == status and assignment.status == status
    assert set(Pair.objects.filter(hit__isnull=True).values_list("pk", flat=True)) == pair_ids
    rebuilt = hit_build(campaign=campaign)
    assert (
        len(rebuilt) == 1
        and set(HitSlot.objects.filter(hit=rebuilt[0], pair__isnull=False).values_list("pair_id", flat=True))
        == pair_ids
    )


@pytest.mark.django_db
def test_closing_a_closed_hit_changes_nothing():
    campaign = start({"1_1": graded_pool("a", 9)})
    hit = hit_build(campaign=campaign)[0]
    hit_expire(hit=hit)
    hit_build(campaign=campaign)

    again = hit_discard(hit=hit)

    assert again.status == "expired"
    assert Pair.objects.filter(hit__isnull=True).count() == 0


@pytest.mark.django_db
def test_hit_expire_overdue_expires_only_hits_past_their_deadline():
    campaign = start({"1_1": graded_pool("a", 9)}, hit_lifetime=timedelta(hours=2))
    hits = hit_build(campaign=campaign)
    Hit.objects.filter(pk=hits[0].pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    expired = hit_expire_overdue(campaign=campaign)

    assert [hit.pk for hit in expired] == [hits[0].pk]
    assert sorted(Hit.objects.values_list("status", flat=True)) == ["expired", "open", "open", "open"]
    assert Assignment.objects.count() == 0


@pytest.mark.django_db
def test_hit_build_stops_at_the_budget():
    # Given $12.00 at $2.40 per HIT: 5 HITs, for a queue that needs 8
    campaign = start({"1_1": graded_pool("a", 9), "1_2": graded_pool("b", 9)}, budget_usd=Decimal("12.00"))

    first = hit_build(campaign=campaign)
    hit_expire(hit=first[0])
    second = hit_build(campaign=campaign)

    assert len(first) == 5 and len(second) == 1
    assert Hit.objects.exclude(status="expired").count() == 5


@pytest.mark.django_db
def test_what_a_worker_sees_does_not_reveal_challenges():
    campaign = start({"1_1": graded_pool("a", 9)})
    hit = hit_build(campaign=campaign)[0]
    assignment = assignment_start(hit=hit, worker=WorkerFactory())

    shown = hit_question_next(assignment=assignment)

    # the page's question: the topic's question and the two passages, nothing about challenges
    assert shown["done"] == 0 and shown["total"] == 13
    assert set(shown["question"]) == {"position", "question", "left", "right"}
    assert shown["question"]["position"] == 0 and shown["question"]["question"] == "question 1_1?"
    first = HitSlot.objects.select_related("left", "right").get(hit=hit, position=0)
    assert (shown["question"]["left"], shown["question"]["right"]) == (first.left.text, first.right.text)

"""The two clocks of crowd work (as MTurk's LifetimeInSeconds beside AssignmentDurationInSeconds): a HIT past
its lifetime is no longer handed out, an assignment has its own deadline from the moment it is taken, work
submitted before that deadline counts and is paid even if the HIT's lifetime ran out meanwhile, and the
overdue sweep expires assignments past their deadline. Also: one assignment in progress per worker and
campaign, what a submit earns and pays, and the timing and side stored with each judgment."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from judging.models import Assignment, Campaign, Hit, HitSlot, Judgment, Pair, TournamentJudgment
from judging.services import (
    AssignmentOverdueError,
    CampaignConfigError,
    HitLifetimeOverError,
    InvalidTimingError,
    WorkerBusyError,
    assignment_start,
    assignment_submit,
    campaign_create,
    campaign_start,
    hit_assign_next,
    hit_build,
    hit_expire_overdue,
    judgment_submit,
    tournament_judgment_submit,
    tournament_next_pair,
)
from judging.services import judgments as judgment_services
from tests.judging.factories import WorkerFactory, collection_with_grades, graded_pool
from tests.judging.test_judgments import honest_answers


def crowd_campaign(**fields):
    """A running crowd campaign of one 9-candidate topic (4 HITs), with ``fields`` set on the row."""
    collection = collection_with_grades({"1_1": graded_pool("a", 9)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c", seed=5))
    if fields:
        Campaign.objects.filter(pk=campaign.pk).update(**fields)
        campaign.refresh_from_db()
    if not campaign.hits.exists():
        hit_build(campaign=campaign)
    return campaign


def hits_of(campaign):
    return list(Hit.objects.filter(campaign=campaign).order_by("number"))


def set_lifetime_end(hit, delta):
    Hit.objects.filter(pk=hit.pk).update(expires_at=timezone.now() + delta)


def assignment_rows():
    return list(Assignment.objects.order_by("pk").values())


@pytest.mark.django_db
def test_taking_a_hit_starts_the_assignments_own_clock():
    campaign = crowd_campaign(assignment_duration=timedelta(minutes=30))
    first = hits_of(campaign)[0]
    set_lifetime_end(first, timedelta(minutes=2))
    before = timezone.now()

    assignment = hit_assign_next(campaign=campaign, worker=WorkerFactory())

    assert assignment.hit_id == first.pk
    assert before + timedelta(minutes=30) <= assignment.deadline_at <= timezone.now() + timedelta(minutes=30)


@pytest.mark.django_db
def test_work_submitted_within_the_assignment_duration_counts_and_is_paid_after_the_hit_lifetime_ran_out():
    # Given a worker who took the oldest HIT two minutes before the end of its lifetime
    campaign = crowd_campaign()
    hit = hits_of(campaign)[0]
    set_lifetime_end(hit, timedelta(minutes=2))
    assignment = hit_assign_next(campaign=campaign, worker=WorkerFactory())
    # When the lifetime passes and the overdue sweep runs before they submit
    set_lifetime_end(hit, -timedelta(minutes=1))
    expired = hit_expire_overdue()
    assignment_submit(assignment=assignment, winners=honest_answers(hit))

    # Then the sweep left the held HIT alone and the work counts and is paid
    assignment.refresh_from_db()
    hit.refresh_from_db()
    assert expired == []
    assert (assignment.status, hit.status) == ("accepted", "accepted")
    assert assignment.earned_usd == assignment.paid_usd == Decimal("2.00")
    assert Pair.objects.filter(hit=hit, winner__isnull=False).count() == 10


@pytest.mark.django_db
def test_a_hit_past_its_lifetime_is_not_handed_out_even_before_the_sweep():
    campaign = crowd_campaign()
    first, second = hits_of(campaign)[:2]
    set_lifetime_end(first, -timedelta(seconds=1))

    given = hit_assign_next(campaign=campaign, worker=WorkerFactory())
    before = assignment_rows()
    with pytest.raises(HitLifetimeOverError):
        assignment_start(hit=first, worker=WorkerFactory())

    assert given.hit_id == second.pk
    assert assignment_rows() == before


@pytest.mark.django_db
@pytest.mark.parametrize("duration", [timedelta(0), -timedelta(minutes=1)])
def test_a_campaign_whose_assignments_could_never_be_finished_hands_out_nothing(duration):
    campaign = crowd_campaign(assignment_duration=duration)

    with pytest.raises(CampaignConfigError, match="assignment_duration must be positive"):
        hit_assign_next(campaign=campaign, worker=WorkerFactory())
    with pytest.raises(CampaignConfigError):
        assignment_start(hit=hits_of(campaign)[0], worker=WorkerFactory())

    assert Assignment.objects.count() == 0


@pytest.mark.django_db
def test_a_paused_campaign_hands_out_no_new_hit_but_keeps_the_workers_own():
    campaign = crowd_campaign()
    holder, newcomer = WorkerFactory(), WorkerFactory()
    held = hit_assign_next(campaign=campaign, worker=holder)
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.PAUSED)

    assert hit_assign_next(campaign=campaign, worker=newcomer) is None
    assert hit_assign_next(campaign=campaign, worker=holder).pk == held.pk
    assert Assignment.objects.count() == 1


@pytest.mark.django_db
def test_work_submitted_after_the_deadline_is_refused_and_changes_nothing():
    campaign = crowd_campaign()
    assignment = hit_assign_next(campaign=campaign, worker=WorkerFactory())
    Assignment.objects.filter(pk=assignment.pk).update(deadline_at=timezone.now() - timedelta(seconds=1))
    slot = HitSlot.objects.filter(hit_id=assignment.hit_id).first()
    before = assignment_rows()

    with pytest.raises(AssignmentOverdueError):
        assignment_submit(assignment=assignment, winners=honest_answers(assignment.hit))
    with pytest.raises(AssignmentOverdueError):
        judgment_submit(assignment=assignment, slot=slot, winner_id=slot.left_id)

    assert assignment_rows() == before and Judgment.objects.count() == 0


@pytest.mark.django_db
def test_the_sweep_expires_an_overdue_assignment_and_its_hit_goes_to_the_next_worker():
    campaign = crowd_campaign()
    late = hit_assign_next(campaign=campaign, worker=WorkerFactory())
    Assignment.objects.filter(pk=late.pk).update(deadline_at=timezone.now() - timedelta(seconds=1))

    hit_expire_overdue(campaign=campaign)
    late.refresh_from_db()
    next_one = hit_assign_next(campaign=campaign, worker=WorkerFactory())

    assert (late.status, late.earned_usd, late.paid_usd) == ("expired", None, None)
    assert Hit.objects.get(pk=late.hit_id).status == "open"
    assert next_one.hit_id == late.hit_id


@pytest.mark.django_db
def test_an_overdue_assignment_of_a_hit_past_its_lifetime_expires_with_it_and_requeues_its_pairs():
    campaign = crowd_campaign()
    late = hit_assign_next(campaign=campaign, worker=WorkerFactory())
    pair_ids = set(Pair.objects.filter(hit_id=late.hit_id).values_list("pk", flat=True))
    Assignment.objects.filter(pk=late.pk).update(deadline_at=timezone.now() - timedelta(seconds=1))
    set_lifetime_end(late.hit, -timedelta(seconds=1))

    expired = hit_expire_overdue(campaign=campaign)

    late.refresh_from_db()
    assert [hit.pk for hit in expired] == [late.hit_id] and late.status == "expired"
    assert set(Pair.objects.filter(hit__isnull=True).values_list("pk", flat=True)) == pair_ids


@pytest.mark.django_db
def test_a_worker_back_after_their_deadline_gets_a_fresh_assignment():
    campaign = crowd_campaign()
    worker = WorkerFactory()
    late = hit_assign_next(campaign=campaign, worker=worker)
    Assignment.objects.filter(pk=late.pk).update(deadline_at=timezone.now() - timedelta(seconds=1))

    fresh = hit_assign_next(campaign=campaign, worker=worker)

    late.refresh_from_db()
    assert late.status == "expired" and fresh.pk != late.pk
    assert fresh.deadline_at > timezone.now()
    assert Assignment.objects.filter(worker=worker, status="in_progress").count() == 1


@pytest.mark.django_db
def test_a_worker_holds_one_assignment_in_progress_per_campaign():
    campaign = crowd_campaign()
    first, second = hits_of(campaign)[:2]
    worker = WorkerFactory()
    held = assignment_start(hit=first, worker=worker)

    with pytest.raises(WorkerBusyError):
        assignment_start(hit=second, worker=worker)
    again = hit_assign_next(campaign=campaign, worker=worker)

    assert again.pk == held.pk and Assignment.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("take", ["next", "second hit"])
def test_the_database_backstop_gives_the_workers_assignment_or_a_clear_refusal_never_an_integrity_error(
    take, monkeypatch
):
    # A writer that skipped the worker's lock (simulated: the service's own check misses the assignment the
    # worker holds, once): the partial unique constraint refuses a second assignment in progress, the
    # transaction rolls back and the retry finds the worker's assignment.
    campaign = crowd_campaign()
    first, second = hits_of(campaign)[:2]
    worker = WorkerFactory()
    held = assignment_start(hit=first, worker=worker)
    real_check, misses = judgment_services._assignment_in_progress, []

    def check_that_misses_once(**kwargs):
        if not misses:
            misses.append(kwargs["worker"].pk)
            return None
        return real_check(**kwargs)

    monkeypatch.setattr(judgment_services, "_assignment_in_progress", check_that_misses_once)

    if take == "next":
        assert hit_assign_next(campaign=campaign, worker=worker).pk == held.pk
    else:
        with pytest.raises(WorkerBusyError):
            assignment_start(hit=second, worker=worker)

    assert misses == [worker.pk] and Assignment.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("provider", "paid"), [("local", Decimal("1.50")), ("mturk", None), ("prolific", None)]
)
@pytest.mark.parametrize("fail_challenges", [0, 1])
def test_a_submit_earns_the_reward_counted_or_not_and_only_the_local_provider_pays_at_once(
    provider, paid, fail_challenges
):
    campaign = crowd_campaign(provider=provider, pay_per_hit_usd=Decimal("1.50"))
    assignment = hit_assign_next(campaign=campaign, worker=WorkerFactory())

    assignment_submit(
        assignment=assignment, winners=honest_answers(assignment.hit, fail_challenges=fail_challenges)
    )

    assignment.refresh_from_db()
    assert assignment.status == ("discarded" if fail_challenges else "accepted")
    assert (assignment.earned_usd, assignment.paid_usd) == (Decimal("1.50"), paid)
    assert (assignment.paid_at is not None) == (paid is not None)


@pytest.mark.django_db
def test_the_reward_published_with_the_hit_is_what_is_earned():
    campaign = crowd_campaign(provider="mturk")
    hit = hits_of(campaign)[0]
    Hit.objects.filter(pk=hit.pk).update(reward_usd=Decimal("2.25"))
    assignment = assignment_start(hit=hit, worker=WorkerFactory())

    assignment_submit(assignment=assignment, winners=honest_answers(hit))

    assignment.refresh_from_db()
    assert (assignment.earned_usd, assignment.paid_usd) == (Decimal("2.25"), None)


@pytest.mark.django_db
def test_judgment_submit_stores_the_winners_side_and_the_measured_milliseconds():
    campaign = crowd_campaign()
    assignment = hit_assign_next(campaign=campaign, worker=WorkerFactory())
    left_slot, right_slot = HitSlot.objects.filter(hit_id=assignment.hit_id).order_by("position")[:2]

    on_left = judgment_submit(
        assignment=assignment, slot=left_slot, winner_id=left_slot.left_id, milliseconds=0
    )
    on_right = judgment_submit(
        assignment=assignment, slot=right_slot, winner_id=right_slot.right_id, milliseconds=1234
    )

    stored = dict(Judgment.objects.values_list("pk", "winner_side"))
    assert stored == {on_left.pk: "left", on_right.pk: "right"}
    assert list(Judgment.objects.order_by("pk").values_list("milliseconds", flat=True)) == [0, 1234]


@pytest.mark.django_db
@pytest.mark.parametrize("milliseconds", [-1, 2**31, 1.5, "12", True])
def test_a_timing_out_of_range_is_refused_on_every_database(milliseconds):
    campaign = crowd_campaign()
    assignment = hit_assign_next(campaign=campaign, worker=WorkerFactory())
    slot = HitSlot.objects.filter(hit_id=assignment.hit_id).first()

    with pytest.raises(InvalidTimingError):
        judgment_submit(assignment=assignment, slot=slot, winner_id=slot.left_id, milliseconds=milliseconds)

    assert Judgment.objects.count() == 0


@pytest.mark.django_db
def test_a_whole_hit_submit_stores_the_side_of_every_answer():
    campaign = crowd_campaign()
    assignment = hit_assign_next(campaign=campaign, worker=WorkerFactory())
    winners = honest_answers(assignment.hit)

    assignment_submit(assignment=assignment, winners=winners)

    slots = {slot.pk: slot for slot in HitSlot.objects.filter(hit_id=assignment.hit_id)}
    for slot_id, winner_id, side in Judgment.objects.values_list("slot_id", "winner_id", "winner_side"):
        assert side == ("left" if winner_id == slots[slot_id].left_id else "right")
    assert set(Judgment.objects.values_list("winner_side", flat=True)) <= {"left", "right"}


@pytest.mark.django_db
def test_tournament_judgment_submit_stores_the_side_and_milliseconds_and_refuses_a_bad_timing():
    collection = collection_with_grades({"1_1": graded_pool("a", 6)})
    campaign = campaign_start(
        campaign=campaign_create(collection=collection, name="t", mode="tournament", seed=4)
    )
    assessor = get_user_model().objects.create(username="ann")
    question = tournament_next_pair(campaign=campaign, assessor=assessor)

    with pytest.raises(InvalidTimingError):
        tournament_judgment_submit(
            campaign_topic=question.campaign_topic,
            assessor=assessor,
            winner=question.right,
            loser=question.left,
            milliseconds=-5,
        )
    judgment = tournament_judgment_submit(
        campaign_topic=question.campaign_topic,
        assessor=assessor,
        winner=question.right,
        loser=question.left,
        milliseconds=840,
    )

    assert (judgment.winner_side, judgment.milliseconds) == ("right", 840)
    assert TournamentJudgment.objects.count() == 1


@pytest.mark.django_db
def test_a_worker_back_after_their_deadline_is_not_given_the_hit_they_half_judged_again():
    # Given a worker who judged two pairs of a HIT and let their deadline pass (the HIT stays open)
    campaign = crowd_campaign()
    worker = WorkerFactory()
    late = hit_assign_next(campaign=campaign, worker=worker)
    for slot in HitSlot.objects.filter(hit_id=late.hit_id, pair__isnull=False).order_by("position")[:2]:
        judgment_submit(assignment=late, slot=slot, winner_id=slot.left_id)
    Assignment.objects.filter(pk=late.pk).update(deadline_at=timezone.now() - timedelta(seconds=1))

    # When they ask again, and then another worker asks
    fresh = hit_assign_next(campaign=campaign, worker=worker)
    other = hit_assign_next(campaign=campaign, worker=WorkerFactory())

    # Then they get another HIT, and the half-judged one goes to the other worker
    assert fresh is not None and fresh.hit_id != late.hit_id
    assert other.hit_id == late.hit_id

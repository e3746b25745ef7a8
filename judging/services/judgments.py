"""Crowd work: workers take HITs, submit judgments; a complete assignment is checked against its challenges
and then either counted (pairs get their winner, rounds may close) or discarded (paper 000 section 4.3:
"HITs by workers failing a challenge question were discarded; these workers were paid but excluded")."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from judging.models import Assignment, Campaign, Hit, HitSlot, Judgment, Pair, Worker
from judging.services.errors import (
    AssignmentClosedError,
    HitNotOpenError,
    HitTakenError,
    InvalidWinnerError,
    SlotMismatchError,
    WorkerExcludedError,
)

LIVE_ASSIGNMENT_STATES = (Assignment.Status.IN_PROGRESS, Assignment.Status.ACCEPTED)


@transaction.atomic
def worker_get_or_create(*, provider: str, external_id: str) -> Worker:
    """The worker known to ``provider`` as ``external_id``, created on first sight."""
    worker, _ = Worker.objects.get_or_create(provider=provider, external_id=external_id)
    return worker


@transaction.atomic
def worker_exclude(*, worker: Worker, reason: str) -> Worker:
    """Exclude a worker from further HITs (an excluded worker stays excluded; the first reason is kept)."""
    worker = Worker.objects.select_for_update().get(pk=worker.pk)
    _worker_exclude(worker=worker, reason=reason)
    return worker


def _worker_exclude(*, worker: Worker, reason: str) -> None:
    """Mark a locked worker excluded unless it is already (the first reason is kept)."""
    if not worker.is_excluded:
        worker.is_excluded = True
        worker.excluded_at = timezone.now()
        worker.exclusion_reason = reason[:200]
        worker.save(update_fields=["is_excluded", "excluded_at", "exclusion_reason"])


@transaction.atomic
def assignment_start(*, hit: Hit, worker: Worker) -> Assignment:
    """Give an open HIT to a worker. The same worker asking again gets the same assignment; another worker
    gets ``HitTakenError``; an excluded worker ``WorkerExcludedError``; a closed HIT ``HitNotOpenError``."""
    hit = Hit.objects.select_for_update().get(pk=hit.pk)
    live = hit.assignments.filter(status__in=LIVE_ASSIGNMENT_STATES).first()
    if live is not None and live.worker_id == worker.pk:
        return live
    if Worker.objects.filter(pk=worker.pk, is_excluded=True).exists():
        raise WorkerExcludedError(worker_id=worker.pk)
    if hit.status != Hit.Status.OPEN:
        raise HitNotOpenError(hit_id=hit.pk, status=hit.status)
    if live is not None:
        raise HitTakenError(hit_id=hit.pk)
    return Assignment.objects.create(hit=hit, campaign_id=hit.campaign_id, worker=worker)


@transaction.atomic
def hit_assign_next(*, campaign: Campaign, worker: Worker) -> Assignment | None:
    """The worker's unfinished assignment in this campaign, else the oldest open HIT nobody holds, assigned to
    them; None when no HIT is available. Concurrent callers skip each other's locked HITs (PostgreSQL
    ``SKIP LOCKED``), so two workers never get the same HIT."""
    if Worker.objects.filter(pk=worker.pk, is_excluded=True).exists():
        raise WorkerExcludedError(worker_id=worker.pk)
    current = Assignment.objects.filter(
        hit__campaign=campaign,
        worker=worker,
        status=Assignment.Status.IN_PROGRESS,
        hit__status=Hit.Status.OPEN,
    ).first()
    if current is not None:
        return current
    if not Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.RUNNING).exists():
        # A paused (or finished) campaign hands out no new HIT; the one a worker holds stays theirs.
        return None
    live = Assignment.objects.filter(hit=OuterRef("pk"), status__in=LIVE_ASSIGNMENT_STATES)
    taken: list[int] = []
    while True:
        hit = (
            Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN)
            .exclude(Exists(live))
            .exclude(pk__in=taken)
            .order_by("number")
            .select_for_update(skip_locked=True)
            .first()
        )
        if hit is None:
            return None
        # The EXISTS above saw the snapshot of the statement's start: a worker who took this HIT and committed
        # while we waited is only visible to a query made now that we hold its lock (PostgreSQL, READ COMMITTED).
        if not hit.assignments.filter(status__in=LIVE_ASSIGNMENT_STATES).exists():
            return Assignment.objects.create(hit=hit, campaign_id=hit.campaign_id, worker=worker)
        taken.append(hit.pk)


@transaction.atomic
def judgment_submit(
    *, assignment: Assignment, slot: HitSlot, winner_id: int, shown_at: datetime | None = None
) -> Judgment:
    """Record one answer. A repeated submit for the same slot returns the stored judgment instead of counting
    twice. The answer that completes the assignment triggers its check (see ``assignment_submit``)."""
    hit, assignment = _lock_hit_and_assignment(assignment)
    existing = Judgment.objects.filter(assignment=assignment, slot=slot).first()
    if existing is not None:
        return existing
    if assignment.status != Assignment.Status.IN_PROGRESS:
        raise AssignmentClosedError(assignment_id=assignment.pk, status=assignment.status)
    if slot.hit_id != assignment.hit_id:
        raise SlotMismatchError(
            f"slot {slot.pk} belongs to HIT {slot.hit_id}, not to HIT {assignment.hit_id}"
        )
    if winner_id not in (slot.left_id, slot.right_id):
        raise InvalidWinnerError(slot_id=slot.pk, winner_id=winner_id)
    judgment = Judgment.objects.create(
        assignment=assignment, slot=slot, winner_id=winner_id, shown_at=shown_at
    )
    slot_count = HitSlot.objects.filter(hit_id=assignment.hit_id).count()
    if Judgment.objects.filter(assignment=assignment).count() == slot_count:
        _assignment_complete(assignment=assignment, hit=hit)
    return judgment


@transaction.atomic
def assignment_submit(*, assignment: Assignment, winners: Mapping[int, int]) -> Assignment:
    """Submit a whole HIT at once (as a crowd platform does): ``winners`` maps each slot position to the
    chosen item id. Slots answered earlier keep their first answer. Then the assignment is checked: a failed
    challenge (or an excluded worker) discards the HIT, paid but not counted, excludes the worker and requeues
    its pairs; otherwise every pair gets its winner and the rounds concerned are queued for closing. A repeated
    submit of a finished assignment returns it unchanged. Raises before changing anything if an answer is
    missing, names an unknown position or an item not shown in that slot."""
    hit, assignment = _lock_hit_and_assignment(assignment)
    if assignment.status != Assignment.Status.IN_PROGRESS:
        if assignment.submitted_at is not None:
            return assignment
        raise AssignmentClosedError(assignment_id=assignment.pk, status=assignment.status)
    slots = {slot.position: slot for slot in HitSlot.objects.filter(hit_id=assignment.hit_id)}
    if set(winners) != set(slots):
        missing, unknown = sorted(set(slots) - set(winners)), sorted(set(winners) - set(slots))
        raise SlotMismatchError(
            f"assignment {assignment.pk}: HIT {assignment.hit_id} needs an answer for positions {sorted(slots)}"
            f" (missing {missing}, unknown {unknown})"
        )
    for position, winner_id in winners.items():
        if winner_id not in (slots[position].left_id, slots[position].right_id):
            raise InvalidWinnerError(slot_id=slots[position].pk, winner_id=winner_id)
    answered = set(Judgment.objects.filter(assignment=assignment).values_list("slot_id", flat=True))
    Judgment.objects.bulk_create(
        [
            Judgment(assignment=assignment, slot=slot, winner_id=winners[position])
            for position, slot in slots.items()
            if slot.pk not in answered
        ]
    )
    _assignment_complete(assignment=assignment, hit=hit)
    return assignment


def _campaign_pay(campaign_id: int):
    return Campaign.objects.values_list("pay_per_hit_usd", flat=True).get(pk=campaign_id)


def _lock_hit_and_assignment(assignment: Assignment) -> tuple[Hit, Assignment]:
    """Lock the HIT, then the assignment: the order every writer of both follows (``hit_expire`` and
    ``hit_discard`` lock the HIT before updating its assignments), so they cannot deadlock."""
    hit = Hit.objects.select_for_update().get(pk=assignment.hit_id)
    return hit, Assignment.objects.select_for_update().get(pk=assignment.pk)


def _assignment_complete(*, assignment: Assignment, hit: Hit) -> None:
    """Check a fully answered assignment against its challenges and count or discard it; the caller is
    atomic and holds the locks of the HIT and the assignment."""
    from judging.tasks import hit_build_task, round_close_if_complete_task

    now = timezone.now()
    answers = list(
        Judgment.objects.filter(assignment=assignment).values_list(
            "slot__is_challenge", "slot__expected_winner_id", "slot__pair_id", "winner_id"
        )
    )
    failed = sum(1 for is_challenge, expected, _, winner in answers if is_challenge and winner != expected)
    worker = Worker.objects.select_for_update().get(pk=assignment.worker_id)
    if failed:
        _worker_exclude(worker=worker, reason=f"failed {failed} challenge(s) in HIT {hit.pk}")
    assignment.submitted_at = now
    # Earned whether counted or not (paper, section 4.3); paid_usd is set once the provider paid it.
    assignment.earned_usd = hit.reward_usd if hit.reward_usd is not None else _campaign_pay(hit.campaign_id)
    if worker.is_excluded or hit.status != Hit.Status.OPEN:
        assignment.status = Assignment.Status.DISCARDED
        assignment.save(update_fields=["status", "submitted_at", "earned_usd"])
        if hit.status == Hit.Status.OPEN:
            hit.status = Hit.Status.DISCARDED
            hit.closed_at = now
            hit.save(update_fields=["status", "closed_at"])
            Pair.objects.filter(hit=hit, winner__isnull=True).update(hit=None)
            campaign_id = hit.campaign_id
            transaction.on_commit(lambda: hit_build_task.delay(campaign_id))
        return
    assignment.status = Assignment.Status.ACCEPTED
    assignment.save(update_fields=["status", "submitted_at", "earned_usd"])
    hit.status = Hit.Status.ACCEPTED
    hit.closed_at = now
    hit.save(update_fields=["status", "closed_at"])
    pairs = [
        Pair(pk=pair_id, winner_id=winner, judged_at=now)
        for is_challenge, _, pair_id, winner in answers
        if not is_challenge
    ]
    Pair.objects.bulk_update(pairs, ["winner", "judged_at"])
    round_ids = sorted(set(Pair.objects.filter(hit=hit).values_list("round_id", flat=True)))
    transaction.on_commit(lambda: [round_close_if_complete_task.delay(round_id) for round_id in round_ids])

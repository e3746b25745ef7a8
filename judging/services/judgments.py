"""Crowd work: workers take HITs, submit judgments; a complete assignment is checked against its challenges
and then either counted (pairs get their winner, rounds may close) or discarded ("Assessing top-k
preferences", section 4.3: "HITs by workers failing a challenge question were discarded; these workers were
paid but excluded").

Locks are taken in one order everywhere, worker, then HIT, then assignment, so no two services deadlock; the
worker's lock is what keeps one assignment in progress per worker and campaign (the partial unique constraint
``one_assignment_in_progress_per_worker_campaign`` is the database's backstop)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import NamedTuple, TypeVar

from django.db import IntegrityError, connection, transaction
from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce
from django.utils import timezone

from config.celery import enqueue, enqueue_on_commit, registered_task
from judging.models import (
    LLM_WORKER_PROVIDER,
    Assignment,
    Campaign,
    Correction,
    Hit,
    HitSlot,
    Judgment,
    Pair,
    Round,
    Worker,
)
from judging.selectors.exclusions import worker_excluded_sql
from judging.services.errors import (
    AssignmentClosedError,
    AssignmentOverdueError,
    CampaignConfigError,
    HitLifetimeOverError,
    HitNotOpenError,
    HitTakenError,
    InvalidTimingError,
    InvalidWinnerError,
    PairAlreadyJudgedError,
    SlotMismatchError,
    UndoRefusedError,
    WorkerBusyError,
    WorkerExcludedError,
)
from judging.services.exclusions import worker_exclude_locked, worker_is_excluded
from judging.services.hits import (
    assignment_expire,
    assignment_is_overdue,
    hit_discard,
    hit_is_past_lifetime,
)
from judging.services.prepared import (
    Write,
    instance_update,
    instance_update_write,
    instances_insert,
    prepared_get,
    prepared_objects,
    prepared_rows,
    prepared_update_write,
    rows_insert_writes,
    writes_run,
)

UNKNOWN = object()  # "not read yet", beside None ("read: there is none")
# What holds a HIT so nobody else gets it: a counted assignment, or one in progress the provider vouched for
# (every local one). A claim from a provider's page that the provider has not confirmed yet holds nothing:
# forged query parameters must never turn the real worker away (docs/decisions.md, "Provisional until the
# provider confirms").
HOLDS_HIT = Q(status=Assignment.Status.ACCEPTED) | Q(
    status=Assignment.Status.IN_PROGRESS, confirmed_at__isnull=False
)
# How long after its submit an unconfirmed assignment's confirmation is first looked for: MTurk lists an
# assignment only once the worker's browser posted it to externalSubmit, after our own final submit.
CONFIRMATION_SYNC_DELAY_SECONDS = 30
T = TypeVar("T")
# One answer as the count reads it: is_challenge, expected winner, pair, winner, tie (``Judgment.Tie``).
Answer = tuple[bool, int | None, int | None, int, str]


@transaction.atomic
def worker_get_or_create(*, provider: str, external_id: str) -> Worker:
    """The worker known to ``provider`` as ``external_id``, created on first sight."""
    worker, _ = Worker.objects.get_or_create(provider=provider, external_id=external_id)
    return worker


def assignment_start(*, hit: Hit, worker: Worker) -> Assignment:
    """Give an open HIT to a worker (the HIT a provider's worker accepted, or one picked from a list); the
    assignment's clock starts now: ``deadline_at`` is now plus the campaign's ``assignment_duration``.

    The same worker asking again gets the same assignment. Refused, with nothing changed: an excluded worker
    (``WorkerExcludedError``), a closed HIT (``HitNotOpenError``), a HIT past its lifetime
    (``HitLifetimeOverError``), a HIT another worker holds (``HitTakenError``), and a worker who holds another
    assignment in progress in the campaign (``WorkerBusyError``; one whose deadline passed is expired first)."""
    return _retry_once_on_integrity_error(lambda: _assignment_start(hit=hit, worker=worker))


@transaction.atomic
def _assignment_start(*, hit: Hit, worker: Worker) -> Assignment:
    now = timezone.now()
    worker = Worker.objects.select_for_update().get(pk=worker.pk)
    hit = Hit.objects.select_for_update().get(pk=hit.pk)
    live = hit.assignments.filter(HOLDS_HIT).first()
    if live is not None and live.worker_id == worker.pk:
        return live
    campaign = Campaign.objects.get(pk=hit.campaign_id)
    if worker_is_excluded(worker=worker, campaign=campaign):
        raise WorkerExcludedError(worker_id=worker.pk)
    if hit.status != Hit.Status.OPEN:
        raise HitNotOpenError(hit_id=hit.pk, status=hit.status)
    if live is not None:
        raise HitTakenError(hit_id=hit.pk)
    if hit_is_past_lifetime(hit=hit, now=now):
        raise HitLifetimeOverError(hit_id=hit.pk)
    current = _assignment_in_progress(worker=worker, campaign=campaign, now=now)
    if current is not None:
        raise WorkerBusyError(worker_id=worker.pk, assignment_id=current.pk, hit_id=current.hit_id)
    return _assignment_create(hit=hit, worker=worker, campaign=campaign, now=now)


def hit_assign_next(*, campaign: Campaign, worker: Worker, external_id: str = "") -> Assignment | None:
    """The worker's assignment in progress in this campaign, else the oldest open HIT of the running campaign
    that is within its lifetime and that nobody holds, assigned to them with a fresh deadline (see
    ``assignment_start``); None when no HIT is available. An assignment of theirs whose deadline passed is
    expired first. The worker's row is locked, so concurrent calls for one worker (a double click, a retry)
    give one assignment; concurrent callers skip each other's locked HITs (PostgreSQL ``SKIP LOCKED``), so two
    workers never get the same HIT. ``external_id`` is the provider's id of a new assignment (Prolific's
    SESSION_ID); a worker whose claims the provider must confirm may be handed a HIT that only unconfirmed
    claims hold, HITs no one claimed first."""
    return _retry_once_on_integrity_error(
        lambda: _hit_assign_next(campaign=campaign, worker=worker, external_id=external_id)
    )


@transaction.atomic
def _hit_assign_next(*, campaign: Campaign, worker: Worker, external_id: str = "") -> Assignment | None:
    now = timezone.now()
    # One statement locks the worker and learns which assignment they hold in the campaign and whether they
    # have one that did not count. On PostgreSQL its subqueries read the snapshot taken before the lock was
    # granted: after waiting for another take of the same worker (a double click) it may miss the assignment
    # that take created. The take then tries a second assignment, which the partial unique constraint
    # ``one_assignment_in_progress_per_worker_campaign`` refuses, and the retry
    # (``_retry_once_on_integrity_error``) finds the first one. An assignment the worker held that stopped
    # counting meanwhile is still named by ``held_id``, so the take still looks for pairs they judged
    # (``may_hold_judged``). Every statement a HIT's take runs is prepared (judging.services.prepared):
    # compiled once, not per HIT.
    worker = prepared_get(
        "hit_assign_next: worker", _worker_with_assignments, campaign_id=campaign.pk, worker_id=worker.pk
    )
    held_id: int | None = worker.held_id  # type: ignore[attr-defined]  # the statement's annotations
    has_not_counted: bool = worker.has_not_counted  # type: ignore[attr-defined]
    # The exclusion rule is read after the lock, never by the locking statement: its subqueries read the
    # snapshot taken before the lock was granted, which an exclusion committed meanwhile is not in. A worker
    # who holds an assignment is asked in a statement of its own; one who holds none (the common case of a
    # simulated or crowd worker's next HIT) is asked by the statement that finds and locks the first free HIT,
    # which starts once the worker's lock is held, so it is current (as a submit's lock statement reads it).
    if held_id is not None:
        if worker_is_excluded(worker=worker, campaign=campaign):
            raise WorkerExcludedError(worker_id=worker.pk)
        # The common case of a judge's next page: the HIT they hold (unless its deadline passed: then it
        # expires, and its HIT, if still open, may hold pairs they answered).
        current = _assignment_in_progress(worker=worker, campaign=campaign, now=now, held_id=held_id)
        if current is not None:
            return current
    # A paused (or finished) campaign hands out no new HIT (the one a worker holds stays theirs, above).
    return _open_hit_take(
        campaign=campaign,
        worker=worker,
        now=now,
        may_hold_judged=has_not_counted or held_id is not None,
        is_adaptive=campaign.mode == Campaign.Mode.ADAPTIVE,
        external_id=external_id,
        exclusion_asked=held_id is not None,
    )


def hits_open_for(*, campaign: Campaign, worker: Worker) -> QuerySet[Hit]:
    """The open HITs of ``campaign`` the local (or machine) ``worker`` may take now, oldest first: within
    their lifetime, held by nobody, showing them no pair they answered before (a pair a machine judge left
    without a preference comes back in another HIT, for people)."""
    return _open_hits(
        campaign_id=campaign.pk,
        worker_id=worker.pk,
        needs_confirmation=False,
        now=timezone.now(),
        is_adaptive=campaign.mode == Campaign.Mode.ADAPTIVE,
        may_hold_judged=True,
    )


def _worker_with_assignments(*, campaign_id: int, worker_id: int) -> QuerySet[Worker]:
    """The worker, locked, with the id of the assignment they hold in the campaign (``held_id``) and whether
    they have one there that did not count (``has_not_counted``: expired or discarded)."""
    held = Assignment.objects.filter(
        campaign_id=campaign_id, worker_id=OuterRef("pk"), status=Assignment.Status.IN_PROGRESS
    )
    not_counted = Assignment.objects.filter(
        campaign_id=campaign_id,
        worker_id=OuterRef("pk"),
        status__in=(Assignment.Status.EXPIRED, Assignment.Status.DISCARDED),
    )
    return (
        Worker.objects.select_for_update(of=("self",))
        .annotate(held_id=Subquery(held.values("pk")[:1]), has_not_counted=Exists(not_counted))
        .filter(pk=worker_id)
    )


def _open_hits(
    *,
    campaign_id: int,
    worker_id: int,
    needs_confirmation: bool,
    now: datetime,
    is_adaptive: bool,
    may_hold_judged: bool = True,
) -> QuerySet[Hit]:
    """The campaign's open HITs within their lifetime that nobody holds and that show the worker no pair
    they already judged (e.g. a pair requeued from a HIT of theirs that expired), oldest first (for workers
    whose provider must confirm them: the HITs with the fewest unconfirmed claims first).
    ``may_hold_judged=False`` says the worker has no assignment in the campaign that did not count (expired,
    discarded): only such an assignment can have left a judged pair in the queue (a counted pair has its
    winner), so the costly check is skipped. ``is_adaptive``: the campaign's mode, which the caller knows (it
    never changes once the campaign runs); ``needs_confirmation``: ``Worker.needs_confirmation``."""
    # Held by anyone, or already taken by this worker (a claim still waiting for confirmation included: a HIT
    # they took is never theirs again), in one subquery.
    held_or_theirs = Assignment.objects.filter(hit=OuterRef("pk")).filter(
        HOLDS_HIT
        | Q(
            worker_id=worker_id,
            status__in=(
                Assignment.Status.IN_PROGRESS,
                Assignment.Status.SUBMITTED,
                Assignment.Status.ACCEPTED,
            ),
        )
    )
    hits = (
        Hit.objects.filter(campaign_id=campaign_id, status=Hit.Status.OPEN)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .exclude(Exists(held_or_theirs))
    )
    if is_adaptive:
        # The adaptive mode asks a pair again only of workers who have not judged it ("Human Preferences as
        # Dueling Bandits", section 4: each repeat needs another assessor): no HIT holding a pair of a topic
        # that this worker already answered, in any round.
        same_pair = Judgment.objects.filter(
            assignment__worker_id=worker_id,
            slot__pair__round__campaign_topic_id=OuterRef("round__campaign_topic_id"),
            slot__pair__left_id=OuterRef("left_id"),
            slot__pair__right_id=OuterRef("right_id"),
        )
        seen = Pair.objects.filter(hit=OuterRef("pk")).filter(Exists(same_pair))
        hits = hits.exclude(Exists(seen))
    if may_hold_judged:
        # The pairs an open HIT holds point to it, so this reaches them without going through its slots. Only
        # confirmed answers count here: a forger's answers under a real worker's id must not keep them away.
        judged_before = Judgment.objects.filter(
            slot__pair__hit=OuterRef("pk"),
            assignment__worker_id=worker_id,
            assignment__confirmed_at__isnull=False,
        )
        hits = hits.exclude(Exists(judged_before))
    if not needs_confirmation:
        # The local crowd keeps the cheap order (an index scan stopped at the first free HIT).
        return hits.order_by("number")
    # Claims nobody confirmed yet hold nothing, but the HITs with the fewest are handed out first, so that
    # real workers arriving together do not share a HIT while their providers confirm them, even in a flood
    # of invented ids.
    claims = (
        Assignment.objects.filter(
            hit=OuterRef("pk"),
            status__in=(Assignment.Status.IN_PROGRESS, Assignment.Status.SUBMITTED),
            confirmed_at__isnull=True,
            deadline_at__gt=now,
        )
        .order_by()
        .values("hit")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return hits.order_by(Coalesce(Subquery(claims), 0).asc(), "number")


def _open_hit_take(
    *,
    campaign: Campaign,
    worker: Worker,
    now: datetime,
    is_adaptive: bool,
    may_hold_judged: bool,
    external_id: str = "",
    exclusion_asked: bool = True,
) -> Assignment | None:
    """Lock the first of the running campaign's ``_open_hits`` that no concurrent caller has locked and assign
    it to the locked worker; None when there is none. Concurrent callers skip each other's locked HITs
    (PostgreSQL ``SKIP LOCKED``). ``exclusion_asked=False``: the caller, holding the worker's lock, has not
    asked whether the worker is excluded; the HIT's statement asks (``WorkerExcludedError``)."""
    needs_confirmation = worker.needs_confirmation

    def first_free(*, campaign_id: int, worker_id: int, now: datetime, taken: Sequence[int]) -> QuerySet[Hit]:
        hits = _open_hits(
            campaign_id=campaign_id,
            worker_id=worker_id,
            needs_confirmation=needs_confirmation,
            now=now,
            may_hold_judged=may_hold_judged,
            is_adaptive=is_adaptive,
        ).filter(campaign__status=Campaign.Status.RUNNING)
        if taken:
            hits = hits.exclude(pk__in=taken)
        if not exclusion_asked:
            hits = hits.annotate(worker_excluded=_worker_excluded_for_hit(worker_id=worker_id))
        return hits.select_related("campaign").select_for_update(skip_locked=True, of=("self",))[:1]

    # The flags shape the statement, so they name it.
    name = f"hit_assign_next: open HIT {is_adaptive=} {may_hold_judged=} {needs_confirmation=} {exclusion_asked=}"
    taken: list[int] = []
    while True:
        found = prepared_objects(
            name, first_free, campaign_id=campaign.pk, worker_id=worker.pk, now=now, taken=tuple(taken)
        )
        if not exclusion_asked and (
            found[0].worker_excluded  # type: ignore[attr-defined]  # the statement's annotation
            if found
            else worker_is_excluded(worker=worker, campaign=campaign)
        ):
            raise WorkerExcludedError(worker_id=worker.pk)
        if not found:
            return None
        hit = found[0]
        # The EXISTS above saw the snapshot of the statement's start: a worker who took this HIT and committed
        # while we waited is only visible to a query made now that we hold its lock (PostgreSQL, READ
        # COMMITTED). SQLite's transactions are serialisable (writers queue: IMMEDIATE), so there what the
        # statement saw is still true.
        if connection.vendor == "sqlite" or not _hit_is_held(hit):
            return _assignment_create(
                hit=hit, worker=worker, campaign=hit.campaign, now=now, external_id=external_id
            )
        taken.append(hit.pk)


def _hit_is_held(hit: Hit) -> bool:
    return bool(
        prepared_rows(
            "hit held",
            lambda *, hit_id: (
                Assignment.objects.filter(hit_id=hit_id).filter(HOLDS_HIT).values_list("pk")[:1]
            ),
            hit_id=hit.pk,
        )
    )


def _assignment_in_progress(
    *, worker: Worker, campaign: Campaign, now: datetime, held_id: int | None | object = UNKNOWN
) -> Assignment | None:
    """The worker's assignment in progress in the campaign, expiring it first if its deadline has passed
    (then None). ``held_id`` is its id when the caller read it already (None: they hold none). The caller is
    atomic and holds the worker's lock."""
    if held_id is None:
        return None
    found = Assignment.objects.filter(campaign=campaign, worker=worker, status=Assignment.Status.IN_PROGRESS)
    if isinstance(held_id, int):
        found = Assignment.objects.filter(pk=held_id)
    current = found.first()
    if current is None:
        return None
    current.campaign = campaign
    if assignment_is_overdue(assignment=current, now=now):
        assignment_expire(assignment=current, now=now)
        return None
    return current


def _assignment_create(
    *, hit: Hit, worker: Worker, campaign: Campaign, now: datetime, external_id: str = ""
) -> Assignment:
    """Create the worker's assignment on a locked HIT, its deadline ``assignment_duration`` from now,
    confirmed at once for a worker whose identity we vouch for ourselves (the local crowd), else left for
    the provider to confirm. A campaign whose ``assignment_duration`` is not positive would hand out HITs
    nobody can finish: ``CampaignConfigError``."""
    if campaign.assignment_duration <= timedelta(0):
        raise CampaignConfigError(
            f"campaign {campaign.name!r}: assignment_duration must be positive, not {campaign.assignment_duration}"
        )
    assignment = Assignment(
        hit=hit,
        campaign=campaign,
        worker=worker,
        external_id=external_id,
        deadline_at=now + campaign.assignment_duration,
        confirmed_at=None if worker.needs_confirmation else now,
    )
    # ``Assignment.objects.create`` without compiling per HIT; the partial unique constraints still refuse a
    # second assignment in progress (IntegrityError, retried by the callers).
    instances_insert([assignment])
    return assignment


def assignment_claim_external(*, hit: Hit, worker: Worker, external_id: str) -> Assignment:
    """A provider's page claims ``hit`` for ``worker`` under the provider's assignment id (MTurk's
    ``assignmentId``, which MTurk alone assigns: several of its workers never hold one HIT at once). The same
    id again gives the same assignment; an id already claimed by another worker is ``HitTakenError``.

    The claim is provisional until the provider confirms it (``assignment_confirm``): it holds nothing, so
    claims under other ids may coexist on the HIT and a forged claim never turns the real worker away.
    Refused with nothing changed: an excluded worker, a closed HIT or one past its lifetime, a HIT a
    confirmed assignment holds, a worker who gave confirmed answers to one of its pairs
    (``PairAlreadyJudgedError``)."""
    return _retry_once_on_integrity_error(
        lambda: _assignment_claim_external(hit=hit, worker=worker, external_id=external_id)
    )


@transaction.atomic
def _assignment_claim_external(*, hit: Hit, worker: Worker, external_id: str) -> Assignment:
    now = timezone.now()
    worker = Worker.objects.select_for_update().get(pk=worker.pk)
    hit = Hit.objects.select_for_update().get(pk=hit.pk)
    existing = hit.assignments.filter(external_id=external_id).order_by("-pk").first()
    if existing is not None:
        if existing.worker_id != worker.pk:
            raise HitTakenError(hit_id=hit.pk)
        return existing
    if worker.is_excluded:
        raise WorkerExcludedError(worker_id=worker.pk)
    if hit.status != Hit.Status.OPEN:
        raise HitNotOpenError(hit_id=hit.pk, status=hit.status)
    if hit.assignments.filter(HOLDS_HIT).exclude(worker=worker).exists():
        raise HitTakenError(hit_id=hit.pk)
    if hit_is_past_lifetime(hit=hit, now=now):
        raise HitLifetimeOverError(hit_id=hit.pk)
    confirmed_answers = Judgment.objects.filter(
        assignment__worker=worker, assignment__confirmed_at__isnull=False, slot__pair__slots__hit=hit
    )
    if confirmed_answers.exists():
        # A worker never judges a pair twice (MTurk picks the HIT, so we can only refuse it).
        raise PairAlreadyJudgedError(hit_id=hit.pk, worker_id=worker.pk)
    campaign = Campaign.objects.get(pk=hit.campaign_id)
    return _assignment_create(hit=hit, worker=worker, campaign=campaign, now=now, external_id=external_id)


@transaction.atomic
def assignment_confirm(*, assignment: Assignment) -> bool:
    """The provider vouched for this assignment (its id, worker and HIT or study): record it, and if its
    answers are all in, count it now as ``assignment_submit`` would have (challenges checked, pairs get
    their winners, rounds queued for closing; a HIT closed meanwhile leaves it paid but not counted).
    Returns whether anything changed; confirming twice changes nothing."""
    hit, assignment = _lock_worker_hit_and_assignment(assignment)
    if assignment.confirmed_at is not None:
        return False
    assignment.confirmed_at = timezone.now()
    assignment.save(update_fields=["confirmed_at"])
    waiting = assignment.status == Assignment.Status.SUBMITTED or (
        assignment.status == Assignment.Status.EXPIRED
        and assignment.submitted_at is not None
        and assignment.earned_usd is None
    )
    if waiting:
        _assignment_count(assignment=assignment, hit=hit)
    return True


def _retry_once_on_integrity_error(attempt: Callable[[], T]) -> T:
    """Run a transaction; if the database refused it with an IntegrityError, run it once more. The worker's lock
    keeps the services here off the partial unique constraints, but for a take that waited for that lock (its
    locking statement reads a snapshot from before the wait, see ``_hit_assign_next``); should such a take, or
    a writer that skips that lock, take the worker's or the HIT's slot first, the whole transaction (no
    savepoint on the normal path) rolls back and the retry finds the winner's assignment: the same worker gets
    it back, another is told the HIT is taken or that they are busy, never an IntegrityError."""
    try:
        return attempt()
    except IntegrityError:
        return attempt()


@transaction.atomic
def judgment_submit(
    *,
    assignment: Assignment,
    slot: HitSlot,
    winner_id: int,
    shown_at: datetime | None = None,
    milliseconds: int | None = None,
) -> Judgment:
    """Record one answer, with the side the winner was shown on and, when the page measured it, the
    ``milliseconds`` between showing the pair and the answer. A repeated submit for the same slot returns the
    stored judgment instead of counting twice. Refused with nothing changed: a closed assignment, one past its
    deadline (``AssignmentOverdueError``), a slot of another HIT, a winner not shown in the slot, a timing that
    is not a whole number of milliseconds from 0 to 2**31 - 1. The answer that completes the assignment
    triggers its check (see ``assignment_submit``)."""
    hit, assignment = _lock_worker_hit_and_assignment(assignment, with_campaign=False)
    existing_id, unanswered = _slot_answer_state(assignment=assignment, slot=slot)
    if existing_id is not None:
        return Judgment.objects.get(pk=existing_id)
    _check_open(assignment, now=timezone.now())
    if slot.hit_id != assignment.hit_id:
        raise SlotMismatchError(
            f"slot {slot.pk} belongs to HIT {slot.hit_id}, not to HIT {assignment.hit_id}"
        )
    if winner_id not in (slot.left_id, slot.right_id):
        raise InvalidWinnerError(slot_id=slot.pk, winner_id=winner_id)
    InvalidTimingError.check(milliseconds, what=f"slot {slot.pk}")
    judgment = Judgment(
        assignment=assignment,
        slot=slot,
        winner_id=winner_id,
        winner_side=_side(left_id=slot.left_id, winner_id=winner_id),
        shown_at=shown_at,
        milliseconds=milliseconds,
    )
    # One INSERT whose text is written once per process: the ORM's ``create`` built and compiled it on every
    # answer, for more CPU than the database spends storing the row (docs/decisions.md, "Plain SQL on the
    # answer path"). The unique (assignment, slot) constraint still refuses a second row.
    instances_insert([judgment])
    # The slot was unanswered (no judgment of it above), so this answer completes the HIT when it was the
    # last: nobody else adds the assignment's judgments while we hold the worker's lock.
    if unanswered == 1:
        _assignment_complete(assignment=assignment, hit=hit)
    return judgment


@transaction.atomic
def judgment_undo(*, assignment: Assignment, judgment_id: int) -> Correction:
    """Take back the crowd judge's last answer, ``judgment_id``, while its HIT is theirs and open: the answer
    is stored as a ``Correction`` and its judgment deleted, so the slot is asked again and the HIT's count of
    answers goes down by one. Nothing has counted yet (a pair gets its winner when the whole assignment
    counts), so no pair, round or payment changes. Taking the same answer back again returns the stored
    correction. Refused with nothing changed: an assignment closed or past its deadline
    (``AssignmentClosedError``, ``AssignmentOverdueError``), an answer that is not this assignment's last,
    or whose pair's round is closed (``UndoRefusedError``). Locks as an answer does (worker, HIT,
    assignment), so an undo and an answer of the same judge never interleave."""
    _, assignment = _lock_worker_hit_and_assignment(assignment, with_campaign=False)
    stored = Correction.objects.filter(kind=Correction.Kind.HIT, judgment_id=judgment_id).first()
    if stored is not None and stored.assignment_id == assignment.pk:
        return stored
    _check_open(assignment, now=timezone.now())
    last = (
        Judgment.objects.filter(assignment=assignment)
        .select_related("slot", "slot__pair__round")
        .order_by("-pk")
        .first()
    )
    if last is None or last.pk != judgment_id:
        raise UndoRefusedError(
            f"judgment {judgment_id} is not the last answer of assignment {assignment.pk}"
            f" (that is {last.pk if last else 'none'})"
        )
    pair = last.slot.pair
    if pair is not None and (pair.round.closed_at is not None or pair.winner_id is not None):
        raise UndoRefusedError(f"judgment {judgment_id}: the round of pair {pair.pk} is closed")
    correction = Correction.objects.create(
        kind=Correction.Kind.HIT,
        judgment_id=last.pk,
        assignment=assignment,
        slot=last.slot,
        left_id=last.slot.left_id,
        right_id=last.slot.right_id,
        winner_id=last.winner_id,
        winner_side=last.winner_side,
        milliseconds=last.milliseconds,
        answered_at=last.created_at,
    )
    last.delete()
    return correction


def _slot_answer_state(*, assignment: Assignment, slot: HitSlot) -> tuple[int | None, int]:
    """The judgment the assignment already has for ``slot`` (its id, or None) and how many slots of the
    assignment's HIT have none, in one statement of plain SQL: read under the worker's lock on every answer
    (docs/decisions.md, "Plain SQL on the answer path")."""
    judgment, hit_slot = Judgment._meta.db_table, HitSlot._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT j.id FROM {judgment} j WHERE j.assignment_id = %s AND j.slot_id = %s),"
            f" (SELECT COUNT(*) FROM {hit_slot} s WHERE s.hit_id = %s AND NOT EXISTS"
            f" (SELECT 1 FROM {judgment} j WHERE j.assignment_id = %s AND j.slot_id = s.id))",
            [assignment.pk, slot.pk, assignment.hit_id, assignment.pk],
        )
        existing_id, unanswered = cursor.fetchone()
    return existing_id, unanswered


@transaction.atomic
def assignment_submit(
    *, assignment: Assignment, winners: Mapping[int, int], ties: Mapping[int, str] | None = None
) -> Assignment:
    """Submit a whole HIT at once (as a crowd platform does): ``winners`` maps each slot position to the
    chosen item id; ``ties`` (a machine judge's) maps a position to ``Judgment.Tie``, its answer there being
    no preference (``winner`` is then the tie's stand-in, see ``Judgment``). Slots answered earlier keep their
    first answer. Then the assignment is checked: a failed
    challenge (or an excluded worker) discards the HIT, earned but not counted, excludes the worker and
    requeues its pairs; otherwise every pair gets its winner and the rounds concerned are queued for closing.
    Work submitted before the assignment's deadline counts even if the HIT's lifetime ran out meanwhile. A
    repeated submit of a finished assignment returns it unchanged. Raises before changing anything if the
    deadline has passed (``AssignmentOverdueError``), an answer is missing, names an unknown position or an
    item not shown in that slot."""
    hit, assignment = _lock_worker_hit_and_assignment(assignment)
    if assignment.status != Assignment.Status.IN_PROGRESS and assignment.submitted_at is not None:
        return assignment
    _check_open(assignment, now=timezone.now())
    ties = ties or {}
    slots = {
        slot.position: slot
        for slot in map(
            _SubmitSlot._make,
            prepared_rows(
                "assignment_submit: slots",
                _slots_with_answers,
                hit_id=assignment.hit_id,
                assignment_id=assignment.pk,
            ),
        )
    }
    if set(winners) != set(slots):
        missing, unknown = sorted(set(slots) - set(winners)), sorted(set(winners) - set(slots))
        raise SlotMismatchError(
            f"assignment {assignment.pk}: HIT {assignment.hit_id} needs an answer for positions {sorted(slots)}"
            f" (missing {missing}, unknown {unknown})"
        )
    for position, winner_id in winners.items():
        if winner_id not in (slots[position].left_id, slots[position].right_id):
            raise InvalidWinnerError(slot_id=slots[position].pk, winner_id=winner_id)
    # The answers as rows: nothing uses them as instances after their insert. Stored with the assignment's
    # count (``_assignment_count``): a counted HIT's writes go to PostgreSQL as one statement.
    answers_insert = rows_insert_writes(
        Judgment,
        ("assignment_id", "slot_id", "winner_id", "winner_side", "tie"),
        [
            (
                assignment.pk,
                slot.pk,
                winners[position],
                _side(left_id=slot.left_id, winner_id=winners[position]),
                ties.get(position, ""),
            )
            for position, slot in slots.items()
            if slot.stored_winner_id is None
        ],
    )
    answers: list[Answer] = [
        (
            slot.is_challenge,
            slot.expected_winner_id,
            slot.pair_id,
            winners[position] if slot.stored_winner_id is None else slot.stored_winner_id,
            ties.get(position, "") if slot.stored_winner_id is None else (slot.stored_tie or ""),
        )
        for position, slot in slots.items()
    ]
    round_ids = {slot.round_id for slot in slots.values() if slot.round_id is not None}
    _assignment_complete(
        assignment=assignment, hit=hit, answers=answers, round_ids=round_ids, answers_insert=answers_insert
    )
    return assignment


class _SubmitSlot(NamedTuple):
    pk: int
    position: int
    left_id: int
    right_id: int
    is_challenge: bool
    expected_winner_id: int | None
    pair_id: int | None
    stored_winner_id: int | None
    round_id: int | None
    stored_tie: str | None


def _slots_with_answers(*, hit_id: int, assignment_id: int) -> QuerySet[HitSlot]:
    """A HIT's slots as ``_SubmitSlot`` rows: each with the winner the assignment already stored for it (an
    answer given earlier keeps its first value) and its pair's round, in one query (rows, not model
    instances: nothing here is saved back)."""
    stored = Judgment.objects.filter(assignment_id=assignment_id, slot=OuterRef("pk"))
    return (
        HitSlot.objects.filter(hit_id=hit_id)
        .annotate(
            stored_winner_id=Subquery(stored.values("winner_id")[:1]),
            round_id=F("pair__round_id"),
            stored_tie=Subquery(stored.values("tie")[:1]),
        )
        .values_list(*_SubmitSlot._fields)
    )


def _side(*, left_id: int, winner_id: int) -> str:
    """The side of the page the winner was shown on (``left_id``: the item shown on the left)."""
    return "left" if winner_id == left_id else "right"


def _check_open(assignment: Assignment, *, now: datetime) -> None:
    """Refuse work on an assignment that is closed or past its deadline (nothing changed; the overdue sweep
    expires it)."""
    if assignment.status != Assignment.Status.IN_PROGRESS:
        raise AssignmentClosedError(assignment_id=assignment.pk, status=assignment.status)
    if assignment_is_overdue(assignment=assignment, now=now):
        raise AssignmentOverdueError(assignment_id=assignment.pk)


def _lock_worker_hit_and_assignment(
    assignment: Assignment, *, with_campaign: bool = True
) -> tuple[Hit, Assignment]:
    """Lock the worker, the HIT, then the assignment: the order every writer of them follows
    (``hit_assign_next`` and ``assignment_start`` lock the worker first; ``hit_expire``, ``hit_discard`` and
    ``assignment_expire`` lock the HIT before its assignments), so they cannot deadlock. The assignment comes
    back with its worker, and with its campaign unless ``with_campaign=False`` (then read when first used: an
    answer needs it only when it completes the HIT). The statements are compiled once per process
    (``judging.services.prepared``; docs/decisions.md, "Prepared statements on the campaign path"). SQLite
    has no row locks (``select_for_update`` is a no-op there; the writer's IMMEDIATE transaction holds the
    whole database), so there the three rows are read in one statement. On PostgreSQL the worker is locked
    by a statement of its own, then, with the campaign, the HIT and the assignment by one ``SELECT ... FOR
    UPDATE OF`` the HIT, the assignment: PostgreSQL locks a joined row's tables in the order of its ``OF``
    list (checked on PostgreSQL 15: waiting for the assignment, the statement already holds the HIT; listed
    the other way, it does not), so the order stays worker, HIT, assignment."""
    if connection.vendor == "sqlite":
        locked = prepared_get(
            "lock: assignment with worker, HIT and campaign",
            _assignment_with_worker_hit_and_campaign,
            pk=assignment.pk,
        )
        return locked.hit, locked
    worker = prepared_get(
        "lock: worker",
        lambda *, pk: Worker.objects.select_for_update().filter(pk=pk),
        pk=assignment.worker_id,
    )
    if with_campaign:
        locked = prepared_get(
            "lock: HIT, then assignment with campaign", _hit_and_assignment_locked, pk=assignment.pk
        )
        locked.worker = worker
        return locked.hit, locked
    hit = prepared_get(
        "lock: HIT", lambda *, pk: Hit.objects.select_for_update().filter(pk=pk), pk=assignment.hit_id
    )
    locked = prepared_get(
        "lock: assignment",
        lambda *, pk: Assignment.objects.select_for_update().filter(pk=pk),
        pk=assignment.pk,
    )
    locked.worker = worker
    return hit, locked


def _assignment_with_worker_hit_and_campaign(*, pk: int) -> QuerySet[Assignment]:
    return (
        Assignment.objects.select_related("worker", "hit", "campaign")
        .annotate(worker_excluded=_worker_excluded_for_assignment())
        .filter(pk=pk)
    )


def _hit_and_assignment_locked(*, pk: int) -> QuerySet[Assignment]:
    """The assignment with its HIT and campaign, the HIT then the assignment locked (the ``OF`` list's
    order is the order PostgreSQL locks them in), and whether its worker is excluded."""
    return (
        Assignment.objects.select_for_update(of=("hit", "self"))
        .select_related("hit", "campaign")
        .annotate(worker_excluded=_worker_excluded_for_assignment())
        .filter(pk=pk)
    )


def _worker_excluded_for_assignment() -> RawSQL:
    """Whether the assignment's worker is excluded for its campaign (``worker_excluded_sql``, the rule
    ``worker_is_excluded`` runs), as an annotation of the assignment's own statement, so the count of a HIT
    needs no statement of its own for it. Current only in a statement that starts once the worker's lock (the
    lock every exclusion takes first) is held: a statement's subqueries read the snapshot taken at its start,
    before any lock it waits for (checked on PostgreSQL 15), so it must not ride on the worker's own lock."""
    assignment = Assignment._meta.db_table
    return RawSQL(
        f"EXISTS (SELECT 1 FROM {Worker._meta.db_table} ew INNER JOIN {Campaign._meta.db_table} ec"
        f" ON ec.id = {assignment}.campaign_id WHERE ew.id = {assignment}.worker_id"
        f" AND {worker_excluded_sql(worker='ew', owner_id='ec.owner_id')})",
        (),
        output_field=BooleanField(),
    )


def _worker_excluded_for_hit(*, worker_id: int) -> RawSQL:
    """Whether the worker ``worker_id`` is excluded for the HIT's campaign (``worker_excluded_sql``, the rule
    ``worker_is_excluded`` runs), as an annotation of the statement that finds and locks the first free HIT.
    Current only in a statement that starts once the worker's lock is held (see
    ``_worker_excluded_for_assignment``)."""
    return RawSQL(
        f"EXISTS (SELECT 1 FROM {Worker._meta.db_table} ew INNER JOIN {Campaign._meta.db_table} ec"
        f" ON ec.id = {Hit._meta.db_table}.campaign_id WHERE ew.id = %s"
        f" AND {worker_excluded_sql(worker='ew', owner_id='ec.owner_id')})",
        (worker_id,),
        output_field=BooleanField(),
    )


def _assignment_complete(
    *,
    assignment: Assignment,
    hit: Hit,
    answers: list[Answer] | None = None,
    round_ids: set[int] | None = None,
    answers_insert: Sequence[Write] = (),
) -> None:
    """Every answer of the assignment is stored, or in ``answers_insert``, the statements storing the last
    ones, run here: count it (``_assignment_count``) if the provider vouched for it, else keep it as
    submitted and awaiting confirmation, with a sync of the campaign queued to look for the provider's
    confirmation soon (the periodic sync looks too). The caller is atomic and holds the locks of the
    worker, the HIT and the assignment."""
    if assignment.confirmed_at is None:
        writes_run(answers_insert)
        assignment.status = Assignment.Status.SUBMITTED
        assignment.submitted_at = timezone.now()
        assignment.save(update_fields=["status", "submitted_at"])
        confirmation_sync_soon(campaign_id=assignment.campaign_id)
        return
    _assignment_count(
        assignment=assignment, hit=hit, answers=answers, round_ids=round_ids, answers_insert=answers_insert
    )


def confirmation_sync_soon(*, campaign_id: int) -> None:
    """After commit, queue a sync of the campaign ``CONFIRMATION_SYNC_DELAY_SECONDS`` from now to look for
    the provider's confirmation of new claims, at most one per campaign and delay per process (a flood of
    invented ids must not become a flood of provider calls; the periodic sync catches the rest)."""
    from django.core.cache import cache

    def queue() -> None:
        if cache.add(f"toppref:confirmation-sync:{campaign_id}", 1, timeout=CONFIRMATION_SYNC_DELAY_SECONDS):
            # A broker that is down is logged, never raised into the answer that committed (the periodic
            # sync looks for the confirmation anyway).
            enqueue(
                registered_task("judging.tasks.crowd_sync_task").signature(
                    (campaign_id,), countdown=CONFIRMATION_SYNC_DELAY_SECONDS
                )
            )

    transaction.on_commit(queue)


def _assignment_count(
    *,
    assignment: Assignment,
    hit: Hit,
    answers: list[Answer] | None = None,
    round_ids: set[int] | None = None,
    answers_insert: Sequence[Write] = (),
) -> None:
    """Check a fully answered assignment against its challenges and count or discard it; the caller is
    atomic and holds the locks of the worker (``assignment.worker``), the HIT and the assignment. ``answers``
    (is_challenge, expected winner, pair, winner, tie per slot) and ``round_ids`` (the rounds of the HIT's pairs)
    save reading them again when the caller has them at hand; ``answers_insert`` stores the answers not
    stored yet (``answers`` holds them), run first if the HIT is discarded, with the count's writes if not.

    The worker earns the HIT's reward either way ("Assessing top-k preferences", section 4.3: workers failing
    a challenge "were paid but excluded"). ``paid_usd`` records money actually paid: with the ``local``
    provider approval is immediate, so it is paid now; a crowd platform's payment is recorded when the
    platform confirms it."""
    now = timezone.now()
    campaign = assignment.campaign
    if answers is None:
        answers = list(
            Judgment.objects.filter(assignment=assignment).values_list(
                "slot__is_challenge", "slot__expected_winner_id", "slot__pair_id", "winner_id", "tie"
            )
        )
    # A machine judge's tie on a challenge fails it (a challenge has a clear answer); a failed reply is no
    # answer at all and is not counted either way.
    failed = sum(
        1
        for is_challenge, expected, _, winner, tie in answers
        if is_challenge and tie != Judgment.Tie.FAILED and (tie or winner != expected)
    )
    assignment.challenges = sum(
        1 for is_challenge, *_, tie in answers if is_challenge and tie != Judgment.Tie.FAILED
    )
    assignment.challenges_failed = failed
    worker = assignment.worker
    if failed:
        # In the scope of the campaign's owner: it keeps the worker out of that owner's campaigns only.
        worker_exclude_locked(
            worker=worker, campaign=campaign, reason=f"failed {failed} challenge(s) in HIT {hit.pk}"
        )
    # An assignment confirmed after its submit keeps the time of its submit.
    assignment.submitted_at = assignment.submitted_at or now
    assignment.earned_usd = hit.reward_usd if hit.reward_usd is not None else campaign.pay_per_hit_usd
    if worker.provider == LLM_WORKER_PROVIDER:
        # A model is paid by the token (``LlmRequest``), never by the HIT.
        assignment.earned_usd = Decimal("0")
    if campaign.provider == Campaign.Provider.LOCAL or worker.provider == LLM_WORKER_PROVIDER:
        assignment.paid_usd, assignment.paid_at = assignment.earned_usd, now
    fields = [
        "status",
        "submitted_at",
        "earned_usd",
        "paid_usd",
        "paid_at",
        "challenges",
        "challenges_failed",
    ]
    # A failed challenge has just excluded the worker; otherwise the lock's statement read whether they are
    # (``_worker_excluded_for_assignment``), when it was asked to.
    excluded = assignment.__dict__.get("worker_excluded")
    if failed or excluded is None:
        excluded = worker_is_excluded(worker=worker, campaign=campaign)
    if excluded or hit.status != Hit.Status.OPEN:
        writes_run(answers_insert)
        assignment.status = Assignment.Status.DISCARDED
        instance_update(assignment, fields)
        hit_discard(hit=hit)
        return
    # Rows held locked, stored as ``save(update_fields=...)`` stores them, without compiling per HIT.
    assignment.status = Assignment.Status.ACCEPTED
    hit.status = Hit.Status.ACCEPTED
    hit.closed_at = now
    # Every pair gets the winner its judgment names, in one statement. The winners are the answers at hand
    # (those just stored, or the first answer an earlier call stored), written by a CASE over the pairs'
    # primary keys: reading them back from the judgments in a subquery per pair cost the database more than
    # the rest of the submit.
    # A machine judge's tie (or failed reply) leaves its pair to people: back to the queue, unjudged; where
    # no person can take it (a campaign of the model alone) a position-inconsistent tie counts as the
    # published judge counts it (docs/decisions.md, "A machine judge's tie").
    ties_count = campaign.provider == Campaign.Provider.LLM
    judged = sorted(
        (pair_id, winner)
        for is_challenge, _, pair_id, winner, tie in answers
        if not is_challenge and (not tie or (tie == Judgment.Tie.POSITION_INCONSISTENT and ties_count))
    )
    left_over = sorted(
        pair_id for is_challenge, _, pair_id, _, _ in answers if not is_challenge and pair_id is not None
    )
    left_over = sorted(set(left_over) - {pair_id for pair_id, _ in judged})
    winners = prepared_update_write(
        "count: pairs' winners",
        _pairs_winners,
        pair_ids=[pair_id for pair_id, _ in judged],
        winner_ids=[winner for _, winner in judged],
        now=now,
    )
    # The answers, the assignment, the HIT and the pairs: rows of four tables, none read by another's write,
    # so on PostgreSQL one statement (``writes_run``).
    writes_run(
        [
            *answers_insert,
            instance_update_write(assignment, fields),
            instance_update_write(hit, ["status", "closed_at"]),
            *([winners] if winners is not None else []),
        ]
    )
    if left_over:
        Pair.objects.filter(pk__in=left_over, winner__isnull=True).update(hit=None)
        enqueue_on_commit("judging.tasks.hit_build_task", campaign.pk)
    if round_ids is None:
        round_ids = set(Pair.objects.filter(hit=hit).values_list("round_id", flat=True))
    adaptive_campaign = campaign.pk if campaign.mode == Campaign.Mode.ADAPTIVE else None
    transaction.on_commit(
        lambda: _rounds_close_complete(sorted(round_ids), adaptive_campaign=adaptive_campaign)
    )


def _pairs_winners(
    *, pair_ids: Sequence[int], winner_ids: Sequence[int], now: datetime
) -> tuple[QuerySet[Pair], dict[str, object]]:
    """The update giving each pair of ``pair_ids`` the winner at the same place of ``winner_ids``."""
    winner = Case(
        *(
            When(pk=pair_id, then=Value(winner_id))
            for pair_id, winner_id in zip(pair_ids, winner_ids, strict=True)
        ),
        output_field=Pair._meta.get_field("winner").target_field,
    )
    return Pair.objects.filter(pk__in=pair_ids), {"winner_id": winner, "judged_at": now}


def _rounds_close_complete(round_ids: list[int], *, adaptive_campaign: int | None = None) -> None:
    """After a HIT counted: queue the closing of those of its rounds that are now complete, asked once for
    all of them. Asked after commit, so of HITs of one round counted at the same moment the last to commit
    sees every answer; a round queued twice closes once (``round_close_if_complete`` is idempotent). In an
    adaptive campaign (``adaptive_campaign``) a HIT build is queued too: the pairs that ``hit_build`` held
    back for a fuller HIT are packed once no other HIT is open, which this HIT may have been the last of."""
    for (round_id,) in prepared_rows("rounds complete", _rounds_complete, round_ids=round_ids):
        enqueue("judging.tasks.round_close_if_complete_task", round_id)
    if adaptive_campaign is not None:
        enqueue("judging.tasks.hit_build_task", adaptive_campaign)


def _rounds_complete(*, round_ids: Sequence[int]) -> QuerySet[Round, tuple[int]]:
    """Those of the rounds still open whose every pair has its winner, by id."""
    unjudged = Pair.objects.filter(round=OuterRef("pk"), winner__isnull=True)
    return (
        Round.objects.filter(pk__in=round_ids, closed_at__isnull=True)
        .exclude(Exists(unjudged))
        .order_by("pk")
        .values_list("pk")
    )

"""Judges in the browser: the worker row of a logged-in crowd user, binding an external HIT page's
assignment to the worker the provider sent, and the final submit of an external assignment."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from judging.models import Assignment, Campaign, Hit, Worker
from judging.services.errors import AssignmentClosedError, AssignmentSubmittedError, SessionWaitsError
from judging.services.hits import assignment_last_activity, idle_release_seconds
from judging.services.judgments import assignment_claim_external, confirmation_sync_soon, hit_assign_next

LOCAL_PROVIDER = "local"


@transaction.atomic
def worker_for_user(*, user: User) -> Worker:
    """The local-crowd worker of a logged-in user (``local:user-<pk>``), created on first sight."""
    worker, _ = Worker.objects.get_or_create(
        provider=LOCAL_PROVIDER, external_id=f"user-{user.pk}", defaults={"user": user}
    )
    return worker


def assignment_start_external(*, hit: Hit, worker: Worker, external_id: str) -> Assignment:
    """Give ``hit`` to ``worker`` under the provider's assignment id (MTurk's ``assignmentId``): a claim that
    counts once MTurk confirms it (``assignment_claim_external``). The same worker coming back with the same
    id gets the same assignment; an id already claimed by another worker is refused with ``HitTakenError``;
    a worker who already gave confirmed answers to one of its pairs with ``PairAlreadyJudgedError``."""
    return assignment_claim_external(hit=hit, worker=worker, external_id=external_id)


def hit_assign_next_external(*, campaign: Campaign, worker: Worker, session_id: str) -> Assignment | None:
    """The participant's HIT of this campaign (the same one again on a reload, even once submitted: one
    Prolific session is one HIT), else the next open one, recorded under the provider's session id (Prolific's
    ``SESSION_ID``); None when none is left. Anyone who knows a participant's id can open the study link with
    an invented session, so a new session never ends another one that Prolific confirmed or that is still
    live (an answer within ``TOPPREF_IDLE_RELEASE_SECONDS``): it raises ``SessionWaitsError`` and queues a sync,
    which expires whichever claim Prolific does not list. Only claims that are neither (a forger's left idle)
    are superseded: they expire, their answers kept as unconfirmed, so the real participant is never turned
    away for long."""
    assignment, holder = _hit_assign_next_external(campaign=campaign, worker=worker, session_id=session_id)
    if holder is not None:
        # Queued outside the transaction, which the refusal would roll back with the queueing.
        confirmation_sync_soon(campaign_id=campaign.pk)
        raise SessionWaitsError(worker_id=worker.pk, assignment_id=holder.pk)
    return assignment


@transaction.atomic
def _hit_assign_next_external(
    *, campaign: Campaign, worker: Worker, session_id: str
) -> tuple[Assignment | None, Assignment | None]:
    """``hit_assign_next_external``'s work: (the session's assignment, None), or (None, the other session's
    assignment it waits for)."""
    session = (
        Assignment.objects.filter(campaign=campaign, worker=worker, external_id=session_id)
        .exclude(status=Assignment.Status.EXPIRED)
        .select_related("hit")
        .order_by("-started_at")
        .first()
    )
    if session is not None and (session.status == Assignment.Status.IN_PROGRESS or session.submitted_at):
        return session, None
    # The worker's lock first, as every writer of their assignments takes it (judging.services.judgments).
    Worker.objects.select_for_update().get(pk=worker.pk)
    others = list(
        Assignment.objects.filter(campaign=campaign, worker=worker, status=Assignment.Status.IN_PROGRESS)
        .exclude(external_id=session_id)
        .select_related("campaign")
    )
    now = timezone.now()
    for other in others:
        if other.confirmed_at is not None or not _claim_is_stale(assignment=other, now=now):
            return None, other
    Assignment.objects.filter(pk__in=[other.pk for other in others]).update(status=Assignment.Status.EXPIRED)
    assignment = hit_assign_next(campaign=campaign, worker=worker, external_id=session_id)
    if assignment is not None and assignment.confirmed_at is None:
        # Prolific lists the participant's submission from the moment they start: confirmed, the claim
        # holds its HIT (docs/decisions.md, "Provisional until the provider confirms").
        confirmation_sync_soon(campaign_id=campaign.pk)
    return assignment, None


def _claim_is_stale(*, assignment: Assignment, now: datetime) -> bool:
    """Whether an unconfirmed claim has had no answer for ``TOPPREF_IDLE_RELEASE_SECONDS`` (never, when that
    is 0: every claim in progress is then live until the provider's listing settles it)."""
    seconds = idle_release_seconds()
    return bool(seconds) and assignment_last_activity(assignment=assignment) <= now - timedelta(
        seconds=seconds
    )


@transaction.atomic
def assignment_finish_external(*, assignment: Assignment) -> Assignment:
    """The final submit of an external HIT page, once the server has stored and checked every answer:
    issue the completion code (the campaign's Prolific code when it has one, else a fresh random one) and
    store it. Raises ``AssignmentClosedError`` while answers are missing and ``AssignmentSubmittedError``
    for a replayed submit; nothing changes then."""
    assignment = Assignment.objects.select_for_update().select_related("campaign").get(pk=assignment.pk)
    if assignment.submitted_at is None:
        raise AssignmentClosedError(assignment_id=assignment.pk, status="not fully answered")
    if assignment.completion_code:
        raise AssignmentSubmittedError(assignment_id=assignment.pk)
    code = assignment.campaign.provider_state.get("completion_code") or secrets.token_hex(4).upper()
    assignment.completion_code = str(code)[:40]
    assignment.save(update_fields=["completion_code"])
    return assignment

"""Judges in the browser: the worker row of a logged-in crowd user, binding an external HIT page's
assignment to the worker the provider sent, and the final submit of an external assignment."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import User
from django.db import transaction

from judging.models import Assignment, Campaign, Hit, Worker
from judging.services.errors import AssignmentClosedError, AssignmentSubmittedError
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


@transaction.atomic
def hit_assign_next_external(*, campaign: Campaign, worker: Worker, session_id: str) -> Assignment | None:
    """The participant's HIT of this campaign (the same one again on a reload, even once submitted: one
    Prolific session is one HIT), else the next open one, recorded under the provider's session id (Prolific's
    ``SESSION_ID``); None when none is left. A new session supersedes the participant's claims in progress
    that Prolific has not confirmed (a forger may have used their id first): those expire, their answers kept
    as unconfirmed, so the real participant is never turned away."""
    session = (
        Assignment.objects.filter(campaign=campaign, worker=worker, external_id=session_id)
        .exclude(status=Assignment.Status.EXPIRED)
        .select_related("hit")
        .order_by("-started_at")
        .first()
    )
    if session is not None and (session.status == Assignment.Status.IN_PROGRESS or session.submitted_at):
        return session
    # The worker's lock first, as every writer of their assignments takes it (judging.services.judgments).
    Worker.objects.select_for_update().get(pk=worker.pk)
    superseded = Assignment.objects.filter(
        campaign=campaign, worker=worker, status=Assignment.Status.IN_PROGRESS, confirmed_at__isnull=True
    ).exclude(external_id=session_id)
    superseded.update(status=Assignment.Status.EXPIRED)
    assignment = hit_assign_next(campaign=campaign, worker=worker, external_id=session_id)
    if assignment is not None and assignment.confirmed_at is None:
        # Prolific lists the participant's submission from the moment they start: confirmed, the claim
        # holds its HIT (docs/decisions.md, "Provisional until the provider confirms").
        confirmation_sync_soon(campaign_id=campaign.pk)
    return assignment


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

"""Judges in the browser: the worker row of a logged-in crowd user, binding an external HIT page's
assignment to the worker the provider sent, and the final submit of an external assignment."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import User
from django.db import transaction

from judging.models import Assignment, Campaign, Hit, Judgment, Worker
from judging.services.errors import (
    AssignmentClosedError,
    AssignmentSubmittedError,
    HitTakenError,
    PairAlreadyJudgedError,
)
from judging.services.judgments import assignment_start, hit_assign_next

LOCAL_PROVIDER = "local"


@transaction.atomic
def worker_for_user(*, user: User) -> Worker:
    """The local-crowd worker of a logged-in user (``local:user-<pk>``), created on first sight."""
    worker, _ = Worker.objects.get_or_create(
        provider=LOCAL_PROVIDER, external_id=f"user-{user.pk}", defaults={"user": user}
    )
    return worker


@transaction.atomic
def assignment_start_external(*, hit: Hit, worker: Worker, external_id: str) -> Assignment:
    """Give ``hit`` to ``worker`` under the provider's assignment id (MTurk's ``assignmentId``). The same
    worker coming back gets the same assignment; an assignment id already bound to another worker, or a
    worker arriving with a second assignment id for a HIT they hold, is refused with ``HitTakenError``; a
    worker who already judged one of its pairs with ``PairAlreadyJudgedError``."""
    bound = Assignment.objects.filter(hit=hit, external_id=external_id).exclude(worker=worker).exists()
    if bound:
        raise HitTakenError(hit_id=hit.pk)
    holds = Assignment.objects.filter(hit=hit, worker=worker).exists()
    # A worker never gets a pair they already judged (MTurk picks the HIT, so we can only refuse it).
    if not holds and Judgment.objects.filter(assignment__worker=worker, slot__pair__slots__hit=hit).exists():
        raise PairAlreadyJudgedError(hit_id=hit.pk, worker_id=worker.pk)
    assignment = assignment_start(hit=hit, worker=worker)
    if not assignment.external_id:
        Assignment.objects.filter(pk=assignment.pk).update(external_id=external_id)
        assignment.external_id = external_id
    elif assignment.external_id != external_id:
        raise HitTakenError(hit_id=hit.pk)
    return assignment


@transaction.atomic
def hit_assign_next_external(*, campaign: Campaign, worker: Worker, session_id: str) -> Assignment | None:
    """The participant's HIT of this campaign (the same one again on a reload, even once submitted: one
    Prolific session is one HIT), else the next open one, recorded under the provider's session id (Prolific's
    ``SESSION_ID``); None when none is left."""
    session = (
        Assignment.objects.filter(campaign=campaign, worker=worker, external_id=session_id)
        .exclude(status=Assignment.Status.EXPIRED)
        .select_related("hit")
        .order_by("-started_at")
        .first()
    )
    if session is not None and (session.status == Assignment.Status.IN_PROGRESS or session.submitted_at):
        return session
    assignment = hit_assign_next(campaign=campaign, worker=worker)
    if assignment is not None and not assignment.external_id:
        Assignment.objects.filter(pk=assignment.pk).update(external_id=session_id)
        assignment.external_id = session_id
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

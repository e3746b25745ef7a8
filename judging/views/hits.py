"""External HIT pages: what an MTurk ``ExternalQuestion`` (``/hits/<HIT uuid>/``) or a Prolific study
(``/hits/campaign/<campaign uuid>/``) opens, inside the provider's frame. The worker's identity travels in a
signed, expiring token in the page and in every POST, never in a cookie; the token is also what protects
these forms against cross-site requests (they are ``csrf_exempt`` for the cookie check only).

Paper: Assessing top-k preferences, section 4.3 (HITs of 10 preferences and 3 challenges; workers failing
a challenge are paid but excluded). Query parameters are forgeable: they are checked strictly and bound to
server state when the HIT is accepted.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from config.middleware import frame_for_workers, idempotent_post
from judging.crowd.origins import PROLIFIC_ORIGIN, mturk_submit_origins
from judging.models import Assignment, Campaign, Hit, HitSlot
from judging.selectors import hit_question_next
from judging.services import (
    AssignmentClosedError,
    AssignmentSubmittedError,
    HitNotOpenError,
    HitTakenError,
    PairAlreadyJudgedError,
    SessionWaitsError,
    WorkerExcludedError,
    assignment_finish_external,
    assignment_start_external,
    hit_assign_next_external,
    judgment_submit,
    worker_get_or_create,
    worker_is_excluded,
)
from judging.views.answers import answered, parse_answer, shown_stamp
from judging.views.tokens import TokenExpired, TokenInvalid, token_make, token_read

PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"
MTURK_WORKER_ID = re.compile(r"A[A-Z0-9]{1,63}")
MTURK_ENTITY_ID = re.compile(r"[A-Z0-9]{1,64}")
PROLIFIC_ID = re.compile(r"[0-9a-fA-F]{24}")
PROLIFIC_OTHER_ID = re.compile(r"[A-Za-z0-9]{1,64}")
PROLIFIC_COMPLETE_URL = f"{PROLIFIC_ORIGIN}/submissions/complete"


class Refusal(Exception):
    def __init__(self, title: str, detail: str, status: int) -> None:
        super().__init__(title)
        self.title, self.detail, self.status = title, detail, status


def _refusal_page(request: HttpRequest, refusal: Refusal) -> HttpResponse:
    return render(
        request,
        "judging/message.html",
        {"layout": "hit", "title": refusal.title, "detail": refusal.detail},
        status=refusal.status,
    )


def _single(
    query: QueryDict, name: str, pattern: re.Pattern[str] | None = None, *, required: bool = True
) -> str:
    """Exactly one value of a query parameter (a duplicated one is refused), matching ``pattern``."""
    values = query.getlist(name)
    if not values and not required:
        return ""
    if len(values) != 1:
        raise Refusal(
            f"The link is missing {name} or gives it twice.",
            "Open the HIT again from the provider's site.",
            400,
        )
    if pattern is not None and not pattern.fullmatch(values[0]):
        raise Refusal(f"{name} is not valid.", "Open the HIT again from the provider's site.", 400)
    return values[0]


def _submit_origin(turk_submit_to: str) -> str:
    """``turkSubmitTo`` as an origin, only if it is MTurk's production or sandbox site or an origin of
    ``TOPPREF_MTURK_SUBMIT_HOSTS``: it comes from the query string and picks where the worker is sent."""
    origin = turk_submit_to.rstrip("/")
    if origin not in mturk_submit_origins():
        raise Refusal(
            "turkSubmitTo is not an MTurk site.", "This page only submits to Amazon Mechanical Turk.", 400
        )
    return origin


@frame_for_workers
@require_GET
def hit_page(request: HttpRequest, public_id) -> HttpResponse:
    hit = get_object_or_404(Hit.objects.select_related("campaign"), public_id=public_id)
    try:
        if "token" in request.GET:
            assignment, token = _from_token(request, request.GET.get("token", ""), hit)
        else:
            if hit.campaign.provider != Campaign.Provider.MTURK:
                raise Refusal("This HIT is not offered on MTurk.", "", 404)
            assignment_id = _single(request.GET, "assignmentId")
            if assignment_id == PREVIEW_ASSIGNMENT:
                return render(request, "judging/hit_preview.html", {"layout": "hit", "hit": hit})
            assignment, token = _accept_mturk(request, hit, assignment_id)
    except Refusal as refusal:
        return _refusal_page(request, refusal)
    return _render_assignment(request, hit, assignment, token)


@frame_for_workers
@require_GET
def prolific_entry(request: HttpRequest, public_id) -> HttpResponse:
    """A Prolific study's one URL: the participant's HIT of this campaign (the same again on a reload),
    else the next open one; 303 to its page with the participant's token."""
    campaign = get_object_or_404(Campaign, public_id=public_id, provider=Campaign.Provider.PROLIFIC)
    try:
        participant = _single(request.GET, "PROLIFIC_PID", PROLIFIC_ID)
        study = _single(request.GET, "STUDY_ID", PROLIFIC_OTHER_ID)
        session = _single(request.GET, "SESSION_ID", PROLIFIC_OTHER_ID)
        # The campaign's studies (one per stage); an id of none of them is not a link Prolific made for it.
        studies = set(campaign.provider_state.get("studies", {}).values())
        if campaign.provider_state.get("study_id"):
            studies.add(campaign.provider_state["study_id"])
        if studies and study not in studies:
            raise Refusal("This link belongs to another study.", "Open the study again from Prolific.", 400)
        if campaign.status != Campaign.Status.RUNNING:
            raise Refusal("This study is not running.", "Please return it on Prolific.", 410)
        worker = worker_get_or_create(provider=Campaign.Provider.PROLIFIC, external_id=participant.lower())
        if worker.is_excluded:
            return _excluded(request)
        try:
            assignment = hit_assign_next_external(campaign=campaign, worker=worker, session_id=session)
        except WorkerExcludedError:
            return _excluded(request)
        except SessionWaitsError:
            raise Refusal(
                "This study is already open in another session of your Prolific account.",
                "Go on in that session. If you have none, wait a minute and reload this page: we are asking"
                " Prolific which session is yours.",
                409,
            ) from None
    except Refusal as refusal:
        return _refusal_page(request, refusal)
    if assignment is None:
        return render(request, "judging/nothing_left.html", {"layout": "hit"})
    hit = assignment.hit
    token = token_make(
        assignment_id=assignment.pk,
        worker_id=worker.pk,
        hit_public_id=str(hit.public_id),
        provider="prolific",
    )
    return _see_other(_page_url(hit, token))


@idempotent_post
@frame_for_workers
@csrf_exempt
@require_POST
def hit_answer(request: HttpRequest, public_id) -> HttpResponse:
    """Store one answer as it is made; 303 back to the HIT page. The same question answered twice keeps the
    first answer; a question not in the HIT, a closed assignment or a bad token change nothing (4xx)."""
    hit = get_object_or_404(Hit.objects.select_related("campaign"), public_id=public_id)
    try:
        _check_origin(request)
        assignment, token = _from_token(request, request.POST.get("token", ""), hit)
        answer = parse_answer(request.POST)
        if answer is None:
            raise Refusal("That answer was not understood.", "Choose the left or the right passage.", 400)
        try:
            position = int(request.POST.get("position", ""))
        except ValueError:
            position = -1
        slot = HitSlot.objects.filter(hit=hit, position=position).first()
        if slot is None:
            raise Refusal("That question is not part of this HIT.", "", 400)
        try:
            judgment_submit(
                assignment=assignment,
                slot=slot,
                winner_id=slot.left_id if answer.side == "left" else slot.right_id,
                milliseconds=answer.milliseconds,
            )
        except AssignmentClosedError:
            raise Refusal("This HIT is closed.", "It expired or was already submitted.", 409) from None
    except Refusal as refusal:
        return _refusal_page(request, refusal)
    return answered(
        request,
        _page_url(hit, token),
        lambda: _render_assignment(request, hit, _assignment_again(assignment), token),
    )


@frame_for_workers
@csrf_exempt
@require_POST
def hit_submit(request: HttpRequest, public_id) -> HttpResponse:
    """The final submit, once every answer is stored and checked: the completion code is issued, then MTurk
    gets ``assignmentId`` at ``turkSubmitTo/mturk/externalSubmit`` and Prolific a redirect with the code. A
    replayed submit is refused (409) and changes nothing."""
    hit = get_object_or_404(Hit.objects.select_related("campaign"), public_id=public_id)
    try:
        _check_origin(request)
        assignment, token = _from_token(request, request.POST.get("token", ""), hit)
        try:
            assignment = assignment_finish_external(assignment=assignment)
        except AssignmentSubmittedError:
            raise Refusal(
                "This HIT was already submitted.", "Thank you: there is nothing more to do.", 409
            ) from None
        except AssignmentClosedError:
            raise Refusal(
                "Some questions are still unanswered.", "Go back to the HIT and answer them.", 409
            ) from None
    except Refusal as refusal:
        return _refusal_page(request, refusal)
    claims = token_read(token, hit_public_id=str(hit.public_id))
    if claims.provider == Campaign.Provider.PROLIFIC:
        return _see_other(f"{PROLIFIC_COMPLETE_URL}?{urlencode({'cc': assignment.completion_code})}")
    return render(
        request, "judging/hit_mturk_submit.html", _mturk_submit_context(assignment, claims.submit_origin)
    )


def _accept_mturk(request: HttpRequest, hit: Hit, assignment_id: str) -> tuple[Assignment, str]:
    if not MTURK_ENTITY_ID.fullmatch(assignment_id):
        raise Refusal("assignmentId is not valid.", "Open the HIT again from MTurk.", 400)
    worker_id = _single(request.GET, "workerId", MTURK_WORKER_ID)
    hit_id = _single(request.GET, "hitId", MTURK_ENTITY_ID)
    if hit.external_id and hit_id != hit.external_id:
        raise Refusal("hitId does not match this HIT.", "Open the HIT again from MTurk.", 400)
    origin = _submit_origin(_single(request.GET, "turkSubmitTo"))
    worker = worker_get_or_create(provider=Campaign.Provider.MTURK, external_id=worker_id)
    if worker.is_excluded:
        raise _excluded_refusal()
    try:
        assignment = assignment_start_external(hit=hit, worker=worker, external_id=assignment_id)
    except WorkerExcludedError:
        raise _excluded_refusal() from None
    except HitTakenError:
        raise Refusal(
            "This HIT belongs to another assignment.", "Please return it and take another HIT.", 409
        ) from None
    except PairAlreadyJudgedError:
        raise Refusal(
            "You have already answered questions of this HIT.",
            "Please return it and take another HIT; your earlier answers are kept.",
            409,
        ) from None
    except HitNotOpenError:
        raise Refusal(
            "This HIT is no longer available.", "Please return it and take another HIT.", 410
        ) from None
    token = token_make(
        assignment_id=assignment.pk,
        worker_id=worker.pk,
        hit_public_id=str(hit.public_id),
        provider="mturk",
        submit_origin=origin,
    )
    return assignment, token


def _excluded_refusal() -> Refusal:
    return Refusal(
        "Thank you for your work.",
        "You have already taken part in this study as far as it needs, so no more questions are open for you. "
        "You can return this HIT; nothing you have submitted is lost.",
        403,
    )


def _from_token(request: HttpRequest, token: str, hit: Hit) -> tuple[Assignment, str]:
    try:
        claims = token_read(token, hit_public_id=str(hit.public_id))
    except TokenExpired:
        raise Refusal(
            "This page has expired.",
            "Open the HIT again from the provider's site; your answers are saved.",
            403,
        ) from None
    except TokenInvalid:
        raise Refusal(
            "This page's link is not valid.", "Open the HIT again from the provider's site.", 403
        ) from None
    assignment = (
        Assignment.objects.select_related("worker", "hit")
        .filter(pk=claims.assignment_id, worker_id=claims.worker_id, hit=hit)
        .first()
    )
    if assignment is None:
        raise Refusal("This page's link is not valid.", "Open the HIT again from the provider's site.", 403)
    return assignment, token


def _assignment_again(assignment: Assignment) -> Assignment:
    """The assignment as the answer left it (the last answer submits it; a failed challenge excludes)."""
    return Assignment.objects.select_related("worker", "hit").get(pk=assignment.pk)


def _check_origin(request: HttpRequest) -> None:
    """The forms post to their own site; a browser's ``Origin`` naming another site is a cross-site post."""
    origin = request.headers.get("Origin")
    if origin and origin != f"{request.scheme}://{request.get_host()}":
        raise Refusal("This request came from another site.", "", 403)


def _render_assignment(request: HttpRequest, hit: Hit, assignment: Assignment, token: str) -> HttpResponse:
    claims = token_read(token, hit_public_id=str(hit.public_id))
    if assignment.submitted_at is None and worker_is_excluded(
        worker=assignment.worker, campaign=hit.campaign
    ):
        return _excluded(request)
    if assignment.submitted_at is not None:
        context = {
            "layout": "hit",
            "token": token,
            "hit": hit,
            "assignment": assignment,
            "provider": claims.provider,
        }
        if assignment.completion_code:
            if claims.provider == Campaign.Provider.PROLIFIC:
                context["prolific_url"] = (
                    f"{PROLIFIC_COMPLETE_URL}?{urlencode({'cc': assignment.completion_code})}"
                )
            else:
                context.update(_mturk_submit_context(assignment, claims.submit_origin))
        return render(request, "judging/hit_done.html", context)
    if assignment.status != Assignment.Status.IN_PROGRESS:
        return _refusal_page(
            request,
            Refusal("This HIT has expired.", "Please return it; its questions went to another worker.", 410),
        )
    state = hit_question_next(assignment=assignment)
    if state["done"] == 0 and request.GET.get("begin") != "1":
        return render(
            request,
            "judging/hit_instructions.html",
            {"layout": "hit", "begin_url": f"{_page_url(hit, token)}&begin=1"},
        )
    question = state["question"]
    return render(
        request,
        "judging/pair.html",
        {
            "layout": "hit",
            "question": question["question"],
            "left_text": question["left"],
            "right_text": question["right"],
            "progress": state,
            "progress_label": f"{state['done']} of {state['total']} answered",
            "action": reverse("judging:hit_answer", args=[hit.public_id]),
            "fields": {"token": token, "position": question["position"], "shown": shown_stamp()},
        },
    )


def _mturk_submit_context(assignment: Assignment, origin: str) -> dict[str, str]:
    return {
        "mturk_action": f"{origin}/mturk/externalSubmit",
        "assignment_id": assignment.external_id,
        "completion_code": assignment.completion_code,
    }


def _excluded(request: HttpRequest) -> HttpResponse:
    return render(request, "judging/excluded.html", {"layout": "hit"}, status=403)


def _page_url(hit: Hit, token: str) -> str:
    return f"{reverse('judging:hit', args=[hit.public_id])}?{urlencode({'token': token})}"


def _see_other(url: str) -> HttpResponse:
    response = HttpResponse(status=303)
    response["Location"] = url
    return response

"""Pages of logged-in judges: dedicated assessors judge tournament pairs (Assessing top-k preferences,
section 4.2), local crowd users judge the questions of the HIT they hold (section 4.3). One pair page for
both; a plain form POST answers and redirects, and static/judging/pair.js does the same without a reload."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from config.middleware import idempotent_post
from judging.models import Assignment, Campaign
from judging.selectors import (
    assignment_answered_by,
    assignment_end,
    assignment_held,
    campaign_list_judgeable,
    hit_question_next,
    judge_has_judged,
    judge_overview,
    judge_roles,
    judge_work_left,
    topic_end,
    tournament_pair_answered,
)
from judging.services import (
    AssignmentClosedError,
    AssignmentOverdueError,
    TopicLeasedError,
    TournamentPairError,
    UndoRefusedError,
    WorkerExcludedError,
    hit_assign_next,
    judgment_submit,
    judgment_undo,
    tournament_judgment_submit,
    tournament_judgment_undo,
    tournament_next_pair,
    worker_for_user,
)
from judging.views.answers import NEXT_HEADER, answered, parse_answer, shown_stamp

ASSESSOR, CROWD = "assessors", "crowd"
INSTRUCTIONS_SEEN = "judging_instructions_seen"
# The note of the answer just given, for the page after a plain form's 303 (``After``): a signed cookie for a
# few minutes, read and dropped by that page, so the answer path writes no session row for it.
AFTER_COOKIE, AFTER_SALT, AFTER_SECONDS = "toppref_after", "toppref.judge.after", 600
# The pair page as an answer's response to the page's script, which keeps only its title and #judge block
# (static/judging/pair.js): rendering the header around them cost the server about a tenth of an answer.
FRAGMENT_BASE = "judging/judge_fragment.html"


@dataclass(frozen=True)
class After:
    """The answer the judge just gave: ``hit`` its assignment, or ``topic`` its tournament topic and
    ``answer`` its judgment; ``undone`` when it was taken back. On the same HIT or topic the next page offers
    to take it back; on another one, or on none, it says how the last one ended. The page's script gets the
    next page in the answer's own response, which passes this on; a form posted without the script leaves
    it in a signed cookie (``AFTER_COOKIE``) for the GET its 303 leads to. Reading how a HIT or topic ended only when the page
    shows another one keeps the answer path at its usual queries."""

    hit: int = 0
    topic: int = 0
    answer: int = 0
    undone: bool = False

    @classmethod
    def of(cls, request: HttpRequest) -> After:
        """The note a plain form's answer left (``answered``), or nothing; a note that is not ours, or too
        old, is nothing too."""
        note = request.get_signed_cookie(AFTER_COOKIE, default="", salt=AFTER_SALT, max_age=AFTER_SECONDS)
        hit, topic, answer, undone = ([*note.split("."), "", "", "", ""])[:4]
        return cls(hit=_int(hit), topic=_int(topic), answer=_int(answer), undone=undone == "1")

    def answered(self, request: HttpRequest, roles: frozenset[str]) -> HttpResponse:
        """The response to a stored answer or undo (``answered``), this passed on to the next page."""
        response = answered(
            request, reverse("judging:next"), lambda: _next_page(request, roles, fragment=True, after=self)
        )
        if request.headers.get(NEXT_HEADER) != "1":
            response.set_signed_cookie(
                AFTER_COOKIE,
                f"{self.hit}.{self.topic}.{self.answer}.{int(self.undone)}",
                salt=AFTER_SALT,
                max_age=AFTER_SECONDS,
                path=reverse("judging:next"),
                secure=settings.SESSION_COOKIE_SECURE,
                httponly=True,
                samesite="Lax",
            )
        return response


@login_required
@require_GET
def judge_start(request: HttpRequest) -> HttpResponse:
    roles = judge_roles(user=request.user)
    return render(
        request,
        "judging/judge_start.html",
        {
            **_judge_context(request, roles),
            "is_judge": bool(roles & {ASSESSOR, CROWD}),
            "rows": judge_overview(roles=roles),
        },
    )


@require_http_methods(["GET", "POST"])
def judge_instructions(request: HttpRequest) -> HttpResponse:
    """The paper's three criteria (public, so that external HIT pages can link to it). A logged-in judge's
    POST records that they read them and goes on to their first pair."""
    if request.method == "POST":
        if not request.user.is_authenticated:
            return redirect(f"{reverse('login')}?next={reverse('judging:instructions')}")
        request.session[INSTRUCTIONS_SEEN] = True
        return redirect("judging:next", permanent=False)
    roles = judge_roles(user=request.user)
    return render(
        request,
        "judging/instructions.html",
        {**_judge_context(request, roles), "is_first": request.GET.get("first") == "1"},
    )


@login_required
@require_GET
def judge_next(request: HttpRequest) -> HttpResponse:
    response = _next_page(request, judge_roles(user=request.user), after=After.of(request))
    if AFTER_COOKIE in request.COOKIES:
        response.delete_cookie(AFTER_COOKIE, path=reverse("judging:next"), samesite="Lax")
    return response


def _next_page(
    request: HttpRequest, roles: frozenset[str], *, fragment: bool = False, after: After = After()
) -> HttpResponse:
    """What ``/judge/next/`` shows: the judge's next pair, else a page saying why there is none. ``fragment``:
    a pair comes as its title and #judge block only (``FRAGMENT_BASE``), for the page's script. ``after``:
    the answer just given (``After``)."""
    if not roles & {ASSESSOR, CROWD}:
        return _refuse(
            request,
            "You have no judging role.",
            "Ask a researcher to add you as an assessor or a crowd worker.",
            status=403,
        )
    if not request.session.get(INSTRUCTIONS_SEEN):
        if not judge_has_judged(user=request.user):
            return redirect(f"{reverse('judging:instructions')}?first=1")
        request.session[INSTRUCTIONS_SEEN] = True
    if ASSESSOR in roles:
        for campaign in campaign_list_judgeable(mode=Campaign.Mode.TOURNAMENT):
            question = tournament_next_pair(campaign=campaign, assessor=request.user)
            if question is not None:
                return _tournament_page(request, question, campaign, roles, fragment=fragment, after=after)
    if CROWD in roles:
        page = _held_hit_page(request, roles, fragment=fragment, after=after)
        if page is not None:
            return page
        worker = worker_for_user(user=request.user)
        if worker.is_excluded:
            return _excluded(request, roles)
        excluded = False
        for campaign in campaign_list_judgeable(mode=Campaign.Mode.CROWD):
            try:
                assignment = hit_assign_next(campaign=campaign, worker=worker)
            except WorkerExcludedError:
                # Excluded by this campaign's owner only: other owners' campaigns still take the worker.
                excluded = True
                continue
            if assignment is not None:
                state = hit_question_next(assignment=assignment)
                if state["question"] is not None:
                    return _hit_page(request, assignment, state, roles, fragment=fragment, after=after)
        if excluded:
            return _excluded(request, roles)
    return render(
        request,
        "judging/nothing_left.html",
        {
            **_judge_context(request, roles),
            "notice": _ended(request, after, shown=None),
            "left": judge_work_left(roles=roles),
        },
    )


def _ended(request: HttpRequest, after: After, *, shown: tuple[str, int] | None, next_words: str = "") -> str:
    """How the HIT or tournament topic of the last answer ended, in words, when the page shows another one
    (``shown``: ("hit", assignment id) or ("topic", topic id), None for no pair, ``next_words`` naming it);
    else ""."""
    if after.undone:
        return "Answer taken back: choose again."
    if after.hit and shown != ("hit", after.hit):
        end = assignment_end(user=request.user, assignment_id=after.hit, now=timezone.now())
        if end is None:
            return ""
        if end["status"] == Assignment.Status.EXPIRED:
            return "The time for your last HIT ran out before its last answer."
        done = end["done_today"]
        return f"HIT submitted: {done} done today." + (f" Next: {next_words}." if shown else "")
    if after.topic and shown != ("topic", after.topic):
        end = topic_end(campaign_topic_id=after.topic)
        if end is None or not end["is_finished"]:
            return ""
        judgments = end["judgments"]
        return (
            f"Topic {end['topic']} is finished: its top {end['k']} are placed after {judgments}"
            f" answer{'s' if judgments != 1 else ''}. Thank you." + (f" Next: {next_words}." if shown else "")
        )
    return ""


def _held_hit_page(
    request: HttpRequest, roles: frozenset[str], *, fragment: bool = False, after: After = After()
) -> HttpResponse | None:
    """The common pair page of a crowd judge: the next question of the HIT they hold in the first campaign,
    read without taking the worker's lock (two statements where the path through ``hit_assign_next`` takes
    eight; it shows what that path would show). None when that is not the case (no HIT held there, the worker
    excluded, the deadline passed, every question answered): the caller then takes that path."""
    assignment = assignment_held(user=request.user, now=timezone.now())
    if assignment is None:
        return None
    state = hit_question_next(assignment=assignment)
    if state["question"] is None:
        return None
    return _hit_page(request, assignment, state, roles, fragment=fragment, after=after)


@idempotent_post
@login_required
@require_POST
def judge_answer(request: HttpRequest) -> HttpResponse:
    """One answer; 303 to the next pair. A repeated answer keeps the first (the services are idempotent)."""
    roles = judge_roles(user=request.user)
    answer = parse_answer(request.POST)
    if answer is None:
        return _refuse(
            request, "That answer was not understood.", "Choose the left or the right passage.", status=400
        )
    kind = request.POST.get("kind")
    if kind == "tournament":
        if ASSESSOR not in roles:
            return _refuse(request, "Only assessors judge tournaments.", "", status=403)
        found = tournament_pair_answered(
            campaign_topic_id=_int(request.POST.get("topic")),
            left_id=_int(request.POST.get("left")),
            right_id=_int(request.POST.get("right")),
        )
        if found is None:
            raise Http404("no such tournament topic or item")
        campaign_topic, left, right = found
        winner, loser = (left, right) if answer.side == "left" else (right, left)
        try:
            judgment = tournament_judgment_submit(
                campaign_topic=campaign_topic,
                assessor=request.user,
                winner=winner,
                loser=loser,
                milliseconds=answer.milliseconds,
            )
        except (TournamentPairError, TopicLeasedError):
            return _refuse(
                request,
                "That pair is no longer asked.",
                "It was answered already, or another assessor holds this topic.",
                status=409,
            )
        return After(topic=campaign_topic.pk, answer=judgment.pk).answered(request, roles)
    elif kind == "hit":
        if CROWD not in roles:
            return _refuse(request, "Only crowd workers answer HITs.", "", status=403)
        found = assignment_answered_by(
            user=request.user,
            assignment_id=_int(request.POST.get("assignment")),
            position=_int(request.POST.get("position")),
        )
        if found is None:
            raise Http404("no such assignment or question")
        assignment, slot = found
        try:
            judgment_submit(
                assignment=assignment,
                slot=slot,
                winner_id=slot.left_id if answer.side == "left" else slot.right_id,
                milliseconds=answer.milliseconds,
            )
        except AssignmentClosedError:
            return _refuse(
                request,
                "This HIT is closed.",
                "It expired or was already submitted; your next pair is waiting.",
                status=409,
            )
        return After(hit=assignment.pk).answered(request, roles)
    return _refuse(request, "That answer was not understood.", "", status=400)


@idempotent_post
@login_required
@require_POST
def judge_undo(request: HttpRequest) -> HttpResponse:
    """Take back the judge's last answer (``judgment_undo``, ``tournament_judgment_undo``), then show the
    pair again; idempotent, so a repeated undo takes back one answer only. The pair form's undo button
    posts the form's fields here with the ``judgment`` to take back."""
    roles = judge_roles(user=request.user)
    judgment_id = _int(request.POST.get("judgment"))
    kind = request.POST.get("kind")
    try:
        if kind == "tournament" and ASSESSOR in roles:
            # The pair form's fields name the topic of a running campaign, as an answer's do.
            found = tournament_pair_answered(
                campaign_topic_id=_int(request.POST.get("topic")),
                left_id=_int(request.POST.get("left")),
                right_id=_int(request.POST.get("right")),
            )
            if found is None:
                raise Http404("no such tournament topic")
            tournament_judgment_undo(campaign_topic=found[0], assessor=request.user, judgment_id=judgment_id)
        elif kind == "hit" and CROWD in roles:
            found = assignment_answered_by(
                user=request.user,
                assignment_id=_int(request.POST.get("assignment")),
                position=_int(request.POST.get("position")),
            )
            if found is None:
                raise Http404("no such assignment")
            judgment_undo(assignment=found[0], judgment_id=judgment_id)
        else:
            return _refuse(request, "That request was not understood.", "", status=400)
    except (UndoRefusedError, AssignmentClosedError, AssignmentOverdueError, TopicLeasedError):
        return _refuse(
            request,
            "That answer can no longer be taken back.",
            "It counts already (its HIT was submitted or its topic finished), or it was not your last answer.",
            status=409,
        )
    return After(undone=True).answered(request, roles)


def redirect_see_other(url: str) -> HttpResponse:
    response = HttpResponse(status=303)
    response["Location"] = url
    return response


def _tournament_page(
    request: HttpRequest,
    question,
    campaign: Campaign,
    roles: frozenset[str],
    *,
    fragment: bool = False,
    after: After = After(),
) -> HttpResponse:
    campaign_topic = question.campaign_topic
    # The bar's end is an honest bound (``Tournament.remaining_bound``), read from the state without a query.
    total = question.done + question.remaining
    topic = campaign_topic.topic.topic_id
    same_topic = after.topic == campaign_topic.pk and after.answer
    return render(
        request,
        "judging/pair.html",
        {
            **_judge_context(request, roles),
            "base": FRAGMENT_BASE if fragment else None,
            "question": campaign_topic.topic.question,
            "left_text": question.left.text,
            "right_text": question.right.text,
            "left_read": question.left.docid in question.judged,
            "right_read": question.right.docid in question.judged,
            "progress": {"done": question.done, "total": total},
            "progress_label": (
                f"topic {topic}: {question.done} judged, {question.placed} of {question.target} places"
                f" found, at most {question.remaining} left"
            ),
            "notice": _ended(request, after, shown=("topic", campaign_topic.pk), next_words=f"topic {topic}"),
            "action": reverse("judging:answer"),
            "fields": {
                "shown": shown_stamp(),
                "kind": "tournament",
                "topic": campaign_topic.pk,
                "left": question.left.pk,
                "right": question.right.pk,
            },
            "undo": after.answer if same_topic else None,
        },
    )


def _hit_page(
    request: HttpRequest,
    assignment: Assignment,
    state: dict,
    roles: frozenset[str],
    *,
    fragment: bool = False,
    after: After = After(),
) -> HttpResponse:
    question = state["question"]
    return render(
        request,
        "judging/pair.html",
        {
            **_judge_context(request, roles),
            "base": FRAGMENT_BASE if fragment else None,
            "question": question["question"],
            "left_text": question["left"],
            "right_text": question["right"],
            "progress": state,
            "progress_label": f"HIT: {state['done']} of {state['total']} answered",
            "notice": _ended(
                request,
                after,
                shown=("hit", assignment.pk),
                next_words=f"a new HIT of {state['total']} pairs",
            ),
            "action": reverse("judging:answer"),
            "fields": {
                "shown": shown_stamp(),
                "kind": "hit",
                "assignment": assignment.pk,
                "position": question["position"],
            },
            # Any answer of the HIT in hand may be taken back while the HIT is open: it counts only at
            # the HIT's last answer.
            "undo": state["last_judgment"],
        },
    )


def _judge_context(request: HttpRequest, roles: frozenset[str]) -> dict[str, object]:
    """What every logged-in judge's page needs for its header: the judge layout, and whether the person is a
    researcher too (the link to the dashboard), from the roles the view read already."""
    return {"layout": "judge", "roles": roles, "is_researcher": _is_researcher(request, roles)}


def _is_researcher(request: HttpRequest, roles: frozenset[str]) -> bool:
    return request.user.is_authenticated and (request.user.is_staff or "researchers" in roles)


def _excluded(request: HttpRequest, roles: frozenset[str]) -> HttpResponse:
    return render(request, "judging/excluded.html", _judge_context(request, roles), status=403)


def _refuse(request: HttpRequest, title: str, detail: str, *, status: int) -> HttpResponse:
    return render(
        request,
        "judging/message.html",
        {
            **_judge_context(request, judge_roles(user=request.user)),
            "title": title,
            "detail": detail,
            "continue_url": reverse("judging:next"),
        },
        status=status,
    )


def _int(value: str | None) -> int:
    try:
        return int(value or "")
    except ValueError:
        return 0

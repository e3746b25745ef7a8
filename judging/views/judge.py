"""Pages of logged-in judges: dedicated assessors judge tournament pairs (Assessing top-k preferences,
section 4.2), local crowd users judge the questions of the HIT they hold (section 4.3). One pair page for
both; a plain form POST answers and redirects, and static/judging/pair.js does the same without a reload."""

from __future__ import annotations

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
    assignment_held,
    campaign_list_judgeable,
    hit_question_next,
    judge_has_judged,
    judge_overview,
    judge_roles,
    tournament_pair_answered,
    tournament_progress,
)
from judging.services import (
    AssignmentClosedError,
    TopicLeasedError,
    TournamentPairError,
    WorkerExcludedError,
    hit_assign_next,
    judgment_submit,
    tournament_judgment_submit,
    tournament_next_pair,
    worker_for_user,
)
from judging.views.answers import answered, parse_answer, shown_stamp

ASSESSOR, CROWD = "assessors", "crowd"
INSTRUCTIONS_SEEN = "judging_instructions_seen"
# The pair page as an answer's response to the page's script, which keeps only its title and #judge block
# (static/judging/pair.js): rendering the header around them cost the server about a tenth of an answer.
FRAGMENT_BASE = "judging/judge_fragment.html"


@login_required
@require_GET
def judge_start(request: HttpRequest) -> HttpResponse:
    roles = judge_roles(user=request.user)
    return render(
        request,
        "judging/judge_start.html",
        {"roles": roles, "is_judge": bool(roles & {ASSESSOR, CROWD}), "rows": judge_overview(roles=roles)},
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
    return render(request, "judging/instructions.html", {"is_first": request.GET.get("first") == "1"})


@login_required
@require_GET
def judge_next(request: HttpRequest) -> HttpResponse:
    return _next_page(request, judge_roles(user=request.user))


def _next_page(request: HttpRequest, roles: set[str], *, fragment: bool = False) -> HttpResponse:
    """What ``/judge/next/`` shows: the judge's next pair, else a page saying why there is none. ``fragment``:
    a pair comes as its title and #judge block only (``FRAGMENT_BASE``), for the page's script."""
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
                return _tournament_page(request, question, campaign, fragment=fragment)
    if CROWD in roles:
        page = _held_hit_page(request, fragment=fragment)
        if page is not None:
            return page
        worker = worker_for_user(user=request.user)
        if worker.is_excluded:
            return _excluded(request)
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
                    return _hit_page(request, assignment, state, fragment=fragment)
        if excluded:
            return _excluded(request)
    return render(request, "judging/nothing_left.html", {"layout": "judge"})


def _held_hit_page(request: HttpRequest, *, fragment: bool = False) -> HttpResponse | None:
    """The common pair page of a crowd judge: the next question of the HIT they hold in the first campaign,
    read without taking the worker's lock (two statements where the path through ``hit_assign_next`` takes
    eight; it shows what that path would show). None when that is not the case (no HIT held there, the worker
    excluded, the deadline passed, every question answered): the caller then takes that path."""
    assignment = assignment_held(user=request.user, now=timezone.now())
    if assignment is None:
        return None
    state = hit_question_next(assignment=assignment)
    return _hit_page(request, assignment, state, fragment=fragment) if state["question"] is not None else None


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
            tournament_judgment_submit(
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
    else:
        return _refuse(request, "That answer was not understood.", "", status=400)
    return answered(request, reverse("judging:next"), lambda: _next_page(request, roles, fragment=True))


def redirect_see_other(url: str) -> HttpResponse:
    response = HttpResponse(status=303)
    response["Location"] = url
    return response


def _tournament_page(
    request: HttpRequest, question, campaign: Campaign, *, fragment: bool = False
) -> HttpResponse:
    campaign_topic = question.campaign_topic
    progress = tournament_progress(campaign_topic=campaign_topic, k=campaign.k)
    return render(
        request,
        "judging/pair.html",
        {
            "layout": "judge",
            "base": FRAGMENT_BASE if fragment else None,
            "question": campaign_topic.topic.question,
            "left_text": question.left.text,
            "right_text": question.right.text,
            "progress": progress,
            "progress_label": f"topic {campaign_topic.topic.topic_id}: {progress['done']} judged, at most {progress['total'] - progress['done']} left",
            "action": reverse("judging:answer"),
            "fields": {
                "shown": shown_stamp(),
                "kind": "tournament",
                "topic": campaign_topic.pk,
                "left": question.left.pk,
                "right": question.right.pk,
            },
        },
    )


def _hit_page(
    request: HttpRequest, assignment: Assignment, state: dict, *, fragment: bool = False
) -> HttpResponse:
    question = state["question"]
    return render(
        request,
        "judging/pair.html",
        {
            "layout": "judge",
            "base": FRAGMENT_BASE if fragment else None,
            "question": question["question"],
            "left_text": question["left"],
            "right_text": question["right"],
            "progress": state,
            "progress_label": f"HIT: {state['done']} of {state['total']} answered",
            "action": reverse("judging:answer"),
            "fields": {
                "shown": shown_stamp(),
                "kind": "hit",
                "assignment": assignment.pk,
                "position": question["position"],
            },
        },
    )


def _excluded(request: HttpRequest) -> HttpResponse:
    return render(request, "judging/excluded.html", {"layout": "judge"}, status=403)


def _refuse(request: HttpRequest, title: str, detail: str, *, status: int) -> HttpResponse:
    return render(
        request,
        "judging/message.html",
        {"layout": "judge", "title": title, "detail": detail, "continue_url": reverse("judging:next")},
        status=status,
    )


def _int(value: str | None) -> int:
    try:
        return int(value or "")
    except ValueError:
        return 0

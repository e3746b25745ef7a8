"""What judges see in the browser (judging/views): their roles, the campaigns they work on, the next
question of a HIT, a tournament's progress bar."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, QuerySet

from judging.models import (
    CROWD_MODES,
    Assignment,
    Campaign,
    CampaignTopic,
    Candidate,
    Hit,
    HitSlot,
    Judgment,
    TournamentJudgment,
)

JUDGE_ROLES = ("assessors", "crowd", "researchers")


def users_with_judge_roles(users: QuerySet) -> QuerySet:
    """``users`` with their judging groups read in the same statement (``judge_roles`` then asks nothing):
    one ``EXISTS`` per role. The session's user is loaded this way (config.auth.JudgeRolesModelBackend)."""
    membership = User.groups.through.objects.filter(user_id=OuterRef("pk"))
    return users.annotate(
        **{_role_flag(role): Exists(membership.filter(group__name=role)) for role in JUDGE_ROLES}
    )


def judge_roles(*, user) -> frozenset[str]:
    """The judging groups (``assessors``, ``crowd``, ``researchers``) the user belongs to: as read with the
    user by ``users_with_judge_roles``, else from the database."""
    if not user.is_authenticated:
        return frozenset()
    if all(hasattr(user, _role_flag(role)) for role in JUDGE_ROLES):
        return frozenset(role for role in JUDGE_ROLES if getattr(user, _role_flag(role)))
    return frozenset(user.groups.filter(name__in=JUDGE_ROLES).values_list("name", flat=True))


def _role_flag(role: str) -> str:
    return f"is_in_{role}_group"


def judge_has_judged(*, user) -> bool:
    """Whether the user ever answered a pair (as an assessor or as a local crowd worker)."""
    return (
        TournamentJudgment.objects.filter(assessor=user).exists()
        or Judgment.objects.filter(assignment__worker__user=user).exists()
    )


def campaign_list_judgeable(*, mode: str, provider: str = Campaign.Provider.LOCAL) -> QuerySet[Campaign]:
    """Running campaigns of one mode that logged-in judges work on, oldest first; ``crowd`` includes the
    adaptive mode, whose HITs crowd workers take the same way."""
    modes = CROWD_MODES if mode == Campaign.Mode.CROWD else (mode,)
    return Campaign.objects.filter(
        status=Campaign.Status.RUNNING, mode__in=modes, provider=provider
    ).order_by("created_at", "pk")


def judge_overview(*, roles: frozenset[str]) -> list[dict[str, object]]:
    """For the judge's start page: each running campaign they can work on and how much is left there
    (tournament topics not finished; open HITs)."""
    rows: list[dict[str, object]] = []
    if "assessors" in roles:
        for campaign in campaign_list_judgeable(mode=Campaign.Mode.TOURNAMENT):
            left = CampaignTopic.objects.filter(
                campaign=campaign, state=CampaignTopic.State.TOURNAMENT
            ).count()
            rows.append({"campaign": campaign, "kind": "tournament topics", "left": left})
    if "crowd" in roles:
        for campaign in campaign_list_judgeable(mode=Campaign.Mode.CROWD):
            left = Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN).count()
            rows.append({"campaign": campaign, "kind": "HITs", "left": left})
    return rows


def assignment_held(*, user, campaign: Campaign) -> Assignment | None:
    """The logged-in judge's assignment in progress in ``campaign`` (their local crowd worker's, with that
    worker loaded), or None. A read without locks, for the pair page of a judge working through a HIT: a
    committed assignment in progress is theirs to show; taking a new HIT or expiring an overdue one stays with
    ``hit_assign_next``, which locks the worker (an assignment being created meanwhile is not seen here, and
    the caller then goes that way)."""
    return (
        Assignment.objects.filter(
            campaign=campaign,
            worker__user=user,
            worker__provider=Campaign.Provider.LOCAL,
            status=Assignment.Status.IN_PROGRESS,
        )
        .select_related("worker")
        .order_by("pk")
        .first()
    )


def hit_question_next(*, assignment: Assignment) -> dict[str, object]:
    """The first unanswered question of an assignment's HIT as the worker sees it (``question`` is None when
    every question is answered), with the progress: ``done`` and ``total``. Challenges look like any other
    question. One query: the HIT's few slots, each marked answered or not."""
    answered = Judgment.objects.filter(assignment=assignment, slot=OuterRef("pk"))
    rows = list(
        HitSlot.objects.filter(hit_id=assignment.hit_id)
        .annotate(is_answered=Exists(answered))
        .order_by("position")
        .values_list("position", "is_answered", "topic__question", "left__text", "right__text")
    )
    done = sum(1 for _, is_answered, *_ in rows if is_answered)
    question = next(
        (
            {"position": position, "question": text, "left": left_text, "right": right_text}
            for position, is_answered, text, left_text, right_text in rows
            if not is_answered
        ),
        None,
    )
    return {"question": question, "done": done, "total": len(rows)}


def tournament_progress(*, campaign_topic: CampaignTopic, k: int) -> dict[str, int]:
    """Judgments made in a topic's tournament and the most it can take, |C| + (k-1)*ceil(log2 |C|)
    (Assessing top-k preferences, section 4.2), for the judge's progress bar."""
    from judging.engine import tournament_judgment_bound

    done = TournamentJudgment.objects.filter(campaign_topic=campaign_topic).count()
    pool = Candidate.objects.filter(campaign_topic=campaign_topic).count()
    bound = tournament_judgment_bound(pool, k)
    return {"done": done, "total": max(bound, done + 1)}

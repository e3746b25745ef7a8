"""What judges see in the browser (judging/views): their roles, the campaigns they work on, the next
question of a HIT, a tournament's progress bar."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet

from judging.models import (
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


def judge_roles(*, user) -> frozenset[str]:
    """The judging groups (``assessors``, ``crowd``, ``researchers``) the user belongs to."""
    if not user.is_authenticated:
        return frozenset()
    return frozenset(user.groups.filter(name__in=JUDGE_ROLES).values_list("name", flat=True))


def judge_has_judged(*, user) -> bool:
    """Whether the user ever answered a pair (as an assessor or as a local crowd worker)."""
    return (
        TournamentJudgment.objects.filter(assessor=user).exists()
        or Judgment.objects.filter(assignment__worker__user=user).exists()
    )


def campaign_list_judgeable(*, mode: str, provider: str = Campaign.Provider.LOCAL) -> QuerySet[Campaign]:
    """Running campaigns of one mode that logged-in judges work on, oldest first."""
    return Campaign.objects.filter(status=Campaign.Status.RUNNING, mode=mode, provider=provider).order_by(
        "created_at", "pk"
    )


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

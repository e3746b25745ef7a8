"""What judges see in the browser (judging/views): their roles, the campaigns they work on, the next
question of a HIT, a tournament's progress bar."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import Group, User
from django.db import connection
from django.utils import timezone

from judging.models import (
    CROWD_MODES,
    Assignment,
    Campaign,
    CampaignTopic,
    Hit,
    HitSlot,
    Judgment,
    TournamentJudgment,
    Worker,
)
from judging.selectors.exclusions import worker_excluded_sql
from judging.selectors.rows import joined_rows, model_rows
from pools.models import Item, Topic

JUDGE_ROLES = ("assessors", "crowd", "researchers")


def judge_roles(*, user) -> frozenset[str]:
    """The judging groups (``assessors``, ``crowd``, ``researchers``) the user belongs to. Plain SQL: it runs
    on every judging request, where the ORM's compilation cost ten times the statement (docs/decisions.md,
    "Plain SQL for the pair page's reads")."""
    if not user.is_authenticated:
        return frozenset()
    membership = User.groups.through
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT g.name FROM {Group._meta.db_table} g"
            f" JOIN {membership._meta.db_table} m ON m.group_id = g.id"
            f" WHERE m.user_id = %s AND g.name IN ({', '.join(['%s'] * len(JUDGE_ROLES))})",
            [user.pk, *JUDGE_ROLES],
        )
        return frozenset(name for (name,) in cursor.fetchall())


def judge_has_judged(*, user) -> bool:
    """Whether the user ever answered a pair (as an assessor or as a local crowd worker)."""
    return (
        TournamentJudgment.objects.filter(assessor=user).exists()
        or Judgment.objects.filter(assignment__worker__user=user).exists()
    )


def campaign_list_judgeable(*, mode: str, provider: str = Campaign.Provider.LOCAL) -> list[Campaign]:
    """Running campaigns of one mode that logged-in judges work on, oldest first; ``crowd`` includes the
    adaptive mode, whose HITs crowd workers take the same way. Plain SQL: an assessor's every pair page reads
    it (docs/decisions.md, "Plain SQL for the pair page's reads")."""
    modes = CROWD_MODES if mode == Campaign.Mode.CROWD else (mode,)
    return model_rows(
        Campaign,
        f"FROM {Campaign._meta.db_table} c WHERE c.status = %s AND c.provider = %s"
        f" AND c.mode IN ({', '.join(['%s'] * len(modes))}) ORDER BY c.created_at, c.id",
        [Campaign.Status.RUNNING, provider, *modes],
        alias="c",
    )


def judge_overview(*, roles: frozenset[str]) -> list[dict[str, object]]:
    """For the judge's start page: each running campaign they can work on and how much is left there
    (tournament topics not finished; open HITs): ``left`` of ``kind``, a singular noun."""
    rows: list[dict[str, object]] = []
    if "assessors" in roles:
        for campaign in campaign_list_judgeable(mode=Campaign.Mode.TOURNAMENT):
            left = CampaignTopic.objects.filter(
                campaign=campaign, state=CampaignTopic.State.TOURNAMENT
            ).count()
            rows.append({"campaign": campaign, "kind": "tournament topic", "left": left})
    if "crowd" in roles:
        for campaign in campaign_list_judgeable(mode=Campaign.Mode.CROWD):
            left = Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN).count()
            rows.append({"campaign": campaign, "kind": "HIT", "left": left})
    return rows


def assignment_held(*, user, now: datetime) -> Assignment | None:
    """The logged-in judge's assignment in progress in the first campaign ``campaign_list_judgeable`` gives
    for crowd judges, or None: their local crowd worker's, not excluded (globally or by the campaign's owner:
    ``worker_excluded_sql``, the rule ``worker_is_excluded`` runs), with its deadline after ``now``. A read
    without locks, for the pair page of a judge working through a HIT: a committed assignment in progress is
    theirs to show; taking a new HIT or expiring an overdue one stays with ``hit_assign_next``, which locks the
    worker (an assignment being created meanwhile is not seen here, and the caller then goes that way). One
    statement of plain SQL (docs/decisions.md, "Plain SQL for the pair page's reads")."""
    tables = {
        "assignment": Assignment._meta.db_table,
        "worker": Worker._meta.db_table,
        "campaign": Campaign._meta.db_table,
        "excluded": worker_excluded_sql(worker="w", owner_id="c.owner_id"),
    }
    held = model_rows(
        Assignment,
        "FROM {assignment} a JOIN {worker} w ON w.id = a.worker_id"
        " JOIN {campaign} c ON c.id = a.campaign_id"
        " WHERE w.user_id = %s AND w.provider = %s AND NOT {excluded} AND a.status = %s"
        " AND a.deadline_at > %s"
        " AND c.id = (SELECT f.id FROM {campaign} f WHERE f.status = %s AND f.mode IN (%s, %s)"
        " AND f.provider = %s ORDER BY f.created_at, f.id LIMIT 1)"
        " ORDER BY a.id LIMIT 1".format(**tables),
        [
            user.pk,
            Campaign.Provider.LOCAL,
            Assignment.Status.IN_PROGRESS,
            now,
            Campaign.Status.RUNNING,
            *CROWD_MODES,
            Campaign.Provider.LOCAL,
        ],
        alias="a",
    )
    return held[0] if held else None


def assignment_answered_by(*, user, assignment_id: int, position: int) -> tuple[Assignment, HitSlot] | None:
    """The assignment ``assignment_id`` of the logged-in judge's local crowd worker and its HIT's slot at
    ``position``, or None when either is not theirs or not there: what an answer from the pair page names.
    One statement of plain SQL for both rows (docs/decisions.md, "Plain SQL for the pair page's reads")."""
    found = joined_rows(
        [(Assignment, "a"), (HitSlot, "s")],
        f"FROM {Assignment._meta.db_table} a JOIN {Worker._meta.db_table} w ON w.id = a.worker_id"
        f" JOIN {HitSlot._meta.db_table} s ON s.hit_id = a.hit_id AND s.position = %s"
        " WHERE a.id = %s AND w.user_id = %s AND w.provider = %s",
        [position, assignment_id, user.pk, Campaign.Provider.LOCAL],
    )
    return (found[0][0], found[0][1]) if found else None


def tournament_pair_answered(
    *, campaign_topic_id: int, left_id: int, right_id: int
) -> tuple[CampaignTopic, Item, Item] | None:
    """The topic of a running tournament campaign and the two items of its collection that an assessor's
    answer names, or None when any is not there. One statement of plain SQL for the three rows
    (docs/decisions.md, "Plain SQL for the pair page's reads")."""
    item = Item._meta.db_table
    found = joined_rows(
        [(CampaignTopic, "t"), (Item, "l"), (Item, "r")],
        f"FROM {CampaignTopic._meta.db_table} t JOIN {Campaign._meta.db_table} c ON c.id = t.campaign_id"
        f" JOIN {item} l ON l.id = %s AND l.collection_id = c.collection_id"
        f" JOIN {item} r ON r.id = %s AND r.collection_id = c.collection_id"
        " WHERE t.id = %s AND c.mode = %s AND c.status = %s",
        [left_id, right_id, campaign_topic_id, Campaign.Mode.TOURNAMENT, Campaign.Status.RUNNING],
    )
    return (found[0][0], found[0][1], found[0][2]) if found else None


def hit_question_next(*, assignment: Assignment) -> dict[str, object]:
    """The first unanswered question of an assignment's HIT as the worker sees it (``question`` is None when
    every question is answered), with the progress: ``done`` and ``total``, and the id of the last answer
    (``last_judgment``, None before the first), which the judge may take back. Challenges look like any other
    question. One statement of plain SQL (the HIT's few slots, each marked answered or not): it runs on every
    pair page (docs/decisions.md, "Plain SQL for the pair page's reads")."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT s.position, (SELECT j.id FROM {Judgment._meta.db_table} j"
            " WHERE j.assignment_id = %s AND j.slot_id = s.id), t.question, l.text, r.text"
            f" FROM {HitSlot._meta.db_table} s JOIN {Topic._meta.db_table} t ON t.id = s.topic_id"
            f" JOIN {Item._meta.db_table} l ON l.id = s.left_id JOIN {Item._meta.db_table} r ON r.id = s.right_id"
            " WHERE s.hit_id = %s ORDER BY s.position",
            [assignment.pk, assignment.hit_id],
        )
        rows = cursor.fetchall()
    answers = [judgment_id for _, judgment_id, *_ in rows if judgment_id is not None]
    question = next(
        (
            {"position": position, "question": text, "left": left_text, "right": right_text}
            for position, judgment_id, text, left_text, right_text in rows
            if judgment_id is None
        ),
        None,
    )
    return {
        "question": question,
        "done": len(answers),
        "total": len(rows),
        "last_judgment": max(answers, default=None),
    }


def assignment_end(*, user, assignment_id: int, now: datetime) -> dict[str, object] | None:
    """What became of the logged-in judge's assignment ``assignment_id`` once it is no longer in progress:
    its ``status`` and how many HITs their local crowd worker submitted since midnight (``done_today``,
    this one included), for the words "HIT submitted: 3 done today". None while it is in progress or when
    it is not theirs. Read only on the page after a HIT's last answer, never on every pair."""
    found = (
        Assignment.objects.filter(
            pk=assignment_id, worker__user=user, worker__provider=Campaign.Provider.LOCAL
        )
        .values_list("status", "worker_id")
        .first()
    )
    if found is None or found[0] == Assignment.Status.IN_PROGRESS:
        return None
    status, worker_id = found
    midnight = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    done_today = Assignment.objects.filter(worker_id=worker_id, submitted_at__gte=midnight).count()
    return {"status": status, "done_today": done_today}


def topic_end(*, campaign_topic_id: int) -> dict[str, object] | None:
    """A tournament topic an assessor just left: its ``topic`` id, whether it ``is_finished`` (its top k
    placed) and the ``judgments`` it took; None when there is no such topic."""
    found = (
        CampaignTopic.objects.filter(pk=campaign_topic_id)
        .values_list("topic__topic_id", "state", "campaign__k")
        .first()
    )
    if found is None:
        return None
    topic_id, state, k = found
    return {
        "topic": topic_id,
        "k": k,
        "is_finished": state in CampaignTopic.FINISHED_STATES,
        "judgments": TournamentJudgment.objects.filter(campaign_topic_id=campaign_topic_id).count(),
    }


def judge_work_left(*, roles: frozenset[str]) -> dict[str, int]:
    """For the page that says there is nothing left for this judge now, why: the tournament topics of
    running campaigns still being judged (by other assessors: ``topics_held``) and the running crowd
    campaigns (``crowd_campaigns``; none means the crowd's work is over). Read only on that page."""
    topics_held = crowd_campaigns = 0
    if "assessors" in roles:
        topics_held = CampaignTopic.objects.filter(
            campaign__status=Campaign.Status.RUNNING,
            campaign__mode=Campaign.Mode.TOURNAMENT,
            campaign__provider=Campaign.Provider.LOCAL,
            state=CampaignTopic.State.TOURNAMENT,
        ).count()
    if "crowd" in roles:
        crowd_campaigns = len(campaign_list_judgeable(mode=Campaign.Mode.CROWD))
    return {"topics_held": topics_held, "crowd_campaigns": crowd_campaigns}

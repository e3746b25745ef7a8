"""HITs: packing queued pairs of any topics into HITs with challenges, putting the pairs of discarded or
expired HITs back in the queue ("Assessing top-k preferences", section 4.3), and the overdue sweep.

Two clocks, as on Mechanical Turk (``LifetimeInSeconds`` beside ``AssignmentDurationInSeconds``): a HIT's
lifetime (``Hit.expires_at``) bounds how long it can be *found and taken*; once a worker takes it, their
assignment has its own deadline (``Assignment.deadline_at``), and work submitted before that deadline counts
even if the HIT's lifetime ran out meanwhile (docs/decisions.md, "Two clocks for a HIT").
"""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, Max, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from config.celery import enqueue_on_commit
from judging.engine import (
    challenge_nonrelevant,
    challenge_pick,
    conversation_of,
    hit_layout,
    hit_rng,
    pack_hits,
    pack_hits_distinct,
)
from judging.models import (
    LLM_WORKER_PROVIDER,
    Assignment,
    Campaign,
    Candidate,
    Hit,
    HitSlot,
    Judgment,
    Pair,
)
from judging.services.prepared import prepared_get, prepared_rows, rows_insert
from pools.models import GradedJudgment, Item, Topic

# Assignments whose work may still count: in progress, or submitted and awaiting the provider's confirmation.
WAITING_STATES = (Assignment.Status.IN_PROGRESS, Assignment.Status.SUBMITTED)


@transaction.atomic
def hit_build(*, campaign: Campaign, max_hits: int | None = None) -> list[Hit]:
    """Pack the queued pairs (open rounds, no open HIT, no valid judgment) of any topics, oldest first, into
    new open HITs of ``preferences_per_hit`` pairs plus ``challenges_per_hit`` challenges; the last HIT takes
    the remainder, so no round waits for a full HIT (in the adaptive mode, only once no other HIT is open).
    Each challenge pits a random current candidate of a
    random topic of the HIT against a grade-0 item of that topic (else of its conversation; else the
    challenge is left out). With a budget, no more HITs are built than it pays for (open, accepted and
    discarded HITs at pay plus fee); the rest of the queue waits. The campaign row is locked, so a pair lands
    in one HIT only. Returns the new HITs (none when nothing is queued: running it twice changes nothing)."""
    # The statements of every build are prepared once (judging.services.prepared).
    campaign = prepared_get(
        "hit_build: campaign locked",
        lambda *, pk: Campaign.objects.select_for_update().filter(pk=pk),
        pk=campaign.pk,
    )
    if campaign.status != Campaign.Status.RUNNING or not campaign.is_crowd:
        return []
    if campaign.mode == Campaign.Mode.ADAPTIVE:
        # A pair's repeat votes (copies) go to different HITs, hence to different workers: first copies first.
        rows = prepared_rows(
            "hit_build: queued pairs, adaptive",
            lambda *, campaign_id: (
                _queued(campaign_id=campaign_id)
                .order_by("copy", "pk")
                .annotate(left_docid=_docid("left_id"), right_docid=_docid("right_id"))
                .values_list("pk", "left_docid", "right_docid", "round__campaign_topic__topic_id", "round_id")
            ),
            campaign_id=campaign.pk,
        )
        queue = [row[:4] for row in rows]
        round_of = {row[0]: row[4] for row in rows}
        chunks = pack_hits_distinct(
            queue,
            preferences_per_hit=campaign.preferences_per_hit,
            key=lambda row: (round_of[row[0]], row[1], row[2]),
        )[:max_hits]
        # Topics close their rounds one at a time, each adding a few pairs: packed at once, most HITs held one
        # or two preferences beside their challenges, each paid in full (on CAsT at 10% reversals through the
        # database, 7,357 HITs where the simulator's waves fill 1,613). A partial HIT waits while workers have
        # a full one to take, or one is built now; every counted HIT asks for a build again
        # (``judgments._rounds_close_complete``), so the rest is packed once nothing else is open.
        full = [chunk for chunk in chunks if len(chunk) == campaign.preferences_per_hit]
        if len(full) < len(chunks) and (
            full
            or prepared_rows(
                "hit_build: an open HIT",
                lambda *, campaign_id: Hit.objects.filter(
                    campaign_id=campaign_id, status=Hit.Status.OPEN
                ).values_list("pk")[:1],
                campaign_id=campaign.pk,
            )
        ):
            chunks = full
    else:
        queue = prepared_rows(
            "hit_build: queued pairs",
            lambda *, campaign_id: (
                _queued(campaign_id=campaign_id)
                .order_by("pk")
                .annotate(left_docid=_docid("left_id"), right_docid=_docid("right_id"))
                .values_list("pk", "left_docid", "right_docid", "round__campaign_topic__topic_id")
            ),
            campaign_id=campaign.pk,
        )
        chunks = pack_hits(queue, preferences_per_hit=campaign.preferences_per_hit)[:max_hits]
    if campaign.budget_usd is not None and campaign.cost_per_hit_usd > 0:
        # Open HITs will be paid once submitted, so they count against the budget with the paid ones. A HIT
        # a language model answered costs its tokens instead (judging.services.llm guards those); a
        # campaign of the model alone pays nothing per HIT.
        committed = (
            Hit.objects.filter(campaign=campaign)
            .exclude(status=Hit.Status.EXPIRED)
            .exclude(assignments__worker__provider=LLM_WORKER_PROVIDER)
            .count()
        )
        affordable = int(campaign.budget_usd // campaign.cost_per_hit_usd) - committed
        chunks = chunks[: max(affordable, 0)]
    if not chunks:
        return []
    challenge_material = _ChallengeMaterial.load(campaign, {row[3] for chunk in chunks for row in chunk})
    last = prepared_rows(
        "hit_build: last number",
        lambda *, campaign_id: (
            Hit.objects.filter(campaign_id=campaign_id).order_by("-number").values_list("number")[:1]
        ),
        campaign_id=campaign.pk,
    )
    start = (last[0][0] if last else 0) + 1
    expires_at = timezone.now() + campaign.hit_lifetime
    hits = Hit.objects.bulk_create(
        [Hit(campaign=campaign, number=start + i, expires_at=expires_at) for i in range(len(chunks))]
    )
    # The slots as rows (``_SLOT_FIELDS``): nothing uses them as instances after their insert.
    slots: list[tuple] = []
    for hit, chunk in zip(hits, chunks, strict=True):
        rng = hit_rng(seed=campaign.seed, number=hit.number)
        topics = sorted({topic_pk for *_, topic_pk in chunk})
        challenges: list[tuple[tuple[str, str], int]] = []
        for _ in range(campaign.challenges_per_hit):
            topic_pk = rng.choice(topics)
            pick = challenge_material.pick(topic_pk, rng, used=[shown for (_, shown), _ in challenges])
            if pick is not None:
                challenges.append((pick, topic_pk))
        layout = hit_layout(
            [(left, right) for _, left, right, _ in chunk], [pick for pick, _ in challenges], rng=rng
        )
        for slot in layout:
            if slot.is_challenge:
                (expected, _), topic_pk = challenges[slot.source_index]
                pair_pk = None
            else:
                pair_pk, *_, topic_pk = chunk[slot.source_index]
                expected = None
            slots.append(
                (
                    hit.pk,
                    slot.position,
                    topic_pk,
                    pair_pk,
                    challenge_material.item_ids[slot.left],
                    challenge_material.item_ids[slot.right],
                    slot.is_challenge,
                    None if expected is None else challenge_material.item_ids[expected],
                )
            )
    # Written as bulk_create writes them, without compiling per build.
    rows_insert(HitSlot, _SLOT_FIELDS, slots)
    # Each queued pair now points to its new HIT, read from the HIT's slots just written: one UPDATE for the
    # whole build, driven by the new HITs (the campaign's numbers from ``start``, the campaign row locked),
    # their slots by HIT, and each slot's pair by primary key. The ORM cannot write an UPDATE joining other
    # tables; a correlated subquery per pair instead let the planners scan the new slots for every pair (17 s
    # on PostgreSQL for CAsT's first build), and one UPDATE per HIT cost a statement per HIT.
    with connection.cursor() as cursor:
        cursor.execute(_PAIRS_TO_NEW_HITS, [campaign.pk, start])
    return hits


def _queued(*, campaign_id: int) -> QuerySet[Pair]:
    """The campaign's queued pairs: in open rounds, in no HIT, without a winner."""
    return Pair.objects.filter(
        round__campaign_topic__campaign_id=campaign_id,
        round__closed_at__isnull=True,
        hit__isnull=True,
        winner__isnull=True,
    )


_SLOT_FIELDS = (
    "hit_id",
    "position",
    "topic_id",
    "pair_id",
    "left_id",
    "right_id",
    "is_challenge",
    "expected_winner_id",
)
_PAIRS_TO_NEW_HITS = f"""
    UPDATE {Pair._meta.db_table} SET hit_id = s.hit_id
    FROM {HitSlot._meta.db_table} s INNER JOIN {Hit._meta.db_table} h ON s.hit_id = h.id
    WHERE h.campaign_id = %s AND h.number >= %s AND s.pair_id = {Pair._meta.db_table}.id
"""


@transaction.atomic
def hit_discard(*, hit: Hit) -> Hit:
    """Discard an open HIT (a broken one, or one whose worker failed a challenge on submit):
    an assignment still in progress is discarded, the unjudged pairs go back to the queue and HIT building is
    queued. A HIT no longer open is left as it is."""
    return _hit_close(hit=hit, status=Hit.Status.DISCARDED)


@transaction.atomic
def hit_expire(*, hit: Hit) -> Hit:
    """Expire an open HIT: an assignment still in progress expires (unpaid), the pairs go back to the queue
    and HIT building is queued. A HIT that is no longer open is left as it is. (The overdue sweep,
    ``hit_expire_overdue``, never expires a HIT whose worker is still within their deadline.)"""
    return _hit_close(hit=hit, status=Hit.Status.EXPIRED)


@transaction.atomic
def assignment_expire(*, assignment: Assignment, now: datetime | None = None) -> Assignment:
    """Expire an assignment in progress (or submitted and never confirmed by the provider) whose deadline
    has passed (unpaid; its answers do not count). Its HIT
    goes to the next worker while the HIT's lifetime lasts, as Mechanical Turk makes an abandoned HIT
    available again; past its lifetime the HIT expires too and its pairs go back to the queue. An assignment
    not in progress, or still within its deadline, is left as it is."""
    return _assignment_expire(assignment=assignment, now=now or timezone.now())[0]


def hit_expire_overdue(*, campaign: Campaign | None = None, now: datetime | None = None) -> list[Hit]:
    """The overdue sweep (of one campaign, or all): every assignment in progress past its deadline expires
    (``assignment_expire``), and so does every local judge's assignment idle for
    ``TOPPREF_IDLE_RELEASE_SECONDS`` (``assignment_is_idle``: its HIT goes to the next judge, its answers are
    kept but count only through the assignment that completes the HIT), then every open HIT past its lifetime that no worker holds expires and its pairs
    go back to the queue. A HIT past its lifetime whose worker is within their deadline is left alone: their
    work still counts. Each change is its own transaction. Returns the HITs expired."""
    now = now or timezone.now()
    expired: list[Hit] = []
    # In progress, or submitted and never confirmed by the provider: past the deadline, neither holds the
    # HIT any longer (the unconfirmed answers are kept, shown as unconfirmed).
    assignments = Assignment.objects.filter(status__in=WAITING_STATES).filter(
        Q(deadline_at__lt=now) | Q(deadline_at__isnull=True)
    )
    if campaign is not None:
        assignments = assignments.filter(campaign=campaign)
    for assignment in assignments.select_related("campaign"):
        if assignment_is_overdue(assignment=assignment, now=now):
            with transaction.atomic():
                _, closed = _assignment_expire(assignment=assignment, now=now)
            if closed is not None:
                expired.append(closed)
    for assignment in _assignments_idle(campaign=campaign, now=now):
        with transaction.atomic():
            _, closed = _assignment_expire(assignment=assignment, now=now, idle=True)
        if closed is not None:
            expired.append(closed)
    held = Assignment.objects.filter(hit=OuterRef("pk"), status__in=WAITING_STATES)
    overdue = Hit.objects.filter(status=Hit.Status.OPEN, expires_at__lt=now).exclude(Exists(held))
    if campaign is not None:
        overdue = overdue.filter(campaign=campaign)
    for hit in overdue:
        with transaction.atomic():
            closed = _hit_expire_unheld(hit=hit, now=now)
        if closed is not None:
            expired.append(closed)
    return expired


def hit_is_past_lifetime(*, hit: Hit, now: datetime) -> bool:
    """Whether the HIT can no longer be taken: its lifetime (``expires_at``) is over."""
    return hit.expires_at is not None and hit.expires_at <= now


def assignment_is_overdue(*, assignment: Assignment, now: datetime) -> bool:
    """Whether the assignment's time is up. An assignment made before deadlines were stored counts from its
    start with the campaign's ``assignment_duration``."""
    deadline = assignment.deadline_at
    if deadline is None:
        deadline = assignment.started_at + assignment.campaign.assignment_duration
    return deadline <= now


def idle_release_seconds() -> float:
    """``TOPPREF_IDLE_RELEASE_SECONDS``: how long a local judge's assignment may go without an answer before
    the sweep releases it (0: never)."""
    return float(getattr(settings, "TOPPREF_IDLE_RELEASE_SECONDS", 0) or 0)


def assignment_last_activity(*, assignment: Assignment) -> datetime:
    """When the judge last did something on the assignment: its latest answer, else its start."""
    last = Judgment.objects.filter(assignment=assignment).aggregate(last=Max("created_at"))["last"]
    return max(last, assignment.started_at) if last is not None else assignment.started_at


def assignment_is_idle(*, assignment: Assignment, now: datetime) -> bool:
    """Whether a local judge's assignment has had no answer for ``TOPPREF_IDLE_RELEASE_SECONDS``: a judge who
    closed the tab must not hold a HIT (and its round) for the whole ``assignment_duration``. Crowd platforms'
    assignments keep their own clock (the worker is paid by the platform for the time it grants)."""
    seconds = idle_release_seconds()
    if not seconds or assignment.campaign.provider != Campaign.Provider.LOCAL:
        return False
    return assignment_last_activity(assignment=assignment) <= now - timedelta(seconds=seconds)


def _assignments_idle(*, campaign: Campaign | None, now: datetime) -> list[Assignment]:
    """The local assignments in progress with no answer for ``TOPPREF_IDLE_RELEASE_SECONDS``, in one query
    over the assignments in progress (a handful: one per active judge), never over a campaign's history."""
    seconds = idle_release_seconds()
    if not seconds:
        return []
    cutoff = now - timedelta(seconds=seconds)
    recent = Judgment.objects.filter(assignment=OuterRef("pk"), created_at__gt=cutoff)
    idle = Assignment.objects.filter(
        status=Assignment.Status.IN_PROGRESS,
        campaign__provider=Campaign.Provider.LOCAL,
        started_at__lte=cutoff,
    ).exclude(Exists(recent))
    if campaign is not None:
        idle = idle.filter(campaign=campaign)
    return list(idle.select_related("campaign"))


def _assignment_expire(
    *, assignment: Assignment, now: datetime, idle: bool = False
) -> tuple[Assignment, Hit | None]:
    """``assignment_expire``; also returns its HIT when that expired with it. ``idle=True`` also releases an
    idle local assignment (``assignment_is_idle``, checked again under the locks, so an answer that came
    meanwhile keeps it). The caller is atomic."""
    hit = Hit.objects.select_for_update().get(pk=assignment.hit_id)
    assignment = (
        Assignment.objects.select_for_update(of=("self",)).select_related("campaign").get(pk=assignment.pk)
    )
    if assignment.status not in WAITING_STATES:
        return assignment, None
    if not assignment_is_overdue(assignment=assignment, now=now) and not (
        idle
        and assignment.status == Assignment.Status.IN_PROGRESS
        and assignment_is_idle(assignment=assignment, now=now)
    ):
        return assignment, None
    assignment.status = Assignment.Status.EXPIRED
    assignment.save(update_fields=["status"])
    if hit.status == Hit.Status.OPEN and hit_is_past_lifetime(hit=hit, now=now):
        return assignment, _hit_close(hit=hit, status=Hit.Status.EXPIRED)
    return assignment, None


def _hit_expire_unheld(*, hit: Hit, now: datetime) -> Hit | None:
    """Expire an open HIT past its lifetime unless a worker holds it (checked under the HIT's lock); the
    caller is atomic."""
    hit = Hit.objects.select_for_update().get(pk=hit.pk)
    if hit.status != Hit.Status.OPEN or not hit_is_past_lifetime(hit=hit, now=now):
        return None
    if hit.assignments.filter(status__in=WAITING_STATES).exists():
        return None
    return _hit_close(hit=hit, status=Hit.Status.EXPIRED)


def _hit_close(*, hit: Hit, status: str) -> Hit:
    """Close an open HIT as discarded or expired: the one place that ends a HIT without counting it. An
    assignment still in progress gets the same fate, the unjudged pairs go back to the queue and HIT building
    is queued after commit. The caller is atomic."""
    hit = Hit.objects.select_for_update().get(pk=hit.pk)
    if hit.status != Hit.Status.OPEN:
        return hit
    hit.status = status
    hit.closed_at = timezone.now()
    hit.save(update_fields=["status", "closed_at"])
    assignment_status = (
        Assignment.Status.DISCARDED if status == Hit.Status.DISCARDED else Assignment.Status.EXPIRED
    )
    hit.assignments.filter(status=Assignment.Status.IN_PROGRESS).update(status=assignment_status)
    Pair.objects.filter(hit=hit, winner__isnull=True).update(hit=None)
    campaign_id = hit.campaign_id
    enqueue_on_commit("judging.tasks.hit_build_task", campaign_id)
    return hit


def _docid(column: str) -> Subquery:
    """The docid of the item whose id is in ``column``, read by primary key for each row. A join to the items
    instead lets PostgreSQL hash the whole collection's items (20,000 on CAsT) to name a HIT build's few
    hundred, whenever its statistics of the campaign's tables, filled during the campaign, are stale."""
    return Subquery(Item.objects.filter(pk=OuterRef(column)).order_by().values("docid")[:1])


class _ChallengeMaterial:
    """What challenges are drawn from, for the topics of one ``hit_build`` call: each topic's current
    candidates and the non-relevant items its challenges may use (``challenge_nonrelevant``), plus the item ids."""

    def __init__(
        self, pools: dict[int, list[str]], nonrelevant: dict[int, list[str]], item_ids: dict[str, int]
    ):
        self.pools, self.nonrelevant, self.item_ids = pools, nonrelevant, item_ids

    @classmethod
    def load(cls, campaign: Campaign, topic_pks: set[int]) -> _ChallengeMaterial:
        item_ids: dict[str, int] = {}
        pools: dict[int, list[str]] = defaultdict(list)
        candidates = Candidate.objects.filter(
            campaign_topic__campaign=campaign, campaign_topic__topic_id__in=topic_pks, is_active=True
        ).order_by("campaign_topic_id", "position")
        for topic_pk, item_id, docid in candidates.annotate(docid=_docid("item_id")).values_list(
            "campaign_topic__topic_id", "item_id", "docid"
        ):
            pools[topic_pk].append(docid)
            item_ids[docid] = item_id
        grades: dict[str, dict[str, float]] = defaultdict(dict)

        def load_grades(judged) -> None:
            for topic_id, item_id, docid, grade in judged.annotate(docid=_docid("item_id")).values_list(
                "topic__topic_id", "item_id", "docid", "grade"
            ):
                grades[topic_id][docid] = grade
                item_ids[docid] = item_id

        judged = GradedJudgment.objects.filter(topic__collection_id=campaign.collection_id)
        topics = list(Topic.objects.filter(pk__in=topic_pks).values_list("pk", "topic_id", "conversation_id"))
        # Every grade of the HIT's own topics, relevant ones included: the shared rule
        # (``challenge_nonrelevant``) never lets a passage the topic grades relevant be a challenge's
        # "non-relevant" side, and it can only see those grades if they are loaded.
        load_grades(judged.filter(topic__pk__in=topic_pks))
        # The conversation fallback only for topics without a grade-0 item of their own (docs/decisions.md).
        conversation_by_topic = {
            topic_id: conversation or conversation_of(topic_id) for _, topic_id, conversation in topics
        }
        lacking = [
            (topic_id, conversation)
            for _, topic_id, conversation in topics
            if not any(grade <= 0 for grade in grades.get(topic_id, {}).values())
        ]
        if lacking:
            siblings = Q()
            for topic_id, conversation_id in lacking:
                if conversation_id:
                    siblings |= Q(conversation_id=conversation_id)
                else:
                    siblings |= Q(topic_id__startswith=f"{conversation_of(topic_id)}_")
            sibling_topics = list(
                Topic.objects.filter(collection_id=campaign.collection_id)
                .filter(siblings)
                .exclude(pk__in=topic_pks)
                .values_list("pk", "topic_id", "conversation_id")
            )
            for _, topic_id, conversation_id in sibling_topics:
                conversation_by_topic.setdefault(topic_id, conversation_id or conversation_of(topic_id))
            load_grades(judged.filter(grade__lte=0, topic__pk__in=[pk for pk, *_ in sibling_topics]))
        external = {pk: topic_id for pk, topic_id, _ in topics}

        def conversation(topic_id: str) -> str:
            return conversation_by_topic.get(topic_id) or conversation_of(topic_id)

        eligible = {
            pk: challenge_nonrelevant(external[pk], grades, conversation=conversation) for pk in topic_pks
        }
        # Of those, the passages that ordinary pairs show too (candidates of any topic of the campaign).
        wanted = {item_ids[docid] for docids in eligible.values() for docid in docids}
        # Read through the item index, the campaign checked here: a filter on the campaign lets the planner
        # probe every topic of the campaign for every item instead (SQLite: 10 times slower on CAsT).
        docids = {item_id: docid for docid, item_id in item_ids.items()}
        shown = {
            docids[item_id]
            for item_id, campaign_id in Candidate.objects.filter(item_id__in=wanted)
            .order_by()
            .values_list("item_id", "campaign_topic__campaign_id")
            if campaign_id == campaign.pk
        }
        nonrelevant = {
            pk: challenge_nonrelevant(external[pk], grades, conversation=conversation, shown=shown)
            for pk in topic_pks
        }
        return cls(pools, nonrelevant, item_ids)

    def pick(self, topic_pk: int, rng: random.Random, *, used: list[str]) -> tuple[str, str] | None:
        return challenge_pick(
            self.pools.get(topic_pk, []), self.nonrelevant.get(topic_pk, []), rng, used=used
        )

"""Reads of the judging app: results (top-k, preference qrels), progress and spend of campaigns, and what a
worker is shown."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, TypedDict

from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from judging.engine import RankedItem, preference_values
from judging.models import (
    Assignment,
    Campaign,
    CampaignTopic,
    Candidate,
    Hit,
    HitSlot,
    Judgment,
    Pair,
    Round,
    TournamentJudgment,
    Worker,
)
from pools.models import GradedJudgment

PREFERENCE_KINDS = ("combined", "top_k", "best")


class _RoundRow(TypedDict):
    campaign_topic_id: int
    number: int
    stage: int
    candidate_count: int
    closed_at: datetime | None


class ProgressRow(TypedDict):
    """One topic of ``campaign_progress_table``."""

    topic: str
    state: str
    round: int
    stage: int | None
    pool_sizes: list[int]
    pairs_judged: int
    pairs_open: int
    is_finished: bool


class ProgressTable(TypedDict):
    """``campaign_progress_table``: one row per topic and the campaign's totals."""

    topics: list[ProgressRow]
    topics_total: int
    topics_finished: int
    fraction_finished: float
    pairs_judged: int
    pairs_open: int


class WorkerRow(TypedDict):
    """One worker of ``campaign_worker_table``; the rates are None when there is nothing to divide."""

    worker_id: int
    worker: str
    is_excluded: bool
    hits_submitted: int
    hits_discarded: int
    challenge_pass_rate: float | None
    agreement: float | None
    left_rate: float | None
    median_seconds: float | None


class TieAtK(TypedDict):
    """A topic of ``campaign_ties_at_k``: the items tied at the lowest rank of its top-k."""

    topic: str
    items: list[str]
    rank: int
    count: int


class IntransitiveTriple(TypedDict):
    topic: str
    items: list[str]


class TopKItem(TypedDict):
    docid: str
    text: str
    rank: int
    wins: int | None


class TopKTopic(TypedDict):
    """A finished topic of ``campaign_top_k_with_text``."""

    topic: str
    question: str
    items: list[TopKItem]


class Forecast(TypedDict):
    """``campaign_forecast``'s expected remaining HITs and their cost (0 when nothing is left to plan)."""

    hits: float
    cost_usd: float


def campaign_ranked(*, campaign: Campaign) -> dict[str, list[RankedItem]]:
    """Each finished topic's top-k, best first (ties at rank k included), by external topic id."""
    ranked: dict[str, list[RankedItem]] = defaultdict(list)
    rows = (
        Candidate.objects.filter(
            campaign_topic__campaign=campaign,
            campaign_topic__state__in=(CampaignTopic.State.DONE, CampaignTopic.State.NOTHING_TO_JUDGE),
            rank__isnull=False,
        )
        .order_by("campaign_topic__topic__topic_id", "rank", "item__docid")
        .values_list("campaign_topic__topic__topic_id", "item__docid", "rank", "wins")
    )
    for topic_id, docid, rank, wins in rows:
        if rank is None:  # excluded by the filter; the field is nullable
            continue
        ranked[topic_id].append(RankedItem(docid=docid, rank=rank, wins=wins or 0))
    return dict(ranked)


def campaign_preferences(*, campaign: Campaign, kind: str = "combined") -> dict[str, dict[str, float]]:
    """The campaign's preference qrels ``{topic_id: {docid: value}}`` for every graded topic of its
    collection (engine ``preference_values``): ``combined`` codes the top-k as 10*(k+1-rank) above the grades
    (as the released TREC-CAsT-2019 file), ``top_k`` keeps only the top-k, ``best`` only rank 1. Topics not
    finished yet contribute their grades (combined) or zeros."""
    if kind not in PREFERENCE_KINDS:
        raise ValueError(f"kind must be one of {', '.join(PREFERENCE_KINDS)} (got {kind!r})")
    graded: dict[str, dict[str, float]] = defaultdict(dict)
    rows = GradedJudgment.objects.filter(topic__collection_id=campaign.collection_id).values_list(
        "topic__topic_id", "item__docid", "grade"
    )
    for topic_id, docid, grade in rows:
        graded[topic_id][docid] = grade
    ranked = campaign_ranked(campaign=campaign)
    return {
        topic_id: preference_values(graded[topic_id], ranked.get(topic_id, []), k=campaign.k, kind=kind)
        for topic_id in sorted(graded)
    }


def campaign_qrels_lines(*, campaign: Campaign, kind: str = "combined") -> list[str]:
    """The campaign's preference qrels as ``topic Q0 docid value`` lines (trecio's exact number format), in
    the order ``campaign_preferences`` gives the topics and by docid within a topic: what ``campaign_export``
    prints and the dashboard's and API's exports store, readable by ``toppref compat`` and ``evaluate``."""
    from trecio import qrels_line

    preferences = campaign_preferences(campaign=campaign, kind=kind)
    return [
        qrels_line(topic_id, docid, value)
        for topic_id, values in preferences.items()
        for docid, value in sorted(values.items())
    ]


@dataclass(frozen=True)
class CampaignProgress:
    """Where a campaign stands, for the dashboard, ``campaign_status`` and scripts.

    ``topics``: topic count by state; ``topics_done`` counts finished topics (done or nothing to judge).
    ``judgments``: crowd judgments that count, one per judged pair (challenges and answers of discarded
    HITs excluded); ``tournament_judgments``: dedicated assessors' judgments. ``answers``: stored answers
    by kind (``preferences`` and ``challenges`` given by workers, discarded HITs included; ``tournament``).
    ``hits``: HIT count by status, every status present. ``workers_active``: workers who took an assignment
    and are not excluded; ``workers_excluded``: those of them excluded after a failed challenge.
    ``assessors_active``: assessors who judged a tournament pair or hold a topic now. ``spend_usd``: what
    the campaign owes or has reserved: each submitted assignment's earnings plus its HIT's fee, and the
    reward plus fee of every published HIT still open (docs/decisions.md "Campaign spend")."""

    status: str
    topics: dict[str, int]
    topics_done: int
    topics_total: int
    rounds: int
    pairs_queued: int
    pairs_in_hits: int
    judgments: int
    tournament_judgments: int
    answers: dict[str, int]
    hits: dict[str, int]
    hits_submitted: int
    workers_active: int
    workers_excluded: int
    assessors_active: int
    spend_usd: Decimal
    budget_usd: Decimal | None
    publish_note: str

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict: every field, money as a number of dollars (two decimals)."""
        data = asdict(self)
        data["spend_usd"] = float(self.spend_usd)
        data["budget_usd"] = None if self.budget_usd is None else float(self.budget_usd)
        return data


def campaign_progress(*, campaign: Campaign) -> CampaignProgress:
    """The ``CampaignProgress`` of ``campaign``, read fresh from the database (a dozen queries)."""
    campaign = Campaign.objects.get(pk=campaign.pk)
    topics = dict(
        CampaignTopic.objects.filter(campaign=campaign)
        .values_list("state")
        .annotate(n=Count("pk"))
        .order_by()
    )
    finished = (CampaignTopic.State.DONE, CampaignTopic.State.NOTHING_TO_JUDGE)
    pairs = Pair.objects.filter(round__campaign_topic__campaign=campaign).aggregate(
        queued=Count("pk", filter=Q(winner__isnull=True, hit__isnull=True, round__closed_at__isnull=True)),
        in_hits=Count("pk", filter=Q(winner__isnull=True, hit__isnull=False)),
        judged=Count("pk", filter=Q(winner__isnull=False)),
    )
    hits = {status: 0 for status in Hit.Status.values}
    hits.update(
        Hit.objects.filter(campaign=campaign).values_list("status").annotate(n=Count("pk")).order_by()
    )
    answers = Judgment.objects.filter(assignment__campaign=campaign).aggregate(
        preferences=Count("pk", filter=Q(slot__is_challenge=False)),
        challenges=Count("pk", filter=Q(slot__is_challenge=True)),
    )
    tournament_judgments = TournamentJudgment.objects.filter(campaign_topic__campaign=campaign)
    workers = Worker.objects.filter(assignments__campaign=campaign).distinct()
    submitted = Assignment.objects.filter(campaign=campaign, earned_usd__isnull=False)
    earned = submitted.aggregate(
        earned=Sum("earned_usd"),
        fees=Sum(Coalesce("hit__fee_usd", Value(campaign.fee_per_hit_usd))),
        count=Count("pk"),
    )
    reserved = (
        Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN, published_at__isnull=False)
        .exclude(Exists(Assignment.objects.filter(hit=OuterRef("pk"), earned_usd__isnull=False)))
        .aggregate(
            total=Sum(
                Coalesce("reward_usd", Value(campaign.pay_per_hit_usd))
                + Coalesce("fee_usd", Value(campaign.fee_per_hit_usd))
            )
        )
    )
    spend = (
        (earned["earned"] or Decimal(0)) + (earned["fees"] or Decimal(0)) + (reserved["total"] or Decimal(0))
    )
    assessors = set(tournament_judgments.values_list("assessor_id", flat=True).distinct())
    assessors |= set(
        CampaignTopic.objects.filter(
            campaign=campaign, assessor__isnull=False, assessor_lease_until__gte=timezone.now()
        ).values_list("assessor_id", flat=True)
    )
    return CampaignProgress(
        status=campaign.status,
        topics=topics,
        topics_done=sum(topics.get(state, 0) for state in finished),
        topics_total=sum(topics.values()),
        rounds=Round.objects.filter(campaign_topic__campaign=campaign).count(),
        pairs_queued=pairs["queued"],
        pairs_in_hits=pairs["in_hits"],
        judgments=pairs["judged"],
        tournament_judgments=tournament_judgments.count(),
        answers={
            "preferences": answers["preferences"],
            "challenges": answers["challenges"],
            "tournament": tournament_judgments.count(),
        },
        hits=hits,
        hits_submitted=earned["count"],
        workers_active=workers.filter(is_excluded=False).count(),
        workers_excluded=workers.filter(is_excluded=True).count(),
        assessors_active=len(assessors),
        spend_usd=Decimal(spend).quantize(Decimal("0.01")),
        budget_usd=campaign.budget_usd,
        publish_note=campaign.publish_note,
    )


def campaign_judgment_counts(*, campaign: Campaign) -> dict[str, int]:
    """Counted judgments per topic id: pairs with a valid judgment (crowd) or tournament judgments."""
    if campaign.mode == Campaign.Mode.TOURNAMENT:
        judgments = TournamentJudgment.objects.filter(campaign_topic__campaign=campaign).values_list(
            "campaign_topic__topic__topic_id"
        )
        return dict(judgments.annotate(n=Count("pk")).order_by())
    pairs = Pair.objects.filter(round__campaign_topic__campaign=campaign, winner__isnull=False).values_list(
        "round__campaign_topic__topic__topic_id"
    )
    return dict(pairs.annotate(n=Count("pk")).order_by())


def hit_slot_list_for_worker(*, hit: Hit) -> list[dict[str, object]]:
    """What a worker is shown for each question of a HIT, in order: the topic's question and the two
    passages as laid out. Challenges look like any other question: neither the expected winner nor which
    slots are challenges leave the server (a challenge must look like any other question)."""
    rows = (
        HitSlot.objects.filter(hit=hit)
        .order_by("position")
        .values_list("position", "topic__question", "left_id", "left__text", "right_id", "right__text")
    )
    return [
        {
            "position": position,
            "question": question,
            "left": {"item_id": left_id, "text": left_text},
            "right": {"item_id": right_id, "text": right_text},
        }
        for position, question, left_id, left_text, right_id, right_text in rows
    ]


# --- What judges see in the browser (judging/views) ---------------------------------------------------------

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


RESEARCHERS_GROUP = "researchers"


def user_is_researcher(*, user) -> bool:
    """Researchers' pages and API are for staff and members of the ``researchers`` group only."""
    if not user.is_authenticated or not user.is_active:
        return False
    return user.is_staff or user.groups.filter(name=RESEARCHERS_GROUP).exists()


def campaign_list_visible(*, user) -> QuerySet[Campaign]:
    """The campaigns a researcher may see: their own; staff see all; anybody else none."""
    campaigns = Campaign.objects.select_related("collection", "owner").order_by("-created_at", "name")
    if not user_is_researcher(user=user):
        return campaigns.none()
    if user.is_staff:
        return campaigns
    return campaigns.filter(owner=user)


def campaign_get_visible(*, user, name: str) -> Campaign:
    """The campaign ``name`` if ``user`` may see it; ``Campaign.DoesNotExist`` otherwise, so that another
    researcher's campaign is indistinguishable from a missing one (a 404, never a 403 that confirms it)."""
    return campaign_list_visible(user=user).get(name=name)


def campaign_progress_table(*, campaign: Campaign) -> ProgressTable:
    """Progress of every topic for the dashboard, in a fixed number of queries whatever the campaign's size:
    per topic its state, round, pool size per round and pairs judged / open; plus overall totals."""
    topics = list(
        CampaignTopic.objects.filter(campaign=campaign)
        .order_by("topic__topic_id")
        .values("pk", "topic__topic_id", "state", "round_number")
    )
    rounds: dict[int, list[_RoundRow]] = defaultdict(list)
    for row in (
        Round.objects.filter(campaign_topic__campaign=campaign)
        .order_by("campaign_topic_id", "number")
        .values("campaign_topic_id", "number", "stage", "candidate_count", "closed_at")
    ):
        rounds[row["campaign_topic_id"]].append(row)
    pair_counts: dict[int, dict[str, int]] = defaultdict(lambda: {"judged": 0, "open": 0})
    pairs = Pair.objects.filter(round__campaign_topic__campaign=campaign)
    for key, lookup in (("judged", {"winner__isnull": False}), ("open", {"winner__isnull": True})):
        for topic_pk, n in (
            pairs.filter(**lookup).values_list("round__campaign_topic_id").annotate(n=Count("pk")).order_by()
        ):
            pair_counts[topic_pk][key] = n
    finished = (CampaignTopic.State.DONE, CampaignTopic.State.NOTHING_TO_JUDGE)
    table: list[ProgressRow] = [
        {
            "topic": row["topic__topic_id"],
            "state": row["state"],
            "round": row["round_number"],
            "stage": rounds[row["pk"]][-1]["stage"] if rounds[row["pk"]] else None,
            "pool_sizes": [r["candidate_count"] for r in rounds[row["pk"]]],
            "pairs_judged": pair_counts[row["pk"]]["judged"],
            "pairs_open": pair_counts[row["pk"]]["open"],
            "is_finished": row["state"] in finished,
        }
        for row in topics
    ]
    done = sum(1 for row in table if row["is_finished"])
    return {
        "topics": table,
        "topics_total": len(table),
        "topics_finished": done,
        "fraction_finished": done / len(table) if table else 0.0,
        "pairs_judged": sum(row["pairs_judged"] for row in table),
        "pairs_open": sum(row["pairs_open"] for row in table),
    }


def _final_ranks(*, campaign: Campaign) -> dict[tuple[int, int], int]:
    """``{(topic pk, item pk): rank}`` of every ranked candidate of a finished topic."""
    ranks: dict[tuple[int, int], int] = {}
    for topic_pk, item_pk, rank in Candidate.objects.filter(
        campaign_topic__campaign=campaign, rank__isnull=False
    ).values_list("campaign_topic__topic_id", "item_id", "rank"):
        if rank is not None:  # always, by the filter; the field is nullable
            ranks[(topic_pk, item_pk)] = rank
    return ranks


@dataclass
class _WorkerTally:
    """A worker's counts while ``campaign_worker_table`` reads the judgments: [hits, total] pairs."""

    worker_id: int
    worker: str
    is_excluded: bool
    hits_submitted: int = 0
    hits_discarded: int = 0
    challenges: list[int] = field(default_factory=lambda: [0, 0])
    agreement: list[int] = field(default_factory=lambda: [0, 0])
    left: list[int] = field(default_factory=lambda: [0, 0])
    milliseconds: list[int] = field(default_factory=list)


def campaign_worker_table(*, campaign: Campaign) -> list[WorkerRow]:
    """One row per worker who took a HIT of the campaign (three queries whatever its size): HITs submitted,
    challenge pass rate, agreement of their answers with the final ordering (over answered pairs whose two
    items both got a distinct final rank), share of left choices, median seconds per answer, excluded.
    The challenge questions are the quality check of the paper (Assessing top-k preferences, section 4.3)."""
    import statistics

    workers: dict[int, _WorkerTally] = {}
    for worker_pk, provider, external_id, is_excluded, status in (
        Assignment.objects.filter(campaign=campaign)
        .order_by("worker_id", "pk")
        .values_list("worker_id", "worker__provider", "worker__external_id", "worker__is_excluded", "status")
    ):
        tally = workers.get(worker_pk)
        if tally is None:
            tally = workers[worker_pk] = _WorkerTally(
                worker_id=worker_pk, worker=f"{provider}:{external_id}", is_excluded=is_excluded
            )
        if status in (Assignment.Status.ACCEPTED, Assignment.Status.DISCARDED):
            tally.hits_submitted += 1
        if status == Assignment.Status.DISCARDED:
            tally.hits_discarded += 1
    ranks = _final_ranks(campaign=campaign)
    for worker_pk, is_challenge, expected, winner, side, ms, topic_pk, left, right in (
        Judgment.objects.filter(assignment__campaign=campaign)
        .order_by()
        .values_list(
            "assignment__worker_id",
            "slot__is_challenge",
            "slot__expected_winner_id",
            "winner_id",
            "winner_side",
            "milliseconds",
            "slot__topic_id",
            "slot__left_id",
            "slot__right_id",
        )
    ):
        found = workers.get(worker_pk)
        if found is None:
            continue
        if is_challenge:
            found.challenges[0] += winner == expected
            found.challenges[1] += 1
        else:
            loser = right if winner == left else left
            winner_rank, loser_rank = ranks.get((topic_pk, winner)), ranks.get((topic_pk, loser))
            if winner_rank is not None and loser_rank is not None and winner_rank != loser_rank:
                found.agreement[0] += winner_rank < loser_rank
                found.agreement[1] += 1
        if side:
            found.left[0] += side == "left"
            found.left[1] += 1
        if ms is not None:
            found.milliseconds.append(ms)

    def ratio(pair: list[int]) -> float | None:
        return pair[0] / pair[1] if pair[1] else None

    return [
        {
            "worker_id": tally.worker_id,
            "worker": tally.worker,
            "is_excluded": tally.is_excluded,
            "hits_submitted": tally.hits_submitted,
            "hits_discarded": tally.hits_discarded,
            "challenge_pass_rate": ratio(tally.challenges),
            "agreement": ratio(tally.agreement),
            "left_rate": ratio(tally.left),
            "median_seconds": (statistics.median(tally.milliseconds) / 1000 if tally.milliseconds else None),
        }
        for tally in workers.values()
    ]


def campaign_ties_at_k(*, campaign: Campaign) -> list[TieAtK]:
    """Finished topics whose top-k has a tie across rank k (more than k items ranked k or better): the
    paper keeps them all (Assessing top-k preferences, section 4.3), a researcher may want to look."""
    rows = (
        Candidate.objects.filter(campaign_topic__campaign=campaign, rank__isnull=False, rank__lte=campaign.k)
        .order_by("campaign_topic__topic__topic_id", "rank", "item__docid")
        .values_list("campaign_topic__topic__topic_id", "item__docid", "rank")
    )
    by_topic: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for topic_id, docid, rank in rows:
        if rank is not None:  # always, by the filter; the field is nullable
            by_topic[topic_id].append((docid, rank))
    return [
        {
            "topic": topic_id,
            "items": [docid for docid, rank in items if rank == max(r for _, r in items)],
            "rank": max(r for _, r in items),
            "count": len(items),
        }
        for topic_id, items in sorted(by_topic.items())
        if len(items) > campaign.k
    ]


def campaign_intransitive_triples(*, campaign: Campaign, limit: int = 100) -> list[IntransitiveTriple]:
    """Preference cycles a > b > c > a among the judged stage-2 pairs of each topic (stage 2 judges all
    pairs, so every triple is complete there); at most ``limit``, topics in id order."""
    beats: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for topic_id, left, right, winner in (
        Pair.objects.filter(round__campaign_topic__campaign=campaign, round__stage=2, winner__isnull=False)
        .order_by()
        .values_list("round__campaign_topic__topic__topic_id", "left__docid", "right__docid", "winner__docid")
    ):
        loser = right if winner == left else left
        beats[topic_id][winner].add(loser)
    triples: list[IntransitiveTriple] = []
    for topic_id in sorted(beats):
        graph = beats[topic_id]
        for a in sorted(graph):
            for b in sorted(graph[a]):
                for c in sorted(graph.get(b, ())):
                    # each cycle once: start from its smallest item
                    if a in graph.get(c, ()) and a < b and a < c:
                        triples.append({"topic": topic_id, "items": [a, b, c]})
                        if len(triples) >= limit:
                            return triples
    return triples


def campaign_top_k_with_text(*, campaign: Campaign) -> list[TopKTopic]:
    """Each finished topic's top-k (ties at rank k included) with the passages' text, one query."""
    by_topic: dict[str, TopKTopic] = {}
    for topic_id, question, docid, text, rank, wins in (
        Candidate.objects.filter(
            campaign_topic__campaign=campaign,
            campaign_topic__state__in=(CampaignTopic.State.DONE, CampaignTopic.State.NOTHING_TO_JUDGE),
            rank__isnull=False,
            rank__lte=campaign.k,
        )
        .order_by("campaign_topic__topic__topic_id", "rank", "item__docid")
        .values_list(
            "campaign_topic__topic__topic_id",
            "campaign_topic__topic__question",
            "item__docid",
            "item__text",
            "rank",
            "wins",
        )
    ):
        if rank is None:  # excluded by the filter; the field is nullable
            continue
        entry = by_topic.setdefault(topic_id, {"topic": topic_id, "question": question, "items": []})
        entry["items"].append({"docid": docid, "text": text, "rank": rank, "wins": wins})
    return list(by_topic.values())


def campaign_forecast(*, campaign: Campaign, progress_table: ProgressTable, trials: int = 5) -> Forecast:
    """Money spent so far and the planner's forecast for the rest: ``judging.engine.plan_campaign`` over the
    current pool size of every unfinished crowd topic (its open round's candidates), a few seeded trials,
    cached until the campaign's progress changes. ``forecast_total_usd`` = spent + expected remaining."""
    import hashlib
    import random

    from django.core.cache import cache

    from judging.engine import CrowdParams, HitShape, Pricing
    from judging.engine.planning import plan_campaign

    pools = {
        row["topic"]: row["pool_sizes"][-1]
        for row in progress_table["topics"]
        if not row["is_finished"] and row["pool_sizes"]
    }
    # sha256, not hash(): the key must be the same in every process sharing the cache
    signature = hashlib.sha256(repr((sorted(pools.items()), campaign.k, trials)).encode()).hexdigest()
    key = f"forecast:{campaign.pk}:{signature}"
    remaining: Forecast | None = cache.get(key)
    if remaining is None:
        remaining = {"hits": 0.0, "cost_usd": 0.0}
        if pools and campaign.mode == Campaign.Mode.CROWD:
            try:
                plan = plan_campaign(
                    pools,
                    params=CrowdParams(
                        k=campaign.k,
                        F=campaign.final_stage_size,
                        P=campaign.opponents,
                        culling=campaign.culling,
                        max_rounds=campaign.max_rounds,
                    ),
                    trials=trials,
                    rng=random.Random(campaign.seed),
                    hit_shape=HitShape(
                        preferences=campaign.preferences_per_hit, challenges=campaign.challenges_per_hit
                    ),
                    pricing=Pricing(
                        pay_per_hit=Decimal(campaign.pay_per_hit_usd), fee=Decimal(campaign.fee_per_hit_usd)
                    ),
                )
                remaining = {"hits": plan["hits"], "cost_usd": plan["cost_usd"]}
            except ValueError:
                pass
        cache.set(key, remaining, timeout=3600)
    return remaining

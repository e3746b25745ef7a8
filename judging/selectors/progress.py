"""Where a campaign stands: topics by state, pairs, HITs, spend (``CampaignProgress``) and the per-topic
progress table of the dashboard."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, TypedDict

from django.db.models import Count, Exists, OuterRef, Q, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from judging.models import (
    Assignment,
    Campaign,
    CampaignTopic,
    Hit,
    Judgment,
    Pair,
    Round,
    TournamentJudgment,
    Worker,
)


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


@dataclass(frozen=True)
class CampaignProgress:
    """Where a campaign stands, for the dashboard, ``campaign_status`` and scripts.

    ``topics``: topic count by state; ``topics_done`` counts finished topics (done or nothing to judge).
    ``judgments``: crowd judgments that count, one per judged pair (challenges and answers of discarded
    HITs excluded); ``tournament_judgments``: dedicated assessors' judgments. ``answers``: stored answers
    by kind (``preferences`` and ``challenges`` given by workers, discarded HITs included; ``tournament``).
    ``hits``: HIT count by status, every status present. ``workers_active``: workers who took an assignment
    and are not excluded; ``workers_excluded``: those of them excluded after a failed challenge.
    ``assessors_active``: assessors who judged a tournament pair or hold a topic now.
    ``hits_awaiting_confirmation``: HITs with an assignment whose answers are all in but that its provider
    (MTurk, Prolific) has not confirmed yet; ``judgments_unconfirmed``: stored answers of assignments the
    provider has not confirmed (awaiting it, or never confirmed and expired): they count toward nothing
    (docs/decisions.md "Provisional until the provider confirms"). ``spend_usd``: what
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
    hits_awaiting_confirmation: int
    judgments_unconfirmed: int
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
        hits_awaiting_confirmation=Hit.objects.filter(
            campaign=campaign, assignments__status=Assignment.Status.SUBMITTED
        )
        .distinct()
        .count(),
        judgments_unconfirmed=Judgment.objects.filter(
            assignment__campaign=campaign, assignment__confirmed_at__isnull=True
        ).count(),
        spend_usd=Decimal(spend).quantize(Decimal("0.01")),
        budget_usd=campaign.budget_usd,
        publish_note=campaign.publish_note,
    )


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

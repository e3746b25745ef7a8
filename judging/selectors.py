"""Reads of the judging app: results (top-k, preference qrels), progress and spend of campaigns, and what a
worker is shown."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, QuerySet

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
)
from pools.models import GradedJudgment

PREFERENCE_KINDS = ("combined", "top_k", "best")


def campaign_get(*, name: str) -> Campaign:
    return Campaign.objects.select_related("collection").get(name=name)


def campaign_topic_list(*, campaign: Campaign) -> QuerySet[CampaignTopic]:
    return (
        CampaignTopic.objects.filter(campaign=campaign)
        .select_related("topic")
        .annotate(candidate_count=Count("candidates"))
        .order_by("topic__topic_id")
    )


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


def campaign_progress(*, campaign: Campaign) -> dict[str, object]:
    """Counts for a dashboard or a report: topics by state, pairs queued / in a HIT / judged, HITs by status,
    judgments (crowd answers incl. challenges, and tournament judgments), and the money spent so far (every
    submitted assignment is paid, counted or not)."""
    topics = dict(
        CampaignTopic.objects.filter(campaign=campaign)
        .values_list("state")
        .annotate(n=Count("pk"))
        .order_by()
    )
    pairs = Pair.objects.filter(round__campaign_topic__campaign=campaign)
    hits = dict(
        Hit.objects.filter(campaign=campaign).values_list("status").annotate(n=Count("pk")).order_by()
    )
    paid = Assignment.objects.filter(campaign=campaign, earned_usd__isnull=False).count()
    return {
        "topics": topics,
        "rounds": Round.objects.filter(campaign_topic__campaign=campaign).count(),
        "pairs_queued": pairs.filter(
            winner__isnull=True, hit__isnull=True, round__closed_at__isnull=True
        ).count(),
        "pairs_in_hits": pairs.filter(winner__isnull=True, hit__isnull=False).count(),
        "pairs_judged": pairs.filter(winner__isnull=False).count(),
        "hits": hits,
        "answers": Judgment.objects.filter(assignment__hit__campaign=campaign).count(),
        "tournament_judgments": TournamentJudgment.objects.filter(campaign_topic__campaign=campaign).count(),
        "paid_hits": paid,
        "spent_usd": paid * campaign.cost_per_hit_usd,
        "budget_usd": campaign.budget_usd,
    }


def campaign_judgment_counts(*, campaign: Campaign) -> dict[str, int]:
    """Counted judgments per topic id: pairs with a valid judgment (crowd) or tournament judgments."""
    if campaign.mode == Campaign.Mode.TOURNAMENT:
        rows = TournamentJudgment.objects.filter(campaign_topic__campaign=campaign).values_list(
            "campaign_topic__topic__topic_id"
        )
    else:
        rows = Pair.objects.filter(
            round__campaign_topic__campaign=campaign, winner__isnull=False
        ).values_list("round__campaign_topic__topic__topic_id")
    return dict(rows.annotate(n=Count("pk")).order_by())


def hit_slot_list_for_worker(*, hit: Hit) -> list[dict[str, object]]:
    """What a worker is shown for each question of a HIT, in order: the topic's question and the two
    passages as laid out. Challenges look like any other question: neither the expected winner nor which
    slots are challenges leave the server (issue 4 item 6)."""
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

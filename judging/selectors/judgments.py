"""The judgment log: what counts per topic, and what a worker is shown for a HIT."""

from __future__ import annotations

from django.db.models import Count

from judging.models import Campaign, Hit, HitSlot, Pair, TournamentJudgment


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

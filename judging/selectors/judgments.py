"""The judgment log: what counts (``judgment_is_counted``, the one rule) and the counted judgments per topic."""

from __future__ import annotations

from django.db.models import Count

from judging.models import Assignment, Campaign, Pair, TournamentJudgment


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


def judgment_is_counted(*, assignment_status: str, confirmed: bool, is_challenge: bool) -> bool:
    """Whether a crowd answer counts toward the ranking: its HIT was accepted, its provider confirmed the
    assignment (docs/decisions.md, "Provisional until the provider confirms"), and it is not a challenge
    (Assessing top-k preferences, section 4.3: a failed challenge voids the HIT's answers). The API's and the
    exports' ``is_counted``."""
    return assignment_status == Assignment.Status.ACCEPTED and confirmed and not is_challenge

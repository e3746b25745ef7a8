"""What a researcher may do with a campaign now: the one place that reads the campaign's status for it (the
dashboard shows these buttons; the services refuse the rest with ``CampaignStateError``)."""

from __future__ import annotations

from judging.models import Campaign

# By status, the judging actions a campaign allows, in the order they are offered.
ACTIONS_BY_STATUS: dict[str, tuple[str, ...]] = {
    Campaign.Status.DRAFT: ("start",),
    Campaign.Status.RUNNING: ("pause", "publish"),
    Campaign.Status.PAUSED: ("resume",),
}


def campaign_allowed_actions(*, campaign: Campaign) -> tuple[str, ...]:
    """The judging actions (``start``, ``pause``, ``publish``, ``resume``) ``campaign``'s status allows."""
    return ACTIONS_BY_STATUS.get(campaign.status, ())

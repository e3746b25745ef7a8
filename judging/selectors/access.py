"""Who may see what: researchers and the campaigns visible to them."""

from __future__ import annotations

from django.db.models import QuerySet

from judging.models import Campaign
from pools.access import RESEARCHERS_GROUP, user_is_researcher

__all__ = ["RESEARCHERS_GROUP", "campaign_get_visible", "campaign_list_visible", "user_is_researcher"]


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

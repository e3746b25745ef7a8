"""Who may see what: researchers and the campaigns visible to them."""

from __future__ import annotations

from django.db.models import QuerySet

from judging.models import Campaign
from pools.access import RESEARCHERS_GROUP, user_is_researcher

__all__ = [
    "RESEARCHERS_GROUP",
    "CampaignNameAmbiguousError",
    "campaign_get_named",
    "campaign_get_visible",
    "campaign_list_visible",
    "user_is_researcher",
]


class CampaignNameAmbiguousError(Campaign.MultipleObjectsReturned):
    """Several owners call a campaign by the name, and the caller (staff, the server's operator) named none."""

    def __init__(self, name: str, owners: list[str]) -> None:
        super().__init__(
            f"several campaigns are named {name!r} (owners: {', '.join(owners)}): name the owner "
            f"(--owner USERNAME, or ?owner=USERNAME)"
        )


def campaign_list_visible(*, user) -> QuerySet[Campaign]:
    """The campaigns a researcher may see: their own; staff see all; anybody else none."""
    campaigns = Campaign.objects.select_related("collection", "owner").order_by("-created_at", "name")
    if not user_is_researcher(user=user):
        return campaigns.none()
    if user.is_staff:
        return campaigns
    return campaigns.filter(owner=user)


def campaign_get_named(*, name: str, owner: str | None = None, campaigns=None) -> Campaign:
    """For those who see every campaign (the server's operator, staff): the campaign ``name`` of ``owner`` (a
    username; ``""`` for a campaign without owner) or, with no owner given, the only campaign of that name;
    ``CampaignNameAmbiguousError`` naming the owners when there are several, ``Campaign.DoesNotExist`` when
    there is none. ``campaigns`` narrows the search (default: every campaign)."""
    rows = (
        Campaign.objects.select_related("collection", "owner") if campaigns is None else campaigns
    ).filter(name=name)
    if owner == "":
        return rows.get(owner__isnull=True)
    if owner is not None:
        return rows.get(owner__username=owner)
    found = list(rows[:50])
    if len(found) > 1:
        raise CampaignNameAmbiguousError(
            name, sorted(campaign.owner.username if campaign.owner else "(none)" for campaign in found)
        )
    if not found:
        raise Campaign.DoesNotExist(f"no campaign named {name!r}")
    return found[0]


def campaign_get_visible(*, user, name: str, owner: str | None = None) -> Campaign:
    """The campaign ``name`` as ``user`` means it, if they may see it; ``Campaign.DoesNotExist`` otherwise, so
    that another researcher's campaign is indistinguishable from a missing one (a 404, never a 403 that
    confirms it).

    Names are unique per owner: a researcher's name means their own campaign (``owner`` changes nothing
    for them, so it can reveal nothing). Staff's means their own, else, as for the operator
    (``campaign_get_named``), the one of ``owner`` or the only one of that name."""
    campaigns = campaign_list_visible(user=user)
    if not user.is_staff:
        return campaigns.get(name=name, owner=user)
    if owner is None:
        own = campaigns.filter(name=name, owner=user).first()
        if own is not None:
            return own
    return campaign_get_named(name=name, owner=owner, campaigns=campaigns)

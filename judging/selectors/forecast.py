"""The dashboard's forecast of a campaign's remaining HITs and cost: read as stored by the background
(``judging.services.planning.campaign_forecast_refresh``), with its age; a page never plans."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from judging.models import Campaign, CampaignForecast


@dataclass(frozen=True)
class Forecast:
    """Expected remaining HITs and their cost (0 when nothing is left to plan), and when it was computed."""

    hits: float
    cost_usd: Decimal
    computed_at: datetime


def campaign_forecast(*, campaign: Campaign) -> Forecast | None:
    """The stored forecast of ``campaign`` (one query), or None until the background has computed one."""
    row = CampaignForecast.objects.filter(campaign=campaign).first()
    if row is None:
        return None
    return Forecast(hits=row.hits, cost_usd=row.cost_usd, computed_at=row.computed_at)

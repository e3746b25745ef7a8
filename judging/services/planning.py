"""Planning as a service: the one way a campaign (or the API's parameters) becomes the engine's parameters and
a plan (``judging.engine.planning.plan_campaign``, the function ``toppref plan`` calls too), money in
``Decimal`` throughout; and the dashboard's forecast, computed here in the background and stored with its time.

``toppref plan`` is a file-only command (no Django), so it calls the engine's ``plan_campaign`` itself with the
same parameters; the API (``PlanApi``) and the forecast come through ``campaign_plan``."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from judging.engine import CrowdParams, HitShape, Pricing
from judging.engine.planning import plan_campaign
from judging.models import Campaign, CampaignForecast
from judging.selectors.progress import campaign_progress_table

# Trials of the dashboard's forecast: a few seeded ones; the page shows a rough remaining cost, not a risk.
FORECAST_TRIALS = 5


def campaign_settings(*, campaign: Campaign) -> tuple[CrowdParams, HitShape, Pricing]:
    """The engine's parameters, HIT shape and pricing of a stored campaign (money as ``Decimal``)."""
    params = CrowdParams(
        k=campaign.k,
        F=campaign.final_stage_size,
        P=campaign.opponents,
        culling=campaign.culling,
        max_rounds=campaign.max_rounds,
    )
    hit_shape = HitShape(preferences=campaign.preferences_per_hit, challenges=campaign.challenges_per_hit)
    pricing = Pricing(pay_per_hit=Decimal(campaign.pay_per_hit_usd), fee=Decimal(campaign.fee_per_hit_usd))
    return params, hit_shape, pricing


def campaign_plan(
    *,
    pool_sizes: Mapping[str, int],
    params: CrowdParams,
    hit_shape: HitShape,
    pricing: Pricing,
    trials: int,
    seed: int,
) -> dict[str, Any]:
    """The plan of ``toppref plan`` for these pools: parameters validated (``ValueError`` naming the problem),
    ``trials`` Monte-Carlo trials from ``seed``; the returned dict carries ``seed``."""
    params.validate()
    hit_shape.validate()
    pricing.validate()
    plan = plan_campaign(
        pool_sizes,
        params=params,
        trials=trials,
        rng=random.Random(seed),
        hit_shape=hit_shape,
        pricing=Pricing(pay_per_hit=Decimal(pricing.pay_per_hit), fee=Decimal(pricing.fee)),
    )
    plan["seed"] = seed
    return plan


def campaign_open_pools(*, campaign: Campaign) -> dict[str, int]:
    """The current pool size of every unfinished topic (its latest round's candidates): what is left to plan."""
    return {
        row["topic"]: row["pool_sizes"][-1]
        for row in campaign_progress_table(campaign=campaign)["topics"]
        if not row["is_finished"] and row["pool_sizes"]
    }


def forecast_signature(*, campaign: Campaign, pools: Mapping[str, int]) -> str:
    """What a forecast depends on; sha256, not hash(): the same in every process."""
    settings = campaign_settings(campaign=campaign)
    return hashlib.sha256(
        repr((sorted(pools.items()), settings, FORECAST_TRIALS, campaign.seed)).encode()
    ).hexdigest()


def campaign_forecast_refresh(*, campaign: Campaign) -> CampaignForecast | None:
    """Plan the rest of a crowd campaign (its open pools, ``FORECAST_TRIALS`` seeded trials) and store it with
    the time, unless the stored forecast is for the same pools already. None for a dedicated campaign. Run by
    the sweep (``campaign_forecast_running``), never by a page."""
    if campaign.mode != Campaign.Mode.CROWD:
        return None
    pools = campaign_open_pools(campaign=campaign)
    signature = forecast_signature(campaign=campaign, pools=pools)
    stored = CampaignForecast.objects.filter(campaign=campaign).first()
    if stored is not None and stored.signature == signature:
        return stored
    hits, cost = 0.0, Decimal("0.00")
    if pools:
        params, hit_shape, pricing = campaign_settings(campaign=campaign)
        try:
            plan = campaign_plan(
                pool_sizes=pools,
                params=params,
                hit_shape=hit_shape,
                pricing=pricing,
                trials=FORECAST_TRIALS,
                seed=campaign.seed,
            )
        except ValueError:
            plan = {"hits": 0.0, "cost_usd": 0.0}
        hits = float(plan["hits"])
        cost = Decimal(str(plan["cost_usd"])).quantize(Decimal("0.01"))
    with transaction.atomic():
        forecast, _ = CampaignForecast.objects.update_or_create(
            campaign=campaign,
            defaults={"signature": signature, "hits": hits, "cost_usd": cost, "computed_at": timezone.now()},
        )
    return forecast


def campaign_forecast_running() -> int:
    """Refresh the forecast of every running crowd campaign whose pools changed; returns how many were seen."""
    campaigns = list(Campaign.objects.filter(status=Campaign.Status.RUNNING, mode=Campaign.Mode.CROWD))
    for campaign in campaigns:
        campaign_forecast_refresh(campaign=campaign)
    return len(campaigns)

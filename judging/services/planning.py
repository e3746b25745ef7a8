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
from judging.engine.planning import plan_adaptive, plan_campaign
from judging.models import Campaign, CampaignForecast
from judging.selectors.progress import campaign_progress_table
from judging.services.topic_state import adaptive_params, campaign_error_model

# Trials of the dashboard's forecast: a few seeded ones; the page shows a rough remaining cost, not a risk.
FORECAST_TRIALS = 5
# The adaptive planner's crowd reverses judgments at the campaign's estimated rate, rounded to this many
# decimals (so the stored forecast is not replanned for every new vote) and kept below a coin flip.
FORECAST_ERROR_DECIMALS = 2
FORECAST_MAX_ERROR = 0.45
# The modes the background forecasts (a dedicated campaign's cost is its assessors' time, not HITs).
FORECAST_MODES = (Campaign.Mode.CROWD, Campaign.Mode.ADAPTIVE)


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
    max_seconds: float | None = None,
) -> dict[str, Any]:
    """The plan of ``toppref plan`` for these pools: parameters validated (``ValueError`` naming the problem),
    ``trials`` Monte-Carlo trials from ``seed``; the returned dict carries ``seed``. ``max_seconds``: stop
    with ``PlanTimeExceededError`` (a ``ValueError``) past that time."""
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
        max_seconds=max_seconds,
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


def forecast_error_rate(*, campaign: Campaign) -> float:
    """The error rate an adaptive campaign's forecast plans with: the campaign's estimate now (challenge
    failures and disagreement on repeated pairs, ``campaign_error_model``), rounded; 0 for other modes."""
    if campaign.mode != Campaign.Mode.ADAPTIVE:
        return 0.0
    rate = round(campaign_error_model(campaign=campaign).rate, FORECAST_ERROR_DECIMALS)
    return min(FORECAST_MAX_ERROR, rate)


def forecast_signature(*, campaign: Campaign, pools: Mapping[str, int], error_rate: float = 0.0) -> str:
    """What a forecast depends on; sha256, not hash(): the same in every process."""
    settings: object = campaign_settings(campaign=campaign)
    if campaign.mode == Campaign.Mode.ADAPTIVE:
        settings = (settings, adaptive_params(campaign), error_rate)
    return hashlib.sha256(
        repr((sorted(pools.items()), settings, FORECAST_TRIALS, campaign.seed)).encode()
    ).hexdigest()


def _forecast_plan(*, campaign: Campaign, pools: Mapping[str, int], error_rate: float) -> dict[str, Any]:
    """The plan of the rest of ``campaign``: the adaptive planner for an adaptive campaign (with the crowd's
    estimated error rate), the crowd planner otherwise."""
    params, hit_shape, pricing = campaign_settings(campaign=campaign)
    if campaign.mode != Campaign.Mode.ADAPTIVE:
        return campaign_plan(
            pool_sizes=pools,
            params=params,
            hit_shape=hit_shape,
            pricing=pricing,
            trials=FORECAST_TRIALS,
            seed=campaign.seed,
        )
    hit_shape.validate()
    pricing.validate()
    return plan_adaptive(
        pools,
        params=adaptive_params(campaign),
        trials=FORECAST_TRIALS,
        rng=random.Random(campaign.seed),
        hit_shape=hit_shape,
        pricing=pricing,
        error_rate=error_rate,
    )


def campaign_forecast_refresh(*, campaign: Campaign) -> CampaignForecast | None:
    """Plan the rest of a crowd or adaptive campaign (its open pools, ``FORECAST_TRIALS`` seeded trials; an
    adaptive campaign with the adaptive planner and its crowd's estimated error rate) and store it with the
    time, unless the stored forecast is for the same pools (and rate) already. None for a dedicated campaign.
    Run by the sweep (``campaign_forecast_running``), never by a page."""
    if campaign.mode not in FORECAST_MODES:
        return None
    pools = campaign_open_pools(campaign=campaign)
    error_rate = forecast_error_rate(campaign=campaign)
    signature = forecast_signature(campaign=campaign, pools=pools, error_rate=error_rate)
    stored = CampaignForecast.objects.filter(campaign=campaign).first()
    if stored is not None and stored.signature == signature:
        return stored
    hits, cost = 0.0, Decimal("0.00")
    if pools:
        try:
            plan = _forecast_plan(campaign=campaign, pools=pools, error_rate=error_rate)
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
    """Refresh the forecast of every running crowd or adaptive campaign whose pools changed; returns how many
    were seen."""
    campaigns = list(
        Campaign.objects.filter(status=Campaign.Status.RUNNING, mode__in=FORECAST_MODES).order_by("pk")
    )
    for campaign in campaigns:
        campaign_forecast_refresh(campaign=campaign)
    return len(campaigns)

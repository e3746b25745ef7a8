"""The planner's forecast of a campaign's remaining HITs and cost."""

from __future__ import annotations

from decimal import Decimal
from typing import TypedDict

from judging.models import Campaign
from judging.selectors.progress import ProgressTable


class Forecast(TypedDict):
    """``campaign_forecast``'s expected remaining HITs and their cost (0 when nothing is left to plan)."""

    hits: float
    cost_usd: float


def campaign_forecast(*, campaign: Campaign, progress_table: ProgressTable, trials: int = 5) -> Forecast:
    """Money spent so far and the planner's forecast for the rest: ``judging.engine.plan_campaign`` over the
    current pool size of every unfinished crowd topic (its open round's candidates), a few seeded trials,
    cached until the campaign's progress changes. ``forecast_total_usd`` = spent + expected remaining."""
    import hashlib
    import random

    from django.core.cache import cache

    from judging.engine import CrowdParams, HitShape, Pricing
    from judging.engine.planning import plan_campaign

    pools = {
        row["topic"]: row["pool_sizes"][-1]
        for row in progress_table["topics"]
        if not row["is_finished"] and row["pool_sizes"]
    }
    # sha256, not hash(): the key must be the same in every process sharing the cache
    signature = hashlib.sha256(repr((sorted(pools.items()), campaign.k, trials)).encode()).hexdigest()
    key = f"forecast:{campaign.pk}:{signature}"
    remaining: Forecast | None = cache.get(key)
    if remaining is None:
        remaining = {"hits": 0.0, "cost_usd": 0.0}
        if pools and campaign.mode == Campaign.Mode.CROWD:
            try:
                plan = plan_campaign(
                    pools,
                    params=CrowdParams(
                        k=campaign.k,
                        F=campaign.final_stage_size,
                        P=campaign.opponents,
                        culling=campaign.culling,
                        max_rounds=campaign.max_rounds,
                    ),
                    trials=trials,
                    rng=random.Random(campaign.seed),
                    hit_shape=HitShape(
                        preferences=campaign.preferences_per_hit, challenges=campaign.challenges_per_hit
                    ),
                    pricing=Pricing(
                        pay_per_hit=Decimal(campaign.pay_per_hit_usd), fee=Decimal(campaign.fee_per_hit_usd)
                    ),
                )
                remaining = {"hits": plan["hits"], "cost_usd": plan["cost_usd"]}
            except ValueError:
                pass
        cache.set(key, remaining, timeout=3600)
    return remaining

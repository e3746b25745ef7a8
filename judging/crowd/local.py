"""The local crowd: logged-in users of the ``crowd`` group take HITs on toppref's own pages, so there is
nothing to publish anywhere, approval is immediate and nobody outside needs to be told about exclusions."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

from judging.crowd.base import CampaignInfo, HitInfo, Published, Work


class LocalProvider:
    name = "local"
    reserves_on_publish = False
    expires_each_hit = False

    def __init__(self, *, fee_usd: Decimal = Decimal("0")) -> None:
        # The lab pays its own crowd: the only "fee" is what the campaign says (fee_per_hit_usd).
        self._fee_usd = Decimal(fee_usd)

    def fee_usd(self, *, reward_usd: Decimal, assignments: int = 1) -> Decimal:
        return self._fee_usd * assignments

    def balance_usd(self) -> Decimal | None:
        return None

    def prepare(self, *, campaign: CampaignInfo, stages: Sequence[int] = ()) -> dict[str, Any]:
        return dict(campaign.state)

    def publish(self, *, campaign: CampaignInfo, hits: Sequence[HitInfo]) -> Iterator[Published]:
        for hit in hits:
            yield Published(public_id=hit.public_id, external_id="")

    def collect(self, *, campaign: CampaignInfo, hit_external_ids: Sequence[str]) -> list[Work]:
        return []

    def approve(self, *, campaign: CampaignInfo, work: Work) -> bool:
        return True

    def refuse(self, *, campaign: CampaignInfo, work: Work, reason: str) -> bool:
        return True

    def pay_bonus(
        self, *, campaign: CampaignInfo, work: Work, amount_usd: Decimal, reason: str, token: str
    ) -> None:
        return None

    def exclude(self, *, campaign: CampaignInfo, worker_ids: Sequence[str]) -> dict[str, Any]:
        return dict(campaign.state)

    def expire(self, *, campaign: CampaignInfo, hit_external_ids: Sequence[str]) -> None:
        return None

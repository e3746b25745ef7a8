"""The crowd provider interface: what the judging services ask of MTurk, Prolific or the local crowd.

Providers speak plain values (the dataclasses below), never Django models: the services read the database,
call a provider outside any transaction, and record each answer in the transaction that changes the HIT.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Protocol

CENT = Decimal("0.01")


def to_cents(amount: Decimal) -> Decimal:
    """Round an amount in USD to whole cents (half up, as providers bill)."""
    return Decimal(amount).quantize(CENT, rounding=ROUND_HALF_UP)


class CrowdError(Exception):
    """A provider refused or failed a call for good (bad credentials, bad request): retrying will not help."""


class CrowdConfigError(CrowdError):
    """The provider cannot be used as configured (missing credential, http public URL...)."""


class CrowdRequestError(CrowdError):
    """The provider refused one request (a 4xx that is not throttling); ``code`` and ``detail`` say why."""

    def __init__(self, text: str, *, code: str = "", detail: str = "", message: str = "") -> None:
        super().__init__(text)
        self.code, self.detail, self.message = code, detail, message


class CrowdTransientError(CrowdError):
    """Throttling, a 5xx or a timeout that outlived the client's own retries: the task retries later."""


@dataclass(frozen=True)
class CampaignInfo:
    """What a provider needs to know of a campaign. ``state`` is ``Campaign.provider_state`` as stored;
    ``published_hits`` counts the campaign's published, still open HITs per external id (a Prolific study)."""

    public_id: str
    name: str
    title: str
    description: str
    reward_usd: Decimal
    assignment_duration_seconds: int
    lifetime_seconds: int
    entry_url: str
    state: Mapping[str, Any] = field(default_factory=dict)
    published_hits: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class HitInfo:
    """One HIT to publish: ``page_url`` is its external page, ``stage`` the highest stage of its pairs."""

    public_id: str
    number: int
    page_url: str
    stage: int = 1


@dataclass(frozen=True)
class Published:
    """The provider's answer for one HIT: its id there and when it stops taking workers."""

    public_id: str
    external_id: str
    expires_at: datetime | None = None


class WorkStatus:
    """Provider states of one worker's take on a HIT, in toppref's words."""

    ACTIVE = "active"  # taken, not submitted yet
    SUBMITTED = "submitted"  # submitted, waiting for our review
    APPROVED = "approved"  # paid
    REJECTED = "rejected"
    RETURNED = "returned"  # given back or timed out: the HIT goes back to the queue
    OTHER = "other"


@dataclass(frozen=True)
class Work:
    """One assignment (MTurk) or submission (Prolific) as the provider reports it."""

    external_id: str
    worker_id: str
    status: str
    provider_status: str
    hit_external_id: str = ""
    submitted_at: datetime | None = None


class CrowdProvider(Protocol):
    """Publish a batch of HITs, list what came back, approve or refuse work, pay a bonus, exclude a worker,
    expire a HIT, report the balance. Every method may be called twice with the same arguments (tasks are
    retried): a provider makes each one idempotent or reads the state first."""

    name: str
    # True when ``expire`` acts on one HIT (MTurk); False when a HIT id names a group of HITs (a Prolific study).
    expires_each_hit: bool
    # True when publishing sets the money aside (Prolific), so the balance reported is net of published work.
    reserves_on_publish: bool

    def fee_usd(self, *, reward_usd: Decimal, assignments: int = 1) -> Decimal:
        """The provider's fee for one HIT paying ``reward_usd`` to each of ``assignments`` workers."""
        ...

    def balance_usd(self) -> Decimal | None:
        """Money available to spend, None when the provider cannot tell."""
        ...

    def prepare(self, *, campaign: CampaignInfo, stages: Sequence[int] = ()) -> dict[str, Any]:
        """Set the campaign up (MTurk HIT type and exclusion qualification, Prolific completion code and
        participant group), reusing what ``campaign.state`` holds; returns the new provider state."""
        ...

    def publish(self, *, campaign: CampaignInfo, hits: Sequence[HitInfo]) -> Iterator[Published]:
        """Publish the HITs, yielding each as soon as the provider has it (so it is recorded at once)."""
        ...

    def collect(self, *, campaign: CampaignInfo, hit_external_ids: Sequence[str]) -> list[Work]:
        """Every piece of work on these HITs (MTurk HIT ids, Prolific study ids), all pages."""
        ...

    def approve(self, *, campaign: CampaignInfo, work: Work) -> bool:
        """Approve (pay) submitted work; True once the provider says it is approved."""
        ...

    def refuse(self, *, campaign: CampaignInfo, work: Work, reason: str) -> bool:
        """Reject work (for clear spam only; the paper pays workers who fail a challenge)."""
        ...

    def pay_bonus(
        self, *, campaign: CampaignInfo, work: Work, amount_usd: Decimal, reason: str, token: str
    ) -> None:
        """Pay a bonus on top of the reward; ``token`` makes a retried call pay once."""
        ...

    def exclude(self, *, campaign: CampaignInfo, worker_ids: Sequence[str]) -> dict[str, Any]:
        """Keep these workers away from the campaign's future HITs; returns the new provider state."""
        ...

    def expire(self, *, campaign: CampaignInfo, hit_external_ids: Sequence[str]) -> None:
        """Stop these HITs from taking new workers (campaign paused or done)."""
        ...

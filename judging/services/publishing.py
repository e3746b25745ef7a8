"""Publishing a campaign's HITs to its crowd provider, within budget and balance.

The database is read, the provider is called outside any transaction, and each HIT is marked published (with
the reward and fee it was published at) in the transaction that records the provider's answer: a crash in
between leaves the HIT unpublished locally, and the retried call finds it again on the provider (MTurk's
UniqueRequestToken is the HIT's uuid; a Prolific study's places are set to a total, never incremented).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max
from django.utils import timezone

from judging import crowd
from judging.crowd import CampaignInfo, CrowdConfigError, HitInfo, Published
from judging.models import Assignment, Campaign, Hit, HitSlot, Pair
from judging.services.errors import CampaignStateError

logger = logging.getLogger(__name__)

PUBLISHABLE_STATES = (Campaign.Status.RUNNING,)
PUBLISH_LEASE = timedelta(minutes=15)
DEFAULT_DESCRIPTION = (
    "Read a question and two passages, and choose the passage that answers the question better. "
    "Each task has 13 such comparisons."
)


@dataclass
class PublishReport:
    """What ``campaign_publish`` did (or, in a dry run, would do)."""

    campaign: str
    provider: str
    is_dry_run: bool
    hit_numbers: list[int] = field(default_factory=list)
    assignments_per_hit: int = 1
    reward_usd: Decimal = Decimal("0")
    fee_usd: Decimal = Decimal("0")
    spent_before_usd: Decimal = Decimal("0")
    budget_usd: Decimal | None = None
    balance_usd: Decimal | None = None
    waiting: int = 0
    note: str = ""
    # The campaign's language model: what it did (or, in a dry run, would be asked).
    llm_lines: list[str] = field(default_factory=list)

    @property
    def pay_total_usd(self) -> Decimal:
        return self.reward_usd * self.assignments_per_hit * len(self.hit_numbers)

    @property
    def fee_total_usd(self) -> Decimal:
        return self.fee_usd * len(self.hit_numbers)

    @property
    def total_usd(self) -> Decimal:
        return self.pay_total_usd + self.fee_total_usd

    def lines(self) -> list[str]:
        verb = "would publish" if self.is_dry_run else "published"
        numbers = _ranges(self.hit_numbers) or "none"
        if self.provider == Campaign.Provider.LLM:
            # The model alone publishes nothing: its own lines say what it was (or would be) asked.
            budget = "none" if self.budget_usd is None else usd(self.budget_usd)
            lines = [
                f"campaign {self.campaign} (llm): spent before {usd(self.spent_before_usd)}, budget {budget}"
            ]
            lines.extend(self.llm_lines)
            return [*lines, *(["dry run: nothing was asked"] if self.is_dry_run else [])]
        lines = [
            f"campaign {self.campaign} ({self.provider}): {verb} {len(self.hit_numbers)} HIT(s) [{numbers}], "
            f"{self.assignments_per_hit} assignment(s) each",
            f"pay {usd(self.pay_total_usd)} ({usd(self.reward_usd)} per assignment), fees {usd(self.fee_total_usd)} "
            f"({usd(self.fee_usd)} per HIT), total {usd(self.total_usd)}",
            f"spent before {usd(self.spent_before_usd)}, budget "
            + ("none" if self.budget_usd is None else f"{usd(self.budget_usd)}")
            + (", balance not checked" if self.balance_usd is None else f", balance {usd(self.balance_usd)}"),
        ]
        lines.extend(self.llm_lines)
        if self.waiting:
            lines.append(f"{self.waiting} HIT(s) left unpublished")
        if self.note:
            lines.append(f"stopped: {self.note}")
        if self.is_dry_run:
            lines.append("dry run: nothing was published")
        return lines


def usd(amount: Decimal | None) -> str:
    """$1.50 (always two decimals)."""
    return "none" if amount is None else f"${Decimal(amount):.2f}"


def campaign_spend_usd(*, campaign: Campaign) -> Decimal:
    """The campaign's spend, the budget guard's figure: ``judging.selectors.campaign_spend`` (the one sum, also
    ``CampaignProgress.spend_usd``): committed (every submitted assignment) plus published but unpaid."""
    from judging.selectors.progress import campaign_spend

    return campaign_spend(campaign=campaign).total


def public_url(path: str) -> str:
    """``TOPPREF_PUBLIC_URL`` + ``path``; https is required outside DEBUG (MTurk frames only https pages)."""
    base = settings.TOPPREF_PUBLIC_URL.rstrip("/")
    if urlsplit(base).scheme != "https" and not settings.DEBUG:
        raise CrowdConfigError(f"TOPPREF_PUBLIC_URL must be an https URL outside DEBUG, not {base!r}")
    return base + path


def campaign_info(*, campaign: Campaign) -> CampaignInfo:
    """The plain description of a campaign that providers work from."""
    counts = dict(
        Hit.objects.filter(campaign=campaign, published_at__isnull=False)
        .exclude(external_id="")
        .order_by()
        .values_list("external_id")
        .annotate(count=Count("pk"))
        .values_list("external_id", "count")
    )
    return CampaignInfo(
        public_id=str(campaign.public_id),
        name=campaign.name,
        title=f"Which passage answers the question better? ({campaign.name})",
        description=campaign.description or DEFAULT_DESCRIPTION,
        reward_usd=campaign.pay_per_hit_usd,
        assignment_duration_seconds=int(campaign.assignment_duration.total_seconds()),
        lifetime_seconds=int(campaign.hit_lifetime.total_seconds()),
        entry_url=public_url(f"/hits/campaign/{campaign.public_id}/"),
        state=dict(campaign.provider_state),
        published_hits=counts,
    )


def provider_for(campaign: Campaign) -> crowd.CrowdProvider:
    """The campaign's provider client (credentials are checked here: a missing one is a CrowdConfigError)."""
    return crowd.provider_build(campaign.provider, local_fee_usd=campaign.fee_per_hit_usd)


def hit_fee_usd(*, campaign: Campaign) -> Decimal:
    """The fee of one HIT of this campaign at its provider (the local crowd: the campaign's own fee)."""
    if campaign.provider == Campaign.Provider.LOCAL:
        return campaign.fee_per_hit_usd
    return crowd.fee_usd(campaign.provider, reward_usd=campaign.pay_per_hit_usd)


def campaign_publish(
    *,
    campaign: Campaign,
    max_hits: int | None = None,
    is_dry_run: bool = False,
    provider: crowd.CrowdProvider | None = None,
    llm_progress: Callable[[int, int], None] | None = None,
) -> PublishReport:
    """Publish the campaign's open, unpublished HITs (oldest first, at most ``max_hits``) to its provider.
    Stops before a HIT would push the campaign's spend past ``budget_usd`` or past the provider's balance,
    saying why in ``Campaign.publish_note`` and the log. A dry run contacts nobody and changes nothing.
    Raises ``CampaignStateError`` for a campaign that is not running, ``CrowdConfigError`` for a missing
    credential or an http public URL, ``CrowdTransientError`` when the provider stays unreachable.

    A campaign with a language model (``llm_model``) lets the model judge first: where tasks run in this
    process (the embedded default) it judges every HIT it can before this returns (``llm_progress(done,
    total)`` told of each answer); with a Celery worker its task is queued. A dry run estimates its tokens
    and cost instead. People get only the HITs the model is done with (whose pairs it answered and left
    without a preference), or all of them once it is excluded."""
    campaign.refresh_from_db()
    if campaign.has_llm and campaign.is_crowd and campaign.status in PUBLISHABLE_STATES:
        spent_before = campaign_spend_usd(campaign=campaign)
        llm_lines = _llm_publish(campaign=campaign, is_dry_run=is_dry_run, progress=llm_progress)
        campaign.refresh_from_db()
        # The model alone, or a model that finished the campaign itself: nothing left for people.
        if not campaign.has_people or campaign.status not in PUBLISHABLE_STATES:
            return PublishReport(
                campaign=campaign.name,
                provider=campaign.provider,
                is_dry_run=is_dry_run,
                spent_before_usd=spent_before,
                budget_usd=campaign.budget_usd,
                llm_lines=llm_lines,
            )
    else:
        llm_lines = []
    if not campaign.is_crowd:
        raise CampaignStateError(f"campaign {campaign.name!r} is a {campaign.mode} campaign: no crowd HITs")
    if campaign.status not in PUBLISHABLE_STATES:
        raise CampaignStateError(
            f"campaign {campaign.name!r} is {campaign.status}: only a running campaign publishes HITs"
        )
    unpublished = Hit.objects.filter(
        campaign=campaign, status=Hit.Status.OPEN, published_at__isnull=True
    ).order_by("number")
    if campaign.has_llm:
        unpublished = unpublished.exclude(pk__in=_hits_left_to_model(campaign=campaign))
    candidates = list(unpublished[:max_hits] if max_hits is not None else unpublished)
    reward, fee = campaign.pay_per_hit_usd, hit_fee_usd(campaign=campaign)
    if not is_dry_run and campaign.provider != Campaign.Provider.LOCAL and candidates:
        # The provider's own figure where it has one (Prolific's study cost calculator: the account's fee
        # with VAT); a dry run contacts nobody and uses the configured rate.
        provider = provider or provider_for(campaign)
        fee = provider.fee_usd(reward_usd=reward)
    cost = reward + fee
    report = PublishReport(
        campaign=campaign.name,
        provider=campaign.provider,
        is_dry_run=is_dry_run,
        reward_usd=reward,
        fee_usd=fee,
        spent_before_usd=campaign_spend_usd(campaign=campaign),
        budget_usd=campaign.budget_usd,
        llm_lines=llm_lines,
    )
    info = campaign_info(campaign=campaign)  # validates the public URL, even in a dry run
    chosen, note = candidates, ""
    if campaign.budget_usd is not None and cost > 0:
        affordable = max(int((campaign.budget_usd - report.spent_before_usd) // cost), 0)
        # Pairs hit_build left unpacked for lack of budget wait too: say so even if every HIT went out.
        queued = _queued_pair_count(campaign)
        if affordable < len(chosen) or (queued and affordable <= len(chosen)):
            note = (
                f"budget {usd(campaign.budget_usd)} reached: {usd(report.spent_before_usd)} spent, room for "
                f"{affordable} HIT(s) at {usd(cost)} (pay {usd(reward)} + fee {usd(fee)}); "
                f"{len(candidates) - min(affordable, len(candidates))} HIT(s) and {queued} queued pair(s) "
                "wait for more budget"
            )
            chosen = chosen[:affordable]
    if not is_dry_run and campaign.provider != Campaign.Provider.LOCAL and chosen:
        provider = provider or provider_for(campaign)
        report.balance_usd = provider.balance_usd()
        if report.balance_usd is not None and cost > 0:
            # MTurk takes the money on approval: work already published and not yet paid needs its share of
            # the balance too. Prolific locks the funds when it publishes, so its balance is net already.
            outstanding = (
                Decimal("0")
                if provider.reserves_on_publish
                else report.spent_before_usd - paid_usd(campaign=campaign)
            )
            payable = max(int((report.balance_usd - outstanding) // cost), 0)
            if payable < len(chosen):
                chosen = chosen[:payable]
                note = (
                    f"balance: {usd(report.balance_usd)} at {campaign.provider}"
                    + (f" less {usd(outstanding)} owed" if outstanding else "")
                    + f" pays for {payable} HIT(s) at {usd(cost)}"
                )
    report.hit_numbers = [hit.number for hit in chosen]
    report.waiting = unpublished.count() - len(chosen)
    report.note = note
    if note:
        logger.warning("campaign %s: publishing stopped: %s", campaign.name, note)
    if is_dry_run:
        return report
    _campaign_note(campaign=campaign, note=note)
    if not chosen:
        return report
    provider = provider or provider_for(campaign)
    _publish_lease_take(campaign=campaign)
    try:
        _publish(campaign=campaign, provider=provider, info=info, chosen=chosen, reward=reward, fee=fee)
    finally:
        _publish_lease_release(campaign=campaign)
    return report


def _publish(
    *,
    campaign: Campaign,
    provider: crowd.CrowdProvider,
    info: CampaignInfo,
    chosen: list[Hit],
    reward: Decimal,
    fee: Decimal,
) -> None:
    stages = _hit_stages([hit.pk for hit in chosen])
    state = provider.prepare(campaign=info, stages=sorted(set(stages.values())))
    campaign_provider_state_save(campaign=campaign, state={**state, "auto_publish": True})
    info = campaign_info(campaign=campaign)
    hits = [
        HitInfo(
            public_id=str(hit.public_id),
            number=hit.number,
            page_url=public_url(f"/hits/{hit.public_id}/"),
            stage=stages.get(hit.pk, 1),
        )
        for hit in chosen
    ]
    by_public_id = {str(hit.public_id): hit for hit in chosen}
    external_ids = set()
    for published in provider.publish(campaign=info, hits=hits):
        hit_record_published(
            hit=by_public_id[published.public_id],
            provider=campaign.provider,
            published=published,
            reward_usd=reward,
            fee_usd=fee,
        )
        external_ids.add(published.external_id)
    expired = campaign.provider_state.get("expired_hits", [])
    if external_ids & set(expired):
        # A Prolific study stopped at a pause reopens with its new places: it may be stopped again.
        campaign_provider_state_save(
            campaign=campaign, state={"expired_hits": [key for key in expired if key not in external_ids]}
        )
    logger.info("campaign %s: published %d HIT(s) to %s", campaign.name, len(chosen), campaign.provider)


def _llm_publish(
    *, campaign: Campaign, is_dry_run: bool, progress: Callable[[int, int], None] | None
) -> list[str]:
    """The model's part of ``campaign_publish``: its estimate (dry run), its run, or its queued task."""
    from judging.services.llm import campaign_llm_enqueue, campaign_llm_estimate, campaign_llm_judge

    if is_dry_run:
        return campaign_llm_estimate(campaign=campaign).lines(model=campaign.llm_model)
    from config.celery import app

    # Tasks run eagerly here (the embedded default: no broker, no worker): the model judges now.
    if not app.conf.task_always_eager:
        with transaction.atomic():
            campaign_llm_enqueue(campaign=campaign)
        return [f"model {campaign.llm_model}: queued (queue llm)"]
    run = campaign_llm_judge(campaign=campaign, progress=progress)
    from judging.selectors.llm import campaign_llm_usage

    usage: dict[str, Any] = dict(campaign_llm_usage(campaign=campaign) or {})
    lines = [
        f"model {campaign.llm_model}: judged {run.hits} HIT(s): {run.sent} request(s), {run.cached} from the "
        f"cache; campaign total {usage.get('tokens_in', 0)} tokens in, {usage.get('tokens_out', 0)} out, "
        f"${usage.get('cost_usd', 0):.4f}, {usage.get('position_inconsistent', 0)} position-inconsistent, "
        f"{usage.get('failed', 0)} failed"
    ]
    if run.note:
        lines.append(f"model stopped: {run.note}")
    return lines


def _hits_left_to_model(*, campaign: Campaign) -> list[int]:
    """The HITs the campaign's model may still take (none once it is excluded): not for people yet."""
    from judging.services.exclusions import worker_is_excluded
    from judging.services.judgments import hits_open_for
    from judging.services.llm import llm_worker

    worker = llm_worker(campaign=campaign)
    if worker_is_excluded(worker=worker, campaign=campaign):
        return []
    return list(hits_open_for(campaign=campaign, worker=worker).values_list("pk", flat=True))


@transaction.atomic
def _publish_lease_take(*, campaign: Campaign) -> None:
    """One publish at a time per campaign (the command and the periodic sync may meet): without it both
    could set up a Prolific study. A lease, not a lock held across network calls; a crashed publisher's
    lease runs out after ``PUBLISH_LEASE``."""
    locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
    now = timezone.now()
    until = locked.provider_state.get("publish_lease_until")
    if until and datetime.fromisoformat(until) > now:
        raise CampaignStateError(
            f"campaign {campaign.name!r} is being published by another process (until {until}); try later"
        )
    locked.provider_state = {
        **locked.provider_state,
        "publish_lease_until": (now + PUBLISH_LEASE).isoformat(),
    }
    locked.save(update_fields=["provider_state"])
    campaign.provider_state = locked.provider_state


@transaction.atomic
def _publish_lease_release(*, campaign: Campaign) -> None:
    locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
    locked.provider_state = {k: v for k, v in locked.provider_state.items() if k != "publish_lease_until"}
    locked.save(update_fields=["provider_state"])
    campaign.provider_state = locked.provider_state


@transaction.atomic
def hit_record_published(
    *, hit: Hit, provider: str, published: Published, reward_usd: Decimal, fee_usd: Decimal
) -> Hit:
    """Record the provider's answer for one HIT: its id there, the reward and fee it was published at, and
    when. A HIT recorded already keeps its first record (a retried publish returns the same HIT)."""
    hit = Hit.objects.select_for_update().get(pk=hit.pk)
    if hit.published_at is not None:
        return hit
    hit.provider = provider
    hit.external_id = published.external_id
    hit.reward_usd, hit.fee_usd = reward_usd, fee_usd
    hit.published_at = timezone.now()
    fields = ["provider", "external_id", "reward_usd", "fee_usd", "published_at"]
    if published.expires_at is not None:
        hit.expires_at = published.expires_at
        fields.append("expires_at")
    hit.save(update_fields=fields)
    return hit


@transaction.atomic
def _campaign_note(*, campaign: Campaign, note: str) -> None:
    Campaign.objects.filter(pk=campaign.pk).update(publish_note=note[:500])
    campaign.publish_note = note[:500]


@transaction.atomic
def campaign_provider_state_save(*, campaign: Campaign, state: dict[str, Any]) -> None:
    """Store what the provider set up (merged over what is stored), under the campaign's row lock."""
    locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
    locked.provider_state = {**locked.provider_state, **state}
    locked.save(update_fields=["provider_state"])
    campaign.provider_state = locked.provider_state


def paid_usd(*, campaign: Campaign) -> Decimal:
    """What the provider has been paid so far: every paid assignment's pay plus its HIT's fee."""
    paid = Decimal("0")
    rows = Assignment.objects.filter(campaign=campaign, paid_at__isnull=False).values_list(
        "paid_usd", "hit__fee_usd"
    )
    for pay, fee in rows:
        paid += (pay or Decimal("0")) + (fee if fee is not None else campaign.fee_per_hit_usd)
    return paid


def _queued_pair_count(campaign: Campaign) -> int:
    """Pairs of open rounds waiting for a HIT (none is built beyond the budget)."""
    return Pair.objects.filter(
        round__campaign_topic__campaign=campaign,
        round__closed_at__isnull=True,
        hit__isnull=True,
        winner__isnull=True,
    ).count()


def _hit_stages(hit_ids: list[int]) -> dict[int, int]:
    """Each HIT's stage: the highest stage among the rounds of its pairs (Prolific: one study per stage)."""
    rows = (
        HitSlot.objects.filter(hit_id__in=hit_ids, pair__isnull=False)
        .values("hit_id")
        .annotate(stage=Max("pair__round__stage"))
    )
    return {row["hit_id"]: row["stage"] for row in rows}


def _ranges(numbers: list[int]) -> str:
    """1,2,3,5 -> "1-3, 5"."""
    parts: list[list[int]] = []
    for number in numbers:
        if parts and parts[-1][1] == number - 1:
            parts[-1][1] = number
        else:
            parts.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in parts)

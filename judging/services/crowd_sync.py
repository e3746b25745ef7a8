"""Syncing a crowd campaign with its provider: collect what came back, approve and record payment, give
returned work back to the queue, push exclusions, expire HITs of a paused or finished campaign, and publish
HITs built since the last publish.

Every worker who submitted answers is paid, whether their HIT counts or not ("Assessing top-k preferences",
section 4.3: workers failing a challenge "were paid but excluded"). Work is approved only once its answers are
stored here (``Assignment.submitted_at``), and ``paid_usd``/``paid_at`` are set only once the provider has
confirmed the approval, each in the transaction that records that answer: nobody is paid twice or forgotten.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from judging.crowd import CrowdProvider, CrowdRequestError, Work, WorkStatus
from judging.models import CROWD_MODES, Assignment, Campaign, Hit, Worker
from judging.services.errors import CampaignStateError
from judging.services.exclusions import worker_list_excluded_for
from judging.services.hits import WAITING_STATES
from judging.services.judgments import assignment_confirm, worker_get_or_create
from judging.services.publishing import (
    PublishReport,
    campaign_info,
    campaign_provider_state_save,
    campaign_publish,
    campaign_spend_usd,
    paid_usd,
    provider_for,
    usd,
)

logger = logging.getLogger(__name__)

# What each provider calls work it approved (Assignment.provider_status holds the provider's own word).
APPROVED_STATUS = {"mturk": "Approved", "prolific": "APPROVED"}
# What the provider lists only for an assignment that really exists (MTurk lists submitted work; Prolific a
# participant's submission from the moment they start): seeing one confirms our assignment.
CONFIRMING = (WorkStatus.ACTIVE, WorkStatus.SUBMITTED, WorkStatus.APPROVED)
# A claim younger than this when a listing began may not be in it yet: it waits for the next sync.
PROLIFIC_LISTING_MARGIN = timedelta(seconds=60)
# Provider states after which no payment will come.
UNPAID_FOR_GOOD = ("Rejected", "REJECTED", "RETURNED", "TIMED-OUT", "SCREENED OUT")


@dataclass
class SyncReport:
    """What ``campaign_sync`` did, as counts."""

    campaign: str
    provider: str
    collected: int = 0
    recorded: int = 0
    approved: int = 0
    paid: int = 0
    returned: int = 0
    unmatched: int = 0
    excluded: int = 0
    expired: int = 0
    confirmed: int = 0
    refuted: int = 0
    published: PublishReport | None = None
    notes: list[str] = field(default_factory=list)
    spent_usd: Decimal = Decimal("0")
    paid_usd: Decimal = Decimal("0")
    budget_usd: Decimal | None = None

    def lines(self) -> list[str]:
        lines = [
            f"campaign {self.campaign} ({self.provider}): collected {self.collected} piece(s) of work, "
            f"{self.recorded} new or changed, approved {self.approved}, recorded {self.paid} payment(s), "
            f"{self.returned} returned to the queue, {self.unmatched} without stored answers",
            f"excluded {self.excluded} worker(s), expired {self.expired} HIT(s)",
        ]
        if self.confirmed or self.refuted:
            lines.append(
                f"confirmed {self.confirmed} assignment(s) by the provider, "
                f"{self.refuted} claim(s) the provider does not know expired"
            )
        if self.published is not None:
            lines.extend(self.published.lines())
        lines.append(
            f"money: spent {usd(self.spent_usd)} (paid {usd(self.paid_usd)}, the rest owed or reserved), "
            f"budget {usd(self.budget_usd)}"
        )
        lines.extend(self.notes)
        return lines


def campaign_sync(*, campaign: Campaign, provider: CrowdProvider | None = None) -> SyncReport:
    """Bring the campaign and its provider in line (safe to run any number of times): see the module."""
    report = _campaign_sync(campaign=campaign, provider=provider)
    report.spent_usd = campaign_spend_usd(campaign=campaign)
    report.paid_usd = paid_usd(campaign=campaign)
    report.budget_usd = campaign.budget_usd
    return report


def _campaign_sync(*, campaign: Campaign, provider: CrowdProvider | None) -> SyncReport:
    campaign.refresh_from_db()
    report = SyncReport(campaign=campaign.name, provider=campaign.provider)
    if not campaign.is_crowd or campaign.status == Campaign.Status.DRAFT:
        return report
    if campaign.provider == Campaign.Provider.LOCAL:
        # The local crowd is approved as soon as its answers are stored: nothing to ask anybody.
        for assignment in _unpaid_submitted(campaign):
            if assignment_record_paid(assignment=assignment, provider_status="approved"):
                report.approved += 1
                report.paid += 1
        return report
    provider = provider or provider_for(campaign)
    info = campaign_info(campaign=campaign)
    external_ids = _hit_external_ids_to_collect(campaign)
    collect_started = timezone.now()
    work = provider.collect(campaign=info, hit_external_ids=external_ids) if external_ids else []
    report.collected = len(work)
    to_approve: list[tuple[Assignment, Work]] = []
    for item in work:
        outcome = work_record(campaign=campaign, work=item)
        report.confirmed += outcome.confirmed
        report.recorded += outcome.changed
        report.returned += outcome.returned
        report.paid += outcome.paid
        if outcome.assignment is None and item.status in (WorkStatus.SUBMITTED, WorkStatus.APPROVED):
            report.unmatched += 1
            logger.warning(
                "campaign %s: %s work %s by %s has no stored answers; left for review",
                campaign.name,
                campaign.provider,
                item.external_id,
                item.worker_id,
            )
        if outcome.should_approve and outcome.assignment is not None:
            to_approve.append((outcome.assignment, item))
    if campaign.provider == Campaign.Provider.PROLIFIC and external_ids:
        report.refuted = claims_refute(
            campaign=campaign,
            listed={item.external_id for item in work},
            before=collect_started - PROLIFIC_LISTING_MARGIN,
        )
    for assignment, item in to_approve:
        try:
            approved = provider.approve(campaign=info, work=item)
        except CrowdRequestError as error:
            # One refusal must not hold up everyone else's pay; the next sync tries again.
            logger.warning("campaign %s: approving %s failed: %s", campaign.name, item.external_id, error)
            report.notes.append(f"approving {item.external_id} failed: {error}")
            continue
        if approved:
            report.approved += 1
            status = APPROVED_STATUS.get(campaign.provider, "approved")
            if assignment_record_paid(assignment=assignment, provider_status=status):
                report.paid += 1
    try:
        report.excluded = _exclusions_push(campaign=campaign, provider=provider)
    except CrowdRequestError as error:
        logger.warning("campaign %s: excluding workers failed: %s", campaign.name, error)
        report.notes.append(f"excluding workers failed: {error}")
    if campaign.status in (Campaign.Status.PAUSED, Campaign.Status.DONE):
        report.expired = _hits_expire_at_provider(campaign=campaign, provider=provider)
    elif campaign.status == Campaign.Status.RUNNING:
        report.expired = _hits_withdraw_at_provider(campaign=campaign, provider=provider)
    if campaign.status == Campaign.Status.RUNNING and campaign.provider_state.get("auto_publish"):
        # The researcher published once (after a dry run); HITs built since then follow within budget.
        try:
            report.published = campaign_publish(campaign=campaign, provider=provider)
        except CampaignStateError as error:
            report.notes.append(f"not published: {error}")
    return report


@dataclass
class WorkOutcome:
    assignment: Assignment | None = None
    changed: int = 0
    returned: int = 0
    paid: int = 0
    confirmed: int = 0
    should_approve: bool = False


@transaction.atomic
def work_record(*, campaign: Campaign, work: Work) -> WorkOutcome:
    """Record one piece of work the provider reported: the worker, the provider's id and status on our
    assignment (once), a returned or timed-out assignment given back to the queue (the HIT stays open for the
    next worker), a payment the provider made on its own (auto-approval). Says whether to approve it: only
    submitted work whose answers we hold."""
    outcome = WorkOutcome()
    worker = worker_get_or_create(provider=campaign.provider, external_id=work.worker_id)
    assignment = _assignment_for(campaign=campaign, work=work, worker=worker)
    if assignment is None:
        return outcome
    if work.status in CONFIRMING and assignment.confirmed_at is None:
        # The provider lists this assignment for this HIT (study) and worker: it is real, and counts now.
        assignment_confirm(assignment=assignment)
        outcome.confirmed = 1
    # The lock order of every writer of these: the worker, the HIT, then the assignment.
    Worker.objects.select_for_update().get(pk=worker.pk)
    Hit.objects.select_for_update().get(pk=assignment.hit_id)
    assignment = Assignment.objects.select_for_update().get(pk=assignment.pk)
    outcome.assignment = assignment
    fields = []
    if not assignment.external_id:
        assignment.external_id = work.external_id
        fields.append("external_id")
    if assignment.provider_status != work.provider_status:
        assignment.provider_status = work.provider_status[:40]
        fields.append("provider_status")
    if work.status == WorkStatus.RETURNED and assignment.status in WAITING_STATES:
        assignment.status = Assignment.Status.EXPIRED
        fields.append("status")
        outcome.returned = 1
    if (
        work.status == WorkStatus.APPROVED
        and assignment.earned_usd is not None
        and assignment.paid_at is None
    ):
        assignment.paid_usd = assignment.earned_usd
        assignment.paid_at = timezone.now()
        fields += ["paid_usd", "paid_at"]
        outcome.paid = 1
    if fields:
        assignment.save(update_fields=fields)
        outcome.changed = 1
    outcome.should_approve = (
        work.status == WorkStatus.SUBMITTED
        and assignment.earned_usd is not None
        and assignment.paid_at is None
    )
    return outcome


def claims_refute(*, campaign: Campaign, listed: set[str], before: datetime) -> int:
    """Prolific creates a participant's submission (its id is the SESSION_ID of our page's link) before it
    sends them to us: a claim made before the listing began whose session is not among every study's
    submissions was not made by a participant of ours. It expires at once, so it holds nothing until its
    deadline (its answers are kept, unconfirmed). Returns how many expired."""
    claims = Assignment.objects.filter(
        campaign=campaign, status__in=WAITING_STATES, confirmed_at__isnull=True, started_at__lt=before
    ).exclude(external_id__in=listed)
    refuted = 0
    for assignment in claims:
        with transaction.atomic():
            Worker.objects.select_for_update().get(pk=assignment.worker_id)
            Hit.objects.select_for_update().get(pk=assignment.hit_id)
            refuted += Assignment.objects.filter(
                pk=assignment.pk, status__in=WAITING_STATES, confirmed_at__isnull=True
            ).update(status=Assignment.Status.EXPIRED)
    return refuted


@transaction.atomic
def assignment_record_paid(*, assignment: Assignment, provider_status: str) -> bool:
    """Record that the provider paid a submitted assignment (what it earned); False if recorded before."""
    assignment = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if assignment.paid_at is not None or assignment.submitted_at is None or assignment.confirmed_at is None:
        return False
    assignment.paid_usd = assignment.earned_usd
    assignment.paid_at = timezone.now()
    assignment.provider_status = provider_status[:40]
    assignment.save(update_fields=["paid_usd", "paid_at", "provider_status"])
    return True


def _assignment_for(*, campaign: Campaign, work: Work, worker: Worker) -> Assignment | None:
    """Our assignment for the provider's work: by the provider's id, else the worker's latest assignment not
    yet tied to another id (on MTurk: on that HIT)."""
    assignments = Assignment.objects.filter(campaign=campaign)
    # The provider's id names one assignment, and only with that worker (and, on MTurk, that HIT): an id
    # forged onto another worker or HIT is not theirs.
    found = assignments.filter(external_id=work.external_id).order_by("-pk").first()
    if found is not None:
        if found.worker_id != worker.pk:
            return None
        if campaign.provider == Campaign.Provider.MTURK and found.hit.external_id != work.hit_external_id:
            return None
        return found
    unlinked = assignments.filter(worker=worker, external_id="").order_by("-started_at", "-pk")
    if campaign.provider == Campaign.Provider.PROLIFIC:
        # A participant enters through the campaign's page, which may hand them any open HIT, published or
        # not: the submission belongs to their latest assignment not yet tied to another submission.
        return unlinked.first()
    return unlinked.filter(hit__external_id=work.hit_external_id).first()


def _awaiting_payment() -> Q:
    """Submitted work not paid yet and not closed unpaid for good by the provider (rejected, or returned
    after our page stored its answers): nobody pays those, so they are not waited for."""
    return Q(submitted_at__isnull=False, paid_at__isnull=True, confirmed_at__isnull=False) & ~Q(
        provider_status__in=UNPAID_FOR_GOOD
    )


def _unpaid_submitted(campaign: Campaign) -> list[Assignment]:
    return list(
        Assignment.objects.filter(
            campaign=campaign, submitted_at__isnull=False, paid_at__isnull=True, earned_usd__isnull=False
        )
    )


def _hit_external_ids_to_collect(campaign: Campaign) -> list[str]:
    """Our own published HITs with work we know of and have not settled: an assignment in progress (it may
    have been returned or timed out) or submitted and not paid yet. Distinct ids: a Prolific study holds many
    HITs. Work on a HIT nobody opened our page for cannot be approved (no stored answers) and is not looked
    for; MTurk approves it on its own after the auto-approval delay (docs/decisions.md)."""
    unsettled = Assignment.objects.filter(Q(status__in=WAITING_STATES) | _awaiting_payment())
    if campaign.provider == Campaign.Provider.PROLIFIC:
        # Participants come through the campaign's page, not a HIT's: any unsettled work means every study.
        studies = campaign.provider_state.get("studies", {})
        return sorted(set(studies.values())) if unsettled.filter(campaign=campaign).exists() else []
    hits = (
        Hit.objects.filter(campaign=campaign, published_at__isnull=False)
        .exclude(external_id="")
        .filter(Exists(unsettled.filter(hit=OuterRef("pk"))))
    )
    return sorted(set(hits.values_list("external_id", flat=True)))


def _exclusions_push(*, campaign: Campaign, provider: CrowdProvider) -> int:
    """Tell the provider about every excluded worker it does not know of yet (the campaign's exclusion
    qualification on MTurk, its participant group on Prolific)."""
    known = set(campaign.provider_state.get("excluded_workers", []))
    excluded = sorted(
        set(
            # The campaign's own exclusion qualification (group) carries its owner's and the global
            # exclusions only: another researcher's exclusions never reach this campaign's workers.
            worker_list_excluded_for(campaign=campaign)
            .filter(provider=campaign.provider)
            .values_list("external_id", flat=True)
        )
        - known
    )
    if not excluded:
        return 0
    state = provider.exclude(campaign=campaign_info(campaign=campaign), worker_ids=excluded)
    campaign_provider_state_save(campaign=campaign, state=state)
    return len(excluded)


def _hits_expire_at_provider(*, campaign: Campaign, provider: CrowdProvider) -> int:
    """A paused or finished campaign takes no new workers: expire its open published HITs at the provider
    (once; the HITs stay open here until their own expiry, so work already taken can still come in)."""
    hits = Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN, published_at__isnull=False)
    return _expire(campaign=campaign, provider=provider, hits=hits)


def _hits_withdraw_at_provider(*, campaign: Campaign, provider: CrowdProvider) -> int:
    """HITs closed here without a submission (discarded by hand, or expired early) while still live at a
    provider that expires HITs one by one (MTurk): withdraw them there, so nobody takes work we refuse. A
    Prolific study holds many HITs, and its places cannot shrink: nothing to do there."""
    if not provider.expires_each_hit:
        return 0
    submitted = Assignment.objects.filter(hit=OuterRef("pk"), submitted_at__isnull=False)
    hits = Hit.objects.filter(
        campaign=campaign,
        status__in=(Hit.Status.DISCARDED, Hit.Status.EXPIRED),
        published_at__isnull=False,
        expires_at__gt=timezone.now(),
    ).exclude(Exists(submitted))
    return _expire(campaign=campaign, provider=provider, hits=hits)


def _expire(*, campaign: Campaign, provider: CrowdProvider, hits: QuerySet[Hit]) -> int:
    """Expire these HITs at the provider, each once (remembered in ``provider_state["expired_hits"]``)."""
    done = set(campaign.provider_state.get("expired_hits", []))
    external_ids = sorted(set(hits.exclude(external_id="").values_list("external_id", flat=True)) - done)
    if not external_ids:
        return 0
    provider.expire(campaign=campaign_info(campaign=campaign), hit_external_ids=external_ids)
    campaign_provider_state_save(campaign=campaign, state={"expired_hits": sorted(done | set(external_ids))})
    return len(external_ids)


def campaign_ids_to_sync() -> list[int]:
    """Crowd campaigns to sync periodically: every running or paused one, and finished ones that still have
    submitted work unpaid or open HITs at the provider."""
    unpaid = Assignment.objects.filter(_awaiting_payment(), campaign=OuterRef("pk"))
    open_published = Hit.objects.filter(
        campaign=OuterRef("pk"), status=Hit.Status.OPEN, published_at__isnull=False
    )
    campaigns = Campaign.objects.filter(mode__in=CROWD_MODES).filter(
        Q(status__in=(Campaign.Status.RUNNING, Campaign.Status.PAUSED))
        | Q(status=Campaign.Status.DONE) & (Exists(unpaid) | Exists(open_published))
    )
    return list(campaigns.order_by("pk").values_list("pk", flat=True))

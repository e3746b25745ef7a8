"""Pausing and resuming a running campaign: while paused no HIT is built, published or handed out; HITs a
worker already holds can still be submitted, so no answer is lost."""

from __future__ import annotations

import logging

from django.db import transaction

from config.celery import enqueue, enqueue_on_commit, task_signature
from judging.crowd.base import CrowdError
from judging.models import Campaign
from judging.services.errors import CampaignStateError

logger = logging.getLogger(__name__)


@transaction.atomic
def campaign_pause(*, campaign: Campaign) -> Campaign:
    """Stop handing out and publishing HITs (``hit_build`` and ``hit_assign_next`` only serve running
    campaigns). Pausing a paused campaign changes nothing; a draft or finished one is refused."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.status == Campaign.Status.PAUSED:
        return campaign
    if campaign.status != Campaign.Status.RUNNING:
        raise CampaignStateError(
            f"campaign {campaign.name!r} is {campaign.status}: only a running one pauses"
        )
    campaign.status = Campaign.Status.PAUSED
    campaign.save(update_fields=["status"])
    # Read by the API, the dashboard and the command: what could not be done at the provider (not saved).
    campaign.provider_message = ""  # type: ignore[attr-defined]
    if campaign.provider != Campaign.Provider.LOCAL:
        # The provider's HITs stop being offered now, not at the next periodic sync (crowd_sync expires the
        # published HITs of a paused campaign).
        campaign_id = campaign.pk
        paused = campaign

        def sync_now() -> None:
            # Without a worker (eager Celery) the sync runs here, after the pause is committed: a provider that
            # cannot be reached (no credentials, no network) must not turn the applied pause into an error.
            try:
                enqueue("judging.tasks.crowd_sync_task", campaign_id)
            except CrowdError as error:
                logger.warning("campaign %s paused; its provider could not be told: %s", paused.name, error)
                paused.provider_message = (  # type: ignore[attr-defined]
                    f"paused; the {paused.provider} HITs could not be withdrawn now ({error}): the next sync"
                    " withdraws them"
                )

        transaction.on_commit(sync_now)
    return campaign


@transaction.atomic
def campaign_resume(*, campaign: Campaign) -> Campaign:
    """Run a paused campaign again and catch up with what waited (HITs for the queued pairs, rounds that
    completed meanwhile) through the recovery sweep, after commit. Resuming a running campaign changes
    nothing; a draft or finished one is refused."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.status == Campaign.Status.RUNNING:
        return campaign
    if campaign.status != Campaign.Status.PAUSED:
        raise CampaignStateError(
            f"campaign {campaign.name!r} is {campaign.status}: only a paused one resumes"
        )
    campaign.status = Campaign.Status.RUNNING
    campaign.save(update_fields=["status"])
    campaign_id = campaign.pk
    enqueue_on_commit("judging.tasks.campaign_advance_task", campaign_id)
    return campaign


@transaction.atomic
def campaign_publish_more(*, campaign: Campaign) -> None:
    """Build HITs for whatever pairs are queued (within the budget), after commit; with a crowd provider, then
    publish the unpublished ones to it (in that order: a Celery chain)."""
    if campaign.status != Campaign.Status.RUNNING:
        raise CampaignStateError(
            f"campaign {campaign.name!r} is {campaign.status}: only a running one publishes"
        )
    campaign_id = campaign.pk
    if campaign.provider == Campaign.Provider.LOCAL:
        enqueue_on_commit("judging.tasks.hit_build_task", campaign_id)
    else:
        work = task_signature("judging.tasks.hit_build_task", campaign_id) | task_signature(
            "judging.tasks.campaign_publish_task", campaign_id
        )
        enqueue_on_commit(work)

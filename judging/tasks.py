"""Celery tasks of the judging app: each loads its object by id and calls one service. Services enqueue them
after commit; every one is idempotent (the service re-reads the state and does nothing the second time), so
``acks_late`` redelivery after a lost worker is harmless. A missing object (deleted campaign) ends the task."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from config.celery import enqueue
from judging.models import CROWD_MODES, Campaign, CampaignTopic, Round

# Below the broker's visibility timeout (300 s, config/settings.py): a task still running then would be
# handed to a second worker. Every judging task takes seconds; the limits only end a stuck one, which the
# sweep then redoes.
TIME_LIMITS = {"soft_time_limit": 240, "time_limit": 270}
TASK_OPTIONS = {
    **TIME_LIMITS,
    "acks_late": True,
    "autoretry_for": (OperationalError,),
    "retry_backoff": True,
    "max_retries": 5,
}


@shared_task(**TASK_OPTIONS)
def campaign_start_task(campaign_id: int) -> None:
    """Thin the pools and open every topic's first round (or tournament)."""
    from judging.services.campaigns import campaign_start

    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is not None:
        campaign_start(campaign=campaign)


@shared_task(**TASK_OPTIONS)
def round_generate_task(campaign_topic_id: int) -> None:
    """Open the topic's next round unless one is open or the topic is finished."""
    from judging.services.rounds import round_generate

    campaign_topic = CampaignTopic.objects.filter(pk=campaign_topic_id).first()
    if campaign_topic is not None:
        round_generate(campaign_topic=campaign_topic)


@shared_task(**TASK_OPTIONS)
def hit_build_task(campaign_id: int) -> None:
    """Pack the campaign's queued pairs into HITs."""
    from judging.services.hits import hit_build

    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is not None:
        hit_build(campaign=campaign)


@shared_task(**TASK_OPTIONS)
def round_close_if_complete_task(round_id: int) -> None:
    """Close the round once every pair has a valid judgment (cull or rank, then advance or finish the topic)."""
    from judging.services.rounds import round_close_if_complete

    round = Round.objects.filter(pk=round_id).first()
    if round is not None:
        round_close_if_complete(round=round)


@shared_task(**TASK_OPTIONS)
def campaign_wave_advance_task(campaign_id: int) -> None:
    """Close a budgeted campaign's complete wave and open the next (the judge model's fit runs here, never in a
    request); nothing while the wave waits for answers."""
    from judging.services.waves import campaign_wave_advance

    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is not None:
        campaign_wave_advance(campaign=campaign)


@shared_task(**TASK_OPTIONS)
def hit_expire_overdue_task() -> None:
    """The overdue sweep: expire assignments past their deadline and unheld HITs past their lifetime, and
    requeue their pairs (run periodically by celery beat)."""
    from judging.services.hits import hit_expire_overdue

    hit_expire_overdue()


@shared_task(**TASK_OPTIONS)
def campaign_advance_task(campaign_id: int) -> None:
    """Recovery sweep: redo whatever a lost task left undone for one campaign."""
    from judging.services.campaigns import campaign_advance

    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is not None:
        campaign_advance(campaign=campaign)


@shared_task(**TASK_OPTIONS)
def campaign_advance_running_task() -> int:
    """Periodic safety net (celery beat): queue the recovery sweep of every running crowd campaign."""
    campaign_ids = list(
        Campaign.objects.filter(status=Campaign.Status.RUNNING, mode__in=CROWD_MODES).values_list(
            "pk", flat=True
        )
    )
    for campaign_id in campaign_ids:
        enqueue(campaign_advance_task, campaign_id)
    from judging.services.llm import campaigns_with_llm_running

    # A model judges the HITs built since its last run (a closed round's next one, pairs people returned).
    for campaign_id in campaigns_with_llm_running():
        enqueue(llm_judge_task, campaign_id)
    return len(campaign_ids)


@shared_task(**TASK_OPTIONS)
def campaign_forecast_running_task() -> int:
    """Periodic (celery beat): refresh the dashboard's forecast of every running crowd campaign whose pools
    changed since it was last planned."""
    from judging.services.planning import campaign_forecast_running

    return campaign_forecast_running()


# -- Crowd providers: publishing and syncing talk to MTurk or Prolific, so they run here, never in a web
# request. Both are idempotent (a HIT is published once per UniqueRequestToken or study total, a payment is
# recorded once), so a redelivered or retried task changes nothing twice. A provider that stays unreachable
# after its client's own retries raises CrowdTransientError, retried here with backoff.

CROWD_TASK_OPTIONS = {
    **TIME_LIMITS,
    "acks_late": True,
    "retry_backoff": 30,
    "retry_backoff_max": 900,
    "retry_jitter": True,
    "max_retries": 8,
}


def _crowd_retryable() -> tuple[type[BaseException], ...]:
    from judging.crowd import CrowdTransientError

    return (OperationalError, CrowdTransientError)


@shared_task(autoretry_for=_crowd_retryable(), **CROWD_TASK_OPTIONS)
def campaign_publish_task(campaign_id: int, max_hits: int | None = None) -> list[int]:
    """Publish the campaign's unpublished HITs to its provider within budget; returns the HIT numbers."""
    from judging.services.errors import CampaignStateError
    from judging.services.publishing import campaign_publish

    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        return []
    try:
        return campaign_publish(campaign=campaign, max_hits=max_hits).hit_numbers
    except CampaignStateError:
        return []  # paused or finished meanwhile: nothing to publish


@shared_task(autoretry_for=_crowd_retryable(), rate_limit="30/m", **CROWD_TASK_OPTIONS)
def crowd_sync_task(campaign_id: int) -> dict[str, int]:
    """Collect, approve, pay, requeue returned work, push exclusions, expire or publish HITs."""
    from judging.services.crowd_sync import campaign_sync

    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        return {}
    report = campaign_sync(campaign=campaign)
    return {"collected": report.collected, "approved": report.approved, "paid": report.paid}


@shared_task(**TASK_OPTIONS)
def crowd_sync_running_task() -> int:
    """Periodic (celery beat): queue the sync of every crowd campaign that is running, or paused or done
    with work still unpaid or HITs still to expire at the provider."""
    from judging.services.crowd_sync import campaign_ids_to_sync

    campaign_ids = campaign_ids_to_sync()
    for campaign_id in campaign_ids:
        enqueue(crowd_sync_task, campaign_id)
    return len(campaign_ids)


@shared_task(**TASK_OPTIONS)
def export_build_task(export_id: int) -> None:
    """Build a requested export into its private file (a ready one is left alone: safe to run twice)."""
    from judging.models import Export
    from judging.services.exports import export_build

    export = Export.objects.select_related("campaign").filter(pk=export_id).first()
    if export is not None:
        export_build(export=export)


# -- A language model as a judge (judging.services.llm), on its own queue (``llm``): calls wait on the model's
# server. Answers are stored as they arrive and never asked twice, so a retried or redelivered task, or one
# whose worker died mid-call, asks only what has no answer. One run per campaign at a time (a lease in the
# cache), so two runs never pay for the same question; a run takes a few hundred HITs and queues the next.

LLM_HITS_PER_TASK = 200


@shared_task(autoretry_for=_crowd_retryable(), **CROWD_TASK_OPTIONS)
def llm_judge_task(campaign_id: int) -> int:
    """Let the campaign's model judge the open HITs it may take; returns the HITs it submitted."""
    from django.core.cache import cache

    from judging.services.errors import CampaignStateError
    from judging.services.llm import campaign_llm_judge

    campaign = Campaign.objects.filter(pk=campaign_id).first()
    lease = f"toppref:llm-judge:{campaign_id}"
    if campaign is None or not cache.add(lease, 1, timeout=TIME_LIMITS["time_limit"]):
        return 0
    try:
        run = campaign_llm_judge(campaign=campaign, max_hits=LLM_HITS_PER_TASK)
    except CampaignStateError:
        return 0  # paused, finished, or its model removed meanwhile
    finally:
        cache.delete(lease)
    if run.hits and not run.note:
        enqueue(llm_judge_task, campaign_id)
    return run.hits

"""Celery tasks of the metrics app: load by id, call one service. Idempotent (the service replaces the stored
scores), so ``acks_late`` redelivery is harmless; a deleted collection or campaign ends the task."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from judging.models import Campaign
from metrics.leaderboard import LEADERBOARD_MEASURES
from pools.models import Collection


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def run_scores_compute_task(
    *,
    collection_id: int | None = None,
    campaign_id: int | None = None,
    measures: list[str],
    qrels_kind: str | None = None,
) -> int:
    """Score every run of the collection (graded qrels) or of the campaign's collection (its preference
    qrels); returns the number of stored run scores."""
    from metrics.services import run_scores_compute

    if campaign_id is not None:
        campaign = Campaign.objects.select_related("collection").filter(pk=campaign_id).first()
        if campaign is None:
            return 0
        return len(run_scores_compute(campaign=campaign, measures=measures, qrels_kind=qrels_kind))
    collection = Collection.objects.filter(pk=collection_id).first()
    if collection is None:
        return 0
    return len(run_scores_compute(collection=collection, measures=measures, qrels_kind=qrels_kind))


# The measures stored for a finished campaign: the leaderboard's (compatibility at the four p presets of the
# paper's Table 1 beside NDCG@3/5/10, AP and RR).
CAMPAIGN_MEASURES = LEADERBOARD_MEASURES


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def campaign_scores_sweep_task() -> int:
    """Periodic (celery beat): score the runs of every finished campaign whose leaderboard is missing or
    older than the campaign's end. The metrics app owns this sweep, so the judging app never names a metrics
    task (docs/decisions.md, "Scoring a finished campaign"). Idempotent; returns how many campaigns it scored."""
    from metrics.leaderboard import campaign_runs_score
    from metrics.selectors import campaign_list_unscored

    campaigns = list(campaign_list_unscored())
    for campaign in campaigns:
        campaign_runs_score(campaign=campaign)
    return len(campaigns)


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def run_validate_task(run_id: int) -> str:
    """Validate an uploaded run; once ready, score it for its campaign (or, a collection run, for the
    collection's finished campaigns)."""
    from metrics.uploads import run_validate_and_score
    from pools.models import Run

    run = Run.objects.select_related("collection").filter(pk=run_id).first()
    if run is None:
        return "missing"
    return run_validate_and_score(run=run).status


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def campaign_runs_score_task(campaign_id: int) -> int:
    """Score the collection's ready runs for the campaign's leaderboard (idempotent)."""
    from metrics.leaderboard import campaign_runs_score

    campaign = Campaign.objects.select_related("collection").filter(pk=campaign_id).first()
    if campaign is None:
        return 0
    return campaign_runs_score(campaign=campaign)


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def export_leaderboard_build_task(export_id: int) -> None:
    """Build a requested leaderboard export (CSV) into its private file; a ready one is left alone."""
    from judging.models import Export
    from metrics.leaderboard import leaderboard_export_build

    export = Export.objects.select_related("campaign").filter(pk=export_id).first()
    if export is not None:
        leaderboard_export_build(export=export)

"""Celery tasks of the metrics app: load by id, call one service. Idempotent (the service replaces the stored
scores), so ``acks_late`` redelivery is harmless; a deleted collection or campaign ends the task."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from judging.models import Campaign
from pools.models import Collection


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def run_scores_compute_task(
    *, collection_id: int | None = None, campaign_id: int | None = None, measures: list[str],
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

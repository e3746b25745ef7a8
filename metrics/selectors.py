"""Reads of the metrics app: stored run scores for tables and plots."""

from __future__ import annotations

from django.db.models import QuerySet

from judging.models import Campaign


def campaign_list_unscored() -> QuerySet[Campaign]:
    """Finished campaigns whose collection has a ready run and whose preference scores are missing or older
    than the campaign's end (what the scoring sweep picks up)."""
    from django.db.models import Exists, F, Max, OuterRef, Q

    from pools.models import Run

    ready_runs = Run.objects.filter(collection_id=OuterRef("collection_id"), status=Run.Status.READY)
    return (
        Campaign.objects.filter(status=Campaign.Status.DONE)
        .filter(Exists(ready_runs))
        .annotate(scored_at=Max("run_scores__computed_at"))
        .filter(Q(scored_at__isnull=True) | Q(scored_at__lt=F("finished_at")))
        .select_related("collection")
    )

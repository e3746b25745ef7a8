"""Reads of the metrics app: stored run scores for tables and plots."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from judging.models import Campaign
from pools.models import Run


def campaign_run_list(*, campaign: Campaign) -> QuerySet[Run]:
    """The runs a campaign shows and scores, by name: its own uploads and the collection's runs (imported
    with ``run_import``, no campaign). Another campaign's uploads never appear (docs/decisions.md,
    "Tenancy")."""
    return (
        Run.objects.filter(collection_id=campaign.collection_id)
        .filter(Q(campaign__isnull=True) | Q(campaign_id=campaign.pk))
        .order_by("name")
    )


def campaign_list_unscored() -> QuerySet[Campaign]:
    """Finished campaigns whose collection has a ready run and whose preference scores are missing or older
    than the campaign's end (what the scoring sweep picks up)."""
    from django.db.models import Exists, F, Max, OuterRef

    ready_runs = Run.objects.filter(collection_id=OuterRef("collection_id"), status=Run.Status.READY).filter(
        Q(campaign__isnull=True) | Q(campaign_id=OuterRef("pk"))
    )
    return (
        Campaign.objects.filter(status=Campaign.Status.DONE)
        .filter(Exists(ready_runs))
        .annotate(scored_at=Max("run_scores__computed_at"))
        .filter(Q(scored_at__isnull=True) | Q(scored_at__lt=F("finished_at")))
        .select_related("collection")
    )

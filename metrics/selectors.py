"""Reads of the metrics app: stored run scores for tables and plots."""

from __future__ import annotations

import numpy as np
from django.db.models import QuerySet

from judging.models import Campaign
from metrics.models import RunScore, TopicScore
from pools.models import Collection


def run_score_list(
    *,
    collection: Collection | None = None,
    campaign: Campaign | None = None,
    measure: str,
    qrels_kind: str | None = None,
) -> QuerySet[RunScore]:
    """Stored scores of one measure, best first: the collection's graded scores, or a campaign's scores
    against its preference qrels of ``qrels_kind`` (default combined)."""
    scores = RunScore.objects.select_related("run").filter(measure=measure)
    if campaign is not None:
        scores = scores.filter(campaign=campaign, qrels_kind=qrels_kind or RunScore.QrelsKind.COMBINED)
    else:
        scores = scores.filter(run__collection=collection, campaign__isnull=True)
    return scores.order_by("-mean", "run__name")


def topic_score_matrix(
    *, run_scores: QuerySet[RunScore] | list[RunScore]
) -> tuple[list[str], list[str], np.ndarray]:
    """Per-topic scores of the given run scores as ``(run names, topic ids, matrix (runs, topics))``;
    topics sorted by id, NaN where a run was not scored on a topic (the input of
    ``metrics.core.significance``)."""
    run_scores = list(run_scores)
    cells = list(
        TopicScore.objects.filter(run_score__in=run_scores).values_list(
            "run_score_id", "topic__topic_id", "value"
        )
    )
    index = {run_score.pk: i for i, run_score in enumerate(run_scores)}
    topics = sorted({topic for _, topic, _ in cells})
    column = {topic: j for j, topic in enumerate(topics)}
    matrix = np.full((len(run_scores), len(topics)), np.nan)
    for run_score_id, topic, value in cells:
        matrix[index[run_score_id], column[topic]] = value
    return [run_score.run.name for run_score in run_scores], topics, matrix


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

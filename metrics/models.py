"""Schema of the metrics app: stored scores of a collection's runs, per topic and as the run's mean.

A score is identified by the run, the measure (canonical name, e.g. ``compat@0.8``) and the judgments it was
computed against: a campaign's preference qrels of one kind (``combined``, ``top_k``, ``best``; see
``judging.selectors.campaign_preferences``) or, with no campaign, the collection's graded qrels. Rows are
replaced as a whole by ``metrics.services.run_scores_compute``; ``computed_at`` says which snapshot of the
judgments they reflect.
"""

from django.db import models
from django.db.models import Q

from judging.models import Campaign
from pools.models import Run, Topic


class RunScore(models.Model):
    """One run's score under one measure: the mean over ``topic_count`` scored topics."""

    class QrelsKind(models.TextChoices):
        GRADED = "graded", "graded judgments of the collection"
        COMBINED = "combined", "top-k preferences above the grades"
        TOP_K = "top_k", "top-k preferences only"
        BEST = "best", "best item only"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="scores")
    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, null=True, blank=True, related_name="run_scores"
    )
    qrels_kind = models.CharField(max_length=20, choices=QrelsKind.choices, default=QrelsKind.GRADED)
    measure = models.CharField(max_length=50)
    mean = models.FloatField()
    topic_count = models.PositiveIntegerField()
    computed_at = models.DateTimeField()

    class Meta:
        ordering = ["measure", "-mean", "run_id"]
        constraints = [
            # Graded qrels belong to the collection, preference qrels to a campaign.
            models.CheckConstraint(
                condition=Q(campaign__isnull=True, qrels_kind="graded")
                | Q(campaign__isnull=False, qrels_kind__in=["combined", "top_k", "best"]),
                name="run_score_campaign_matches_qrels_kind",
            ),
            models.UniqueConstraint(
                fields=["run", "measure"],
                condition=Q(campaign__isnull=True),
                name="one_graded_score_per_run_measure",
            ),
            models.UniqueConstraint(
                fields=["run", "campaign", "qrels_kind", "measure"],
                condition=Q(campaign__isnull=False),
                name="one_campaign_score_per_run_kind_measure",
            ),
        ]
        indexes = [models.Index(fields=["campaign", "qrels_kind", "measure"])]

    def __str__(self) -> str:
        return f"{self.run} {self.measure} {self.mean:.4f}"


class TopicScore(models.Model):
    """One run's score on one topic under the measure of its ``run_score``."""

    run_score = models.ForeignKey(RunScore, on_delete=models.CASCADE, related_name="topic_scores")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    value = models.FloatField()

    class Meta:
        ordering = ["run_score_id", "topic_id"]
        constraints = [
            models.UniqueConstraint(fields=["run_score", "topic"], name="one_score_per_run_score_topic")
        ]

    def __str__(self) -> str:
        return f"{self.topic_id} {self.value:.4f}"

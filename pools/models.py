"""Schema of the pools app: what is judged (topics, items) and what is known already (grades, runs)."""

from django.conf import settings
from django.db import models


class CollectionQuerySet(models.QuerySet):
    def current(self) -> "CollectionQuerySet":
        """The current version of every collection: what a name means to imports, the API and new campaigns."""
        return self.filter(is_current=True)


class Collection(models.Model):
    """A set of topics and items judged together (e.g. TREC CAsT 2019, or the shipped demo).

    Only its ``owner`` (a researcher) and staff may change it; with no owner it is staff's only. Anyone
    researching may read it and run campaigns on it (docs/decisions.md, "Tenancy").

    One row is one version. A campaign started on a version keeps it; a change to a version that a started
    campaign uses is made in a new version, a copy that takes over the name (``is_current``) and links back
    through ``previous`` (docs/decisions.md, "Collection versions")."""

    # Unique among current versions; older versions keep the name with their version number.
    name = models.SlugField(max_length=100)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="collections",
    )
    # Strict: qrels and runs may only name topics already imported; lenient: unknown topics are created.
    is_strict = models.BooleanField(default=True)
    # Defaults in the database too: rows inserted by code that predates versions (an older migration's
    # models, a script) are version 1, current.
    version = models.PositiveIntegerField(default=1, db_default=1)
    is_current = models.BooleanField(default=True, db_default=True)
    previous = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = CollectionQuerySet.as_manager()

    class Meta:
        ordering = ["name", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["name"],
                condition=models.Q(is_current=True),
                name="unique_current_collection_name",
                violation_error_message="Collection with this Name already exists.",
            ),
            models.UniqueConstraint(fields=["name", "version"], name="unique_collection_name_version"),
        ]

    def __str__(self) -> str:
        return self.name


class Topic(models.Model):
    """A question to judge. ``topic_id`` is the external id used in qrels and runs (e.g. ``31_2``)."""

    # No index of its own: the unique constraint's index starts with this column.
    collection = models.ForeignKey(
        Collection, on_delete=models.CASCADE, related_name="topics", db_index=False
    )
    topic_id = models.CharField(max_length=100)
    # The question shown to assessors: for CAsT the manually resolved rewrite, not the raw utterance.
    question = models.TextField(blank=True)
    conversation_id = models.CharField(max_length=100, blank=True)
    turn = models.PositiveIntegerField(null=True, blank=True)
    utterance = models.TextField(blank=True)

    class Meta:
        ordering = ["collection_id", "topic_id"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "topic_id"], name="unique_topic_id_per_collection")
        ]
        indexes = [models.Index(fields=["collection", "conversation_id"])]

    def __str__(self) -> str:
        return self.topic_id


class Item(models.Model):
    """A passage (document) that can be judged. ``text`` may be empty until the passages are imported."""

    # No index of its own: the unique constraint's index starts with this column. A second index only on it
    # tempts PostgreSQL, with the stale statistics of a table filled in the same import, into scanning a whole
    # collection for every batch of docids.
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="items", db_index=False)
    docid = models.CharField(max_length=200)
    text = models.TextField(blank=True)

    class Meta:
        ordering = ["collection_id", "docid"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "docid"], name="unique_docid_per_collection")
        ]

    def __str__(self) -> str:
        return self.docid


class GradedJudgment(models.Model):
    """One graded relevance label (TREC qrels line ``topic Q0 docid grade``)."""

    # No index of its own: the unique constraint's index starts with this column.
    topic = models.ForeignKey(
        Topic, on_delete=models.CASCADE, related_name="graded_judgments", db_index=False
    )
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="graded_judgments")
    grade = models.FloatField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["topic", "item"], name="one_grade_per_topic_item")]

    def __str__(self) -> str:
        return f"{self.topic_id} {self.item_id} {self.grade:g}"


def run_upload_path(run: "Run", filename: str) -> str:
    # A campaign's run lives in a folder of its own: another campaign (or a command-line import into the
    # collection) may hold a run of the same name, whose file it must never overwrite.
    if run.campaign_id is not None:
        return f"runs/{run.collection.name}/campaign-{run.campaign_id}/{run.name}.run"
    return f"runs/{run.collection.name}/{run.name}.run"


class Run(models.Model):
    """A system's ranked lists (TREC run). The lines are kept as a validated file, not one row per line:
    a TREC run can hold tens of millions of lines, which the measures read as arrays."""

    # No index of its own: the unique constraint's index starts with this column.
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="runs", db_index=False)
    # A run uploaded to a campaign (dashboard, API, ``run_upload``) is that campaign's only: no other
    # campaign lists, scores or ranks it. Without a campaign (``run_import`` into the collection) it is
    # the collection's, shown in every campaign of the collection.
    campaign = models.ForeignKey(
        "judging.Campaign", on_delete=models.CASCADE, null=True, blank=True, related_name="runs"
    )

    class Status(models.TextChoices):
        PENDING = "pending"  # uploaded, waiting for the background validation
        VALIDATING = "validating"
        READY = "ready"
        FAILED = "failed"

    name = models.CharField(max_length=200)
    file = models.FileField(upload_to=run_upload_path, max_length=500)
    line_count = models.PositiveBigIntegerField(default=0)
    topic_count = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.READY)
    progress = models.FloatField(default=1.0)
    error = models.TextField(blank=True)
    # Who uploaded it from the dashboard or the API (None for command-line imports); files are private.
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection_id", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "name"],
                condition=models.Q(campaign__isnull=True),
                name="unique_run_name_per_collection",
            ),
            models.UniqueConstraint(
                fields=["campaign", "name"],
                condition=models.Q(campaign__isnull=False),
                name="unique_run_name_per_campaign",
            ),
        ]

    def __str__(self) -> str:
        return self.name

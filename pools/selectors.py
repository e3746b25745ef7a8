"""Reads of the pools app."""

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from pools.models import Collection, GradedJudgment, Item, Run, Topic
from pools.thinning import DEFAULT_ANSWER_GRADE, thin_qrels


def rows_per_collection(rows: QuerySet, *, collection_field: str = "collection") -> Coalesce:
    """How many of ``rows`` belong to each collection, as an expression to annotate collections with (0 when
    none). A correlated subquery per count: counting several relations through joins instead, even with
    ``distinct=True``, makes the database build their product, topics x items x runs rows per collection,
    which takes minutes for a collection the size of CAsT."""
    counts = (
        rows.filter(**{collection_field: OuterRef("pk")})
        .order_by()
        .values(collection_field)
        .annotate(count=Count("pk"))
        .values("count")
    )
    return Coalesce(Subquery(counts), 0)


def collection_list_with_counts() -> QuerySet[Collection]:
    """Collections by name (their current versions), with ``topic_count``, ``item_count`` and ``run_count``."""
    return (
        Collection.objects.current()
        .annotate(
            topic_count=rows_per_collection(Topic.objects.all()),
            item_count=rows_per_collection(Item.objects.all()),
            # The collection's own runs; campaigns' uploads are theirs only.
            run_count=rows_per_collection(Run.objects.filter(campaign__isnull=True)),
        )
        .order_by("name")
    )


def collection_qrels(*, collection: Collection) -> dict[str, dict[str, float]]:
    """The collection's graded judgments as ``{topic_id: {docid: grade}}`` (the shape of
    :func:`pools.trec.read_qrels`), topics and docids in sorted order."""
    qrels: dict[str, dict[str, float]] = {}
    rows = (
        GradedJudgment.objects.filter(topic__collection=collection)
        .order_by("topic__topic_id", "item__docid")
        .values_list("topic__topic_id", "item__docid", "grade")
    )
    for topic_id, docid, grade in rows.iterator(chunk_size=10_000):
        qrels.setdefault(topic_id, {})[docid] = grade
    return qrels


def collection_candidate_pools(
    *, collection: Collection, k: int, scheme: str = "graded", answer_grade: float = DEFAULT_ANSWER_GRADE
) -> dict[str, dict[str, float]]:
    """The candidate pool of every topic of the collection with a positive grade (see
    :func:`pools.thinning.thin_pool`): ``{topic_id: {docid: grade}}``; the planner's pool sizes."""
    return thin_qrels(collection_qrels(collection=collection), k, scheme=scheme, answer_grade=answer_grade)

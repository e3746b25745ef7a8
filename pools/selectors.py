"""Reads of the pools app."""

from django.db.models import Count, QuerySet

from pools.models import Collection, GradedJudgment
from pools.thinning import DEFAULT_ANSWER_GRADE, thin_qrels


def collection_list_with_counts() -> QuerySet[Collection]:
    return Collection.objects.annotate(
        topic_count=Count("topics", distinct=True),
        item_count=Count("items", distinct=True),
        run_count=Count("runs", distinct=True),
    ).order_by("name")


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
    :func:`pools.thinning.thin_pool`): ``{topic_id: {docid: grade}}``."""
    return thin_qrels(collection_qrels(collection=collection), k, scheme=scheme, answer_grade=answer_grade)

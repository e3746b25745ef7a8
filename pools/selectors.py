"""Reads of the pools app."""

from django.db.models import Count, Q, QuerySet

from pools.models import Collection


def collection_list_with_counts() -> QuerySet[Collection]:
    return Collection.objects.annotate(
        topic_count=Count("topics", distinct=True),
        item_count=Count("items", distinct=True),
        run_count=Count("runs", distinct=True),
    ).order_by("name")

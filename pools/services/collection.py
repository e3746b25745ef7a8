"""Creating and deleting collections."""

from __future__ import annotations

from django.db import transaction

from pools.models import Collection
from pools.services.runs import run_file_delete_if_unused


def collection_create(*, name: str, description: str = "", is_strict: bool = True) -> Collection:
    """Create a collection. Strict collections refuse qrels and runs naming topics not imported yet."""
    collection = Collection(name=name, description=description, is_strict=is_strict)
    collection.full_clean()
    collection.save()
    return collection


def collection_get_or_create(*, name: str, description: str = "", is_strict: bool = True) -> Collection:
    """The collection called ``name``, created with the given settings if it does not exist yet."""
    existing = Collection.objects.filter(name=name).first()
    return existing or collection_create(name=name, description=description, is_strict=is_strict)


def collection_delete(*, collection: Collection) -> None:
    """Delete a collection with its topics, items, judgments and runs; the run files go once committed, except
    those that runs imported since under the same names read (a collection deleted and loaded again)."""
    file_names = list(collection.runs.values_list("file", flat=True))
    collection.delete()

    def delete_files() -> None:
        for file_name in file_names:
            run_file_delete_if_unused(file_name)

    transaction.on_commit(delete_files)

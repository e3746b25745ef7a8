"""What every import of the pools app shares: its result, its errors, batching, and resolving topic ids."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice

from django.db import connection
from django.db.models import Model

from pools.models import Collection, Item, Topic
from trecio import TrecFormatError

BATCH_SIZE = 2000


class ImportRejectedError(ValueError):
    """An import refused as a whole, for a reason that is not one line of the file (e.g. the run exists)."""


@dataclass(frozen=True)
class ImportResult:
    """What an import changed: rows created, rows whose values changed, rows already as in the file; and the
    version of the collection that holds the result, ``new_version`` when the import made it (the one it
    was given is used by a started campaign, which keeps it as it was)."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    version: int = 1
    new_version: bool = False

    def __str__(self) -> str:
        counts = f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged"
        if self.new_version:
            return (
                f"{counts}; made version {self.version} (started campaigns keep the version they started on)"
            )
        return counts


class CollectionForbiddenError(PermissionError):
    """A change to a collection by someone who is neither its owner nor staff."""

    def __init__(self, collection: Collection) -> None:
        super().__init__(f"only the owner of collection {collection.name} (or staff) may change it")


def collection_change_check(collection: Collection, *, user) -> None:
    """Refuse a change to ``collection`` by ``user`` who is neither its owner nor staff
    (``CollectionForbiddenError``). Where the change goes (a new version, when a started campaign uses this
    one) is the imports' own business (``pools.services.versions.collection_change``)."""
    if not (user.is_staff or (collection.owner_id is not None and collection.owner_id == user.pk)):
        raise CollectionForbiddenError(collection)


def topic_pks_resolving(
    collection: Collection, topic_first_lines: dict[str, int], *, path, create_unknown: bool = True
) -> dict[str, int]:
    """Primary keys of the named topics; unknown ones are created, or refused with the first line naming
    them when the collection is strict. With ``create_unknown=False`` (a run uploaded to a campaign, whose
    uploader may not change the collection) unknown topics of a lenient collection are left out."""
    known = dict(collection.topics.values_list("topic_id", "pk"))
    unknown = sorted(
        (line, topic_id) for topic_id, line in topic_first_lines.items() if topic_id not in known
    )
    if unknown and collection.is_strict:
        line_number, topic_id = unknown[0]
        raise TrecFormatError(
            path,
            line_number,
            f"unknown topic {topic_id}: collection {collection.name} is strict, so import its topics first "
            f"({len(unknown)} unknown topic(s) in this file)",
        )
    if unknown and create_unknown:
        Topic.objects.bulk_create(
            [Topic(collection=collection, topic_id=topic_id) for _, topic_id in unknown],
            batch_size=BATCH_SIZE,
        )
        known = dict(collection.topics.values_list("topic_id", "pk"))
    return known


class ItemStatistics:
    """Keeps PostgreSQL's statistics of the item table current while an import fills it.

    A docid lookup is planned from table statistics, which do not count rows inserted since the last
    ANALYZE; believing a collection nearly empty, PostgreSQL then reads the whole collection for every batch
    of docids, and a large import turns quadratic. ANALYZE inside the import's transaction does count the
    transaction's own rows. It runs at the start and whenever the rows added since have doubled, so its
    total cost stays proportional to the import. Other databases need nothing."""

    def __init__(self) -> None:
        self.rows_added = 0
        self.next_refresh = 4 * BATCH_SIZE
        self.refresh()

    def added(self, count: int) -> None:
        self.rows_added += count
        if self.rows_added >= self.next_refresh:
            self.refresh()
            self.next_refresh = 2 * self.rows_added

    @staticmethod
    def refresh() -> None:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"ANALYZE {Item._meta.db_table}")


def rows_insert(model: type[Model], fields: Sequence[str], rows: Iterable[tuple]) -> None:
    """Insert plain rows (values in the order of ``fields``) into ``model``'s table, returning no ids.

    COPY on PostgreSQL: building a model instance per row is most of an ORM insert's time for a file of a
    million lines. Batched ``bulk_create`` elsewhere."""
    meta = model._meta
    concrete = {field.name: field for field in meta.concrete_fields}
    if connection.vendor == "postgresql":
        columns = ", ".join(str(concrete[name].column) for name in fields)
        with (
            connection.cursor() as cursor,
            cursor.copy(f"COPY {meta.db_table} ({columns}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)
        return
    attribute_names = [concrete[name].attname for name in fields]
    for batch in batches(rows, BATCH_SIZE):
        model._default_manager.bulk_create(
            [model(**dict(zip(attribute_names, row, strict=True))) for row in batch]
        )


def batches(iterable: Iterable, size: int) -> Iterator[list]:
    iterator = iter(iterable)
    while batch := list(islice(iterator, size)):
        yield batch

"""Importing graded judgments from TREC qrels."""

from __future__ import annotations

import os

from django.db import transaction

from pools import trec
from pools.models import Collection, GradedJudgment, Item
from pools.services.importing import (
    BATCH_SIZE,
    ImportResult,
    ItemStatistics,
    batches,
    rows_insert,
    topic_pks_resolving,
)
from pools.services.versions import collection_change
from trecio import TrecFormatError, format_value


@transaction.atomic
def qrels_import(
    *,
    collection: Collection,
    path: str | os.PathLike[str],
    replace: bool = False,
    progress: bool = False,
) -> ImportResult:
    """Import graded judgments from a TREC qrels file (``topic Q0 docid grade``, float grades accepted).

    - a docid not in the collection becomes an Item with empty text (import the passages later);
    - a topic not in the collection is an error when the collection is strict, else it is created;
    - a line equal to a stored judgment changes nothing; a different grade for a stored (topic, item) is an
      error naming the line, unless ``replace`` (then the stored grade is overwritten).
    Stored judgments that the file does not mention are kept. A collection that a started campaign uses
    takes the change in a new version (``pools.services.versions.collection_change``)."""
    qrels, first_lines = trec.read_qrels_with_lines(path, progress=progress)
    return collection_change(
        collection, lambda version: _qrels_store(version, qrels, first_lines, path=path, replace=replace)
    )


def _qrels_store(
    collection: Collection,
    qrels: dict[str, dict[str, float]],
    first_lines: dict[tuple[str, str], int],
    *,
    path,
    replace: bool,
) -> ImportResult:
    topic_first_lines: dict[str, int] = {}
    # first_lines is in file order, so a topic's first entry is its first line.
    for (topic_id, _), line_number in first_lines.items():
        topic_first_lines.setdefault(topic_id, line_number)
    topic_pks = topic_pks_resolving(collection, topic_first_lines, path=path)
    item_pks = _item_pks_creating(collection, {docid for grades in qrels.values() for docid in grades})

    # Plain tuples, not model instances: a qrels file may hold millions of lines.
    stored: dict[tuple[int, int], tuple[int, float]] = {
        (topic_pk, item_pk): (pk, grade)
        for pk, topic_pk, item_pk, grade in GradedJudgment.objects.filter(
            topic_id__in=[topic_pks[topic_id] for topic_id in qrels]
        ).values_list("pk", "topic_id", "item_id", "grade")
    }
    new_judgments: list[tuple[int, int, float]] = []
    changed_judgments, conflicts, unchanged = [], [], 0
    for topic_id, grades in qrels.items():
        for docid, grade in grades.items():
            stored_judgment = stored.get((topic_pks[topic_id], item_pks[docid]))
            if stored_judgment is None:
                new_judgments.append((topic_pks[topic_id], item_pks[docid], grade))
            elif stored_judgment[1] == grade:
                unchanged += 1
            elif replace:
                changed_judgments.append(GradedJudgment(pk=stored_judgment[0], grade=grade))
            else:
                conflicts.append((first_lines[topic_id, docid], topic_id, docid, grade, stored_judgment[1]))
    if conflicts:
        line_number, topic_id, docid, grade, stored_grade = min(conflicts)
        raise TrecFormatError(
            path,
            line_number,
            f"grade {format_value(grade)} for topic {topic_id} docid {docid} conflicts with the stored grade "
            f"{format_value(stored_grade)} ({len(conflicts)} conflicting line(s); import with --replace to overwrite)",
        )
    rows_insert(GradedJudgment, ("topic", "item", "grade"), new_judgments)
    GradedJudgment.objects.bulk_update(changed_judgments, ["grade"], batch_size=BATCH_SIZE)
    return ImportResult(created=len(new_judgments), updated=len(changed_judgments), unchanged=unchanged)


def _item_pks_creating(collection: Collection, docids: set[str]) -> dict[str, int]:
    """Primary keys of the items with these docids, creating the missing ones with empty text."""
    pks = _item_pks(collection, sorted(docids))
    missing = sorted(docids.difference(pks))
    rows_insert(Item, ("collection", "docid", "text"), [(collection.pk, docid, "") for docid in missing])
    # The insert returns no ids (COPY cannot), so they are looked up after.
    pks.update(_item_pks(collection, missing))
    return pks


def _item_pks(collection: Collection, docids: list[str]) -> dict[str, int]:
    """Primary keys of those of ``docids`` that are items of the collection."""
    ItemStatistics.refresh()
    pks: dict[str, int] = {}
    for batch in batches(docids, BATCH_SIZE):
        pks.update(Item.objects.filter(collection=collection, docid__in=batch).values_list("docid", "pk"))
    return pks

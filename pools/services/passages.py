"""Importing passage text into items."""

from __future__ import annotations

import os

from django.db import transaction

from pools import trec
from pools.models import Collection, Item
from pools.services.importing import (
    BATCH_SIZE,
    ImportResult,
    ItemStatistics,
    batches,
    rows_insert,
)
from pools.services.versions import collection_change
from trecio import TrecFormatError

PASSAGE_FORMATS = {"tsv": trec.iter_passages_tsv, "jsonl": trec.iter_passages_jsonl}


def passage_format_for(path: str | os.PathLike[str]) -> str:
    """``"jsonl"`` for ``*.jsonl``/``*.json`` files (also gzip-compressed: ``*.jsonl.gz``), ``"tsv"`` otherwise."""
    name = os.fspath(path).lower().removesuffix(".gz")
    return "jsonl" if name.endswith((".jsonl", ".json")) else "tsv"


@transaction.atomic
def passages_import(
    *,
    collection: Collection,
    path: str | os.PathLike[str],
    format: str | None = None,
    progress: bool = False,
    batch_size: int = BATCH_SIZE,
) -> ImportResult:
    """Import passages (``docid<TAB>text`` or JSONL ``{"id", "text"}``; ``format=None`` picks by extension):
    new docids become Items, the text of existing Items (e.g. created empty by a qrels import) is replaced.

    Streams the file in batches, so memory grows only with the set of docids seen, which is kept to report
    a docid repeated in the file as an error naming both lines. A collection that a started campaign uses
    takes the change in a new version (``pools.services.versions.collection_change``)."""
    format = format or passage_format_for(path)
    if format not in PASSAGE_FORMATS:
        raise ValueError(f"unknown passage format {format!r}; expected one of {', '.join(PASSAGE_FORMATS)}")
    return collection_change(
        collection,
        lambda version: _passages_store(
            version, path, format=format, progress=progress, batch_size=batch_size
        ),
    )


def _passages_store(
    collection: Collection, path: str | os.PathLike[str], *, format: str, progress: bool, batch_size: int
) -> ImportResult:
    first_lines: dict[str, int] = {}
    created = updated = unchanged = 0
    statistics = ItemStatistics()
    for batch in batches(PASSAGE_FORMATS[format](path, progress=progress), batch_size):
        texts: dict[str, str] = {}
        for line_number, docid, text in batch:
            if docid in first_lines:
                raise TrecFormatError(path, line_number, f"docid {docid} repeats line {first_lines[docid]}")
            first_lines[docid] = line_number
            texts[docid] = text
        existing = {
            item.docid: item for item in Item.objects.filter(collection=collection, docid__in=list(texts))
        }
        new_items: list[tuple[int, str, str]] = []
        changed_items: list[Item] = []
        for docid, text in texts.items():
            item = existing.get(docid)
            if item is None:
                new_items.append((collection.pk, docid, text))
            elif item.text != text:
                item.text = text
                changed_items.append(item)
        rows_insert(Item, ("collection", "docid", "text"), new_items)
        Item.objects.bulk_update(changed_items, ["text"], batch_size=BATCH_SIZE)
        statistics.added(len(new_items))
        created += len(new_items)
        updated += len(changed_items)
        unchanged += len(texts) - len(new_items) - len(changed_items)
    return ImportResult(created=created, updated=updated, unchanged=unchanged)

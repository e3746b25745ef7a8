"""Importing TREC runs (validated by streaming, stored as files under MEDIA_ROOT) and deleting them."""

from __future__ import annotations

import os
import re
from pathlib import Path

from django.core.files import File
from django.db import transaction

from pools import trec
from pools.models import Collection, Run
from pools.services.importing import ImportRejectedError, topic_pks_resolving
from pools.trec import TrecFormatError

# A run name becomes part of a file name under MEDIA_ROOT (runs/<collection>/<name>.run).
RUN_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")


def run_import(
    *,
    collection: Collection,
    path: str | os.PathLike[str],
    name: str | None = None,
    replace: bool = False,
    progress: bool = False,
) -> Run:
    """Validate a TREC run by streaming it and store it, unchanged, as a file under MEDIA_ROOT.

    Memory stays constant in the number of lines (a run may hold tens of millions); what grows is the set
    of topic ids. The Run records the line and topic counts. ``name`` defaults to the file name without
    extension. Topics not in the collection are refused when it is strict and created otherwise. An existing
    run of the same name is an error unless ``replace``; its old file is deleted only once the new one is
    committed; a replacement identical to the stored file changes nothing. If anything fails, the database
    and the media folder are left as they were."""
    name = name if name is not None else Path(path).stem
    if not RUN_NAME_PATTERN.match(name):
        raise ImportRejectedError(
            f"{path}: run name {name!r} must be 1-200 letters, digits, '.', '_', '+' or '-', starting with a letter or digit"
        )
    if not replace and Run.objects.filter(collection=collection, name=name).exists():
        # Checked again under lock below; this only spares streaming a large file that would be refused.
        raise _run_exists_error(collection, name, path)
    line_count = 0
    topic_first_lines: dict[str, int] = {}
    for line in trec.iter_run(path, progress=progress):
        line_count += 1
        topic_first_lines.setdefault(line.topic_id, line.line_number)
    if line_count == 0:
        raise TrecFormatError(path, 1, "the run has no lines")

    saved_name = None
    try:
        with transaction.atomic():
            topic_pks_resolving(collection, topic_first_lines, path=path)
            run = Run.objects.select_for_update().filter(collection=collection, name=name).first()
            if run is not None and not replace:
                raise _run_exists_error(collection, name, path)
            if run is not None and _stored_file_equals(run, path):
                # Re-importing the same file (e.g. loading the demo again) changes nothing.
                return run
            old_file_name = run.file.name if run is not None else None
            run = run or Run(collection=collection, name=name)
            with open(path, "rb") as handle:
                run.file.save(f"{name}.run", File(handle), save=False)
            saved_name = run.file.name
            run.line_count = line_count
            run.topic_count = len(topic_first_lines)
            run.save()
            if old_file_name and old_file_name != saved_name:
                storage = run.file.storage
                transaction.on_commit(lambda: storage.delete(old_file_name))
    except BaseException:
        if saved_name is not None:
            Run._meta.get_field("file").storage.delete(saved_name)
        raise
    return run


def _stored_file_equals(run: Run, path: str | os.PathLike[str]) -> bool:
    if not run.file or not run.file.storage.exists(run.file.name):
        return False
    if run.file.size != os.path.getsize(path):
        return False
    chunk_bytes = 1 << 20
    with run.file.open("rb") as stored, open(path, "rb") as candidate:
        while True:
            stored_chunk, candidate_chunk = stored.read(chunk_bytes), candidate.read(chunk_bytes)
            if stored_chunk != candidate_chunk:
                return False
            if not stored_chunk:
                return True


def _run_exists_error(collection: Collection, name: str, path) -> ImportRejectedError:
    return ImportRejectedError(
        f"{path}: collection {collection.name} already has a run {name!r} (import with --replace to overwrite)"
    )


def run_delete(*, run: Run) -> None:
    """Delete a run; its file goes once the deletion is committed."""
    file_name, storage = run.file.name, run.file.storage
    run.delete()
    if file_name:
        transaction.on_commit(lambda: storage.delete(file_name))

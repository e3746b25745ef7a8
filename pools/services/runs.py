"""Importing TREC runs (validated by streaming, stored as files under MEDIA_ROOT) and deleting them."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from django.db import transaction

from pools import trec
from pools.models import Collection, Run
from pools.services.importing import ImportRejectedError, topic_pks_resolving
from pools.services.versions import collection_current, collection_lock_current
from trecio import TrecFormatError, is_gzip, open_binary

# A run name becomes part of a file name under MEDIA_ROOT (runs/<collection>/<name>.run).
RUN_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")
TEMPORARY_SUFFIX = ".part"
# A file no row reads is deleted once it is this old: older than any import still copying or committing.
ORPHAN_AGE = timedelta(hours=1)


def run_import(
    *,
    collection: Collection,
    path: str | os.PathLike[str],
    name: str | None = None,
    replace: bool = False,
    progress: bool = False,
) -> Run:
    """Validate a TREC run by streaming it and store it as the file ``runs/<collection>/<name>.run`` under
    MEDIA_ROOT (a ``*.gz`` run is stored decompressed, so every reader of stored runs reads plain text).

    Memory stays constant in the number of lines (a run may hold tens of millions); what grows is the set
    of topic ids. The Run records the line and topic counts. ``name`` defaults to the file name without
    ``.gz`` and extension (``bm25.run.gz`` gives ``bm25``, TREC's ``input.bm25.gz`` too). Topics not in the
    collection are refused when it is strict and created otherwise. An existing run of the same name is an
    error unless ``replace``; a replacement identical to the stored file changes nothing.

    The file is copied to a temporary name first and moved into place by an atomic rename: on commit when a
    file is already there (a committed row may read it), else at once. So a crash or a rollback never
    leaves a stored run whose file disagrees with its row, a re-import never gets a suffixed name, and
    files left by a killed process or an outer rollback are removed by later imports (see
    docs/decisions.md, "Run files: temporary name, then rename"). The run goes into the current version of
    the collection, in place even when a started campaign uses that version: a new run changes nothing that
    was judged (docs/decisions.md, "Collection versions")."""
    collection = collection_current(collection)
    name = name if name is not None else _default_name(path)
    if not RUN_NAME_PATTERN.match(name):
        raise ImportRejectedError(
            f"{path}: run name {name!r} must be 1-200 letters, digits, '.', '_', '+' or '-', starting with a letter or digit"
        )
    if Run.objects.filter(collection=collection, name=name, campaign__isnull=False).exists():
        # A campaign's upload shows beside the collection's runs: one name must mean one run there.
        raise ImportRejectedError(
            f"{path}: a campaign of collection {collection.name} has a run {name!r} already; choose another name"
        )
    if not replace and Run.objects.filter(collection=collection, name=name, campaign__isnull=True).exists():
        # Checked again under lock below; this only spares streaming a large file that would be refused.
        raise _run_exists_error(collection, name, path)
    line_count = 0
    topic_first_lines: dict[str, int] = {}
    for line in trec.iter_run(path, progress=progress):
        line_count += 1
        topic_first_lines.setdefault(line.topic_id, line.line_number)
    if line_count == 0:
        raise TrecFormatError(path, 1, "the run has no lines")

    storage = Run._meta.get_field("file").storage
    final_name = run_file_name(collection=collection, name=name)
    run_files_clean(collection_name=collection.name)
    final_path = Path(storage.path(final_name))
    temporary_path = _copy_to_temporary(path, final_path)
    moved_path = None
    try:
        with transaction.atomic():
            collection_lock_current(collection)
            topic_pks_resolving(collection, topic_first_lines, path=path)
            run = (
                Run.objects.select_for_update()
                .filter(collection=collection, name=name, campaign__isnull=True)
                .first()
            )
            if run is not None and not replace:
                raise _run_exists_error(collection, name, path)
            if run is not None and _stored_file_equals(run, temporary_path):
                # Re-importing the same file (e.g. loading the demo again) changes nothing.
                temporary_path.unlink()
                return run
            old_file_name = run.file.name if run is not None else None
            run = run or Run(collection=collection, name=name)
            run.file.name = final_name
            run.line_count = line_count
            run.topic_count = len(topic_first_lines)
            run.save()
            if final_path.exists():
                # A committed row may read the file there: replace it only once ours commits.
                transaction.on_commit(lambda: _move_into_place(temporary_path, final_path))
            else:
                _move_into_place(temporary_path, final_path)
                moved_path = final_path
            if old_file_name and old_file_name != final_name:
                # A file of an older version of this service, stored under a suffixed name.
                transaction.on_commit(lambda: run_file_delete_if_unused(old_file_name))
    except BaseException:
        temporary_path.unlink(missing_ok=True)
        if moved_path is not None:
            moved_path.unlink(missing_ok=True)
        raise
    return run


def run_file_name(*, collection: Collection, name: str) -> str:
    """Where a run's file is stored, relative to MEDIA_ROOT. Every version after the first has a folder of
    its own: a new version's runs read the files of the one it copies, which a replacement in the new
    version must never overwrite."""
    if collection.version > 1:
        return f"runs/{collection.name}/v{collection.version}/{name}.run"
    return f"runs/{collection.name}/{name}.run"


def run_files_clean(*, collection_name: str, older_than: timedelta = ORPHAN_AGE) -> list[str]:
    """Delete the collection's run files that no row reads: temporary files of imports that were killed, and
    files moved into place by an import whose transaction then rolled back. Only files older than
    ``older_than`` go, so an import still in progress keeps its own. Returns the deleted names."""
    storage = Run._meta.get_field("file").storage
    directory = Path(storage.path(f"runs/{collection_name}"))
    if not directory.is_dir():
        return []
    cutoff = time.time() - older_than.total_seconds()
    used = set(Run.objects.filter(collection__name=collection_name).values_list("file", flat=True))
    deleted = []
    # The collection's folder and its versions' folders (v2, v3...); campaigns' folders are their uploads'.
    entries = [entry for folder in directory.glob("v[0-9]*") if folder.is_dir() for entry in folder.iterdir()]
    for entry in [*directory.iterdir(), *entries]:
        name = f"runs/{collection_name}/{entry.relative_to(directory).as_posix()}"
        if not entry.is_file() or name in used:
            continue
        try:
            if entry.stat().st_mtime <= cutoff:
                entry.unlink()
                deleted.append(name)
        except FileNotFoundError:  # another import cleaned it first
            continue
    return deleted


def _default_name(path: str | os.PathLike[str]) -> str:
    """The file name without ``.gz`` and its extension; TREC's ``input.<runid>[.gz]`` gives ``<runid>``."""
    file_name = Path(path).name
    if is_gzip(file_name):
        file_name = file_name[: -len(".gz")]
    if file_name.startswith("input.") and len(file_name) > len("input."):
        return file_name[len("input.") :]
    return Path(file_name).stem


def _copy_to_temporary(source: str | os.PathLike[str], final_path: Path) -> Path:
    """Copy (decompressing ``*.gz``) into a new hidden file beside ``final_path``, so that moving it into
    place is a rename within one directory."""
    final_path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary_name = tempfile.mkstemp(
        dir=final_path.parent, prefix=f".{final_path.name}.", suffix=TEMPORARY_SUFFIX
    )
    temporary_path = Path(temporary_name)
    try:
        with open(descriptor, "wb") as target, open_binary(source) as handle:
            shutil.copyfileobj(handle, target, 1 << 20)
        temporary_path.chmod(0o644)
    except BaseException:
        temporary_path.unlink(missing_ok=True)
        raise
    return temporary_path


def _move_into_place(temporary_path: Path, final_path: Path) -> None:
    os.replace(temporary_path, final_path)


def run_file_delete_if_unused(file_name: str) -> None:
    """Delete a stored run file unless a run reads it."""
    if not Run.objects.filter(file=file_name).exists():
        Run._meta.get_field("file").storage.delete(file_name)


def _stored_file_equals(run: Run, path: Path) -> bool:
    name = run.file.name if run.file else None
    if not name or not run.file.storage.exists(name):
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
    """Delete a run; its file goes once the deletion is committed, unless a run imported since under the same
    name reads it."""
    file_name = run.file.name
    run.delete()
    if file_name:
        transaction.on_commit(lambda: run_file_delete_if_unused(file_name))

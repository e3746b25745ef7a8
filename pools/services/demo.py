"""Loading the demo collection shipped in demo/."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.db import transaction

from pools.models import Collection, Run
from pools.services.collection import collection_delete, collection_get_or_create
from pools.services.importing import ImportRejectedError, ImportResult
from pools.services.passages import passages_import
from pools.services.qrels import qrels_import
from pools.services.runs import run_files_clean, run_import
from pools.services.topics import topics_import_tsv, topics_import_turns


@dataclass(frozen=True)
class DemoLoadResult:
    collection: Collection
    topics: ImportResult
    passages: ImportResult
    qrels: ImportResult
    runs: list[Run]


DEMO_COLLECTION_NAME = "demo"


def demo_load(
    *, directory: str | os.PathLike[str], reset: bool = False, progress: bool = False
) -> DemoLoadResult:
    """Load the demo collection shipped in ``directory`` (``topics.tsv``, optional ``conversations.tsv``,
    ``passages.jsonl``, ``qrels.graded.txt``, ``runs/*.run``) into the strict collection ``demo``.

    Idempotent: loading again updates what changed and leaves the rest (runs are replaced). ``reset``
    deletes the collection first, with everything that hangs off it. ``qrels.preference.txt`` is not a
    table: the judging simulator reads it from the directory."""
    directory = Path(directory)
    paths = {
        "topics": directory / "topics.tsv",
        "passages": directory / "passages.jsonl",
        "qrels": directory / "qrels.graded.txt",
    }
    missing = [str(path) for path in paths.values() if not path.is_file()]
    if missing:
        raise ImportRejectedError(f"the demo collection is incomplete: missing {', '.join(missing)}")
    runs: list[Run] = []
    try:
        with transaction.atomic():
            if reset:
                existing = Collection.objects.current().filter(name=DEMO_COLLECTION_NAME).first()
                if existing is not None:
                    collection_delete(collection=existing)
            collection = collection_get_or_create(
                name=DEMO_COLLECTION_NAME,
                description="Questions and passages written for toppref's demo, graded 0-4 (shipped in demo/).",
                is_strict=True,
            )
            topics = topics_import_tsv(collection=collection, path=paths["topics"])
            if (directory / "conversations.tsv").is_file():
                topics_import_turns(collection=collection, path=directory / "conversations.tsv")
            passages = passages_import(collection=collection, path=paths["passages"], format="jsonl")
            qrels = qrels_import(collection=collection, path=paths["qrels"], replace=True)
            for run_path in sorted((directory / "runs").glob("*.run")):
                runs.append(run_import(collection=collection, path=run_path, replace=True, progress=progress))
    except BaseException:
        # run_import removes its own files when it fails; the files of the runs imported before the failure
        # (moved into place, or waiting for a commit that will not come) are read by no row now.
        run_files_clean(collection_name=DEMO_COLLECTION_NAME, older_than=timedelta(0))
        raise
    return DemoLoadResult(collection, topics, passages, qrels, runs)

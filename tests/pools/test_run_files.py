"""Run files: copied under a temporary name, moved into place by a rename, never suffixed, orphans removed."""

import gzip
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import transaction

from pools import services
from pools.models import Run
from pools.services.runs import run_files_clean
from tests.pools.factories import CollectionFactory
from trecio import TrecFormatError

pytestmark = pytest.mark.django_db

RUN_TEXT = "1 Q0 a 1 3.5 sys\n1 Q0 b 2 2.0 sys\n2 Q0 a 1 1.0 sys\n"
NEWER_TEXT = "5 Q0 z 1 1.0 sys\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def files_under(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir()) if directory.is_dir() else []


def age(path: Path, seconds: float) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_reimporting_keeps_one_unsuffixed_file(tmp_path, media_root, django_capture_on_commit_callbacks):
    collection = CollectionFactory(name="toy", is_strict=False)
    for text in (RUN_TEXT, NEWER_TEXT, RUN_TEXT):
        with django_capture_on_commit_callbacks(execute=True):
            run = services.run_import(
                collection=collection, path=write(tmp_path, "bm25ish.run", text), replace=True
            )
        assert run.file.name == "runs/toy/bm25ish.run"
        assert files_under(media_root / "runs/toy") == ["bm25ish.run"]
        assert (media_root / "runs/toy/bm25ish.run").read_text() == text


def test_a_replacement_rolled_back_by_an_outer_transaction_keeps_the_committed_file(tmp_path, media_root):
    # given a stored run
    collection = CollectionFactory(name="toy", is_strict=False)
    services.run_import(collection=collection, path=write(tmp_path, "sys.run", RUN_TEXT))
    # when a replacement is imported inside a transaction that then fails
    with pytest.raises(RuntimeError), transaction.atomic():
        services.run_import(
            collection=collection, path=write(tmp_path, "new.run", NEWER_TEXT), name="sys", replace=True
        )
        raise RuntimeError("the caller fails after the import")
    # then the row and the file still agree on the old run; only a temporary file is left, for the sweep
    run = Run.objects.get()
    assert (run.line_count, (media_root / run.file.name).read_text()) == (3, RUN_TEXT)
    (temporary,) = [name for name in files_under(media_root / "runs/toy") if name != "sys.run"]
    assert temporary.startswith(".sys.run.") and temporary.endswith(".part")
    assert run_files_clean(collection_name="toy", older_than=timedelta(0)) == [f"runs/toy/{temporary}"]
    assert files_under(media_root / "runs/toy") == ["sys.run"]


def test_orphans_older_than_an_hour_are_removed_by_the_next_import(tmp_path, media_root):
    collection = CollectionFactory(name="toy", is_strict=False)
    services.run_import(collection=collection, path=write(tmp_path, "kept.run", RUN_TEXT))
    directory = media_root / "runs/toy"
    # given what a killed import and a rolled-back one leave: a temporary file, and a file no row reads
    stale_part, stale_run = directory / ".x.run.abc123.part", directory / "rolled_back.run"
    fresh_part = directory / ".y.run.def456.part"  # an import still in progress
    for path in (stale_part, stale_run, fresh_part):
        path.write_text(RUN_TEXT)
    age(stale_part, 2 * 3600)
    age(stale_run, 2 * 3600)
    age(directory / "kept.run", 2 * 3600)
    # when another run is imported
    services.run_import(collection=collection, path=write(tmp_path, "other.run", RUN_TEXT))
    # then the stale orphans are gone; the runs' files and the fresh temporary file stay
    assert files_under(directory) == [".y.run.def456.part", "kept.run", "other.run"]


def test_a_failed_import_leaves_no_file(tmp_path, media_root, pools_state):
    collection = CollectionFactory(name="toy", is_strict=True)
    before = pools_state()
    with pytest.raises(TrecFormatError, match="unknown topic 1"):
        services.run_import(collection=collection, path=write(tmp_path, "sys.run", RUN_TEXT))
    assert pools_state() == before
    assert files_under(media_root / "runs/toy") == []


def test_a_gzip_run_is_stored_decompressed_under_its_trec_name(tmp_path, media_root):
    collection = CollectionFactory(name="toy", is_strict=False)
    path = tmp_path / "input.bm25.gz"
    path.write_bytes(gzip.compress(RUN_TEXT.encode()))
    run = services.run_import(collection=collection, path=path)
    assert (run.name, run.line_count, run.topic_count, run.file.name) == ("bm25", 3, 2, "runs/toy/bm25.run")
    assert (media_root / "runs/toy/bm25.run").read_text() == RUN_TEXT
    # and importing it again changes nothing: the stored file is compared with the decompressed one
    again = services.run_import(collection=collection, path=path, replace=True)
    assert (again.pk, files_under(media_root / "runs/toy")) == (run.pk, ["bm25.run"])


def test_deleting_and_reimporting_in_one_transaction_keeps_the_new_file(
    tmp_path, media_root, django_capture_on_commit_callbacks
):
    collection = CollectionFactory(name="toy", is_strict=False)
    with django_capture_on_commit_callbacks(execute=True):
        services.run_import(collection=collection, path=write(tmp_path, "sys.run", RUN_TEXT))
    # when a run is deleted and imported again under the same name before the commit
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        services.run_delete(run=Run.objects.get())
        services.run_import(collection=collection, path=write(tmp_path, "new.run", NEWER_TEXT), name="sys")
    # then the deletion's clean-up does not take the new run's file
    assert (media_root / "runs/toy/sys.run").read_text() == NEWER_TEXT
    assert files_under(media_root / "runs/toy") == ["sys.run"]

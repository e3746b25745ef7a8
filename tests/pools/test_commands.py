"""Management commands: wiring of each importer, and demo_load."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from pools.models import Collection, GradedJudgment, Item, Run, Topic
from tests.conftest import DEMO_DIR
from tests.pools.factories import CollectionFactory

pytestmark = pytest.mark.django_db


def call(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_import_commands(tmp_path, media_root):
    (tmp_path / "t.tsv").write_text("1\tWhat is a cat?\n")
    (tmp_path / "p.tsv").write_text("a\tA cat.\n")
    (tmp_path / "q.txt").write_text("1 Q0 a 3\n")
    (tmp_path / "s.run").write_text("1 Q0 a 1 2.0 s\n")
    assert call("collection_create", "toy") == "created collection toy (strict)\n"
    assert (
        call("topics_import", "toy", str(tmp_path / "t.tsv"), "--quiet")
        == "toy: topics: 1 created, 0 updated, 0 unchanged\n"
    )
    assert (
        call("passages_import", "toy", str(tmp_path / "p.tsv"), "--quiet")
        == "toy: passages: 1 created, 0 updated, 0 unchanged\n"
    )
    assert (
        call("qrels_import", "toy", str(tmp_path / "q.txt"), "--quiet")
        == "toy: graded judgments: 1 created, 0 updated, 0 unchanged\n"
    )
    assert call("run_import", "toy", str(tmp_path / "s.run"), "--quiet", "--name", "bm25") == (
        "toy: run bm25: 1 lines over 1 topics, stored as runs/toy/bm25.run\n"
    )


def test_import_command_bad_line_raises_command_error(tmp_path, pools_state):
    CollectionFactory(name="toy")
    before = pools_state()
    (tmp_path / "t.tsv").write_text("1\tWhat is a cat?\n2 no tab\n")
    with pytest.raises(CommandError) as raised:
        call("topics_import", "toy", str(tmp_path / "t.tsv"), "--quiet")
    assert (
        str(raised.value)
        == f"{tmp_path / 't.tsv'}:2: expected 'topic_id<TAB>question', found no tab (nothing imported)"
    )
    assert pools_state() == before


def test_topics_import_command_refuses_resolved_without_cast_json(tmp_path, pools_state):
    CollectionFactory(name="toy")
    before = pools_state()
    (tmp_path / "t.tsv").write_text("1\tWhat is a cat?\n")
    with pytest.raises(CommandError) as raised:
        call("topics_import", "toy", str(tmp_path / "t.tsv"), "--resolved", str(tmp_path / "t.tsv"))
    assert str(raised.value) == "--resolved only applies to CAsT JSON topics"
    assert pools_state() == before


@pytest.fixture
def demo_dir(tmp_path):
    """A small demo directory in the layout of demo/ (topics.tsv, passages.jsonl, qrels, runs/*.run)."""
    directory = tmp_path / "demo"
    (directory / "runs").mkdir(parents=True)
    (directory / "topics.tsv").write_text("d1\tWhy is the sky blue?\nd2\tHow do cats purr?\n")
    (directory / "conversations.tsv").write_text("d2\tcats\t1\tand how do they purr\n")
    passages = [{"id": f"p{n}", "text": f"Passage {n} <em>about</em> things."} for n in range(1, 5)]
    (directory / "passages.jsonl").write_text("".join(json.dumps(passage) + "\n" for passage in passages))
    (directory / "qrels.graded.txt").write_text("d1 0 p1 4\nd1 0 p2 0\nd2 0 p3 3\nd2 0 p4 1\n")
    (directory / "qrels.preference.txt").write_text("d1 0 p1 10\n")
    (directory / "runs" / "alpha.run").write_text("d1 Q0 p1 1 2.0 alpha\nd2 Q0 p4 1 1.0 alpha\n")
    (directory / "runs" / "beta.run").write_text("d1 Q0 p2 1 2.0 beta\n")
    return directory


def demo_rows():
    return (
        list(
            Topic.objects.order_by("topic_id").values_list("topic_id", "question", "conversation_id", "turn")
        ),
        list(Item.objects.order_by("docid").values_list("docid", "text")),
        sorted(GradedJudgment.objects.values_list("topic__topic_id", "item__docid", "grade")),
        list(Run.objects.order_by("name").values_list("name", "line_count", "topic_count")),
    )


def test_demo_load_is_idempotent(demo_dir, media_root, django_capture_on_commit_callbacks):
    # when loaded twice
    with django_capture_on_commit_callbacks(execute=True):
        first = call("demo_load", "--dir", str(demo_dir))
    rows = demo_rows()
    with django_capture_on_commit_callbacks(execute=True):
        call("demo_load", "--dir", str(demo_dir))
    # then the second load changes nothing and leaves one file per run
    assert first.splitlines() == [
        "collection demo (strict: rows naming an unknown topic are refused)",
        "  created / updated / unchanged = rows this load added, changed, or found as in the file",
        "                     created  updated  unchanged",
        "  topics                   2        0          0",
        "  passages                 4        0          0",
        "  graded judgments         4        0          0",
        "  runs (replaced on every load):",
        "    alpha             2 topics      2 lines",
        "    beta               1 topic       1 line",
    ]
    assert rows == (
        [("d1", "Why is the sky blue?", "", None), ("d2", "How do cats purr?", "cats", 1)],
        [(f"p{n}", f"Passage {n} <em>about</em> things.") for n in range(1, 5)],
        [("d1", "p1", 4.0), ("d1", "p2", 0.0), ("d2", "p3", 3.0), ("d2", "p4", 1.0)],
        [("alpha", 2, 2), ("beta", 1, 1)],
    )
    assert demo_rows() == rows
    assert Collection.objects.get().is_strict is True
    assert len([path for path in media_root.rglob("*.run")]) == 2


def test_demo_load_reset_recreates_the_collection(demo_dir, media_root, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        call("demo_load", "--dir", str(demo_dir))
    old_pk = Collection.objects.get().pk
    with django_capture_on_commit_callbacks(execute=True):
        call("demo_load", "--dir", str(demo_dir), "--reset")
    assert Collection.objects.get().pk != old_pk
    assert len(demo_rows()[2]) == 4
    assert len([path for path in media_root.rglob("*.run")]) == 2


@pytest.mark.parametrize("loaded_before", [False, True], ids=["first-load", "reload"])
def test_demo_load_bad_run_loads_nothing(
    demo_dir, pools_state, django_capture_on_commit_callbacks, loaded_before
):
    if loaded_before:
        with django_capture_on_commit_callbacks(execute=True):
            call("demo_load", "--dir", str(demo_dir))
        (demo_dir / "runs" / "beta.run").write_text("d1 Q0 p3 1 2.0 beta\n")
    (demo_dir / "runs" / "gamma.run").write_text("d9 Q0 p1 1 2.0 gamma\n")
    before = pools_state()
    with pytest.raises(CommandError) as raised:
        call("demo_load", "--dir", str(demo_dir))
    assert str(raised.value) == (
        f"{demo_dir / 'runs' / 'gamma.run'}:1: unknown topic d9: collection demo is strict, so import its topics "
        "first (1 unknown topic(s) in this file) (nothing loaded)"
    )
    assert pools_state() == before


def test_demo_load_missing_files(tmp_path):
    with pytest.raises(CommandError) as raised:
        call("demo_load", "--dir", str(tmp_path))
    assert str(raised.value).startswith(
        f"the demo collection is incomplete: missing {tmp_path / 'topics.tsv'}"
    )


def test_demo_load_of_the_shipped_demo(media_root, django_capture_on_commit_callbacks):
    # given the demo collection shipped in demo/ (its counts read from its own files)
    def lines(path):
        return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    run_paths = sorted((DEMO_DIR / "runs").glob("*.run"))
    with django_capture_on_commit_callbacks(execute=True):
        call("demo_load")
    collection = Collection.objects.get(name="demo")
    assert collection.topics.count() == len(lines(DEMO_DIR / "topics.tsv"))
    assert collection.items.exclude(text="").count() == len(lines(DEMO_DIR / "passages.jsonl"))
    assert GradedJudgment.objects.filter(topic__collection=collection).count() == len(
        lines(DEMO_DIR / "qrels.graded.txt")
    )
    assert sorted(collection.runs.values_list("name", "line_count")) == [
        (path.stem, len(lines(path))) for path in run_paths
    ]
    turns = [line.split("\t") for line in lines(DEMO_DIR / "conversations.tsv")]
    assert sorted(
        collection.topics.exclude(conversation_id="").values_list("topic_id", "utterance")
    ) == sorted((columns[0], columns[3].strip()) for columns in turns)

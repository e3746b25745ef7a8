"""Importers, against the real database: what they write, and that a bad line changes nothing."""

import json
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from pools import services
from pools.models import Collection, GradedJudgment, Item, Run, Topic
from pools.services import ImportRejectedError
from pools.trec import TrecFormatError
from tests.pools.factories import CollectionFactory, GradedJudgmentFactory, ItemFactory, TopicFactory

pytestmark = pytest.mark.django_db


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def grades_of(collection: Collection) -> dict[tuple[str, str], float]:
    return {
        (topic_id, docid): grade
        for topic_id, docid, grade in GradedJudgment.objects.filter(topic__collection=collection).values_list(
            "topic__topic_id", "item__docid", "grade"
        )
    }


# collections


def test_collection_create_and_duplicate_name():
    collection = services.collection_create(name="cast-2019", description="CAsT", is_strict=False)
    assert (collection.name, collection.description, collection.is_strict) == ("cast-2019", "CAsT", False)
    with pytest.raises(ValidationError) as raised:
        services.collection_create(name="cast-2019")
    assert list(raised.value.message_dict) == ["name"]
    assert Collection.objects.count() == 1


# topics


def test_topics_import_tsv_creates_updates_and_skips(tmp_path):
    collection = CollectionFactory()
    first = write(tmp_path, "t.tsv", "1\tWhat is a cat?\n2\tWhat is a dog?\n")
    assert services.topics_import_tsv(collection=collection, path=first) == services.ImportResult(created=2)
    second = write(tmp_path, "t2.tsv", "1\tWhat is a cat?\n2\tWhat is a wolf?\n3\tWhat is a cow?\n")
    result = services.topics_import_tsv(collection=collection, path=second)
    assert result == services.ImportResult(created=1, updated=1, unchanged=1)
    assert dict(collection.topics.values_list("topic_id", "question")) == {
        "1": "What is a cat?",
        "2": "What is a wolf?",
        "3": "What is a cow?",
    }


def test_topics_import_tsv_conflicting_repeat_changes_nothing(tmp_path, pools_state):
    collection = CollectionFactory()
    TopicFactory(collection=collection, topic_id="1", question="Old?")
    before = pools_state()
    path = write(tmp_path, "t.tsv", "1\tNew?\n2\tWhat is a dog?\n2\tWhat is a cat?\n")
    with pytest.raises(TrecFormatError) as raised:
        services.topics_import_tsv(collection=collection, path=path)
    assert str(raised.value) == f"{path}:3: 2 repeats line 2 with a different question"
    assert pools_state() == before


def test_topics_import_tsv_conflict_names_the_first_line_of_the_topic(tmp_path):
    collection = CollectionFactory()
    path = write(tmp_path, "t.tsv", "2\tWhat is a dog?\n2\tWhat is a dog?\n2\tWhat is a cat?\n")
    with pytest.raises(TrecFormatError) as raised:
        services.topics_import_tsv(collection=collection, path=path)
    assert str(raised.value) == f"{path}:3: 2 repeats line 1 with a different question"


def test_topics_import_picks_the_format_by_extension(cast_dir, tmp_path):
    collection = CollectionFactory()
    tsv = write(tmp_path, "t.tsv", "1\tWhat is a cat?\n")
    assert services.topics_import(collection=collection, path=tsv) == services.ImportResult(created=1)
    assert services.topics_import(
        collection=collection, path=cast_dir / "topics.json"
    ) == services.ImportResult(created=479)
    turns = write(tmp_path, "c.tsv", "1\tpets\t1\twhat's a cat\n")
    assert services.topics_import(collection=collection, path=turns, format="turns") == services.ImportResult(
        updated=1
    )
    with pytest.raises(ValueError, match="resolved questions only apply to CAsT JSON topics"):
        services.topics_import(collection=collection, path=tsv, resolved_path=tsv)


def test_topics_import_cast_with_resolved_questions(cast_dir):
    collection = CollectionFactory()
    result = services.topics_import_cast(
        collection=collection,
        path=cast_dir / "topics.json",
        resolved_path=cast_dir / "questions.resolved.tsv",
    )
    assert result == services.ImportResult(created=479)
    topic = collection.topics.get(topic_id="31_2")
    # questions.resolved.tsv line 2 and topics.json conversation 31, turn 2
    assert (topic.question, topic.utterance, topic.conversation_id, topic.turn) == (
        "Is throat cancer treatable?",
        "Is it treatable?",
        "31",
        2,
    )
    conversation_31 = next(c for c in json.loads((cast_dir / "topics.json").read_text()) if c["number"] == 31)
    assert collection.topics.filter(conversation_id="31").count() == len(conversation_31["turn"])


def test_topics_import_cast_resolved_topic_not_in_json_changes_nothing(cast_dir, tmp_path, pools_state):
    collection = CollectionFactory()
    before = pools_state()
    resolved = write(tmp_path, "resolved.tsv", "31_1\tWhat is throat cancer?\n999_1\tWho?\n")
    with pytest.raises(TrecFormatError) as raised:
        services.topics_import_cast(
            collection=collection, path=cast_dir / "topics.json", resolved_path=resolved
        )
    assert (raised.value.path, raised.value.line_number) == (str(resolved), 2)
    assert raised.value.problem == f"topic 999_1 is not a turn of {cast_dir / 'topics.json'}"
    assert pools_state() == before


def test_topics_import_turns_attaches_conversations_to_known_topics(tmp_path, pools_state):
    collection = CollectionFactory()
    TopicFactory(collection=collection, topic_id="c1_1", question="How long to boil an egg?")
    path = write(tmp_path, "c.tsv", "c1_1\tc1\t1\tboil an egg how long\n")
    assert services.topics_import_turns(collection=collection, path=path) == services.ImportResult(updated=1)
    topic = collection.topics.get()
    assert (topic.question, topic.conversation_id, topic.turn, topic.utterance) == (
        "How long to boil an egg?",
        "c1",
        1,
        "boil an egg how long",
    )
    before = pools_state()
    unknown = write(tmp_path, "c2.tsv", "c1_1\tc1\t1\tboil an egg\nc1_2\tc1\t2\tand peel?\n")
    with pytest.raises(TrecFormatError) as raised:
        services.topics_import_turns(collection=collection, path=unknown)
    assert str(raised.value) == f"{unknown}:2: unknown topic c1_2: import the topics first"
    assert pools_state() == before


# passages


def test_passages_import_fills_items_created_by_qrels_and_creates_new(tmp_path):
    collection = CollectionFactory()
    ItemFactory(collection=collection, docid="d1", text="")
    ItemFactory(collection=collection, docid="d2", text="Same.")
    path = write(
        tmp_path,
        "p.jsonl",
        '{"id": "d1", "text": "A <script>cat</script>."}\n{"id": "d2", "text": "Same."}\n{"id": "d3", "text": "New."}\n',
    )
    result = services.passages_import(collection=collection, path=path)
    assert result == services.ImportResult(created=1, updated=1, unchanged=1)
    assert dict(collection.items.values_list("docid", "text")) == {
        "d1": "A <script>cat</script>.",
        "d2": "Same.",
        "d3": "New.",
    }


def test_passages_import_tsv(tmp_path):
    collection = CollectionFactory()
    path = write(tmp_path, "p.tsv", "d1\tOne.\nd2\tTwo.\n")
    assert services.passages_import(collection=collection, path=path) == services.ImportResult(created=2)


@pytest.mark.parametrize(
    ("text", "line_number", "problem"),
    [
        (
            '{"id": "d1", "text": "One."}\n{"id": "d2", "text": "Two."}\n{"id": "d1", "text": "Again."}\n',
            3,
            "docid d1 repeats line 1",
        ),
        (
            '{"id": "d1", "text": "One."}\n{"id": "d2", "text": "Two."}\n{"id": "d3", "text": \n',
            3,
            "bad JSON: Expecting value at column 22",
        ),
        (
            '{"id": "d1", "text": "One."}\n{"id": "d2", "text": "Two."}\n{"id": "", "text": "x"}\n',
            3,
            "empty docid",
        ),
    ],
)
def test_passages_import_bad_line_after_written_batches_changes_nothing(
    tmp_path, pools_state, text, line_number, problem
):
    # given batches of one line, so the first lines are already written when the bad one is read
    collection = CollectionFactory()
    ItemFactory(collection=collection, docid="d2", text="")
    before = pools_state()
    path = write(tmp_path, "p.jsonl", text)
    with pytest.raises(TrecFormatError) as raised:
        services.passages_import(collection=collection, path=path, batch_size=1)
    assert (raised.value.line_number, raised.value.problem) == (line_number, problem)
    assert pools_state() == before


# qrels


def test_qrels_import_creates_items_and_judgments(tmp_path):
    collection = CollectionFactory()
    TopicFactory(collection=collection, topic_id="1")
    TopicFactory(collection=collection, topic_id="2")
    ItemFactory(collection=collection, docid="a", text="Known passage.")
    path = write(tmp_path, "q.txt", "1 Q0 a 2\n1\tQ0\tb\t0.5\n2 Q0 a 0\n1 Q0 a 2\n")
    result = services.qrels_import(collection=collection, path=path)
    assert result == services.ImportResult(created=3)
    assert grades_of(collection) == {("1", "a"): 2.0, ("1", "b"): 0.5, ("2", "a"): 0.0}
    assert dict(collection.items.values_list("docid", "text")) == {"a": "Known passage.", "b": ""}


def test_qrels_reimport_same_is_a_noop_and_replace_overwrites(tmp_path):
    collection = CollectionFactory()
    TopicFactory(collection=collection, topic_id="1")
    services.qrels_import(collection=collection, path=write(tmp_path, "q.txt", "1 Q0 a 2\n1 Q0 b 1\n"))
    again = services.qrels_import(collection=collection, path=write(tmp_path, "q2.txt", "1 Q0 a 2\n"))
    assert again == services.ImportResult(unchanged=1)
    changed = write(tmp_path, "q3.txt", "1 Q0 a 3\n1 Q0 c 1\n")
    assert services.qrels_import(collection=collection, path=changed, replace=True) == services.ImportResult(
        created=1, updated=1
    )
    assert grades_of(collection) == {("1", "a"): 3.0, ("1", "b"): 1.0, ("1", "c"): 1.0}


def test_qrels_lenient_collection_creates_unknown_topics(tmp_path):
    collection = CollectionFactory(is_strict=False)
    services.qrels_import(collection=collection, path=write(tmp_path, "q.txt", "7 Q0 a 1\n"))
    assert list(collection.topics.values_list("topic_id", "question")) == [("7", "")]


@pytest.mark.parametrize(
    ("text", "line_number", "problem"),
    [
        ("1 Q0 a 2\n1 Q0 b 1 extra\n", 2, "expected 4 columns 'topic Q0 docid grade', found 5"),
        ("1 Q0 a 2\n1 Q0 b\n", 2, "expected 4 columns 'topic Q0 docid grade', found 3"),
        ("1 Q0 a 2\n1 Q0 b relevant\n", 2, "grade 'relevant' is not a number"),
        ("1 Q0 a 2\n1 Q0 b 1\n1 Q0 a 1\n", 3, "grade 1 for topic 1 docid a conflicts with grade 2 on line 1"),
        (
            "1 Q0 a 2\n9 Q0 b 1\n9 Q0 c 1\n8 Q0 c 1\n",
            2,
            "unknown topic 9: collection strict-one is strict, so import its topics first (2 unknown topic(s) in this file)",
        ),
        (
            "1 Q0 new 1\n1 Q0 stored 3\n",
            2,
            "grade 3 for topic 1 docid stored conflicts with the stored grade 2 (1 conflicting line(s); import with --replace to overwrite)",
        ),
    ],
    ids=[
        "too-many-columns",
        "too-few-columns",
        "non-numeric-grade",
        "conflicting-duplicate",
        "unknown-topic",
        "conflicts-with-stored",
    ],
)
def test_qrels_import_bad_line_changes_nothing(tmp_path, pools_state, text, line_number, problem):
    # given a strict collection with one stored judgment
    collection = CollectionFactory(name="strict-one", is_strict=True)
    GradedJudgmentFactory(
        topic=TopicFactory(collection=collection, topic_id="1"),
        item=ItemFactory(collection=collection, docid="stored"),
        grade=2,
    )
    before = pools_state()
    path = write(tmp_path, "q.txt", text)
    with pytest.raises(TrecFormatError) as raised:
        services.qrels_import(collection=collection, path=path)
    assert str(raised.value) == f"{path}:{line_number}: {problem}"
    assert pools_state() == before


def test_qrels_import_of_cast(cast_dir):
    collection = CollectionFactory()
    services.topics_import_cast(collection=collection, path=cast_dir / "topics.json")
    result = services.qrels_import(collection=collection, path=cast_dir / "qrels.graded.txt")
    assert result == services.ImportResult(created=29350)
    judgments = GradedJudgment.objects.filter(topic__collection=collection)
    assert judgments.filter(grade__gt=0).count() == 8120
    assert judgments.values("topic").distinct().count() == 173
    assert services.qrels_import(
        collection=collection, path=cast_dir / "qrels.graded.txt"
    ) == services.ImportResult(unchanged=29350)


# runs

RUN_TEXT = "1 Q0 a 1 3.5 sys\n1 Q0 b 2 2.0 sys\n2 Q0 a 1 1.0 sys\n"


def test_run_import_stores_the_file_and_counts(tmp_path, media_root):
    collection = CollectionFactory(name="toy")
    TopicFactory(collection=collection, topic_id="1")
    TopicFactory(collection=collection, topic_id="2")
    path = write(tmp_path, "bm25.run", RUN_TEXT)
    run = services.run_import(collection=collection, path=path)
    assert (run.name, run.line_count, run.topic_count, run.file.name) == ("bm25", 3, 2, "runs/toy/bm25.run")
    assert (media_root / "runs/toy/bm25.run").read_text() == RUN_TEXT
    assert Item.objects.count() == 0


@pytest.mark.parametrize(
    ("text", "line_number", "problem"),
    [
        (RUN_TEXT + "2 Q0 b 2 0.5\n", 4, "expected 6 columns 'topic Q0 docid rank score tag', found 5"),
        (RUN_TEXT + "2 Q0 b second 0.5 sys\n", 4, "rank 'second' is not an integer"),
        (RUN_TEXT + "2 Q0 b 2 high sys\n", 4, "score 'high' is not a number"),
        (
            RUN_TEXT + "3 Q0 b 2 0.5 sys\n",
            4,
            "unknown topic 3: collection toy is strict, so import its topics first (1 unknown topic(s) in this file)",
        ),
        ("\n\n", 1, "the run has no lines"),
    ],
    ids=["wrong-column-count", "non-integer-rank", "non-numeric-score", "unknown-topic", "empty"],
)
def test_run_import_bad_line_changes_nothing(tmp_path, pools_state, text, line_number, problem):
    collection = CollectionFactory(name="toy")
    TopicFactory(collection=collection, topic_id="1")
    TopicFactory(collection=collection, topic_id="2")
    services.run_import(collection=collection, path=write(tmp_path, "kept.run", RUN_TEXT))
    before = pools_state()
    path = write(tmp_path, "bad.run", text)
    with pytest.raises(TrecFormatError) as raised:
        services.run_import(collection=collection, path=path, name="kept", replace=True)
    assert str(raised.value) == f"{path}:{line_number}: {problem}"
    assert pools_state() == before


def test_run_import_existing_name_needs_replace(
    tmp_path, pools_state, media_root, django_capture_on_commit_callbacks
):
    collection = CollectionFactory(name="toy", is_strict=False)
    services.run_import(collection=collection, path=write(tmp_path, "sys.run", RUN_TEXT))
    before = pools_state()
    newer = write(tmp_path, "sys2.run", "5 Q0 z 1 1.0 sys\n")
    with pytest.raises(ImportRejectedError) as raised:
        services.run_import(collection=collection, path=newer, name="sys")
    assert (
        str(raised.value)
        == f"{newer}: collection toy already has a run 'sys' (import with --replace to overwrite)"
    )
    assert pools_state() == before
    # when replaced, the old file goes once the transaction commits
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_import(collection=collection, path=newer, name="sys", replace=True)
    assert (Run.objects.get().pk, run.line_count, run.topic_count) == (before["runs"][0][0], 1, 1)
    assert [path.name for path in (media_root / "runs/toy").iterdir()] == [Path(run.file.name).name]
    assert (media_root / run.file.name).read_text() == "5 Q0 z 1 1.0 sys\n"


def test_run_import_replacing_with_the_same_file_changes_nothing(tmp_path, pools_state):
    collection = CollectionFactory(name="toy", is_strict=False)
    services.run_import(collection=collection, path=write(tmp_path, "sys.run", RUN_TEXT))
    before = pools_state()
    again = services.run_import(
        collection=collection, path=write(tmp_path, "copy.run", RUN_TEXT), name="sys", replace=True
    )
    assert again.file.name == "runs/toy/sys.run"
    assert pools_state() == before


def test_run_import_failure_inside_the_transaction_removes_the_saved_file(tmp_path, pools_state, monkeypatch):
    collection = CollectionFactory(name="toy", is_strict=False)
    before = pools_state()

    def fail(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(Run, "save", fail)
    with pytest.raises(RuntimeError):
        services.run_import(collection=collection, path=write(tmp_path, "sys.run", RUN_TEXT))
    assert pools_state() == before


def test_run_import_rejects_a_name_unsafe_for_a_file(tmp_path):
    collection = CollectionFactory(is_strict=False)
    with pytest.raises(ImportRejectedError, match=r"run name '\.\./x' must be"):
        services.run_import(collection=collection, path=write(tmp_path, "a.run", RUN_TEXT), name="../x")


def test_run_import_of_a_cast_run(cast_dir):
    collection = CollectionFactory(is_strict=False)
    run = services.run_import(collection=collection, path=cast_dir / "runs" / "decaf01.run")
    # README of the data: 19,400 lines, 100 per turn
    assert (run.name, run.line_count, run.topic_count) == ("decaf01", 19400, 194)
    assert Topic.objects.filter(collection=collection).count() == 194


# constraints


def test_database_keeps_one_grade_per_topic_and_item_and_unique_docids():
    judgment = GradedJudgmentFactory(grade=2)
    with pytest.raises(IntegrityError), transaction.atomic():
        GradedJudgment.objects.create(topic=judgment.topic, item=judgment.item, grade=3)
    with pytest.raises(IntegrityError), transaction.atomic():
        Item.objects.create(collection=judgment.item.collection, docid=judgment.item.docid)
    assert (GradedJudgment.objects.get().grade, Item.objects.count()) == (2.0, 1)


# deletion


def test_run_delete_and_collection_delete_remove_files_after_commit(
    tmp_path, media_root, django_capture_on_commit_callbacks
):
    collection = CollectionFactory(name="toy", is_strict=False)
    first = services.run_import(collection=collection, path=write(tmp_path, "one.run", RUN_TEXT))
    services.run_import(collection=collection, path=write(tmp_path, "two.run", RUN_TEXT))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.run_delete(run=first)
    # before commit the file is still there; the callback removes it
    assert (media_root / "runs/toy/one.run").is_file()
    for callback in callbacks:
        callback()
    assert sorted(path.name for path in media_root.rglob("*.run")) == ["two.run"]
    with django_capture_on_commit_callbacks(execute=True):
        services.collection_delete(collection=collection)
    assert list(media_root.rglob("*.run")) == []
    assert (Collection.objects.count(), Topic.objects.count(), Run.objects.count()) == (0, 0, 0)

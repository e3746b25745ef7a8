"""`toppref import` and `toppref collection` (one wiring test per path, plus the error exits)."""

import gzip

import pytest

from config.cli import main
from pools.models import Collection, GradedJudgment, Run
from tests.pools.factories import CollectionFactory, TopicFactory

pytestmark = pytest.mark.django_db


def test_collection_create_and_list(capsys):
    assert main(["collection", "create", "cast", "--lenient"]) == 0
    assert capsys.readouterr().out == "created collection cast (lenient)\n"
    assert main(["collection", "create", "cast"]) == 1
    assert (
        capsys.readouterr().err
        == "toppref collection create: name: Collection with this Name already exists.\n"
    )
    assert main(["collection", "list"]) == 0
    assert capsys.readouterr().out == "cast\tlenient\t0 topics\t0 items\t0 runs\n"


def test_import_all_four_kinds(tmp_path, capsys, media_root):
    topics = tmp_path / "topics.tsv"
    topics.write_text("1\tWhat is a cat?\n")
    passages = tmp_path / "passages.jsonl"
    passages.write_text('{"id": "a", "text": "A cat."}\n')
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 Q0 a 2\n")
    run = tmp_path / "sys.run"
    run.write_text("1 Q0 a 1 2.0 sys\n")
    assert main(["import", "topics", "toy", str(topics), "--create", "strict", "--quiet"]) == 0
    assert main(["import", "passages", "toy", str(passages), "--quiet"]) == 0
    assert main(["import", "qrels", "toy", str(qrels), "--quiet"]) == 0
    assert main(["import", "run", "toy", str(run), "--quiet"]) == 0
    assert capsys.readouterr().out == (
        "toy: topics: 1 created, 0 updated, 0 unchanged\n"
        "toy: passages: 1 created, 0 updated, 0 unchanged\n"
        "toy: graded judgments: 1 created, 0 updated, 0 unchanged\n"
        "toy: run sys: 1 lines over 1 topics, stored as runs/toy/sys.run\n"
    )
    assert Collection.objects.get().is_strict is True
    assert GradedJudgment.objects.get().grade == 2.0
    assert Run.objects.get().line_count == 1


def test_import_cast_topics_with_resolved(cast_dir, capsys):
    CollectionFactory(name="cast")
    status = main(
        [
            "import",
            "topics",
            "cast",
            str(cast_dir / "topics.json"),
            "--resolved",
            str(cast_dir / "questions.resolved.tsv"),
        ]
    )
    assert status == 0
    assert capsys.readouterr().out == "cast: topics: 479 created, 0 updated, 0 unchanged\n"


def test_import_bad_line_exits_1_with_file_line_problem(tmp_path, capsys, pools_state):
    collection = CollectionFactory(name="toy")
    TopicFactory(collection=collection, topic_id="1")
    before = pools_state()
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 Q0 a 2\n1 Q0 b two\n")
    assert main(["import", "qrels", "toy", str(qrels), "--quiet"]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == (
        "",
        f"toppref import qrels: {qrels}:2: grade 'two' is not a number (nothing imported)\n",
    )
    assert pools_state() == before


def test_import_into_missing_collection_or_missing_file(tmp_path, capsys):
    assert main(["import", "qrels", "nope", str(tmp_path / "q.txt")]) == 1
    assert capsys.readouterr().err == (
        "toppref import qrels: no collection 'nope' (create it with 'toppref collection create' or --create)\n"
    )
    CollectionFactory(name="toy")
    assert main(["import", "qrels", "toy", str(tmp_path / "q.txt")]) == 1
    assert capsys.readouterr().err == (
        f"toppref import qrels: {tmp_path / 'q.txt'}: No such file or directory (nothing imported)\n"
    )


def test_import_topics_turns_format(tmp_path, capsys):
    collection = CollectionFactory(name="toy")
    TopicFactory(collection=collection, topic_id="c1_1")
    turns = tmp_path / "conversations.tsv"
    turns.write_text("c1_1\tc1\t1\thow long do I boil an egg\n")
    assert main(["import", "topics", "toy", str(turns), "--format", "turns"]) == 0
    assert capsys.readouterr().out == "toy: topics: 0 created, 1 updated, 0 unchanged\n"
    assert collection.topics.get().utterance == "how long do I boil an egg"


@pytest.mark.parametrize(
    ("kind", "name", "text", "problem"),
    [
        ("qrels", "q.txt", "1 Q0 a 2\n1 Q0 b two\n", "2: grade 'two' is not a number"),
        (
            "run",
            "sys.run",
            "1 Q0 a 1 2.0 sys\n1 Q0 b 2 1.0\n",
            "2: expected 6 columns 'topic Q0 docid rank score tag', found 5",
        ),
    ],
)
def test_import_create_with_a_bad_file_leaves_no_collection(
    tmp_path, capsys, pools_state, kind, name, text, problem
):
    # given no collection yet
    before = pools_state()
    path = tmp_path / name
    path.write_text(text)
    # when --create meets a bad line
    assert main(["import", kind, "new", str(path), "--create", "lenient", "--quiet"]) == 1
    # then the collection it made is gone again
    assert capsys.readouterr().err == f"toppref import {kind}: {path}:{problem} (nothing imported)\n"
    assert pools_state() == before


def test_import_create_with_a_bad_collection_name(tmp_path, capsys, pools_state):
    before = pools_state()
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 Q0 a 2\n")
    assert main(["import", "qrels", "not a slug", str(qrels), "--create", "strict"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("toppref import qrels: name: ") and err.endswith(" (nothing imported)\n")
    assert pools_state() == before


def test_import_resolved_with_tsv_topics_is_a_usage_error(tmp_path, capsys, pools_state):
    before = pools_state()
    topics = tmp_path / "topics.tsv"
    topics.write_text("1\tWhat is a cat?\n")
    assert (
        main(["import", "topics", "new", str(topics), "--resolved", str(topics), "--create", "strict"]) == 2
    )
    assert capsys.readouterr().err == "toppref import topics: --resolved only applies to CAsT JSON topics\n"
    assert pools_state() == before


# Files PostgreSQL used to refuse with a DataError traceback and SQLite imported: now refused by the reader on
# both databases, with file:line: problem and exit status 1.
LIMIT_CASES = [
    (
        "qrels",
        "q.txt",
        f"1 Q0 a 1\n1 Q0 {'d' * 201} 2\n",
        f"docid '{'d' * 40}...' is 201 characters long (at most 200)",
    ),
    (
        "qrels",
        "q.txt",
        f"1 Q0 a 1\n{'t' * 101} Q0 b 2\n",
        f"topic id '{'t' * 40}...' is 101 characters long (at most 100)",
    ),
    ("qrels", "q.txt", "1 Q0 a 1\n1 Q0 b\x00 2\n", "NUL character at column 7"),
    (
        "run",
        "r.run",
        f"1 Q0 a 1 2 r\n{'t' * 101} Q0 b 2 1 r\n",
        f"topic id '{'t' * 40}...' is 101 characters long (at most 100)",
    ),
    ("topics", "t.tsv", "1\tWhy?\n2\tWhy\x00 not?\n", "NUL character at column 6"),
    (
        "topics",
        "c.json",
        '[{"number": 1,\n "turn": [{"number": 2147483648, "raw_utterance": "Hi"}]}]',
        'conversation 1, turn #1: "number" is out of range (0 to 2147483647)',
    ),
    ("passages", "p.jsonl", '{"id": "a", "text": "x\\u0000y"}\n', "NUL character in the text of docid a"),
]


@pytest.mark.parametrize(("kind", "name", "text", "problem"), LIMIT_CASES, ids=lambda value: str(value)[:12])
def test_import_refuses_what_a_database_would_refuse(
    tmp_path, capsys, media_root, pools_state, kind, name, text, problem
):
    CollectionFactory(name="toy", is_strict=False)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    before = pools_state()
    line = 1 if kind in ("passages", "topics") and name != "t.tsv" else 2
    assert main(["import", kind, "toy", str(path), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("toppref import") and err.endswith(
        f": {path}:{line}: {problem} (nothing imported)\n"
    )
    assert err.count("\n") == 1
    assert pools_state() == before


def test_import_all_four_kinds_from_gzip(tmp_path, capsys, media_root):
    files = {
        "topics.json.gz": '[{"number": 1, "turn": [{"number": 1, "raw_utterance": "What is a cat?"}]}]',
        "passages.jsonl.gz": '{"id": "a", "text": "A cat."}\n',
        "qrels.txt.gz": "1_1 Q0 a 2.5\n",
        "input.sys.gz": "1_1 Q0 a 1 2.0 sys\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_bytes(gzip.compress(text.encode()))
    assert (
        main(["import", "topics", "toy", str(tmp_path / "topics.json.gz"), "--create", "strict", "--quiet"])
        == 0
    )
    for kind, name in (("passages", "passages.jsonl.gz"), ("qrels", "qrels.txt.gz"), ("run", "input.sys.gz")):
        assert main(["import", kind, "toy", str(tmp_path / name), "--quiet"]) == 0
    assert capsys.readouterr().out == (
        "toy: topics: 1 created, 0 updated, 0 unchanged\n"
        "toy: passages: 1 created, 0 updated, 0 unchanged\n"
        "toy: graded judgments: 1 created, 0 updated, 0 unchanged\n"
        "toy: run sys: 1 lines over 1 topics, stored as runs/toy/sys.run\n"
    )
    assert (media_root / "runs/toy/sys.run").read_text() == "1_1 Q0 a 1 2.0 sys\n"

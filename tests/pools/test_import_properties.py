"""Hostile files against the importers, on whichever database the suite runs on (CI runs it on PostgreSQL and
on SQLite). The rule: a clear ``file:line: problem`` error and nothing imported, or a correct import; never a
traceback. The expected outcome is computed from the pure readers alone, before any database is involved,
so an outcome equal to it on both databases is the same outcome on both."""

import json
import re
import shutil
import uuid
from pathlib import Path

import pytest
from django.db import transaction
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pools import services, trec
from pools.models import Collection, GradedJudgment, Item, Run, Topic
from trecio import TrecFormatError

pytestmark = pytest.mark.django_db

PROPERTY_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Fields that are fine, fields at and past the database's limits, numbers at and past every range, and
# characters that separate columns in some parsers and not in others.
FIELDS = st.one_of(
    st.sampled_from(
        [
            "1",
            "31_1",
            "31_2",
            "d1",
            "d2",
            "Q0",
            "0",
            "3",
            "2.5",
            "-1",
            "-0",
            "1e-320",
            "1e308",
            "1e400",
            "nan",
            "inf",
            "2147483647",
            "2147483648",
            "-2147483649",
            "9" * 30,
            "x" * 200,
            "x" * 201,
            "t" * 100,
            "t" * 101,
            "a\u00a0b",
            "\u00e9t\u00e9",
            "\U0001f600",
            "\ufeff",
            "\x00",
            "\x0b",
            "\x1c",
            "\x7f",
            "\u2028",
            "\u3000",
            "\r",
        ]
    ),
    st.text(max_size=6),
)
SEPARATORS = st.sampled_from([" ", "\t", "  ", " \t ", "\u00a0", "\x0c"])
LINE_ENDS = st.sampled_from(["\n", "\r\n", "\r\r\n"])


@st.composite
def column_files(draw, columns: int) -> bytes:
    """Lines of about ``columns`` fields, with an optional byte-order mark, CRLF, and stray raw bytes."""
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        count = draw(st.sampled_from([columns, columns, columns, columns - 1, columns + 1, 0]))
        fields = draw(st.lists(FIELDS, min_size=count, max_size=count))
        separator = draw(SEPARATORS) if draw(st.integers(0, 4)) == 0 else " "
        lines.append(separator.join(fields) + draw(LINE_ENDS))
    data = "".join(lines).encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if data and draw(st.integers(0, 5)) == 0:
        position = draw(st.integers(0, len(data)))
        data = (
            data[:position]
            + draw(st.sampled_from([b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80"]))
            + data[position:]
        )
    return data


def any_bytes(columns: int):
    return st.one_of(column_files(columns), st.binary(max_size=120))


def qrels_lines():
    """Well-formed lines whose fields reach, or pass by one, each limit."""
    line = st.tuples(
        st.sampled_from(["1", "31_1", "t" * 100, "a\u00a0b", "t" * 101]),
        st.sampled_from(["d1", "d2", "x" * 200, "\U0001f600", "x" * 201]),
        st.sampled_from(["0", "1", "4", "2.5", "-1", "1e-320", "1e308", "1e309"]),
    )
    return st.lists(line, min_size=1, max_size=6).map(
        lambda rows: "".join(f"{t} Q0 {d} {v}\n" for t, d, v in rows).encode("utf-8")
    )


def run_lines():
    """Well-formed lines whose fields reach, or pass by one, each limit."""
    line = st.tuples(
        st.sampled_from(["1", "31_1", "t" * 100, "a\u00a0b", "t" * 101]),
        st.sampled_from(["d1", "d2", "x" * 200, "\U0001f600", "x" * 201]),
        st.sampled_from(["0", "1", "-5", "2147483647", "-2147483648", "2147483648"]),
        st.sampled_from(["0", "2.5", "-1", "1e-320", "1e308"]),
        st.sampled_from(["\n", "\r\n"]),
    )
    return st.tuples(st.booleans(), st.lists(line, min_size=1, max_size=6)).map(
        lambda drawn: (
            (b"\xef\xbb\xbf" if drawn[0] else b"")
            + "".join(f"{t} Q0 {d} {r} {s} run{end}" for t, d, r, s, end in drawn[1]).encode("utf-8")
        )
    )


ERROR_PATTERN = r"{path}(:[1-9][0-9]*)?: [^\n]+"


def outcome_of(call):
    try:
        result = ("ok", call())
        event("accepted")
        return result
    except TrecFormatError as error:
        event("refused: " + re.sub(r"[0-9]+|'.*'", "#", error.problem)[:50])
        return ("error", str(error))


def assert_clear_error(message: str, path: Path) -> None:
    assert re.fullmatch(ERROR_PATTERN.format(path=re.escape(str(path))), message), message


def rows_of(collection: Collection) -> dict:
    return {
        "topics": sorted(
            Topic.objects.filter(collection=collection).values_list(
                "topic_id", "question", "conversation_id", "turn", "utterance"
            )
        ),
        "items": sorted(Item.objects.filter(collection=collection).values_list("docid", "text")),
        "grades": sorted(
            GradedJudgment.objects.filter(topic__collection=collection).values_list(
                "topic__topic_id", "item__docid", "grade"
            )
        ),
        "runs": sorted(
            Run.objects.filter(collection=collection).values_list("name", "line_count", "topic_count")
        ),
    }


NOTHING = {"topics": [], "items": [], "grades": [], "runs": []}


def in_a_fresh_collection(test):
    """Run ``test(collection)`` in a lenient collection of its own, rolled back afterwards."""
    with transaction.atomic():
        collection = services.collection_create(name=f"p-{uuid.uuid4().hex[:12]}", is_strict=False)
        test(collection)
        transaction.set_rollback(True)


@pytest.fixture
def file_path(tmp_path, media_root):
    def make(name: str, data: bytes) -> Path:
        shutil.rmtree(media_root, ignore_errors=True)
        path = tmp_path / name
        path.write_bytes(data)
        return path

    return make


@PROPERTY_SETTINGS
@given(data=st.one_of(any_bytes(4), qrels_lines()))
def test_qrels_import_of_hostile_files(file_path, data):
    path = file_path("q.txt", data)
    expected = outcome_of(lambda: trec.read_qrels(path))

    def check(collection):
        actual = outcome_of(lambda: services.qrels_import(collection=collection, path=path))
        if expected[0] == "error":
            assert actual == expected
            assert_clear_error(actual[1], path)
            assert rows_of(collection) == NOTHING
        else:
            assert actual[0] == "ok"
            grades = expected[1]
            assert rows_of(collection) == {
                "topics": sorted((topic_id, "", "", None, "") for topic_id in grades),
                "items": sorted({(docid, "") for values in grades.values() for docid in values}),
                "grades": sorted((t, d, v) for t, values in grades.items() for d, v in values.items()),
                "runs": [],
            }

    in_a_fresh_collection(check)


@PROPERTY_SETTINGS
@given(data=st.one_of(any_bytes(6), run_lines()))
def test_run_import_of_hostile_files(file_path, media_root, data):
    path = file_path("r.run", data)

    def read():
        lines = list(trec.iter_run(path))
        if not lines:
            raise TrecFormatError(path, 1, "the run has no lines")
        return lines

    expected = outcome_of(read)

    def check(collection):
        actual = outcome_of(lambda: services.run_import(collection=collection, path=path, name="r"))
        files = sorted(p.name for p in media_root.rglob("*") if p.is_file())
        if expected[0] == "error":
            assert actual == expected
            assert_clear_error(actual[1], path)
            assert (rows_of(collection), files) == (NOTHING, [])
        else:
            assert actual[0] == "ok"
            topics = {line.topic_id for line in expected[1]}
            assert rows_of(collection) == {
                "topics": sorted((topic_id, "", "", None, "") for topic_id in topics),
                "items": [],
                "grades": [],
                "runs": [("r", len(expected[1]), len(topics))],
            }
            assert files == ["r.run"]
            assert (media_root / actual[1].file.name).read_bytes() == data

    in_a_fresh_collection(check)


@PROPERTY_SETTINGS
@given(data=any_bytes(2).map(lambda data: data.replace(b" ", b"\t", 1)))
def test_topics_tsv_import_of_hostile_files(file_path, data):
    path = file_path("t.tsv", data)

    def read():
        questions = {}
        for line_number, topic_id, question in trec.iter_topics_tsv(path):
            if topic_id in questions and questions[topic_id][1] != question:
                raise TrecFormatError(
                    path,
                    line_number,
                    f"{topic_id} repeats line {questions[topic_id][0]} with a different question",
                )
            questions.setdefault(topic_id, (line_number, question))
        return {topic_id: question for topic_id, (_, question) in questions.items()}

    expected = outcome_of(read)

    def check(collection):
        actual = outcome_of(lambda: services.topics_import_tsv(collection=collection, path=path))
        if expected[0] == "error":
            assert actual == expected
            assert_clear_error(actual[1], path)
            assert rows_of(collection) == NOTHING
        else:
            assert actual == ("ok", services.ImportResult(created=len(expected[1])))
            assert rows_of(collection)["topics"] == sorted(
                (topic_id, question, "", None, "") for topic_id, question in expected[1].items()
            )

    in_a_fresh_collection(check)


JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**31 - 1, 2**31, 10**20, -1, 0, 1]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", " ", "1", "x" * 101, "a b", "a\u0000b", "\ud800", "31"]),
    st.text(max_size=5),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=6,
)
TURNS = st.lists(
    st.fixed_dictionaries(
        {
            "number": st.one_of(st.integers(0, 5), JSON_SCALARS),
            "raw_utterance": st.one_of(st.just("What?"), JSON_SCALARS),
        }
    ),
    max_size=3,
)
CONVERSATIONS = st.fixed_dictionaries(
    {"number": st.one_of(st.integers(1, 3), JSON_SCALARS), "turn": st.one_of(TURNS, JSON_VALUES)}
)


@st.composite
def cast_files(draw) -> bytes:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(st.binary(max_size=80))
    if kind == 1:
        return json.dumps(draw(JSON_VALUES)).encode("utf-8", "surrogatepass")
    depth = draw(st.sampled_from([0, 0, 0, 10_000, 100_000]))
    conversations = draw(st.lists(st.one_of(CONVERSATIONS, JSON_VALUES), max_size=3))
    text = json.dumps(conversations, indent=draw(st.sampled_from([None, 1])))
    if depth:
        text = text[:1] + "[" * depth + "]" * depth + ("," if conversations else "") + text[1:]
    data = text.encode("utf-8", "surrogatepass")
    return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + data


@PROPERTY_SETTINGS
@given(data=cast_files())
def test_cast_topics_import_of_hostile_files(file_path, data):
    path = file_path("c.json", data)
    expected = outcome_of(lambda: trec.read_cast_topics(path))

    def check(collection):
        actual = outcome_of(lambda: services.topics_import_cast(collection=collection, path=path))
        if expected[0] == "error":
            assert actual == expected
            assert_clear_error(actual[1], path)
            assert rows_of(collection) == NOTHING
        else:
            assert actual == ("ok", services.ImportResult(created=len(expected[1])))
            assert rows_of(collection)["topics"] == sorted(
                (turn.topic_id, turn.utterance, turn.conversation_id, turn.turn, turn.utterance)
                for turn in expected[1]
            )

    in_a_fresh_collection(check)

"""The line rules both readers share (trecio.text): byte-order mark, ASCII space and tab between columns,
control characters, ``*.gz``, and the database's limits checked before any database is touched."""

import gzip
import json

import pytest

import metrics.core.readers as columnar
import pools.trec as streaming
from config.cli import main
from trecio import MAX_DOCID_LENGTH, MAX_INTEGER, MAX_TOPIC_ID_LENGTH, TrecFormatError


def write(tmp_path, name, data):
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(data if isinstance(data, bytes) else data.encode("utf-8")))
    elif isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def streamed_qrels(path):
    return {
        (topic, docid): value
        for topic, grades in streaming.read_qrels(path).items()
        for docid, value in grades.items()
    }


def columnar_qrels(path):
    qrels = columnar.read_qrels(path)
    return dict(zip(zip(qrels.topic, qrels.docid, strict=True), qrels.value.tolist(), strict=True))


BOM_QRELS = b"\xef\xbb\xbf31_1 Q0 d1 3\n31_1 Q0 d2 2\n31_1 Q0 d3 1\n"


def test_a_byte_order_mark_makes_no_phantom_topic(tmp_path):
    path = write(tmp_path, "bom.txt", BOM_QRELS)
    expected = {("31_1", "d1"): 3.0, ("31_1", "d2"): 2.0, ("31_1", "d3"): 1.0}
    assert streamed_qrels(path) == columnar_qrels(path) == expected


def test_thin_on_a_file_with_a_byte_order_mark(tmp_path, capsys):
    path = write(tmp_path, "bom.txt", BOM_QRELS)
    status = main(["thin", "-k", "2", str(path)])
    assert (status, capsys.readouterr().out) == (0, "31_1 Q0 d1 3\n31_1 Q0 d2 2\n")


def test_a_byte_order_mark_in_every_other_format(tmp_path):
    bom = "\ufeff"
    assert [
        line.topic_id for line in streaming.iter_run(write(tmp_path, "r.run", f"{bom}1 Q0 a 1 2 r\n"))
    ] == ["1"]
    assert list(streaming.iter_topics_tsv(write(tmp_path, "t.tsv", f"{bom}1\tWhy?\n"))) == [(1, "1", "Why?")]
    assert list(streaming.iter_passages_tsv(write(tmp_path, "p.tsv", f"{bom}d1\tText\n"))) == [
        (1, "d1", "Text")
    ]
    jsonl = write(tmp_path, "p.jsonl", bom + json.dumps({"id": "d1", "text": "Text"}) + "\n")
    assert list(streaming.iter_passages_jsonl(jsonl)) == [(1, "d1", "Text")]
    cast = write(
        tmp_path, "c.json", bom + json.dumps([{"number": 31, "turn": [{"number": 1, "raw_utterance": "Hi"}]}])
    )
    assert [turn.topic_id for turn in streaming.read_cast_topics(cast)] == ["31_1"]
    assert columnar.read_run(write(tmp_path, "r2.run", f"{bom}1 Q0 a 1 2 r\n")).topic.to_pylist() == ["1"]


def test_columns_split_at_ascii_spaces_and_tabs_only(tmp_path):
    # given a no-break space and an ideographic space inside docids, tabs and runs of spaces between columns
    path = write(tmp_path, "q.txt", "1 Q0 a\u00a0b 2\n1\tQ0\t\tc\u3000d   1\r\n")
    expected = {("1", "a\u00a0b"): 2.0, ("1", "c\u3000d"): 1.0}
    assert streamed_qrels(path) == columnar_qrels(path) == expected


@pytest.mark.parametrize("character", ["\x0b", "\x0c", "\x1c", "\x1f", "\x7f", "\r"])
def test_a_control_character_is_refused_by_both_readers(tmp_path, character):
    path = write(tmp_path, "q.txt", f"1 Q0 a 1\n1 Q0 b{character}c 2\n")
    for read in (streaming.read_qrels, columnar.read_qrels):
        with pytest.raises(TrecFormatError) as raised:
            read(path)
        assert (raised.value.line_number, raised.value.problem) == (
            2,
            f"control character {character!r} at column 7",
        )
    run = write(tmp_path, "r.run", f"1 Q0 a 1 2 r\n1 Q0 b{character}c 2 1 r\n")
    for read in (lambda p: list(streaming.iter_run(p)), columnar.read_run):
        with pytest.raises(TrecFormatError) as raised:
            read(run)
        assert raised.value.line_number == 2


def test_a_nul_is_refused_by_both_readers(tmp_path):
    path = write(tmp_path, "q.txt", b"1 Q0 a 1\n1 Q0 b\x00 2\n")
    for read in (streaming.read_qrels, columnar.read_qrels):
        with pytest.raises(TrecFormatError) as raised:
            read(path)
        assert (raised.value.line_number, raised.value.problem) == (2, "NUL character at column 7")


def test_both_readers_read_gzip(tmp_path):
    qrels = write(tmp_path, "q.txt.gz", "1 Q0 a 1\n1 Q0 b 2.5\n")
    assert streamed_qrels(qrels) == columnar_qrels(qrels) == {("1", "a"): 1.0, ("1", "b"): 2.5}
    run = write(tmp_path, "input.bm25.gz", "1 Q0 a 1 2 bm25\n1 Q0 b 2 1 bm25\n")
    assert [(line.docid, line.score) for line in streaming.iter_run(run, progress=True)] == [
        ("a", 2.0),
        ("b", 1.0),
    ]
    assert columnar.read_run(run).docid.to_pylist() == ["a", "b"]
    cast = write(
        tmp_path, "c.json.gz", json.dumps([{"number": 3, "turn": [{"number": 2, "raw_utterance": "Hi"}]}])
    )
    assert [turn.topic_id for turn in streaming.read_cast_topics(cast)] == ["3_2"]


def test_a_bad_line_in_a_gzip_file_is_named(tmp_path):
    path = write(tmp_path, "q.txt.gz", "1 Q0 a 1\n1 Q0 b high\n")
    for read in (streaming.read_qrels, columnar.read_qrels):
        with pytest.raises(TrecFormatError) as raised:
            read(path)
        assert str(raised.value).startswith(f"{path}:2: ")
        assert str(raised.value).endswith(" 'high' is not a number")


def test_a_corrupt_gzip_file_is_an_error_not_a_traceback(tmp_path):
    path = tmp_path / "q.txt.gz"
    path.write_bytes(b"not gzip at all\n")
    for read in (streaming.read_qrels, columnar.read_qrels, columnar.read_run):
        with pytest.raises(TrecFormatError) as raised:
            read(path)
        assert raised.value.line_number is None and raised.value.problem.startswith(
            "not a readable gzip file"
        )
    truncated = tmp_path / "t.run.gz"
    truncated.write_bytes(gzip.compress(b"1 Q0 a 1 2 r\n" * 1000)[:-20])
    for read in (lambda p: list(streaming.iter_run(p)), columnar.read_run):
        with pytest.raises(TrecFormatError, match="not a readable gzip file"):
            read(truncated)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            f"1 Q0 {'d' * (MAX_DOCID_LENGTH + 1)} 1",
            f"docid '{'d' * 40}...' is 201 characters long (at most 200)",
        ),
        (
            f"{'t' * (MAX_TOPIC_ID_LENGTH + 1)} Q0 d 1",
            f"topic id '{'t' * 40}...' is 101 characters long (at most 100)",
        ),
        ("1 Q0 d 1e400", "grade '1e400' is not a finite number"),
        ("1 Q0 d -inf", "grade '-inf' is not a finite number"),
        ("1 Q0 d " + "9" * 5000, "grade '" + "9" * 40 + "...' is not a finite number"),
    ],
    ids=["long-docid", "long-topic", "overflow", "infinity", "5000-digits"],
)
def test_qrels_limits(tmp_path, line, problem):
    path = write(tmp_path, "q.txt", f"1 Q0 a 1\n{line}\n")
    with pytest.raises(TrecFormatError) as raised:
        streaming.read_qrels(path)
    assert (raised.value.line_number, raised.value.problem) == (2, problem)


def test_the_longest_ids_are_accepted(tmp_path):
    topic, docid = "t" * MAX_TOPIC_ID_LENGTH, "d" * MAX_DOCID_LENGTH
    assert streamed_qrels(write(tmp_path, "q.txt", f"{topic} Q0 {docid} 1\n")) == {(topic, docid): 1.0}


@pytest.mark.parametrize(
    ("rank", "problem"),
    [
        (str(MAX_INTEGER + 1), "rank 2147483648 is out of range (-2147483648 to 2147483647)"),
        ("9" * 5000, f"rank {'9' * 40}... is out of range (-2147483648 to 2147483647)"),
        ("1.5", "rank '1.5' is not an integer"),
        ("\u00b2", "rank '\u00b2' is not an integer"),
    ],
)
def test_run_rank_limits(tmp_path, rank, problem):
    path = write(tmp_path, "r.run", f"1 Q0 a 1 2 r\n1 Q0 b {rank} 1 r\n")
    with pytest.raises(TrecFormatError) as raised:
        list(streaming.iter_run(path))
    assert (raised.value.line_number, raised.value.problem) == (2, problem)


def test_turn_limits_in_turns_tsv(tmp_path):
    assert [
        t.turn for t in streaming.iter_turns_tsv(write(tmp_path, "ok.tsv", f"1_1\t1\t{MAX_INTEGER}\tHi\n"))
    ] == [MAX_INTEGER]
    path = write(tmp_path, "c.tsv", f"1_1\t1\t1\tHi\n1_2\t1\t{MAX_INTEGER + 1}\tHo\n")
    with pytest.raises(TrecFormatError) as raised:
        list(streaming.iter_turns_tsv(path))
    assert (raised.value.line_number, raised.value.problem) == (
        2,
        "turn 2147483648 is out of range (0 to 2147483647)",
    )


def cast_json(turn_number, conversation="31", utterance="Hi"):
    """A CAsT topics file on one line: conversation ``conversation`` (JSON text), turn 1 and a second turn."""
    return (
        f'[{{"number": {conversation}, "turn": [{{"number": 1, "raw_utterance": "Hi"}}, '
        f'{{"number": {turn_number}, "raw_utterance": {json.dumps(utterance)}}}]}}]'
    )


@pytest.mark.parametrize(
    ("text", "line_number", "problem"),
    [
        (cast_json("1e20"), 1, 'conversation 31, turn #2: "number" is not an integer'),
        (cast_json(str(10**20)), 1, 'conversation 31, turn #2: "number" is out of range (0 to 2147483647)'),
        (cast_json(str(2**31)), 1, 'conversation 31, turn #2: "number" is out of range (0 to 2147483647)'),
        (cast_json("-1"), 1, 'conversation 31, turn #2: "number" is out of range (0 to 2147483647)'),
        (
            cast_json("9" * 5000),
            1,
            "bad JSON: a number too long to read",
        ),
        (
            cast_json(2, utterance="a\u0000b"),
            1,
            'NUL character in the "raw_utterance" of conversation 31, turn 2',
        ),
        (
            cast_json(2, utterance="a\ud800b"),
            1,
            'lone surrogate (not Unicode text) in the "raw_utterance" of conversation 31, turn 2',
        ),
        (
            cast_json(2, conversation=json.dumps("c" * 99)),
            1,
            f"topic id '{'c' * 40}...' is 101 characters long (at most 100)",
        ),
        (
            cast_json(2, conversation=json.dumps("c" * 101)),
            1,
            f"conversation id '{'c' * 40}...' is 101 characters long (at most 100)",
        ),
        ("[\n" + "[" * 100_000 + "]" * 100_000 + "\n]", 2, "bad JSON: nested too deeply"),
        ("[\n" + "[" * 100_000, 2, "bad JSON: nested too deeply"),
    ],
    ids=[
        "float-turn",
        "huge-turn",
        "turn-2^31",
        "negative-turn",
        "5000-digit-turn",
        "nul",
        "surrogate",
        "long-topic-id",
        "long-conversation-id",
        "deep-nesting",
        "deep-nesting-unclosed",
    ],
)
def test_cast_topics_limits(tmp_path, text, line_number, problem):
    path = write(tmp_path, "c.json", text)
    with pytest.raises(TrecFormatError) as raised:
        streaming.read_cast_topics(path)
    assert (raised.value.line_number, raised.value.problem) == (line_number, problem)


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({"id": "d\u0000", "text": "x"}, "NUL character in the docid"),
        ({"id": "d", "text": "x\u0000y"}, "NUL character in the text of docid d"),
        ({"id": "d" * 201, "text": "x"}, f"docid '{'d' * 40}...' is 201 characters long (at most 200)"),
        ({"id": "d", "text": "x\ud800"}, "lone surrogate (not Unicode text) in the text of docid d"),
    ],
    ids=["nul-docid", "nul-text", "long-docid", "surrogate"],
)
def test_passages_jsonl_limits(tmp_path, record, problem):
    path = write(
        tmp_path, "p.jsonl", json.dumps({"id": "a", "text": "ok"}) + "\n" + json.dumps(record) + "\n"
    )
    with pytest.raises(TrecFormatError) as raised:
        list(streaming.iter_passages_jsonl(path))
    assert (raised.value.line_number, raised.value.problem) == (2, problem)


def test_passages_jsonl_deep_nesting_and_huge_numbers(tmp_path):
    path = write(tmp_path, "p.jsonl", "[" * 100_000 + "\n")
    with pytest.raises(TrecFormatError) as raised:
        list(streaming.iter_passages_jsonl(path))
    assert (raised.value.line_number, raised.value.problem) == (1, "bad JSON: nested too deeply")
    path = write(tmp_path, "p2.jsonl", '{"id": ' + "9" * 5000 + ', "text": "x"}\n')
    with pytest.raises(TrecFormatError) as raised:
        list(streaming.iter_passages_jsonl(path))
    assert (raised.value.line_number, raised.value.problem) == (1, "bad JSON: a number too long to read")

"""The TREC readers: what they accept, and the file:line: problem of each kind of bad line."""

import json

import pytest

from pools import trec
from pools.trec import TrecFormatError


def write(tmp_path, name, text, mode="w"):
    path = tmp_path / name
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_trec_format_error_str_is_path_line_problem():
    error = TrecFormatError("a/qrels.txt", 7, "grade 'x' is not a number")
    assert (error.path, error.line_number, error.problem) == ("a/qrels.txt", 7, "grade 'x' is not a number")
    assert str(error) == "a/qrels.txt:7: grade 'x' is not a number"
    assert isinstance(error, ValueError)


def test_iter_qrels_accepts_spaces_tabs_floats_and_blank_lines(tmp_path):
    path = write(tmp_path, "q.txt", "31_1 Q0 d1 4\n31_1\t0\td2\t2.5\r\n\n  \n32_1  Q0   d3 -1\n")
    assert list(trec.iter_qrels(path)) == [
        (1, "31_1", "d1", 4.0),
        (2, "31_1", "d2", 2.5),
        (5, "32_1", "d3", -1.0),
    ]


@pytest.mark.parametrize(
    ("text", "line_number", "problem"),
    [
        ("1 Q0 a 1\n1 Q0 b\n", 2, "expected 4 columns 'topic Q0 docid grade', found 3"),
        ("1 Q0 a 1 extra\n", 1, "expected 4 columns 'topic Q0 docid grade', found 5"),
        ("1 Q0 a 1\n\n1 Q0 b high\n", 3, "grade 'high' is not a number"),
        ("1 Q0 a nan\n", 1, "grade 'nan' is not a finite number"),
        ("1 Q0 a inf\n", 1, "grade 'inf' is not a finite number"),
    ],
)
def test_iter_qrels_rejects_bad_line_with_its_number(tmp_path, text, line_number, problem):
    path = write(tmp_path, "q.txt", text)
    with pytest.raises(TrecFormatError) as raised:
        list(trec.iter_qrels(path))
    assert (raised.value.path, raised.value.line_number, raised.value.problem) == (
        str(path),
        line_number,
        problem,
    )


def test_iter_lines_rejects_bytes_that_are_not_utf8(tmp_path):
    path = write(tmp_path, "q.txt", b"1 Q0 a 1\n1 Q0 \xff 1\n", mode="wb")
    with pytest.raises(TrecFormatError) as raised:
        list(trec.iter_qrels(path))
    assert raised.value.line_number == 2
    assert raised.value.problem == "not UTF-8 text (invalid start byte at byte 5)"


def test_read_qrels_keeps_same_duplicate_and_names_both_lines_of_a_conflict(tmp_path):
    same = write(tmp_path, "same.txt", "1 Q0 a 2\n1 Q0 b 1\n1 Q0 a 2.0\n")
    assert trec.read_qrels(same) == {"1": {"a": 2.0, "b": 1.0}}
    conflicting = write(tmp_path, "conflict.txt", "1 Q0 a 2\n2 Q0 a 1\n1 Q0 b 0\n1 Q0 a 3\n")
    with pytest.raises(TrecFormatError) as raised:
        trec.read_qrels(conflicting)
    assert (
        str(raised.value) == f"{conflicting}:4: grade 3 for topic 1 docid a conflicts with grade 2 on line 1"
    )


def test_read_qrels_of_cast_counts_match_the_data_readme(cast_dir):
    qrels = trec.read_qrels(cast_dir / "qrels.graded.txt")
    assert len(qrels) == 173
    assert sum(len(grades) for grades in qrels.values()) == 29350
    assert sum(1 for grades in qrels.values() for grade in grades.values() if grade > 0) == 8120


def test_iter_run_parses_six_columns(tmp_path):
    path = write(tmp_path, "r.run", "31_1 Q0 d1 0 12.5 tag\n31_1\tQ0\td2\t1\t-3e2\ttag\n")
    assert list(trec.iter_run(path)) == [
        trec.RunLine(1, "31_1", "d1", 0, 12.5, "tag"),
        trec.RunLine(2, "31_1", "d2", 1, -300.0, "tag"),
    ]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("31_1 Q0 d2 2 1.0", "expected 6 columns 'topic Q0 docid rank score tag', found 5"),
        ("31_1 Q0 d2 two 1.0 tag", "rank 'two' is not an integer"),
        ("31_1 Q0 d2 2.5 1.0 tag", "rank '2.5' is not an integer"),
        ("31_1 Q0 d2 2 high tag", "score 'high' is not a number"),
    ],
)
def test_iter_run_rejects_bad_line_with_its_number(tmp_path, line, problem):
    path = write(tmp_path, "r.run", f"31_1 Q0 d1 1 2.0 tag\n{line}\n")
    with pytest.raises(TrecFormatError) as raised:
        list(trec.iter_run(path))
    assert (raised.value.line_number, raised.value.problem) == (2, problem)


def test_iter_topics_tsv(tmp_path):
    path = write(tmp_path, "t.tsv", "1\tWhat is a cat?\n2\t What\tis a dog? \n")
    assert list(trec.iter_topics_tsv(path)) == [(1, "1", "What is a cat?"), (2, "2", "What\tis a dog?")]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("3 What is a cow?", "expected 'topic_id<TAB>question', found no tab"),
        ("\tWhy?", "empty topic id"),
        ("3 b\tWhy?", "topic id '3 b' contains white space or a control character"),
        ("3\t ", "empty question for topic 3"),
    ],
)
def test_iter_topics_tsv_rejects_bad_line(tmp_path, line, problem):
    path = write(tmp_path, "t.tsv", f"1\tWhat is a cat?\n{line}\n")
    with pytest.raises(TrecFormatError) as raised:
        list(trec.iter_topics_tsv(path))
    assert (raised.value.line_number, raised.value.problem) == (2, problem)


def test_iter_passages_tsv_and_jsonl(tmp_path):
    tsv = write(tmp_path, "p.tsv", "d1\tA cat <b>purrs</b>.\nd2\tTabs\tinside\n")
    jsonl = write(
        tmp_path,
        "p.jsonl",
        '{"id": "d1", "text": "A cat."}\n\n{"id": 7, "contents": "Pyserini layout", "title": "x"}\n',
    )
    assert list(trec.iter_passages_tsv(tsv)) == [(1, "d1", "A cat <b>purrs</b>."), (2, "d2", "Tabs\tinside")]
    assert list(trec.iter_passages_jsonl(jsonl)) == [(1, "d1", "A cat."), (3, "7", "Pyserini layout")]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"id": "d2", "text": "x"', "bad JSON: Expecting ',' delimiter at column 25"),
        ('["d2", "x"]', 'expected a JSON object {"id": ..., "text": ...}'),
        ('{"text": "x"}', 'missing "id" (a string)'),
        ('{"id": "d2"}', "missing \"text\" (a string) for docid 'd2'"),
        ('{"id": "", "text": "x"}', "empty docid"),
        ('{"id": "d 2", "text": "x"}', "docid 'd 2' contains white space or a control character"),
        ('{"id": "d2", "text": "  "}', "empty text for docid d2"),
    ],
)
def test_iter_passages_jsonl_rejects_bad_line(tmp_path, line, problem):
    path = write(tmp_path, "p.jsonl", '{"id": "d1", "text": "fine"}\n' + line + "\n")
    with pytest.raises(TrecFormatError) as raised:
        list(trec.iter_passages_jsonl(path))
    assert (raised.value.line_number, raised.value.problem) == (2, problem)


@pytest.mark.parametrize(
    ("line", "problem"), [("d2 no tab", "expected 'docid<TAB>text', found no tab"), ("\ttext", "empty docid")]
)
def test_iter_passages_tsv_rejects_bad_line(tmp_path, line, problem):
    path = write(tmp_path, "p.tsv", f"d1\tfine\n{line}\n")
    with pytest.raises(TrecFormatError) as raised:
        list(trec.iter_passages_tsv(path))
    assert (raised.value.line_number, raised.value.problem) == (2, problem)


def test_read_cast_topics_of_the_real_file(cast_dir):
    turns = trec.read_cast_topics(cast_dir / "topics.json")
    source = json.loads((cast_dir / "topics.json").read_text())
    assert len(turns) == 479
    assert len({turn.conversation_id for turn in turns}) == 50
    first = source[0]["turn"][0]
    assert (turns[0].topic_id, turns[0].conversation_id, turns[0].turn, turns[0].utterance) == (
        f"{source[0]['number']}_{first['number']}",
        str(source[0]["number"]),
        first["number"],
        first["raw_utterance"].strip(),
    )
    assert turns[0].line_number == 2


def test_read_cast_topics_names_the_line_of_the_bad_conversation(tmp_path):
    good = {"number": 1, "turn": [{"number": 1, "raw_utterance": "What is a cat?"}]}
    bad = {"number": 2, "turn": [{"number": 1, "raw_utterance": ""}]}
    path = write(tmp_path, "t.json", "[\n" + json.dumps(good) + ",\n" + json.dumps(bad) + "\n]\n")
    with pytest.raises(TrecFormatError) as raised:
        trec.read_cast_topics(path)
    assert (raised.value.line_number, raised.value.problem) == (
        3,
        'conversation 2, turn 1: empty "raw_utterance"',
    )


@pytest.mark.parametrize(
    ("text", "line_number", "problem"),
    [
        ('{"number": 1}', 1, "expected a JSON list of conversations"),
        ('[\n{"number": 1, "turn": [}\n]', 2, "bad JSON: Expecting value"),
        ('[\n{"turn": []}\n]', 2, 'conversation without a "number"'),
        (
            '[\n{"number": 1, "turn": [{"number": "a", "raw_utterance": "q"}]}\n]',
            2,
            'conversation 1, turn #1: "number" is not an integer',
        ),
        (
            '[\n{"number": 1, "turn": [{"number": 1, "raw_utterance": "q"}]},\n{"number": 1, "turn": [{"number": 1, "raw_utterance": "r"}]}\n]',
            3,
            "topic 1_1 repeats the one on line 2",
        ),
        (
            '[\n{"number": 1, "turn": []}\n{"number": 2, "turn": []}]',
            3,
            "bad JSON: expected ',' or ']' between conversations",
        ),
    ],
)
def test_read_cast_topics_rejects_bad_structure(tmp_path, text, line_number, problem):
    path = write(tmp_path, "t.json", text)
    with pytest.raises(TrecFormatError) as raised:
        trec.read_cast_topics(path)
    assert (raised.value.line_number, raised.value.problem) == (line_number, problem)


def test_iter_turns_tsv(tmp_path):
    path = write(tmp_path, "c.tsv", "c1_1\tc1\t1\thow long do I boil an egg\nc1_2\tc1\t2\tand peel it?\n")
    assert list(trec.iter_turns_tsv(path)) == [
        trec.CastTurn(1, "c1_1", "c1", 1, "how long do I boil an egg"),
        trec.CastTurn(2, "c1_2", "c1", 2, "and peel it?"),
    ]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            "c1_2\tc1\t2",
            "expected 4 tab-separated columns 'topic_id conversation_id turn utterance', found 3",
        ),
        ("c1_2\tc1\ttwo\tand peel it?", "turn 'two' is not an integer"),
        ("c1_2\tc1\t\u00b2\tand peel it?", "turn '\u00b2' is not an integer"),
        ("c1_2\t\t2\tand peel it?", "empty conversation id"),
        ("c1_2\tc1\t2\t ", "empty utterance for topic c1_2"),
    ],
)
def test_iter_turns_tsv_rejects_bad_line(tmp_path, line, problem):
    path = write(tmp_path, "c.tsv", f"c1_1\tc1\t1\tboil an egg\n{line}\n")
    with pytest.raises(TrecFormatError) as raised:
        list(trec.iter_turns_tsv(path))
    assert (raised.value.line_number, raised.value.problem) == (2, problem)


def test_read_cast_topics_rejects_bytes_that_are_not_utf8(tmp_path):
    # given a Latin-1 "é" on line 2
    line = b'{"number": 1, "turn": [{"number": 1, "raw_utterance": "caf\xe9"}]}'
    path = write(tmp_path, "t.json", b"[\n" + line + b"\n]\n", mode="wb")
    offset = line.index(b"\xe9")
    with pytest.raises(TrecFormatError) as raised:
        trec.read_cast_topics(path)
    assert (raised.value.line_number, raised.value.problem) == (
        2,
        f"not UTF-8 text (invalid continuation byte at byte {offset})",
    )


def test_progress_bar_goes_to_stderr_only_when_asked(tmp_path, capsys):
    path = write(tmp_path, "q.txt", "1 Q0 a 1\n")
    list(trec.iter_qrels(path))
    assert capsys.readouterr().err == ""
    list(trec.iter_qrels(path, progress=True))
    assert "q.txt" in capsys.readouterr().err


def test_a_conflicting_grade_is_named_exactly(tmp_path):
    # %g would print both as 2.5 and the message would name no difference
    path = write(tmp_path, "q.txt", "1 Q0 a 2.5\n1 Q0 a 2.5000001\n")
    with pytest.raises(TrecFormatError) as raised:
        trec.read_qrels(path)
    assert (raised.value.line_number, raised.value.problem) == (
        2,
        "grade 2.5000001 for topic 1 docid a conflicts with grade 2.5 on line 1",
    )

"""Readers for TREC qrels and runs (metrics/core/readers.py)."""

import numpy as np
import pytest

from metrics.core.readers import Qrels, Run, TrecFormatError, read_qrels, read_run


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_read_qrels_accepts_float_values_tabs_and_spaces(tmp_path):
    # given a qrels file mixing tabs, runs of spaces, integer and float values
    path = write(tmp_path, "q.txt", "t1 Q0 d1 50.0\nt1\tQ0\td2\t3\n\nt2  Q0   d3 -1\nt2 0 d4 0.25\n")
    # when read
    qrels = read_qrels(path)
    # then every line is one entry, values are floats, blank lines skipped
    assert list(qrels.topic) == ["t1", "t1", "t2", "t2"]
    assert list(qrels.docid) == ["d1", "d2", "d3", "d4"]
    assert qrels.value.tolist() == [50.0, 3.0, -1.0, 0.25]
    assert qrels.topics() == ["t1", "t2"]


def test_read_qrels_duplicate_keeps_maximum_at_first_place(tmp_path):
    # given (t1, b) judged 3 then 1, and (t1, a) judged 0 then 2
    path = write(tmp_path, "q.txt", "t1 Q0 a 0\nt1 Q0 b 3\nt1 Q0 c 1\nt1 Q0 b 1\nt1 Q0 a 2\n")
    # when read
    qrels = read_qrels(path)
    # then each pair appears once, at its first line, with the larger value (the reference rule)
    assert list(qrels.docid) == ["a", "b", "c"]
    assert qrels.value.tolist() == [2.0, 3.0, 1.0]


def test_read_qrels_keeps_docids_that_look_like_missing_values(tmp_path):
    path = write(tmp_path, "q.txt", 't1 Q0 NA 1\nt1 Q0 null 2\nt1 Q0 "x 3\n')
    assert list(read_qrels(path).docid) == ["NA", "null", '"x']


def test_read_run_ignores_rank_and_takes_runid_from_last_line(tmp_path):
    # given a run whose runid changes on its last line and whose rank column is nonsense
    path = write(tmp_path, "r.txt", "t1 Q0 d1 9 1.5 first\nt1 Q0 d2 -3 -2e3 first\nt2 Q0 d1 x 0 last\n")
    # when read
    run = read_run(path)
    # then scores are parsed, the file order is kept, and the runid is the last line's
    assert run.runid == "last"
    assert run.topic.to_pylist() == ["t1", "t1", "t2"]
    assert run.docid.to_pylist() == ["d1", "d2", "d1"]
    assert run.score.tolist() == [1.5, -2000.0, 0.0]


def test_read_run_keeps_duplicate_lines(tmp_path):
    path = write(tmp_path, "r.txt", "t1 Q0 d1 1 2 r\nt1 Q0 d1 2 1 r\n")
    assert len(read_run(path)) == 2


def test_read_empty_run_gives_no_lines_and_file_name_as_runid(tmp_path):
    run = read_run(write(tmp_path, "empty.run", ""))
    assert len(run) == 0 and run.runid == "empty.run"


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        (
            "t1 Q0 d1 1 2 r\nt1 Q0 d2 2 3\n",
            2,
            "expected 6 fields (topic q0 docid rank score runid) in a run line, found 5",
        ),
        (
            "t1 Q0 d1 1 2 r\n\nt1 Q0 d2 2 3 r x\n",
            3,
            "expected 6 fields (topic q0 docid rank score runid) in a run line, found 7",
        ),
        ("t1 Q0 d1 1 2 r\nt1 Q0 d2 2 high r\n", 2, "score 'high' is not a number"),
        ("t1 Q0 d1 1 nan r\n", 1, "score 'nan' is not a finite number"),
        (
            "# comment line\nt1 Q0 d1 1 2 r\n",
            1,
            "expected 6 fields (topic q0 docid rank score runid) in a run line, found 3",
        ),
        ("t1 Q0 d1\n", 1, "expected 6 fields (topic q0 docid rank score runid) in a run line, found 3"),
    ],
)
def test_read_run_bad_line_names_file_line_and_problem(tmp_path, text, line, problem):
    path = write(tmp_path, "bad.run", text)
    with pytest.raises(TrecFormatError) as raised:
        read_run(path)
    assert str(raised.value) == f"{path}:{line}: {problem}"
    assert (raised.value.line_number, raised.value.problem) == (line, problem)


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("t1 Q0 d1 1\nt1 Q0 d2\n", 2, "expected 4 fields (topic q0 docid value) in a qrels line, found 3"),
        (
            "t1 Q0 d1 1\nt1 Q0 d2 1 7\n",
            2,
            "expected 4 fields (topic q0 docid value) in a qrels line, found 5",
        ),
        ("t1 Q0 d1 yes\n", 1, "value 'yes' is not a number"),
    ],
)
def test_read_qrels_bad_line_names_file_line_and_problem(tmp_path, text, line, problem):
    path = write(tmp_path, "bad.qrels", text)
    with pytest.raises(TrecFormatError) as raised:
        read_qrels(path)
    assert str(raised.value) == f"{path}:{line}: {problem}"


def test_read_missing_file_is_a_format_error(tmp_path):
    with pytest.raises(TrecFormatError, match="no such file"):
        read_run(tmp_path / "absent.run")


def test_qrels_from_records_applies_the_file_rules():
    qrels = Qrels.from_records([("t", "a", 1), ("t", "b", 2), ("t", "a", 5)])
    assert list(qrels.docid) == ["a", "b"] and qrels.value.tolist() == [5.0, 2.0]


def test_read_cast_files_have_the_documented_sizes(cast_dir):
    # the data README: 29,350 qrels rows; 19,400 lines per DECAF run; 47,900 per thunlp run
    assert len(read_qrels(cast_dir / "qrels.graded.txt")) == 29_350
    assert len(read_qrels(cast_dir / "qrels.preference.txt")) == 29_350
    decaf = read_run(cast_dir / "runs" / "decaf01.run")
    assert len(decaf) == 19_400 and decaf.score.dtype == np.float64
    assert len(read_run(cast_dir / "runs" / "thunlp_bert_base_run_cv.run")) == 47_900


@pytest.mark.parametrize(
    "text",
    [
        "t1 Q0 d1 1 1.5 r\nt1 Q0 d2 2 0.5 r\n",  # one space: the Arrow path
        "t1\tQ0\td1\t1\t1.5\tr\nt1\tQ0\td2\t2\t0.5\tr\n",  # tabs: the Arrow path
        "t1  Q0 d1 1 1.5 r\nt1 Q0\td2 2 0.5 r\n",  # runs of spaces, mixed: the pandas path
        "t1 Q0 d1 1 1.5 r\r\nt1 Q0 d2 2 0.5 r\r\n\n",  # CRLF and a trailing blank line
    ],
)
def test_every_whitespace_layout_reads_the_same(tmp_path, text):
    run = read_run(write(tmp_path, "r.txt", text))
    assert (run.runid, run.topic.to_pylist(), run.docid.to_pylist(), run.score.tolist()) == (
        "r",
        ["t1", "t1"],
        ["d1", "d2"],
        [1.5, 0.5],
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "t1\tQ0\td 1\t1\t1.5\tr\n",
            "expected 6 fields (topic q0 docid rank score runid) in a run line, found 7",
        ),
        ("t1 Q0 d1 1 1.5 \n", "expected 6 fields (topic q0 docid rank score runid) in a run line, found 5"),
    ],
)
def test_a_field_hiding_another_delimiter_is_still_a_bad_line(tmp_path, text, problem):
    # given lines that have 6 fields for one delimiter but not as whitespace-separated TREC fields
    path = write(tmp_path, "r.txt", text)
    with pytest.raises(TrecFormatError) as raised:
        read_run(path)
    assert str(raised.value) == f"{path}:1: {problem}"


def test_run_accepts_plain_sequences():
    run = Run(runid="r", topic=np.array(["t", "t"], dtype=object), docid=["a", "b"], score=[1, 2])
    assert run.docid.to_pylist() == ["a", "b"] and run.score.dtype == np.float64


def test_run_rejects_columns_of_different_lengths():
    with pytest.raises(ValueError, match="same length"):
        Run(runid="r", topic=["t"], docid=["a", "b"], score=[1.0])


def test_gzipped_files_are_read_and_checked(tmp_path):
    import gzip

    good = tmp_path / "input.good.gz"
    good.write_bytes(gzip.compress(b"t1\tQ0\td1\t1\t1.5\tr\n"))
    run = read_run(good)
    assert (run.runid, run.docid.to_pylist(), run.score.tolist()) == ("r", ["d1"], [1.5])
    bad = tmp_path / "input.bad.gz"
    bad.write_bytes(gzip.compress(b"t1 Q0 d1 1 1.5 r\nt1 Q0 d2 2 r\n"))
    with pytest.raises(TrecFormatError) as raised:
        read_run(bad)
    assert (
        str(raised.value)
        == f"{bad}:2: expected 6 fields (topic q0 docid rank score runid) in a run line, found 5"
    )
    qrels = tmp_path / "q.gz"
    qrels.write_bytes(gzip.compress(b"t1 Q0 d1 2\n"))
    assert read_qrels(qrels).value.tolist() == [2.0]


def test_qrels_read_by_arrow_and_by_pandas_are_the_same(tmp_path):
    # given the same judgments, with repeated pairs, once with single spaces (Arrow's reader) and once with runs
    # of spaces (pandas' any-whitespace reader)
    lines = ["t2 Q0 d1 1", "t1 Q0 d1 0.5", "t2 Q0 d2 3", "t2 Q0 d1 2.5", "t1 Q0 d1 0.25", "t1 Q0 d9 -1"]
    single = write(tmp_path, "single.txt", "\n".join(lines) + "\n")
    spaced = write(tmp_path, "spaced.txt", "\n".join(line.replace(" ", "  ") for line in lines) + "\n")
    # when both are read
    by_arrow, by_pandas = read_qrels(single), read_qrels(spaced)
    # then they agree entry by entry: first-line order, the maximum value of a repeated pair
    assert list(by_arrow.topic) == list(by_pandas.topic) == ["t2", "t1", "t2", "t1"]
    assert list(by_arrow.docid) == list(by_pandas.docid) == ["d1", "d1", "d2", "d9"]
    assert by_arrow.value.tolist() == by_pandas.value.tolist() == [2.5, 0.5, 3.0, -1.0]
    assert by_arrow.topics() == ["t2", "t1"]


def test_scoring_a_run_file_imports_no_pandas(tmp_path):
    # pandas costs about 0.3 s of start-up: reading, ordering, aligning and scoring must not need it
    import subprocess
    import sys

    qrels = write(tmp_path, "q.txt", "t1 Q0 a 2\nt1 Q0 b 1\nt2 Q0 c 1\n")
    run = write(tmp_path, "r.txt", "t1 Q0 b 1 3.0 x\nt1 Q0 a 2 3.0 x\nt1 Q0 b 3 1.0 x\nt2 Q0 z 1 1.0 x\n")
    script = (
        "import sys\n"
        "from metrics.core.evaluate import evaluate_run, parse_measure\n"
        "from metrics.core.readers import read_qrels, read_run\n"
        "measures = [parse_measure(m) for m in ('compat@0.95', 'ndcg@10', 'ap', 'ppref', 'rbp')]\n"
        f"scores = evaluate_run(read_qrels({str(qrels)!r}), read_run({str(run)!r}), measures)\n"
        "assert scores[0].topics == ['t1', 't2'], scores\n"
        "print('pandas' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"

"""The one TREC writer: integers print as integers, other floats exactly, and every file it writes reads back to
the same numbers through both readers."""

import io
import math
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import metrics.core.readers
import pools.trec
import trecio
from trecio import format_value, qrels_line, run_line, write_qrels, write_run


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (4, "4"),
        (4.0, "4"),
        (50.0, "50"),
        (-1.0, "-1"),
        (-0.0, "0"),
        (2.5, "2.5"),
        (0.1, "0.1"),
        (1e-07, "1e-07"),
        (1 / 3, "0.3333333333333333"),
        (2.0**60, "1.152921504606847e+18"),
        (np.float64(2.5), "2.5"),
        (np.float32(0.5), "0.5"),
        (np.int64(3), "3"),
        (Decimal("0.25"), "0.25"),
        (Decimal("3.00"), "3"),
    ],
)
def test_format_value(value, text):
    assert format_value(value) == text


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float64("nan")])
def test_format_value_refuses_what_no_reader_accepts(value):
    with pytest.raises(ValueError, match="cannot write"):
        format_value(value)


def test_format_value_refuses_a_boolean_or_text():
    for value in (True, "4"):
        with pytest.raises(TypeError):
            format_value(value)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_format_value_round_trips_exactly(value):
    text = format_value(value)
    assert float(text) == value
    assert ("." not in text and "e" not in text) == (value.is_integer() and abs(value) < 2.0**53)


def test_lines():
    assert qrels_line("31_1", "CAR_1", 4.0) == "31_1 Q0 CAR_1 4\n"
    assert run_line("31_1", "CAR_1", 1, 12.25, "bm25") == "31_1 Q0 CAR_1 1 12.25 bm25\n"


@pytest.mark.parametrize("docid", ["", "a b", "a\tb", "a\nb", "a\x00b"])
def test_a_column_that_would_not_read_back_is_refused(docid):
    with pytest.raises(ValueError, match="cannot be written as a TREC column"):
        qrels_line("1", docid, 1)


identifiers = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters=" \t\r\n\x0b\x0c\x1c\x1d\x1e\x1f\x85"),
    min_size=1,
    max_size=12,
).filter(lambda text: not any(ord(c) < 0x21 or ord(c) == 0x7F for c in text))
finite = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=30, deadline=None)
@given(st.dictionaries(st.tuples(identifiers, identifiers), finite, min_size=1, max_size=20))
def test_written_qrels_read_back_identically_by_both_readers(tmp_path_factory, grades):
    path = tmp_path_factory.mktemp("qrels") / "q.txt"
    with open(path, "w", encoding="utf-8") as out:
        assert write_qrels(out, ((topic, docid, value) for (topic, docid), value in grades.items())) == len(
            grades
        )
    streamed = pools.trec.read_qrels(path)
    assert {(topic, docid): value for topic in streamed for docid, value in streamed[topic].items()} == grades
    columns = metrics.core.readers.read_qrels(path)
    assert (
        dict(zip(zip(columns.topic, columns.docid, strict=True), columns.value.tolist(), strict=True))
        == grades
    )


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(identifiers, identifiers, st.integers(0, 10**6), finite), min_size=1, max_size=20))
def test_written_runs_read_back_identically_by_both_readers(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("run") / "r.run"
    with open(path, "w", encoding="utf-8") as out:
        write_run(out, ((topic, docid, rank, score, "tag") for topic, docid, rank, score in rows))
    streamed = [(line.topic_id, line.docid, line.rank, line.score) for line in pools.trec.iter_run(path)]
    assert streamed == rows
    run = metrics.core.readers.read_run(path)
    assert list(zip(run.topic.to_pylist(), run.docid.to_pylist(), run.score.tolist(), strict=True)) == [
        (topic, docid, score) for topic, docid, _, score in rows
    ]


def test_write_qrels_to_any_text_sink():
    out = io.StringIO()
    write_qrels(out, [("1", "a", 2.0), ("1", "b", 0.25)])
    assert out.getvalue() == "1 Q0 a 2\n1 Q0 b 0.25\n"


def test_one_error_type_for_both_readers():
    assert pools.trec.TrecFormatError is metrics.core.readers.TrecFormatError is trecio.TrecFormatError
    error = trecio.TrecFormatError("q.txt", None, "no such file")
    assert (str(error), error.line_number) == ("q.txt: no such file", None)


def test_no_other_code_formats_trec_lines():
    # Every qrels and run line is written by trecio, so the number format is the same everywhere.
    root = Path(__file__).resolve().parents[2]
    writers = [
        f"{path.relative_to(root)}:{number}"
        for package in ("config", "pools", "judging", "metrics", "benchmarks")
        for path in sorted((root / package).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"Q0 \{", line)
    ]
    assert writers == []

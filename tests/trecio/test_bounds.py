"""Bounds on what one input file can make a reader hold: a line is read at most MAX_LINE_BYTES far, and a gzip
file inflates at most MAX_GZIP_RATIO times its size. Every reader (the streaming importer, the columnar
scorer's, the CAsT JSON, the judgment log) refuses with ``file:line: problem`` instead of filling the memory."""

import gzip
import tracemalloc
import zlib

import pytest

import metrics.core.readers as columnar
import pools.trec as streaming
import trecio.text
from judging.engine import JudgmentLogError, read_judgment_log
from trecio import TrecFormatError
from trecio.text import MAX_LINE_BYTES


def gzip_bomb(path, *, size: int, byte: bytes = b"a") -> None:
    """A gzip file inflating to ``size`` bytes of ``byte``, written without holding them in memory."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip header and trailer
    chunk = byte * (1 << 20)
    with open(path, "wb") as out:
        for _ in range(size >> 20):
            out.write(compressor.compress(chunk))
        out.write(compressor.flush())


def peak_bytes(function) -> tuple[Exception | None, int]:
    tracemalloc.start()
    try:
        function()
    except Exception as error:  # noqa: BLE001 - returned to the test, which checks it
        caught = error
    else:
        caught = None
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return caught, peak


READERS = {
    "qrels (streaming)": lambda path: streaming.read_qrels(path),
    "run (streaming)": lambda path: list(streaming.iter_run(path)),
    "passages (streaming)": lambda path: list(streaming.iter_passages_jsonl(path)),
    "qrels (columnar)": lambda path: columnar.read_qrels(path),
    "run (columnar)": lambda path: columnar.read_run(path),
}


@pytest.mark.parametrize("reader", READERS)
def test_a_gzip_bomb_without_a_line_break_is_refused_with_flat_memory(tmp_path, reader):
    path = tmp_path / "qrels.gz"
    gzip_bomb(path, size=32 << 20)  # 32 MiB of "a": the 1 GiB bomb, smaller to keep the test quick
    assert path.stat().st_size < 100_000
    error, peak = peak_bytes(lambda: READERS[reader](path))
    assert isinstance(error, TrecFormatError), error
    assert str(error) == f"{path}:1: line longer than {MAX_LINE_BYTES:,} bytes"
    # A line is read at most MAX_LINE_BYTES (1 MiB) far; before, the whole 32 MiB line was held.
    assert peak < 4 * MAX_LINE_BYTES


FIRST_LINES = {
    "qrels (streaming)": b"q1 Q0 d1 1\n",
    "run (streaming)": b"q1 Q0 d1 1 2.5 r\n",
    "passages (streaming)": b'{"id": "d1", "text": "t"}\n',
    "qrels (columnar)": b"q1 Q0 d1 1\n",
    "run (columnar)": b"q1 Q0 d1 1 2.5 r\n",
}


@pytest.mark.parametrize("reader", READERS)
def test_a_long_line_in_a_plain_file_is_refused_naming_its_line(tmp_path, reader):
    path = tmp_path / "input.txt"
    path.write_bytes(FIRST_LINES[reader] + b"q1 Q0 " + b"d" * (MAX_LINE_BYTES + 10) + b" 1\n")
    with pytest.raises(TrecFormatError, match=rf":2: line longer than {MAX_LINE_BYTES:,} bytes"):
        READERS[reader](path)


def test_a_line_of_exactly_the_limit_is_read(tmp_path):
    path = tmp_path / "passages.jsonl"
    prefix, suffix = b'{"id": "d1", "text": "', b'"}\n'
    path.write_bytes(prefix + b"x" * (MAX_LINE_BYTES - len(prefix) - len(suffix)) + suffix)
    [(line_number, docid, text)] = streaming.iter_passages_jsonl(path)
    assert (line_number, docid, len(text)) == (1, "d1", MAX_LINE_BYTES - len(prefix) - len(suffix))


@pytest.mark.parametrize("reader", READERS)
def test_a_gzip_file_inflating_past_its_ratio_is_refused(tmp_path, monkeypatch, reader):
    # Line breaks only: every line is blank and short, so only the decompressed-size limit stops the reader.
    monkeypatch.setattr(trecio.text, "MIN_DECOMPRESSED_LIMIT", 1 << 20)
    path = tmp_path / "run.gz"
    gzip_bomb(path, size=8 << 20, byte=b"\n")
    with pytest.raises(TrecFormatError, match=r"decompresses to more than .* refused as a likely gzip bomb"):
        READERS[reader](path)


def test_an_ordinary_gzip_file_reads_as_before(tmp_path):
    path = tmp_path / "qrels.gz"
    path.write_bytes(gzip.compress(b"q1 Q0 d1 2\nq1 Q0 d2 0\n"))
    assert streaming.read_qrels(path) == {"q1": {"d1": 2.0, "d2": 0.0}}
    assert list(columnar.read_qrels(path).docid) == ["d1", "d2"]


def test_the_cast_topics_json_is_bounded(tmp_path):
    path = tmp_path / "topics.json.gz"
    gzip_bomb(path, size=80 << 20, byte=b" ")
    with pytest.raises(TrecFormatError, match="refused as a likely gzip bomb|larger than"):
        streaming.read_cast_topics(path)


def test_the_judgment_log_reads_a_line_at_most_the_limit_far(tmp_path):
    path = tmp_path / "judgments.txt"
    path.write_text("t1 a b a\n" + "x" * (MAX_LINE_BYTES + 5), encoding="utf-8")
    with pytest.raises(JudgmentLogError, match=r":2: line longer than"):
        read_judgment_log(path)

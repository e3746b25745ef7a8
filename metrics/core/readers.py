"""Readers for TREC qrels and run files into columns (numpy and Arrow arrays, no per-line Python objects).

Formats (columns separated by ASCII spaces or tabs; blank lines are skipped):

- qrels: ``topic Q0 docid value``. ``value`` is a float (preference qrels of Clarke et al. use any positive
  float; graded qrels use integers). A repeated ``(topic, docid)`` keeps the **maximum** value, at the place of
  its first line (the rule of the reference ``compatibility.py`` of Clarke, Vtyurina and Smucker, "Assessing
  top-k preferences").
- run: ``topic Q0 docid rank score runid``. The rank column is read but never used (every measure orders by
  score); the runid is the one on the **last** line, as in the reference script.

Runs and qrels are read by Arrow's multi-threaded CSV reader when every line uses one delimiter (one tab or one
space between fields, the usual case), else by pandas' C parser (any whitespace), imported only then; run docids
stay in Arrow arrays, so a run of millions of lines creates no Python object per line. Qrels end in numpy.
Files ending in ``.gz`` are decompressed; a UTF-8 byte-order mark is skipped. A malformed file is re-read line
by line only to name the first bad line in a :class:`trecio.TrecFormatError` (``file:line: problem``), with the
line rules of the streaming reader ``pools.trec`` (:mod:`trecio.text`). Blank lines are skipped (the reference
crashes). Which reader serves which job, and why they differ on repeated lines: the docstring of :mod:`trecio`.
"""

from __future__ import annotations

import csv
import gzip
import io
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from metrics.core.arrays import arrow_call, strings_to_arrow, to_numpy
from trecio import TrecFormatError, open_binary
from trecio.text import MAX_LINE_BYTES, decode_line, is_blank, iter_raw_lines, parse_finite, split_columns

if TYPE_CHECKING:
    import pandas as pd  # imported where used: the Arrow path (the usual one) starts faster without it

QRELS_COLUMNS = ("topic", "q0", "docid", "value")
RUN_COLUMNS = ("topic", "q0", "docid", "rank", "score", "runid")


__all__ = ["QRELS_COLUMNS", "RUN_COLUMNS", "Qrels", "Run", "TrecFormatError", "read_qrels", "read_run"]


@dataclass(frozen=True)
class Qrels:
    """Judgments as parallel arrays, one entry per distinct (topic, docid), in first-seen file order.

    ``topic`` and ``docid`` are object arrays of ``str``; ``value`` is float64 (any real; <= 0 means level 0).
    """

    topic: np.ndarray
    docid: np.ndarray
    value: np.ndarray

    @classmethod
    def from_records(cls, records: Iterable[tuple[str, str, float]]) -> Qrels:
        """Build from ``(topic, docid, value)`` tuples with the file rules (duplicates keep the maximum)."""
        import pandas as pd

        frame = pd.DataFrame(list(records), columns=["topic", "docid", "value"])
        return _qrels_from_frame(frame.astype({"topic": object, "docid": object, "value": np.float64}))

    def __len__(self) -> int:
        return len(self.value)

    @cached_property
    def docid_codes(self) -> tuple[pa.Array, np.ndarray]:
        """(distinct docids as an Arrow array, the index of each row's docid in it); computed once per qrels,
        as every run evaluated against these qrels looks its docids up in it."""
        return _first_seen_codes(self.docid)

    @cached_property
    def topic_codes(self) -> tuple[list[str], np.ndarray]:
        """(distinct topics in first-seen order, the index of each row's topic in it), computed once."""
        topics, codes = _first_seen_codes(self.topic)
        return topics.to_pylist(), codes

    def topics(self) -> list[str]:
        """Distinct topics in first-seen order."""
        return list(self.topic_codes[0])


@dataclass(frozen=True)
class Run:
    """One run in file order (duplicates and all); ``runid`` from the last line.

    ``topic`` and ``docid`` are Arrow string arrays (no Python object per line); ``score`` is float64 numpy.
    """

    runid: str
    topic: pa.Array
    docid: pa.Array
    score: np.ndarray

    def __post_init__(self) -> None:
        # Accept lists or numpy arrays too (API callers), stored as the Arrow/numpy types the measures expect.
        for name in ("topic", "docid"):
            value = getattr(self, name)
            if isinstance(value, pa.ChunkedArray):
                object.__setattr__(self, name, value.combine_chunks())
            elif not isinstance(value, pa.Array):
                object.__setattr__(self, name, pa.array([str(v) for v in value], type=pa.string()))
        object.__setattr__(self, "score", np.asarray(self.score, dtype=np.float64))
        if not len(self.topic) == len(self.docid) == len(self.score):
            raise ValueError("topic, docid and score must have the same length")

    @classmethod
    def from_records(cls, records: Iterable[tuple[str, str, float]], runid: str = "run") -> Run:
        """Build from ``(topic, docid, score)`` tuples in file order (a test and API convenience)."""
        rows = list(records)
        return cls(
            runid=runid,
            topic=pa.array([str(r[0]) for r in rows], type=pa.string()),
            docid=pa.array([str(r[1]) for r in rows], type=pa.string()),
            score=np.array([float(r[2]) for r in rows], dtype=np.float64),
        )

    def __len__(self) -> int:
        return len(self.score)


def read_qrels(path: str | Path) -> Qrels:
    """Read a TREC qrels file (4 columns, float values); duplicates keep the maximum value."""
    table = _read_table_arrow(Path(path), QRELS_COLUMNS, float_column="value")
    if table is not None:
        return _qrels_from_table(table)
    frame = _read_columns(path, QRELS_COLUMNS, float_column="value")
    return _qrels_from_frame(frame)


def _first_seen_codes(strings: np.ndarray | pa.Array) -> tuple[pa.Array, np.ndarray]:
    """(distinct strings in first-seen order as an Arrow array, each entry's index in it), as pandas.factorize."""
    array = strings if isinstance(strings, pa.Array) else strings_to_arrow(strings)
    encoded = arrow_call("dictionary_encode", array)
    return encoded.dictionary, to_numpy(encoded.indices).astype(np.int64)


def _qrels_from_table(table: pa.Table) -> Qrels:
    """The file rules without pandas: one entry per (topic, docid) at its first line, with the maximum value."""
    topics, topic_code = _first_seen_codes(table.column("topic").combine_chunks())
    docids, docid_code = _first_seen_codes(table.column("docid").combine_chunks())
    value = to_numpy(table.column("value"))
    pair = topic_code * max(len(docids), 1) + docid_code
    _, first, group = np.unique(pair, return_index=True, return_inverse=True)
    maximum = np.full(len(first), -np.inf)
    np.maximum.at(maximum, group, value)
    order = np.argsort(first, kind="stable")
    rows = first[order]
    return Qrels(
        topic=np.array(topics.to_pylist(), dtype=object)[topic_code[rows]],
        docid=np.array(docids.to_pylist(), dtype=object)[docid_code[rows]],
        value=maximum[order],
    )


def read_run(path: str | Path, *, use_threads: bool = True) -> Run:
    """Read a TREC run file (6 columns); the rank column is ignored, the runid is taken from the last line.
    ``use_threads=False`` parses on the calling thread only: cheaper in CPU (no hand-over between Arrow's
    threads) where the caller already reads several runs at once, one per thread."""
    path = Path(path)
    run = _read_run_arrow(path, use_threads=use_threads)
    if run is not None:
        return run
    frame = _read_columns(path, RUN_COLUMNS, float_column="score")
    runid = str(frame["runid"].iloc[-1]) if len(frame) else path.name
    return Run(
        runid=runid,
        topic=pa.array(frame["topic"].to_numpy(dtype=object), type=pa.string()),
        docid=pa.array(frame["docid"].to_numpy(dtype=object), type=pa.string()),
        score=frame["score"].to_numpy(dtype=np.float64),
    )


def _read_run_arrow(path: Path, *, use_threads: bool = True) -> Run | None:
    """The fast path: Arrow's CSV reader with the delimiter of the first line; None when it does not apply."""
    table = _read_table_arrow(path, RUN_COLUMNS, float_column="score", use_threads=use_threads)
    if table is None:
        return None
    return Run(
        runid=table.column("runid")[-1].as_py(),
        topic=table.column("topic").combine_chunks(),
        docid=table.column("docid").combine_chunks(),
        score=to_numpy(table.column("score")),
    )


def _read_table_arrow(
    path: Path, columns: tuple[str, ...], *, float_column: str, use_threads: bool = True
) -> pa.Table | None:
    """Arrow's CSV reader with the delimiter of the first line; None when it does not apply (the pandas path
    then reads the file or names its first bad line). The q0 and rank columns are not kept."""
    try:
        with _open_binary(path) as file:
            first_line = file.readline(MAX_LINE_BYTES + 1)
    except (OSError, gzip.BadGzipFile, EOFError, zlib.error):
        return None
    if len(first_line) > MAX_LINE_BYTES and not first_line.endswith(b"\n"):
        # Refused before Arrow or pandas sees the file (a gzip bomb without a line break, for instance).
        raise TrecFormatError(path, 1, f"line longer than {MAX_LINE_BYTES:,} bytes")
    delimiter = "\t" if b"\t" in first_line else " "
    string = pa.string()
    try:
        table = pa_csv.read_csv(
            path,
            # 4 MiB blocks (default 1 MiB): a TREC run of 200,000 lines parses in two blocks, one per core,
            # with a third less CPU than in eight (benchmarks/measures.py).
            read_options=pa_csv.ReadOptions(
                column_names=list(columns), block_size=4 << 20, use_threads=use_threads
            ),
            parse_options=pa_csv.ParseOptions(delimiter=delimiter, quote_char=False, ignore_empty_lines=True),
            convert_options=pa_csv.ConvertOptions(
                column_types={name: pa.float64() if name == float_column else string for name in columns},
                include_columns=[name for name in columns if name not in ("q0", "rank")],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                null_values=[],
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError, OSError):
        return None  # a bad line, a damaged gzip stream...: the pandas path reads it or names the problem
    if table.num_rows == 0:
        return None
    number = table.column(float_column).combine_chunks()
    if number.null_count or not arrow_call("all", arrow_call("is_finite", number)).as_py():
        return None
    # An empty field or one holding the other delimiter (tab vs space) would hide a wrong field count; a
    # control character is refused as the streaming reader refuses it (trecio.text.split_columns).
    # Every entry's bytes are scanned (a vectorised pass, cheaper than hashing the column to scan its distinct
    # values).
    for name in table.column_names:
        if name == float_column:
            continue
        if _has_bad_field(table.column(name).combine_chunks()):
            return None
    return table


def _has_control_bytes(data: bytes) -> bool:
    """Whether the file holds a control character that the streaming reader refuses (trecio.text): any below
    0x20 but tab, line feed and carriage return, DEL, and a carriage return that ends no line (pandas and
    Arrow would take it for a line break). One vectorised pass over the bytes."""
    raw = np.frombuffer(data, dtype=np.uint8)
    control = (raw < 0x20) & (raw != 0x09) & (raw != 0x0A) & (raw != 0x0D) | (raw == 0x7F)
    if control.any():
        return True
    carriage_return = np.flatnonzero(raw[:-1] == 0x0D)
    following = raw[carriage_return + 1]
    return bool(((following != 0x0A) & (following != 0x0D)).any())


def _has_long_line(data: bytes) -> bool:
    """Whether a line is longer than the readers' limit (trecio.text.MAX_LINE_BYTES): one vectorised pass."""
    if len(data) <= MAX_LINE_BYTES:
        return False
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0x0A)
    bounds = np.concatenate(([-1], ends, [len(data)]))
    return bool((np.diff(bounds) - 1 > MAX_LINE_BYTES).any())


def _has_bad_field(strings: pa.Array) -> bool:
    """Whether any string is empty, longer than ``MAX_LINE_BYTES``, or holds a space, a tab or another control
    character. Read from the array's buffers: lengths from the offsets, and the UTF-8 bytes in two passes that
    allocate nothing, their minimum (below 0x21: a space or control) and a search for DEL (0x7F); neither byte
    is ever part of a multi-byte character."""
    if len(strings) == 0:
        return False
    _, offsets_buffer, data = strings.buffers()
    offset_type = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=offset_type, count=strings.offset + len(strings) + 1)
    offsets = offsets[strings.offset :]
    lengths = np.diff(offsets)
    if int(lengths.min()) == 0 or int(lengths.max()) > MAX_LINE_BYTES:
        return True
    raw = np.frombuffer(data, dtype=np.uint8, count=int(offsets[-1]))[int(offsets[0]) :]
    return int(raw.min()) < 0x21 or raw.tobytes().find(b"\x7f") >= 0


def _qrels_from_frame(frame: pd.DataFrame) -> Qrels:
    # groupby(sort=False) keeps groups in order of first appearance, which is the reference's order.
    deduplicated = frame.groupby(["topic", "docid"], sort=False)["value"].max()
    return Qrels(
        topic=deduplicated.index.get_level_values(0).to_numpy(dtype=object),
        docid=deduplicated.index.get_level_values(1).to_numpy(dtype=object),
        value=deduplicated.to_numpy(dtype=np.float64),
    )


def _read_columns(path: str | Path, columns: tuple[str, ...], *, float_column: str) -> pd.DataFrame:
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise TrecFormatError(path, None, "no such file")
    dtypes = {name: (np.float64 if name == float_column else str) for name in (*columns, "spare")}
    try:
        with _open_binary(path) as handle:
            data = handle.read()
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise TrecFormatError(path, None, f"not a readable gzip file ({error})") from None
    if _has_control_bytes(data) or _has_long_line(data):
        _raise_first_bad_line(path, columns, float_column)
    try:
        frame = pd.read_csv(
            io.BytesIO(data),
            sep=r"\s+",
            header=None,
            # One spare column: pandas would silently drop (or index) a field beyond the named ones.
            names=[*columns, "spare"],
            index_col=False,
            dtype=dtypes,
            engine="c",
            na_filter=False,  # a docid such as "NA" or "null" is a docid, not a missing value
            quoting=csv.QUOTE_NONE,
            skip_blank_lines=True,
        )
    except pd.errors.EmptyDataError:
        return pd.DataFrame({name: pd.Series([], dtype=dtypes[name]) for name in columns})
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError):
        _raise_first_bad_line(path, columns, float_column)
        raise
    last = columns[-1]
    # A short line leaves its trailing string columns empty; a "nan"/"inf" float parses but cannot be ranked.
    if (
        (frame[last] == "").any()
        or (frame["spare"] != "").any()
        or not np.isfinite(frame[float_column].to_numpy()).all()
    ):
        _raise_first_bad_line(path, columns, float_column)
    return frame.drop(columns="spare")


def _open_binary(path: Path) -> BinaryIO:
    # pandas and Arrow decompress *.gz by extension (TREC distributes runs as input.<runid>.gz); so does trecio.
    return open_binary(path)


def _raise_first_bad_line(path: Path, columns: tuple[str, ...], float_column: str) -> None:
    """Scan the file in Python (the slow path, taken only for bad files) and raise for its first bad line,
    with the streaming reader's line rules."""
    float_index = columns.index(float_column)
    kind = "qrels" if len(columns) == len(QRELS_COLUMNS) else "run"
    with _open_binary(path) as lines:
        for number, raw in iter_raw_lines(lines, path=path):
            line = decode_line(raw, path=path, line_number=number)
            if is_blank(line):
                continue
            fields = split_columns(line, path=path, line_number=number)
            if len(fields) != len(columns):
                raise TrecFormatError(
                    path,
                    number,
                    f"expected {len(columns)} fields ({' '.join(columns)}) in a {kind} line, found {len(fields)}",
                )
            parse_finite(fields[float_index], what=float_column, path=path, line_number=number)
    raise TrecFormatError(path, None, f"cannot be read as a {kind} file")

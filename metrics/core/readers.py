"""Readers for TREC qrels and run files into columns (numpy and Arrow arrays, no per-line Python objects).

Formats (whitespace separated: spaces or tabs; blank lines are skipped):

- qrels: ``topic Q0 docid value``. ``value`` is a float (preference qrels of Clarke et al. use any positive
  float; graded qrels use integers). A repeated ``(topic, docid)`` keeps the **maximum** value, at the place of
  its first line (the rule of the reference ``compatibility.py``, metric-anchors.md section 1).
- run: ``topic Q0 docid rank score runid``. The rank column is read but never used (every measure orders by
  score); the runid is the one on the **last** line, as in the reference script.

Runs are read by Arrow's multi-threaded CSV reader when every line uses one delimiter (one tab or one space
between fields, the usual case), else by pandas' C parser (any whitespace); run docids stay in Arrow arrays, so
a run of millions of lines creates no Python object per line. Qrels (small) are read by pandas into numpy.
Files ending in ``.gz`` are decompressed. A malformed file is re-read line by line only to name the first bad
line in a :class:`TrecFormatError` (``file:line: problem``). Blank lines are skipped (the reference crashes).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

QRELS_COLUMNS = ("topic", "q0", "docid", "value")
RUN_COLUMNS = ("topic", "q0", "docid", "rank", "score", "runid")


class TrecFormatError(ValueError):
    """A qrels or run file that cannot be read; ``str()`` is ``path:line: problem``."""

    def __init__(self, path: str | Path, line: int | None, problem: str):
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class Qrels:
    """Judgments as parallel arrays, one entry per distinct (topic, docid), in first-seen file order.

    ``topic`` and ``docid`` are object arrays of ``str``; ``value`` is float64 (any real; <= 0 means level 0).
    """

    topic: np.ndarray
    docid: np.ndarray
    value: np.ndarray

    @classmethod
    def from_records(cls, records) -> Qrels:
        """Build from ``(topic, docid, value)`` tuples with the file rules (duplicates keep the maximum)."""
        frame = pd.DataFrame(list(records), columns=["topic", "docid", "value"])
        return _qrels_from_frame(frame.astype({"topic": object, "docid": object, "value": np.float64}))

    def __len__(self) -> int:
        return len(self.value)

    @cached_property
    def docid_codes(self) -> tuple[pa.Array, np.ndarray]:
        """(distinct docids as an Arrow array, the index of each row's docid in it); computed once per qrels,
        as every run evaluated against these qrels looks its docids up in it."""
        vocabulary = pd.unique(self.docid)
        codes = pd.Index(vocabulary).get_indexer(self.docid).astype(np.int64)
        return pa.array(vocabulary, type=pa.string()), codes

    def topics(self) -> list[str]:
        """Distinct topics in first-seen order."""
        return list(pd.unique(self.topic))


@dataclass(frozen=True)
class Run:
    """One run in file order (duplicates and all); ``runid`` from the last line.

    ``topic`` and ``docid`` are Arrow string arrays (no Python object per line); ``score`` is float64 numpy.
    """

    runid: str
    topic: pa.Array
    docid: pa.Array
    score: np.ndarray

    def __post_init__(self):
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
    def from_records(cls, records, runid: str = "run") -> Run:
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
    frame = _read_columns(path, QRELS_COLUMNS, float_column="value")
    return _qrels_from_frame(frame)


def read_run(path: str | Path) -> Run:
    """Read a TREC run file (6 columns); the rank column is ignored, the runid is taken from the last line."""
    path = Path(path)
    run = _read_run_arrow(path)
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


def _read_run_arrow(path: Path) -> Run | None:
    """The fast path: Arrow's CSV reader with the delimiter of the first line; None when it does not apply."""
    try:
        with _open_binary(path) as file:
            first_line = file.readline()
    except OSError:
        return None
    delimiter = "\t" if b"\t" in first_line else " "
    string = pa.string()
    try:
        table = pa_csv.read_csv(
            path,
            read_options=pa_csv.ReadOptions(column_names=list(RUN_COLUMNS)),
            parse_options=pa_csv.ParseOptions(delimiter=delimiter, quote_char=False, ignore_empty_lines=True),
            convert_options=pa_csv.ConvertOptions(
                column_types={
                    "topic": string,
                    "q0": string,
                    "docid": string,
                    "rank": string,
                    "score": pa.float64(),
                    "runid": string,
                },
                include_columns=["topic", "docid", "score", "runid"],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                null_values=[],
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError):
        return None  # other whitespace, a bad line...: the pandas path reads it or names the bad line
    if table.num_rows == 0:
        return None
    score = table.column("score").combine_chunks()
    if score.null_count or not pc.all(pc.is_finite(score)).as_py():
        return None
    # An empty field or one holding the other delimiter (tab vs space) would hide a wrong field count.
    other = " " if delimiter == "\t" else "\t"
    for name in ("topic", "docid", "runid"):
        column = table.column(name)
        if name != "docid":  # few distinct topics and runids: check those only
            column = pc.unique(column)
        if pc.min(pc.binary_length(column)).as_py() == 0 or pc.any(pc.match_substring(column, other)).as_py():
            return None
    return Run(
        runid=table.column("runid")[-1].as_py(),
        topic=table.column("topic").combine_chunks(),
        docid=table.column("docid").combine_chunks(),
        score=score.to_numpy(),
    )


def _qrels_from_frame(frame: pd.DataFrame) -> Qrels:
    # groupby(sort=False) keeps groups in order of first appearance, which is the reference's order.
    deduplicated = frame.groupby(["topic", "docid"], sort=False)["value"].max()
    return Qrels(
        topic=deduplicated.index.get_level_values(0).to_numpy(dtype=object),
        docid=deduplicated.index.get_level_values(1).to_numpy(dtype=object),
        value=deduplicated.to_numpy(dtype=np.float64),
    )


def _read_columns(path: str | Path, columns: tuple[str, ...], *, float_column: str) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise TrecFormatError(path, None, "no such file")
    dtypes = {name: (np.float64 if name == float_column else str) for name in (*columns, "spare")}
    try:
        frame = pd.read_csv(
            path,
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


def _open_binary(path: Path):
    # pandas and Arrow decompress *.gz by extension (TREC distributes runs as input.<runid>.gz); so do we.
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _raise_first_bad_line(path: Path, columns: tuple[str, ...], float_column: str) -> None:
    """Scan the file in Python (the slow path, taken only for bad files) and raise for its first bad line."""
    float_index = columns.index(float_column)
    kind = "qrels" if len(columns) == len(QRELS_COLUMNS) else "run"
    try:
        with io.TextIOWrapper(_open_binary(path), encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                fields = line.split()
                if not fields:
                    continue
                if len(fields) != len(columns):
                    raise TrecFormatError(
                        path,
                        number,
                        f"expected {len(columns)} fields ({' '.join(columns)}) in a {kind} line, found {len(fields)}",
                    )
                try:
                    number_value = float(fields[float_index])
                except ValueError:
                    raise TrecFormatError(
                        path, number, f"{float_column} {fields[float_index]!r} is not a number"
                    ) from None
                if not math.isfinite(number_value):
                    raise TrecFormatError(
                        path, number, f"{float_column} {fields[float_index]!r} is not finite"
                    )
    except UnicodeDecodeError as error:
        raise TrecFormatError(path, None, f"not UTF-8 text ({error.reason} at byte {error.start})") from None
    raise TrecFormatError(path, None, f"cannot be read as a {kind} file")

"""The one writer of TREC qrels and runs. Every command and export that writes these files goes through it,
so a value prints the same everywhere and reads back as exactly the number that was written."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Protocol

# What may not appear in a column: a column holding white space would split into two when read back.
_NOT_IN_COLUMN = re.compile(r"[\x00-\x20\x7f]")
# Integral floats beyond 2^53 are not all integers that float can hold exactly; repr() keeps them exact.
_EXACT_INTEGER_LIMIT = 2.0**53


class TextSink(Protocol):
    def write(self, text: str, /) -> object: ...


def format_value(value: float | Decimal) -> str:
    """A qrels value, grade or score as written in a TREC file: an integral value as an integer (``4``, ``50``,
    ``-1``), any other as the shortest text that reads back as exactly the same float (``repr``: ``2.5``,
    ``0.1``, ``1e-07``). ``float(format_value(x)) == x`` for every finite ``x``; NaN and the infinities are
    refused (no reader accepts them)."""
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"expected a number, got {value!r}")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    number = float(value)  # numpy floats included: repr(np.float64(2.5)) is "np.float64(2.5)"
    if not math.isfinite(number):
        raise ValueError(f"cannot write {number} to a TREC file")
    if number.is_integer() and abs(number) < _EXACT_INTEGER_LIMIT:
        return str(int(number))
    return repr(number)


def qrels_line(topic_id: str, docid: str, value: float) -> str:
    """``topic Q0 docid value`` and a newline."""
    return f"{_column(topic_id, 'topic id')} Q0 {_column(docid, 'docid')} {format_value(value)}\n"


def run_line(topic_id: str, docid: str, rank: int, score: float, tag: str) -> str:
    """``topic Q0 docid rank score tag`` and a newline."""
    return (
        f"{_column(topic_id, 'topic id')} Q0 {_column(docid, 'docid')} {int(rank)} {format_value(score)} "
        f"{_column(tag, 'run tag')}\n"
    )


def write_qrels(out: TextSink, rows: Iterable[tuple[str, str, float]]) -> int:
    """Write ``(topic_id, docid, value)`` rows as qrels lines, in the order given; return the line count."""
    count = 0
    for topic_id, docid, value in rows:
        out.write(qrels_line(topic_id, docid, value))
        count += 1
    return count


def write_run(out: TextSink, rows: Iterable[tuple[str, str, int, float, str]]) -> int:
    """Write ``(topic_id, docid, rank, score, tag)`` rows as run lines, in the order given; return the line
    count."""
    count = 0
    for topic_id, docid, rank, score, tag in rows:
        out.write(run_line(topic_id, docid, rank, score, tag))
        count += 1
    return count


def _column(value: str, what: str) -> str:
    if not value or _NOT_IN_COLUMN.search(value):
        raise ValueError(f"{what} {value!r} cannot be written as a TREC column (empty or white space)")
    return value

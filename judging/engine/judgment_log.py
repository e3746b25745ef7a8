"""Reading pairwise judgment logs: lines ``topic docidA docidB winner`` (the released CAsT format) with
:func:`read_judgment_log`; that form, the ``topic docidA docidB !|=|?`` form of the TREC DL 2021 data and
toppref's own ``judgments`` export with :func:`read_votes`, which also keeps the ties."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from trecio import spreadsheet_text


class JudgmentLogError(ValueError):
    """A malformed judgment log; the message names the file, the line and the problem."""


@dataclass(frozen=True)
class JudgmentRecord:
    """One logged preference: in ``topic``, ``winner`` was preferred to ``loser``."""

    topic: str
    winner: str
    loser: str


# The line bound of every reader of toppref's input (trecio.text.MAX_LINE_BYTES), here in characters.
MAX_LINE_CHARACTERS = 1 << 20


def read_judgment_log(path: str | Path) -> list[JudgmentRecord]:
    """Read a judgment log such as ``judgments.crowd.txt`` (one judgment per line:
    ``topic docidA docidB winner``, winner being docidA or docidB), in file order. Blank lines are
    skipped. Raises ``JudgmentLogError`` ("file:line: problem") on a line without exactly four
    fields, a winner that is neither item, or a pair of an item with itself; ``OSError`` if the file
    cannot be read."""
    records = []
    with open(path, encoding="utf-8") as lines:
        # Read at most MAX_LINE_CHARACTERS of a line, so a file without line breaks cannot fill the memory.
        for number, line in enumerate(iter(lambda: lines.readline(MAX_LINE_CHARACTERS + 1), ""), start=1):
            if len(line) > MAX_LINE_CHARACTERS and not line.endswith("\n"):
                raise JudgmentLogError(
                    f"{path}:{number}: line longer than {MAX_LINE_CHARACTERS:,} characters"
                )
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 4:
                raise JudgmentLogError(
                    f"{path}:{number}: expected 4 fields 'topic docidA docidB winner', got {len(fields)}"
                )
            topic, a, b, winner = fields
            if a == b:
                raise JudgmentLogError(f"{path}:{number}: item {a} is paired with itself")
            if winner not in (a, b):
                raise JudgmentLogError(f"{path}:{number}: winner {winner} is neither {a} nor {b}")
            records.append(JudgmentRecord(topic=topic, winner=winner, loser=b if winner == a else a))
    return records


@dataclass(frozen=True)
class Vote:
    """One answer of a judge about two items of a topic, in the order the log wrote them: ``winner`` is ``a``
    or ``b``, or ``None`` for a tie (the judge preferred neither; for a model asked in both orders, the two
    orders disagreed)."""

    topic: str
    a: str
    b: str
    winner: str | None


@dataclass(frozen=True)
class VoteLog:
    """The votes of a log in file order; ``form`` is ``winner`` (``topic a b winner``), ``outcome``
    (``topic a b !|=|?``), ``export`` (toppref's ``judgments`` CSV) or ``empty``; ``skipped`` counts the lines
    that are no vote: ``?`` (the judge gave no answer) and the export's answers the campaign does not count
    (challenges, voided HITs)."""

    votes: list[Vote]
    form: str
    skipped: int = 0


def decisive_records(votes: Iterable[Vote]) -> list[JudgmentRecord]:
    """The decisive votes as :class:`JudgmentRecord` (winner, loser), in order; ties are left out, since a tie
    answers no forced choice."""
    return [
        JudgmentRecord(
            topic=vote.topic, winner=vote.winner, loser=vote.b if vote.winner == vote.a else vote.a
        )
        for vote in votes
        if vote.winner is not None
    ]


# The DL 2021 form (Arabzadeh and Clarke, "Benchmarking LLM-based Relevance Judgment Methods", their
# position-swapped judge): ``!`` docidA preferred in both orders, ``=`` the orders disagreed, ``?`` no answer.
OUTCOME_MARKS = ("!", "=", "?")
EXPORT_COLUMNS = ("topic", "left", "right", "winner")


def read_votes(path: str | Path) -> VoteLog:
    """Read a log of pairwise votes in any of the three forms, told apart by the first line that is not blank:
    a CSV header naming ``topic,left,right,winner`` is toppref's ``judgments`` (or ``judgments_release``)
    export, whose rows with ``is_counted`` 0 are skipped and whose spreadsheet-quoted cells are read back to
    their text; otherwise every line has four fields ``topic docidA docidB X``, X being the winner (docidA or
    docidB) or one of ``! = ?``. Repeated lines are repeated votes, kept in file order. Raises
    :class:`JudgmentLogError` ("file:line: problem") on a malformed line, an item paired with itself or a
    winner that is neither item; ``OSError`` or ``UnicodeDecodeError`` if the file cannot be read as text."""
    with open(path, encoding="utf-8-sig", newline="") as text:
        first = ""
        for first in _bounded_lines(text, path):
            if first.strip():
                break
        text.seek(0)
        if not first.strip():
            return VoteLog(votes=[], form="empty")
        if first.startswith("topic,"):
            return _read_export(text, path)
        return _read_lines(text, path)


def _bounded_lines(text: TextIO, path: str | Path) -> Iterator[str]:
    # At most MAX_LINE_CHARACTERS of a line, so a file without line breaks cannot fill the memory.
    for number, line in enumerate(iter(lambda: text.readline(MAX_LINE_CHARACTERS + 1), ""), start=1):
        if len(line) > MAX_LINE_CHARACTERS and not line.endswith("\n"):
            raise JudgmentLogError(f"{path}:{number}: line longer than {MAX_LINE_CHARACTERS:,} characters")
        yield line


def _read_lines(text: TextIO, path: str | Path) -> VoteLog:
    votes: list[Vote] = []
    skipped = 0
    has_marks = False
    for number, line in enumerate(_bounded_lines(text, path), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4:
            raise JudgmentLogError(
                f"{path}:{number}: expected 4 fields 'topic docidA docidB winner' or 'topic docidA docidB !|=|?', "
                f"got {len(fields)}"
            )
        topic, a, b, mark = fields
        _check_pair(path, number, a, b)
        if mark in OUTCOME_MARKS:
            has_marks = True
            if mark == "?":
                skipped += 1
                continue
            winner = a if mark == "!" else None
        elif mark in (a, b):
            winner = mark
        else:
            raise JudgmentLogError(f"{path}:{number}: winner {mark} is neither {a} nor {b} nor one of ! = ?")
        votes.append(Vote(topic=topic, a=a, b=b, winner=winner))
    return VoteLog(votes=votes, form="outcome" if has_marks else "winner", skipped=skipped)


def _read_export(text: TextIO, path: str | Path) -> VoteLog:
    rows = csv.reader(_bounded_lines(text, path))
    header = next(row for row in rows if row)  # read_votes found a header line after any blank ones
    missing = [column for column in EXPORT_COLUMNS if column not in header]
    if missing:
        raise JudgmentLogError(f"{path}:{rows.line_num}: the header lacks the column {missing[0]!r}")
    where = {column: header.index(column) for column in header}
    counted = where.get("is_counted")
    votes: list[Vote] = []
    skipped = 0
    for row in rows:
        number = rows.line_num
        if not row:
            continue
        if len(row) != len(header):
            raise JudgmentLogError(f"{path}:{number}: expected {len(header)} cells, got {len(row)}")
        if counted is not None and row[counted] not in ("0", "1"):
            raise JudgmentLogError(f"{path}:{number}: is_counted {row[counted]!r} is neither 0 nor 1")
        topic, a, b, winner = (spreadsheet_text(row[where[column]]) for column in EXPORT_COLUMNS)
        if not (topic and a and b):
            raise JudgmentLogError(f"{path}:{number}: empty topic, left or right")
        _check_pair(path, number, a, b)
        if winner not in (a, b):
            raise JudgmentLogError(f"{path}:{number}: winner {winner!r} is neither {a} nor {b}")
        if counted is not None and row[counted] == "0":
            skipped += 1
            continue
        votes.append(Vote(topic=topic, a=a, b=b, winner=winner))
    return VoteLog(votes=votes, form="export", skipped=skipped)


def _check_pair(path: str | Path, number: int, a: str, b: str) -> None:
    if a == b:
        raise JudgmentLogError(f"{path}:{number}: item {a} is paired with itself")

"""Reading pairwise judgment logs: lines ``topic docidA docidB winner`` (the released CAsT format)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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

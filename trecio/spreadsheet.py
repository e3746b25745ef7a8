"""Cells of the CSV files toppref writes (judgment logs, workers, leaderboard), made safe to open in a
spreadsheet: a text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return would be read
as a formula ("CSV injection", OWASP), so it is written with a leading single quote. Numbers are written by
the caller as numbers and left alone; only text, which may come from an uploaded file (a docid, a topic id, a
run name), is quoted. See docs/decisions.md, "Spreadsheet-safe CSV"."""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str) -> str:
    """``text`` with a single quote in front when a spreadsheet would take it for a formula."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def spreadsheet_text(cell: str) -> str:
    """The text a :func:`spreadsheet_safe` cell stands for: the leading single quote dropped again, so a log
    toppref wrote reads back to the same docids."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_STARTS) else cell

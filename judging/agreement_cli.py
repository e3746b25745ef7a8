"""``toppref agreement LOG_A LOG_B [--qrels GRADED]``: how often two judgment logs agree on the pairs both
judged (``judging.engine.judge_agreement``), as JSON on stdout. File-only, like ``simulate``: no Django."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from config.cli import DataError, input_file, warn
from judging.engine.judge_agreement import log_agreement
from judging.engine.judgment_log import JudgmentLogError, VoteLog, read_votes

T = TypeVar("T")


def register(subparsers: argparse._SubParsersAction, only: str | None = None) -> None:
    """Add ``agreement`` (see config/cli.py)."""
    parser = subparsers.add_parser(
        "agreement",
        description=(
            "Agreement between two logs of pairwise judgments on the pairs both judged: pairs, agreement, "
            "Cohen's kappa, ties of each log, and with --qrels the same by the pair's grade gap; JSON on stdout. "
            "A log is toppref's judgments export (CSV), 'topic docidA docidB winner' lines (the CAsT 2019 "
            "logs) or 'topic docidA docidB !|=|?' lines (the TREC DL 2021 model log: ! docidA preferred, = tie, "
            "? no answer). A pair judged several times counts once, each combination of its votes weighing "
            "equally (docs/agreement.md)."
        ),
    )
    parser.add_argument("log_a", metavar="LOG_A", type=Path, help="the first judge's log")
    parser.add_argument("log_b", metavar="LOG_B", type=Path, help="the second judge's log")
    parser.add_argument(
        "--qrels", type=Path, metavar="GRADED", help="graded qrels (topic Q0 docid grade): adds by_grade_gap"
    )
    parser.set_defaults(handler=agreement_command, needs_django=False)


def agreement_command(args: argparse.Namespace) -> int:
    """``toppref agreement``: 0 on success, 1 on an unreadable or malformed file."""
    for path in (args.log_a, args.log_b, args.qrels):
        if path is not None:
            input_file(path)
    log_a, log_b = read_vote_log(args.log_a), read_vote_log(args.log_b)
    grades = _read_grades(args.qrels) if args.qrels is not None else None
    report = log_agreement(log_a.votes, log_b.votes, grades=grades)
    if not report["pairs"]:
        warn("agreement", f"no pair of {args.log_a} is in {args.log_b}: nothing to compare")
    summary = {
        "log_a": str(args.log_a),
        "log_b": str(args.log_b),
        "form_a": log_a.form,
        "form_b": log_b.form,
        "skipped_a": log_a.skipped,
        "skipped_b": log_b.skipped,
        **report,
    }
    print(json.dumps(summary, indent=2))
    return 0


def read_log_file(path: Path, reader: Callable[[Path], T]) -> T:
    """``reader(path)`` (a judgment log reader of ``judging.engine.judgment_log``), its failures as
    :class:`DataError` naming the file (and the line, the reader's ``file:line: problem``)."""
    try:
        return reader(path)
    except JudgmentLogError as error:
        raise DataError(str(error)) from None
    except UnicodeDecodeError as error:
        raise DataError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise DataError(f"cannot read {error.filename}: {error.strerror}") from None


def read_vote_log(path: Path) -> VoteLog:
    """The votes of the log at ``path`` (any form ``read_votes`` knows), or :class:`DataError`."""
    return read_log_file(path, read_votes)


def _read_grades(path: Path) -> dict[str, dict[str, float]]:
    from pools.trec import TrecFormatError, read_qrels

    try:
        return read_qrels(path)
    except TrecFormatError as error:
        raise DataError(str(error)) from None
    except UnicodeDecodeError as error:
        raise DataError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None

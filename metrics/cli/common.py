"""What the file-only commands of the metrics app share: reading the qrels and runs (one-line errors, a
warning for an empty run), the relevance options, the compatibility options, a progress bar."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Iterator, Sized
from typing import TypeVar

from config.cli import (
    DataError,
    bounded_int,
    finite_float,
    progress_bar,
    warn,
)
from metrics.core import readers
from metrics.core.rbo import DEFAULT_DEPTH
from metrics.core.readers import Qrels, Run, TrecFormatError

T = TypeVar("T")

__all__ = ["add_compat_options", "add_relevance_options", "progress", "read_qrels", "read_run", "read_runs"]


def add_compat_options(parser: argparse.ArgumentParser) -> None:
    """RBO depth, normalisation and missing topics, shared by ``compat`` and ``evaluate``."""
    parser.add_argument(
        "--depth", type=bounded_int(1), default=DEFAULT_DEPTH, help="RBO depth (default 1000, the reference)"
    )
    parser.add_argument(
        "--no-normalize",
        dest="normalize",
        action="store_false",
        help="plain RBO instead of NRBO (reproduces the CIKM'20 / ICTIR'20 numbers)",
    )
    parser.add_argument(
        "--missing-topics",
        choices=("drop", "zero"),
        default="drop",
        help="drop: score only topics in the run (reference, trec_eval); "
        "zero: also count judged topics the run lacks, as 0 (trec_eval -c)",
    )


def add_relevance_options(parser: argparse.ArgumentParser) -> None:
    """How qrels values become relevance, shared by ``evaluate``, ``compare`` and ``plot``."""
    parser.add_argument(
        "-l",
        "--threshold",
        type=finite_float,
        default=1.0,
        help="binary relevance: value (or level, with --levels) >= THRESHOLD (default 1)",
    )
    parser.add_argument(
        "--levels",
        action="store_true",
        help="replace qrels values by their level 1..T per topic (preference qrels -> levels)",
    )


def read_qrels(path: str, command: str) -> Qrels:
    """The qrels at ``path`` (checked to exist); an empty file is an error: nothing can be scored."""
    try:
        qrels = readers.read_qrels(path)
    except TrecFormatError as error:
        raise DataError(str(error)) from None
    if len(qrels) == 0:
        raise DataError(f"{path}: holds no judgments, so nothing can be scored")
    return qrels


def read_runs(paths: list[str], command: str) -> Iterator[Run]:
    """Each run in turn; a malformed one is a :class:`DataError`, an empty one a warning."""
    for path in paths:
        yield read_run(path, command)


def read_run(path: str, command: str, *, use_threads: bool = True) -> Run:
    try:
        run = readers.read_run(path, use_threads=use_threads)
    except TrecFormatError as error:
        raise DataError(str(error)) from None
    if len(run) == 0:
        warn(command, f"{path}: holds no lines: the run retrieves nothing")
    return run


def progress(description: str, unit: str) -> Callable[[Iterable[T]], Iterator[T]]:
    """A wrapper that counts the items of an iterable on ``progress_bar`` (a terminal only) as they are used."""

    def counted(items: Iterable[T]) -> Iterator[T]:
        total = len(items) if isinstance(items, Sized) else None
        with progress_bar(total=total, description=description, unit=unit) as bar:
            for item in items:
                yield item
                bar.update(1)

    return counted

"""``toppref`` subcommands of the metrics app (see config/cli.py): ``compat`` and ``evaluate`` here; ``compare``
and ``plot`` in :mod:`metrics.analysis_cli`. All of them read files only (no Django).

Every input is checked before anything is printed; runs that share a runid are named after their files
(:func:`metrics.core.comparison.distinct_run_names`), reported once on stderr."""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from config.cli import (
    DataError,
    UsageError,
    bounded_int,
    finite_float,
    input_file,
    note,
    warn,
)
from metrics.core.evaluate import MEASURES, EvaluationOptions, TopicScores, evaluate_run, parse_measure
from metrics.core.ideal import levels_from_values, map_gains
from metrics.core.rbo import DEFAULT_DEPTH, DEFAULT_P
from metrics.core.readers import Qrels, Run, TrecFormatError, read_qrels, read_run
from metrics.core.run_names import describe_renames, distinct_run_names

# The reference script's accepted range for -p; outside it the reference prints a message and exits 0.
P_RANGE = (0.01, 0.99)


def register(subparsers: argparse._SubParsersAction, only: str | None = None) -> None:
    """Add this app's subcommands (only the one named ``only`` when given; see config/cli.py)."""
    if only in (None, "compat"):
        _register_compat(subparsers)
    if only in (None, "evaluate"):
        _register_evaluate(subparsers)
    if only is None or only in ("compare", "plot"):
        from metrics import analysis_cli

        analysis_cli.register(subparsers, only=only)


def _register_compat(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compat",
        description=(
            "Compatibility (NRBO against the maximum-similarity ideal ranking) of RUN against preference or graded "
            "QRELS, computed exactly as the reference compatibility.py: CSV 'runid,topic,compatibility' on "
            "stdout, one line per topic in run order, then 'runid,average,MEAN' over the run's topics that have "
            "a positive judgment."
        ),
    )
    parser.add_argument(
        "-p",
        type=finite_float,
        default=DEFAULT_P,
        help="persistence, in [0.01, 0.99] (default 0.95; 0.80/0.85/0.90/0.95 match NDCG@3/5/10/20)",
    )
    parser.add_argument(
        "qrels", metavar="QRELS", help="TREC qrels: topic Q0 docid value (float; larger = preferred)"
    )
    parser.add_argument("run", metavar="RUN", help="TREC run: topic Q0 docid rank score runid")
    _add_compat_options(parser)
    parser.set_defaults(handler=compat_command, needs_django=False)


def _add_compat_options(parser: argparse.ArgumentParser) -> None:
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


def compat_command(args: argparse.Namespace) -> int:
    if not P_RANGE[0] <= args.p <= P_RANGE[1]:
        print(
            f"toppref compat: error: -p must be in [{P_RANGE[0]}, {P_RANGE[1]}], got {args.p}",
            file=sys.stderr,
        )
        return 2
    options = EvaluationOptions(
        depth=args.depth, normalize=args.normalize, missing_topics=args.missing_topics
    )
    input_file(args.qrels)
    input_file(args.run)
    qrels = _read_qrels(args.qrels, "compat")
    (run,) = _read_runs([args.run], "compat")
    (scores,) = evaluate_run(qrels, run, [parse_measure(f"compat@{args.p!r}")], options)
    out = sys.stdout
    out.write("runid,topic,compatibility\n")
    for topic, value in zip(scores.topics, scores.values, strict=True):
        out.write(f"{scores.runid},{topic},{float(value)!r}\n")
    out.write(f"{scores.runid},average,{scores.mean!r}\n")
    return 0


def _register_evaluate(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        description=(
            "Score each RUN against QRELS. Output lines 'runid<TAB>measure<TAB>topic<TAB>value', topic 'all' "
            "for the mean over the scored topics; nothing is printed unless every input can be read. Runs that "
            "share a runid are named after their files (reported once on stderr). Measures: "
            + "; ".join(f"{name}: {family.description}" for name, family in sorted(MEASURES.items()))
        ),
    )
    parser.add_argument("qrels", metavar="QRELS", help="TREC qrels (float values accepted)")
    parser.add_argument("runs", metavar="RUN", nargs="+", help="TREC run files")
    parser.add_argument(
        "-m",
        "--measure",
        dest="measures",
        metavar="MEASURE",
        action="extend",
        nargs="+",
        required=True,
        help="e.g. compat@0.95 ndcg@10 ap rr p@5 rbp@0.8 rbp_residual@0.8 esl",
    )
    parser.add_argument("-q", "--per-topic", action="store_true", help="also print one line per topic")
    parser.add_argument("--format", choices=("tsv", "csv", "json"), default="tsv")
    add_relevance_options(parser)
    parser.add_argument(
        "--gains", metavar="MAP", help="map values (levels with --levels) to gains, e.g. 1:1,2:3,3:7"
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=bounded_int(1, 64),
        default=min(2, os.cpu_count() or 1),
        help="runs scored at once, in threads (default: 2, or 1 on a single CPU)",
    )
    _add_compat_options(parser)
    parser.set_defaults(handler=evaluate_command, needs_django=False)


def evaluate_command(args: argparse.Namespace) -> int:
    try:
        measures = [parse_measure(name) for name in args.measures]
        gains = _parse_gains(args.gains) if args.gains else None
    except ValueError as error:
        raise UsageError(str(error)) from None
    options = EvaluationOptions(
        depth=args.depth,
        normalize=args.normalize,
        threshold=args.threshold,
        missing_topics=args.missing_topics,
    )
    for path in (args.qrels, *args.runs):
        input_file(path)
    qrels = _prepare_qrels(_read_qrels(args.qrels, "evaluate"), levels=args.levels, gains=gains)
    # Every run is scored before anything is printed, so a bad file never leaves half a table on stdout.
    scored = list(_scores_with_progress(qrels, args.runs, measures, options, jobs=args.jobs))
    names, renames = distinct_run_names([runid for runid, _, _ in scored], args.runs)
    if renames:
        note("evaluate", describe_renames(renames))
    for path, (_, lines, run_scores) in zip(args.runs, scored, strict=True):
        if lines and run_scores and not any(scores.topics for scores in run_scores):
            warn(
                "evaluate", f"{path}: no topic scored (none judged with a relevant item in {args.qrels}): 0.0"
            )
    writer = _Writer(args.format, args.per_topic)
    for name, (_, _, run_scores) in zip(names, scored, strict=True):
        for scores in run_scores:
            writer.write(replace(scores, runid=name))
    writer.close()
    return 0


def _read_qrels(path: str, command: str) -> Qrels:
    """The qrels at ``path`` (checked to exist); an empty file is an error: nothing can be scored."""
    try:
        qrels = read_qrels(path)
    except TrecFormatError as error:
        raise DataError(str(error)) from None
    if len(qrels) == 0:
        raise DataError(f"{path}: holds no judgments, so nothing can be scored")
    return qrels


def _read_runs(paths: list[str], command: str) -> Iterator[Run]:
    """Each run in turn; a malformed one is a :class:`DataError`, an empty one a warning."""
    for path in paths:
        yield _read_run(path, command)


def _read_run(path: str, command: str) -> Run:
    try:
        run = read_run(path)
    except TrecFormatError as error:
        raise DataError(str(error)) from None
    if len(run) == 0:
        warn(command, f"{path}: holds no lines: the run retrieves nothing")
    return run


def _scores_with_progress(
    qrels: Qrels, paths: list[str], measures: list, options: EvaluationOptions, *, jobs: int
) -> Iterator[tuple[str, int, list[TopicScores]]]:
    """The runid, line count and scores of each run, in the order of ``paths``; ``jobs`` runs are read and scored at once in
    threads (Arrow and numpy release the GIL in their kernels), so at most ``jobs`` runs are in memory."""
    from tqdm import tqdm

    def score(path: str) -> tuple[str, int, list[TopicScores]]:
        run = _read_run(path, "evaluate")
        return run.runid, len(run), evaluate_run(qrels, run, measures, options)

    if jobs == 1 or len(paths) == 1:
        for path in paths:
            yield score(path)
        return
    # The bar shows only on a terminal (tqdm disables itself otherwise) and only after a second.
    progress = tqdm(total=len(paths), desc="runs", unit="run", file=sys.stderr, disable=None, delay=1.0)
    with progress, ThreadPoolExecutor(max_workers=jobs) as pool:
        pending = [pool.submit(score, path) for path in paths[:jobs]]
        for index in range(len(paths)):
            result = pending[index].result()
            next_index = index + jobs
            if next_index < len(paths):
                pending.append(pool.submit(score, paths[next_index]))
            progress.update(1)
            yield result


def _prepare_qrels(qrels: Qrels, *, levels: bool, gains: dict[float, float] | None) -> Qrels:
    if levels:
        qrels = levels_from_values(qrels)
    if gains is not None:
        qrels = map_gains(qrels, gains)
    return qrels


def _parse_gains(text: str) -> dict[float, float]:
    gains = {}
    for item in text.split(","):
        value, separator, gain = item.partition(":")
        try:
            if not separator:
                raise ValueError
            gains[finite_float(value)] = finite_float(gain)
        except (ValueError, argparse.ArgumentTypeError):
            raise ValueError(f"--gains: {item!r} is not VALUE:GAIN (e.g. 1:1,2:3,3:7)") from None
    return gains


class _Writer:
    """Streams tsv/csv lines run by run; json is one document written at the end."""

    def __init__(self, format: str, per_topic: bool):
        self.format = format
        self.per_topic = per_topic
        self.records: list[dict] = []
        self.csv = None
        if format == "csv":
            self.csv = csv.writer(sys.stdout, lineterminator="\n")
            self.csv.writerow(["runid", "measure", "topic", "value"])

    def write(self, scores: TopicScores) -> None:
        if self.format == "json":
            record = {
                "runid": scores.runid,
                "measure": scores.measure,
                "mean": scores.mean,
                "topic_count": len(scores.topics),
            }
            if self.per_topic:
                record["topics"] = {t: float(v) for t, v in zip(scores.topics, scores.values, strict=True)}
            self.records.append(record)
            return
        rows = []
        if self.per_topic:
            rows += [(t, float(v)) for t, v in zip(scores.topics, scores.values, strict=True)]
        rows.append(("all", scores.mean))
        for topic, value in rows:
            if self.csv is not None:
                self.csv.writerow([scores.runid, scores.measure, topic, repr(value)])
            else:
                sys.stdout.write(f"{scores.runid}\t{scores.measure}\t{topic}\t{value!r}\n")

    def close(self) -> None:
        if self.format == "json":
            json.dump(self.records, sys.stdout, indent=1)
            sys.stdout.write("\n")

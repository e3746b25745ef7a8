"""``toppref evaluate``: score runs under any measures; runs read and scored a few at once in threads."""

from __future__ import annotations

import argparse
import csv
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from config.cli import (
    UsageError,
    bounded_int,
    finite_float,
    input_file,
    note,
    progress_bar,
    warn,
)
from metrics.cli.common import add_compat_options, add_relevance_options, read_qrels, read_run
from metrics.core.evaluate import MEASURES, EvaluationOptions, TopicScores, evaluate_run, parse_measure
from metrics.core.ideal import levels_from_values, map_gains
from metrics.core.readers import Qrels
from metrics.core.run_names import describe_renames, distinct_run_names


def register(subparsers: argparse._SubParsersAction) -> None:
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
    add_compat_options(parser)
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
    qrels = _prepare_qrels(read_qrels(args.qrels, "evaluate"), levels=args.levels, gains=gains)
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


def _scores_with_progress(
    qrels: Qrels, paths: list[str], measures: list, options: EvaluationOptions, *, jobs: int
) -> Iterator[tuple[str, int, list[TopicScores]]]:
    """The runid, line count and scores of each run, in the order of ``paths``; ``jobs`` runs are read and scored at once in
    threads (Arrow and numpy release the GIL in their kernels), so at most ``jobs`` runs are in memory."""

    def score(path: str) -> tuple[str, int, list[TopicScores]]:
        # With several runs at once, one per thread, each is parsed on its own thread (less CPU than Arrow's
        # pool handing blocks around, and the cores are busy anyway).
        run = read_run(path, "evaluate", use_threads=jobs == 1 or len(paths) == 1)
        return run.runid, len(run), evaluate_run(qrels, run, measures, options)

    if jobs == 1 or len(paths) == 1:
        for path in paths:
            yield score(path)
        return
    progress = progress_bar(total=len(paths), description="runs", unit="run")
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
            import json

            json.dump(self.records, sys.stdout, indent=1)
            sys.stdout.write("\n")

"""The inputs of ``toppref compare`` and ``toppref plot``: QRELS, RUN... and the measures, read, checked and
scored (``metrics.core.comparison.collect``)."""

from __future__ import annotations

import argparse

from config.cli import (
    UsageError,
    bounded_int,
    finite_float,
    input_file,
    note,
    seed,
)
from metrics.cli.common import add_relevance_options, progress, read_qrels, read_runs
from metrics.core.comparison import (
    MeasureResult,
    collect,
    describe_renames,
    distinct_run_names,
    parse_measures,
)
from metrics.core.evaluate import EvaluationOptions
from metrics.core.ideal import levels_from_values
from metrics.core.readers import Qrels


def add_inputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "qrels", metavar="QRELS", help="TREC qrels: topic Q0 docid value (float; larger = preferred)"
    )
    parser.add_argument("runs", metavar="RUN", nargs="+", help="TREC run files (one runid each)")
    parser.add_argument(
        "-m",
        "--measure",
        dest="measures",
        metavar="MEASURE",
        action="extend",
        nargs="+",
        required=True,
        help="measures to compare, e.g. ndcg@3 compat@0.8 ap rpp sgnlp",
    )
    add_relevance_options(parser)
    parser.add_argument(
        "--missing-topics",
        choices=("drop", "zero"),
        default="drop",
        help="score measures: drop (default) topics a run lacks, or score them 0 (trec_eval -c)",
    )
    parser.add_argument(
        "--confidence", type=finite_float, default=0.95, help="confidence of the intervals (default 0.95)"
    )
    parser.add_argument(
        "--resamples",
        type=bounded_int(1, 1_000_000),
        default=10_000,
        help="bootstrap resamples, and permutations of --hsd (default 10000)",
    )
    parser.add_argument("--seed", type=seed, default=0, help="bootstrap seed (default 0)")


def load(
    args: argparse.Namespace,
    command: str,
    *,
    qrels_path: str | None = None,
    measures: list[str] | None = None,
) -> tuple[Qrels, list[str], list[MeasureResult]]:
    """Check, read and compute: the qrels as measured, the run names and the results."""
    try:
        parsed = parse_measures(args.measures if measures is None else measures)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if not 0 < args.confidence < 1:
        raise UsageError(f"--confidence must be in (0, 1), got {args.confidence}")
    qrels_path = args.qrels if qrels_path is None else qrels_path
    for path in (qrels_path, *args.runs):
        input_file(path)
    qrels = read_qrels(qrels_path, command)
    if args.levels:
        qrels = levels_from_values(qrels)
    options = EvaluationOptions(threshold=args.threshold, missing_topics=args.missing_topics)
    runids, results = collect(
        qrels, read_runs(args.runs, command), parsed, options, progress=progress("runs", "run")
    )
    names, renames = distinct_run_names(runids, args.runs)
    if renames and not getattr(args, "renames_reported", False):
        note(command, describe_renames(renames))
        args.renames_reported = True
    return qrels, names, results

"""``toppref compat``: compatibility of one run, a drop-in for the reference compatibility.py."""

from __future__ import annotations

import argparse
import sys

from config.cli import (
    finite_float,
    input_file,
)
from metrics.cli.common import add_compat_options, read_qrels, read_runs
from metrics.core.evaluate import EvaluationOptions, evaluate_run, parse_measure
from metrics.core.legend import PERSISTENCE_MEANING
from metrics.core.rbo import DEFAULT_P

# The reference script's accepted range for -p; outside it the reference prints a message and exits 0.
P_RANGE = (0.01, 0.99)


def register(subparsers: argparse._SubParsersAction) -> None:
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
        help=f"persistence p: {PERSISTENCE_MEANING}; in [0.01, 0.99], default 0.95",
    )
    parser.add_argument(
        "qrels", metavar="QRELS", help="TREC qrels: topic Q0 docid value (float; larger = preferred)"
    )
    parser.add_argument("run", metavar="RUN", help="TREC run: topic Q0 docid rank score runid")
    add_compat_options(parser)
    parser.set_defaults(handler=compat_command, needs_django=False)


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
    qrels = read_qrels(args.qrels, "compat")
    (run,) = read_runs([args.run], "compat")
    (scores,) = evaluate_run(qrels, run, [parse_measure(f"compat@{args.p!r}")], options)
    out = sys.stdout
    out.write("runid,topic,compatibility\n")
    for topic, value in zip(scores.topics, scores.values, strict=True):
        out.write(f"{scores.runid},{topic},{float(value)!r}\n")
    out.write(f"{scores.runid},average,{scores.mean!r}\n")
    return 0

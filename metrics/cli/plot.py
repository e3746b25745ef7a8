"""``toppref plot``: the figures of "Assessing top-k preferences" (Clarke et al.): a measure against another
(Fig. 4) and runs with bootstrap confidence intervals (Fig. 9). Reads files only (no Django)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from config.cli import (
    DataError,
    UsageError,
    input_file,
    output_file,
)
from metrics.cli.run_set import add_inputs, load
from metrics.core.comparison import tau
from metrics.core.significance import bootstrap_ci
from metrics.plot_labels import label_points


def register(subparsers: argparse._SubParsersAction) -> None:
    plot = subparsers.add_parser(
        "plot",
        description=(
            "scatter: one point per run, labelled with its name, mean of the first measure (x) against the "
            "second (y), Kendall's tau in the title (Clarke et al. Fig. 4, e.g. -m ndcg@3 compat@0.8); each axis "
            "names the qrels it was scored against (--y-qrels scores y against other qrels, e.g. compatibility "
            "on preferences against NDCG on graded judgments). ci: runs sorted by the mean of the measure, with "
            "percentile bootstrap confidence intervals over topics (Fig. 9)."
        ),
    )
    plot.add_argument("kind", choices=("scatter", "ci"))
    add_inputs(plot)
    plot.add_argument("-o", "--output", required=True, help="PNG file to write")
    plot.add_argument(
        "--y-qrels", metavar="QRELS", help="scatter: score the second measure (y) against these qrels instead"
    )
    plot.set_defaults(handler=plot_command, needs_django=False)


def plot_command(args: argparse.Namespace) -> int:
    expected = 2 if args.kind == "scatter" else 1
    if len(args.measures) != expected:
        raise UsageError(f"{args.kind} needs exactly {expected} measure(s) (-m), got {len(args.measures)}")
    if args.y_qrels is not None and args.kind != "scatter":
        raise UsageError("--y-qrels only applies to scatter")
    output_file(args.output)
    if args.y_qrels is not None:
        input_file(args.y_qrels)
    if args.kind == "scatter" and args.y_qrels is not None:
        _, runids, (x,) = load(args, "plot", measures=args.measures[:1])
        _, _, (y,) = load(args, "plot", qrels_path=args.y_qrels, measures=args.measures[1:])
        results = [x, y]
    else:
        _, runids, results = load(args, "plot")
    if args.kind == "ci" and not results[0].topics:
        raise DataError(f"no topic is scored for every run under {results[0].name}")
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on servers and in CI
    from matplotlib import pyplot

    if args.kind == "scatter":
        figure, axes = pyplot.subplots(figsize=(7.5, 6.0))
        x, y = results
        axes.scatter(x.run_scores, y.run_scores, s=14, color="tab:blue", zorder=3)
        axes.set_xlabel(f"{x.name} (qrels: {Path(args.qrels).name}; mean over {len(x.topics)} topics)")
        y_qrels = args.y_qrels if args.y_qrels is not None else args.qrels
        axes.set_ylabel(f"{y.name} (qrels: {Path(y_qrels).name}; mean over {len(y.topics)} topics)")
        axes.set_title(f"{len(runids)} runs; Kendall's tau = {tau(x.run_scores, y.run_scores):.3f}")
        label_points(figure, axes, x.run_scores, y.run_scores, runids)
    else:
        figure, axes = pyplot.subplots(figsize=(max(6.4, 0.3 * len(runids)), 4.8))
        (result,) = results
        intervals = bootstrap_ci(
            result.topic_scores, confidence=args.confidence, resamples=args.resamples, seed=args.seed
        )
        order = np.argsort(-result.run_scores, kind="stable")
        means = result.run_scores[order]
        errors = np.vstack([means - intervals[order, 0], intervals[order, 1] - means])
        axes.errorbar(np.arange(len(order)), means, yerr=errors, fmt="o", markersize=4, capsize=2)
        axes.set_xticks(np.arange(len(order)), [runids[i] for i in order], rotation=90, fontsize=7)
        axes.set_ylabel(
            f"{result.name} (qrels: {Path(args.qrels).name}; mean over {len(result.topics)} topics)"
        )
        axes.set_title(f"runs by {result.name} with {args.confidence:.0%} bootstrap intervals")
    figure.tight_layout()
    try:
        figure.savefig(args.output, format="png", dpi=150)
    except OSError as error:
        raise UsageError(f"{args.output}: {error.strerror}") from None
    finally:
        pyplot.close(figure)
    print(args.output)
    return 0

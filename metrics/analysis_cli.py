"""``toppref compare`` and ``toppref plot``: meta-evaluation of measures over a set of runs, and the figures
of "Assessing top-k preferences" (Clarke et al.): compatibility against NDCG (Fig. 4) and runs with 95%
confidence intervals (Fig. 9). Both read files only (no Django)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from config.cli import (
    DataError,
    UsageError,
    bounded_int,
    finite_float,
    input_file,
    note,
    output_file,
    seed,
    warn,
)
from metrics.cli import add_relevance_options
from metrics.core.comparison import (
    PREFERENCE_MEASURES,
    MeasureResult,
    collect,
    compare,
    describe_renames,
    distinct_run_names,
    parse_measures,
    tau,
)
from metrics.core.evaluate import EvaluationOptions, parse_measure
from metrics.core.ideal import levels_from_values
from metrics.core.judgment_errors import (
    JUDGE_SETTINGS,
    JUDGES,
    judge_rates,
    judgment_error_stability,
    simulation_input,
)
from metrics.core.readers import Qrels, Run, TrecFormatError, read_qrels, read_run
from metrics.core.significance import CORRECTIONS, bootstrap_ci
from metrics.figures import label_points

FORMAT_HELP = """\
output (--format tsv, default; csv: the same with commas): lines whose first field names the line type, like
trec_eval's first column; each type starts with its header line, '#' and the type then the column names
(e.g. '#pair measure run_a run_b value p_value'); filter with grep or awk ('toppref compare ... | grep ^pair'):
  sensitivity MEASURE TEST TOPICS PAIRS DISTINGUISHED SHARE
      discriminative power (Clarke et al. Eq. 2): share of run pairs with p < ALPHA (--correction)
  tau         MEASURE_A MEASURE_B TAU
      Kendall's tau-b between the run orderings (mean score; for run-versus-run measures the mean win
      rate, or MC4 with --ordering mc4)
  pair        MEASURE RUN_A RUN_B VALUE P_VALUE
      VALUE: mean over topics of score(A) - score(B), or of the preference of A over B; > 0 favours RUN_A
  run         MEASURE RUNID MEAN CI_LOW CI_HIGH RANK
      mean over topics with a percentile bootstrap 95%% interval (--confidence) over topics; RANK 1 is best
  stability   MEASURE JUDGE TPR FPR SETS TAU_MEAN TAU_SD SIGNIFICANT AGREEMENT MAPPED_P
      with --judges: Rashidi et al.'s assessor-error simulation. SETS perturbed (binary) qrels per judge;
      TAU: Kendall's tau between the run ordering under perturbed and original judgments; SIGNIFICANT: run
      pairs (over all sets) with p < 0.05 under perturbed judgments; AGREEMENT: share of those that the
      original judgments order the same way; MAPPED_P: mean one-sided p under the original judgments of the
      pairs with perturbed p in [0.005, 0.015] (their section 5.5; 0.5 = a coin flip, nan = none)
--format json: one object {"runs", "alpha", "correction", "measures": {name: {"test", "topics",
"sensitivity", "distinguished", "runs", "pairs", "stability"}}, "kendall_tau": {a: {b: tau}}}; undefined
values (nan in TSV) are null.

Runs that share a runid (the seven thunlp runs of TREC CAsT 2019 all say BERT-base) are named after their
files, as in 'evaluate', 'compat' and 'plot'; the renaming is reported once on stderr.

measures (-m): every 'toppref evaluate' measure (compat@0.8, ndcg@3, ap, rr, p@10, rbp@0.95, ppref, ...),
compared with a paired t-test over the topics every run is scored on; and the run-versus-run measures:
%s
These order each run by score, ties by docid descending (trec_eval), use every judged topic with a relevant
item, and treat a topic missing from a run as retrieving nothing (worst case, as pref_eval)."""


def register(subparsers: argparse._SubParsersAction, only: str | None = None) -> None:
    """Add the compare and plot subcommands (only the one named ``only`` when given; see config/cli.py)."""
    if only in (None, "compare"):
        _register_compare(subparsers)
    if only in (None, "plot"):
        _register_plot(subparsers)


def _register_compare(subparsers: argparse._SubParsersAction) -> None:
    preference_help = "\n".join(f"  {m.name:<11} {m.description}" for m in PREFERENCE_MEASURES.values())
    compare = subparsers.add_parser(
        "compare",
        description="Compare measures over a set of runs, as in the tables of Clarke et al., Diaz, and Diaz and Ferraro.",
        epilog=FORMAT_HELP % preference_help,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_inputs(compare)
    compare.add_argument("--alpha", type=finite_float, default=0.05, help="significance level (default 0.05)")
    compare.add_argument(
        "--correction",
        choices=CORRECTIONS,
        default="none",
        help="none (Clarke et al., the default) or bonferroni over the run pairs (Diaz; Diaz and "
        "Ferraro) for the sensitivity line",
    )
    compare.add_argument(
        "--hsd",
        action="store_true",
        help="randomized Tukey HSD (Carterette 2012; --resamples permutations) for every measure "
        "instead of the t / sign tests; family-wise, so --correction is ignored",
    )
    compare.add_argument("--format", choices=("tsv", "csv", "json"), default="tsv")
    compare.add_argument(
        "--ordering",
        choices=("win-rate", "mc4"),
        default="win-rate",
        help="how run-versus-run measures order runs for tau: mean win rate (default) or MC4 rank "
        "aggregation of the per-topic orderings (Diaz and Ferraro section 5.4)",
    )
    compare.add_argument(
        "--judges",
        nargs="+",
        choices=JUDGES,
        default=[],
        help="simulate assessor error with these judge types (random: crowd-like; rank_biased: "
        "expert-like, errors follow meta-AP); score measures only",
    )
    compare.add_argument(
        "--judge-setting",
        choices=sorted(JUDGE_SETTINGS),
        default="smart-neutral",
        help="(disc, bias) of the simulated judge: "
        + ", ".join(
            f"{name} {disc:g}/{bias:g} (TPR {judge_rates(disc, bias)[0]:.2f}, FPR "
            f"{judge_rates(disc, bias)[1]:.2f})"
            for name, (disc, bias) in sorted(JUDGE_SETTINGS.items())
        ),
    )
    compare.add_argument(
        "--tpr", type=finite_float, help="true positive rate of the simulated judge (overrides the setting)"
    )
    compare.add_argument(
        "--fpr", type=finite_float, help="false positive rate of the simulated judge (overrides the setting)"
    )
    compare.add_argument(
        "--sets",
        type=bounded_int(1, 100_000),
        default=100,
        help="perturbed qrels per judge (default 100, as the paper)",
    )
    compare.set_defaults(handler=compare_command, needs_django=False)


def _register_plot(subparsers: argparse._SubParsersAction) -> None:
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
    _add_inputs(plot)
    plot.add_argument("-o", "--output", required=True, help="PNG file to write")
    plot.add_argument(
        "--y-qrels", metavar="QRELS", help="scatter: score the second measure (y) against these qrels instead"
    )
    plot.set_defaults(handler=plot_command, needs_django=False)


def _add_inputs(parser: argparse.ArgumentParser) -> None:
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


def _read_qrels(path: str, command: str) -> Qrels:
    """The qrels at ``path``; an empty file is an error (nothing can be scored)."""
    input_file(path)
    try:
        qrels = read_qrels(path)
    except TrecFormatError as error:
        raise DataError(str(error)) from None
    if len(qrels) == 0:
        raise DataError(f"{path}: holds no judgments, so nothing can be scored")
    return qrels


def _read_runs(paths: list[str], command: str) -> Iterator[Run]:
    """Each run in turn (files already checked to exist); a malformed one is a :class:`DataError`, an empty one a
    warning (it retrieves nothing)."""
    for path in paths:
        try:
            run = read_run(path)
        except TrecFormatError as error:
            raise DataError(str(error)) from None
        if len(run) == 0:
            warn(command, f"{path}: holds no lines: the run retrieves nothing")
        yield run


def _progress(description: str, unit: str):
    # The bar shows only on a terminal (tqdm disables itself otherwise).
    from tqdm import tqdm

    return lambda items: tqdm(items, desc=description, unit=unit, disable=None)


def _load(
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
    qrels = _read_qrels(qrels_path, command)
    if args.levels:
        qrels = levels_from_values(qrels)
    options = EvaluationOptions(threshold=args.threshold, missing_topics=args.missing_topics)
    runids, results = collect(
        qrels, _read_runs(args.runs, command), parsed, options, progress=_progress("runs", "run")
    )
    names, renames = distinct_run_names(runids, args.runs)
    if renames and not getattr(args, "renames_reported", False):
        note(command, describe_renames(renames))
        args.renames_reported = True
    return qrels, names, results


def compare_command(args: argparse.Namespace) -> int:
    tpr, fpr = judge_rates(*JUDGE_SETTINGS[args.judge_setting])
    tpr = args.tpr if args.tpr is not None else tpr
    fpr = args.fpr if args.fpr is not None else fpr
    if not (0 <= tpr <= 1 and 0 <= fpr <= 1):
        raise UsageError(f"--tpr and --fpr must lie in [0, 1] (got {tpr}, {fpr})")
    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha must be in (0, 1), got {args.alpha}")
    qrels, runids, results = _load(args, "compare")
    report = compare(
        runids,
        results,
        alpha=args.alpha,
        correction="none" if args.hsd else args.correction,
        ordering=args.ordering,
        is_hsd=args.hsd,
        confidence=args.confidence,
        resamples=args.resamples,
        seed=args.seed,
        progress=_progress("tests", "measure"),
    )
    if args.judges:
        _add_stability(report, args, qrels, tpr=tpr, fpr=fpr)
    if args.format == "json":
        json.dump(_without_nan(report), sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        _write_table(report, delimiter="," if args.format == "csv" else "\t")
    return 0


def _add_stability(report: dict, args: argparse.Namespace, qrels: Qrels, *, tpr: float, fpr: float) -> None:
    """Run the judgment-error simulation for every score measure and add it to the report."""
    options = EvaluationOptions(threshold=args.threshold, missing_topics=args.missing_topics)
    for name in report["measures"]:
        report["measures"][name]["stability"] = []
        if name in PREFERENCE_MEASURES:
            note("compare", f"no assessor-error simulation for {name} (score measures only)")
            continue
        prepared = simulation_input(qrels, _read_runs(args.runs, "compare"), parse_measure(name), options)
        for judge in args.judges:
            stability = judgment_error_stability(
                prepared.score,
                prepared.relevance,
                prepared.topic,
                tpr=tpr,
                fpr=fpr,
                judge=judge,
                meta_aps=prepared.meta_aps,
                sets=args.sets,
                seed=args.seed,
                progress=_progress(f"{name} {judge} judge", "set"),
            )
            report["measures"][name]["stability"].append(
                {
                    "judge": judge,
                    "tpr": tpr,
                    "fpr": fpr,
                    "sets": args.sets,
                    "tau_mean": float(np.mean(stability.kendall_tau)),
                    "tau_sd": float(np.std(stability.kendall_tau)),
                    "significant": stability.significant_pairs,
                    "agreement": stability.agreement,
                    "mapped_p": float(np.mean(stability.mapped_p))
                    if len(stability.mapped_p)
                    else float("nan"),
                    "flip_rate": list(stability.flip_rate),
                }
            )


def _without_nan(value: Any) -> Any:
    """NaN (undefined: one run, no pair, no case) as JSON null; bare NaN is not valid JSON."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {key: _without_nan(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_nan(item) for item in value]
    return value


# Column names of each line type, written once before its first line ('#' + type, then these).
COLUMNS = {
    "sensitivity": ("measure", "test", "topics", "pairs", "distinguished", "share"),
    "tau": ("measure_a", "measure_b", "tau"),
    "pair": ("measure", "run_a", "run_b", "value", "p_value"),
    "stability": (
        "measure",
        "judge",
        "tpr",
        "fpr",
        "sets",
        "tau_mean",
        "tau_sd",
        "significant",
        "agreement",
        "mapped_p",
    ),
    "run": ("measure", "runid", "mean", "ci_low", "ci_high", "rank"),
}


def _table_rows(report: dict) -> Iterator[tuple[str, list[Any]]]:
    names = list(report["measures"])
    for name, measure in report["measures"].items():
        yield (
            "sensitivity",
            [
                name,
                measure["test"],
                measure["topics"],
                len(measure["pairs"]),
                measure["distinguished"],
                _number(measure["sensitivity"]),
            ],
        )
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            yield "tau", [a, b, _number(report["kendall_tau"][a][b])]
    for name, measure in report["measures"].items():
        for pair in measure["pairs"]:
            yield (
                "pair",
                [
                    name,
                    pair["run_a"],
                    pair["run_b"],
                    _number(pair["value"]),
                    _number(pair["p_value"], digits=6),
                ],
            )
    for name, measure in report["measures"].items():
        for row in measure.get("stability", []):
            yield (
                "stability",
                [
                    name,
                    row["judge"],
                    _number(row["tpr"]),
                    _number(row["fpr"]),
                    row["sets"],
                    _number(row["tau_mean"]),
                    _number(row["tau_sd"]),
                    row["significant"],
                    _number(row["agreement"]),
                    _number(row["mapped_p"]),
                ],
            )
    for name, measure in report["measures"].items():
        for run in measure["runs"]:
            yield (
                "run",
                [
                    name,
                    run["runid"],
                    _number(run["mean"]),
                    _number(run["ci_low"]),
                    _number(run["ci_high"]),
                    run["rank"],
                ],
            )


def _write_table(report: dict, *, delimiter: str) -> None:
    writer = csv.writer(sys.stdout, delimiter=delimiter, lineterminator="\n")
    started = set()
    for kind, row in _table_rows(report):
        if kind not in started:
            started.add(kind)
            writer.writerow([f"#{kind}", *COLUMNS[kind]])
        writer.writerow([kind, *row])


def _number(value: float, digits: int = 4) -> str:
    # trec_eval prints 4 decimals; p-values get more so that small ones stay readable.
    if value != value:
        return "nan"
    return f"{value:.{digits}g}" if digits > 4 else f"{value:.{digits}f}"


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
        _, runids, (x,) = _load(args, "plot", measures=args.measures[:1])
        _, _, (y,) = _load(args, "plot", qrels_path=args.y_qrels, measures=args.measures[1:])
        results = [x, y]
    else:
        _, runids, results = _load(args, "plot")
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

"""``toppref compare`` and ``toppref plot``: meta-evaluation of measures over a set of runs, and the figures
of "Assessing top-k preferences" (Clarke et al.): compatibility against NDCG (Fig. 4) and runs with 95%
confidence intervals (Fig. 9). Both read files only (no Django)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from metrics.core.evaluate import EvaluationOptions, Measure, evaluate_run, parse_measure, score_matrix
from metrics.core.ideal import levels_from_values
from metrics.core.judgment_errors import (
    JUDGE_SETTINGS,
    JUDGES,
    judge_rates,
    judgment_error_stability,
    simulation_input,
)
from metrics.core.lexiprecision import lexiprecision_per_topic
from metrics.core.ranking import DOCID_DESCENDING, Alignment, align, rank_run
from metrics.core.readers import Qrels, TrecFormatError, read_qrels, read_run
from metrics.core.rpp import mc4_scores, rpp_per_topic
from metrics.core.significance import (
    CORRECTIONS,
    bootstrap_ci,
    kendall_tau,
    pairwise_p_values,
    randomized_hsd,
    randomized_hsd_scores,
    score_differences,
    sensitivity,
)

PreferenceCompute = Callable[[Sequence[Alignment], float], tuple[list[str], np.ndarray]]


@dataclass(frozen=True)
class PreferenceMeasure:
    """A run-versus-run measure for ``compare``: per-topic preferences (Q, K, K) and its significance test."""

    name: str
    description: str
    test: str
    compute: PreferenceCompute


PREFERENCE_MEASURES: dict[str, PreferenceMeasure] = {
    measure.name: measure
    for measure in (
        PreferenceMeasure(
            "sgnlp",
            "lexiprecision, sign of the first differing recall level (Diaz 2023 Eq. 3); sign test",
            "sign",
            lambda alignments, threshold: lexiprecision_per_topic(
                alignments, magnitude="sgn", threshold=threshold
            ),
        ),
        PreferenceMeasure(
            "rrlp",
            "lexiprecision, reciprocal-rank difference at that level (Diaz 2023 Eq. 2); t-test",
            "t",
            lambda alignments, threshold: lexiprecision_per_topic(
                alignments, magnitude="rr", threshold=threshold
            ),
        ),
        PreferenceMeasure(
            "rpp",
            "graded recall-paired preference, uniform p(i) (Diaz and Ferraro 2022 Eq. 5); t-test",
            "t",
            lambda alignments, _: rpp_per_topic(alignments, weighting="uniform"),
        ),
        PreferenceMeasure(
            "dcgrpp",
            "graded RPP, p(i) proportional to 1/log2(i+1); t-test",
            "t",
            lambda alignments, _: rpp_per_topic(alignments, weighting="dcg"),
        ),
        PreferenceMeasure(
            "invrpp",
            "graded RPP, p(i) proportional to 1/i; t-test",
            "t",
            lambda alignments, _: rpp_per_topic(alignments, weighting="inverse"),
        ),
        PreferenceMeasure(
            "rpp_binary",
            "binary RPP, every positive value relevant (Diaz and Ferraro 2022 Eq. 4); t-test",
            "t",
            lambda alignments, _: rpp_per_topic(alignments, weighting="uniform", is_graded=False),
        ),
    )
}


@dataclass(frozen=True)
class MeasureResult:
    """One measure over K runs: ``topic_scores`` (Q, K) per-topic scores (win rates in [-1, 1] for a
    preference measure), ``preferences`` (Q, K, K) per-topic differences or preferences of a over b."""

    name: str
    test: str
    topics: list[str]
    topic_scores: np.ndarray
    preferences: np.ndarray
    is_pairwise: bool = False

    @property
    def run_scores(self) -> np.ndarray:
        return self.topic_scores.mean(axis=0) if len(self.topics) else np.zeros(self.topic_scores.shape[1])

    def ordering_scores(self, ordering: str) -> np.ndarray:
        """Scores that order the runs: the mean, or MC4 for a run-versus-run measure with ``mc4``."""
        if ordering == "mc4" and self.is_pairwise and len(self.topics):
            return mc4_scores(self.preferences)
        return self.run_scores


FORMAT_HELP = """\
output (--format tsv, default): tab-separated lines, the first field names the line type, like trec_eval's
first column; filter with grep or awk ('toppref compare ... | grep ^pair'):
  sensitivity MEASURE TEST TOPICS PAIRS DISTINGUISHED SHARE
      discriminative power (Clarke et al. Eq. 2): share of run pairs with p < ALPHA (--correction)
  tau         MEASURE_A MEASURE_B TAU
      Kendall's tau-b between the run orderings (mean score; for run-versus-run measures the mean win
      rate, or MC4 with --ordering mc4)
  pair        MEASURE RUN_A RUN_B VALUE P_VALUE
      VALUE: mean over topics of score(A) - score(B), or of the preference of A over B; > 0 favours RUN_A
  run         MEASURE RUNID MEAN CI_LOW CI_HIGH
      mean over topics with a percentile bootstrap 95%% interval (--confidence) over topics
  stability   MEASURE JUDGE TPR FPR SETS TAU_MEAN TAU_SD SIGNIFICANT AGREEMENT MAPPED_P
      with --judges: Rashidi et al.'s assessor-error simulation. SETS perturbed (binary) qrels per judge;
      TAU: Kendall's tau between the run ordering under perturbed and original judgments; SIGNIFICANT: run
      pairs (over all sets) with p < 0.05 under perturbed judgments; AGREEMENT: share of those that the
      original judgments order the same way; MAPPED_P: mean one-sided p under the original judgments of the
      pairs with perturbed p in [0.005, 0.015] (their section 5.5; 0.5 = a coin flip, nan = none)
--format json: one object {"runs", "alpha", "correction", "measures": {name: {"test", "topics",
"sensitivity", "distinguished", "runs", "pairs", "stability"}}, "kendall_tau": {a: {b: tau}}}; undefined
values (nan in TSV) are null.

measures (-m): every 'toppref evaluate' measure (compat@0.8, ndcg@3, ap, rr, p@10, rbp@0.95, ppref, ...),
compared with a paired t-test over the topics every run is scored on; and the run-versus-run measures:
%s
These order each run by score, ties by docid descending (trec_eval), use every judged topic with a relevant
item, and treat a topic missing from a run as retrieving nothing (worst case, as pref_eval)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the compare and plot subcommands."""
    preference_help = "\n".join(f"  {m.name:<11} {m.description}" for m in PREFERENCE_MEASURES.values())
    compare = subparsers.add_parser(
        "compare",
        help="meta-evaluation: sensitivity, Kendall's tau between measures, pairwise significance, LP/RPP",
        description="Compare measures over a set of runs, as in the tables of Clarke et al., Diaz, and Diaz and Ferraro.",
        epilog=FORMAT_HELP % preference_help,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_inputs(compare)
    compare.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
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
    compare.add_argument("--format", choices=("tsv", "json"), default="tsv")
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
        "--tpr", type=float, help="true positive rate of the simulated judge (overrides the setting)"
    )
    compare.add_argument(
        "--fpr", type=float, help="false positive rate of the simulated judge (overrides the setting)"
    )
    compare.add_argument(
        "--sets", type=int, default=100, help="perturbed qrels per judge (default 100, as the paper)"
    )
    compare.set_defaults(handler=compare_command, needs_django=False)

    plot = subparsers.add_parser(
        "plot",
        help="PNG figures: measure-vs-measure scatter (Fig. 4) or runs with 95%% CIs (Fig. 9)",
        description=(
            "scatter: one point per run, mean of the first measure (x) against the second (y), Kendall's tau in "
            "the title (Clarke et al. Fig. 4, e.g. -m ndcg@3 compat@0.8). ci: runs sorted by the mean of the "
            "measure, with percentile bootstrap confidence intervals over topics (Fig. 9)."
        ),
    )
    plot.add_argument("kind", choices=("scatter", "ci"))
    _add_inputs(plot)
    plot.add_argument("-o", "--output", required=True, help="PNG file to write")
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
    parser.add_argument(
        "-l",
        "--threshold",
        type=float,
        default=1.0,
        help="binary relevance: value (or level, with --levels) >= THRESHOLD (default 1)",
    )
    parser.add_argument(
        "--levels",
        action="store_true",
        help="replace qrels values by their level 1..T per topic (preference qrels -> levels)",
    )
    parser.add_argument(
        "--missing-topics",
        choices=("drop", "zero"),
        default="drop",
        help="score measures: drop (default) topics a run lacks, or score them 0 (trec_eval -c)",
    )
    parser.add_argument(
        "--confidence", type=float, default=0.95, help="confidence of the intervals (default 0.95)"
    )
    parser.add_argument(
        "--resamples",
        type=int,
        default=10_000,
        help="bootstrap resamples, and permutations of --hsd (default 10000)",
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")


def _measures(names: Sequence[str]) -> list[Measure | PreferenceMeasure]:
    measures: list[Measure | PreferenceMeasure] = []
    for name in names:
        key = name.strip().lower()
        measures.append(PREFERENCE_MEASURES[key] if key in PREFERENCE_MEASURES else parse_measure(name))
    canonical = [m.name for m in measures]
    repeated = sorted({name for name in canonical if canonical.count(name) > 1})
    if repeated:
        raise ValueError(f"measure given twice: {', '.join(repeated)}")
    return measures


def collect(
    qrels: Qrels,
    run_paths: Sequence[str | Path],
    measures: Sequence[Measure | PreferenceMeasure],
    options: EvaluationOptions,
) -> tuple[list[str], list[MeasureResult]]:
    """Read every run once and compute each measure's per-topic matrices over the same runs."""
    score_measures = [m for m in measures if isinstance(m, Measure)]
    preference_measures = [m for m in measures if isinstance(m, PreferenceMeasure)]
    runids: list[str] = []
    all_scores = []
    alignments: list[Alignment] = []
    for path in tqdm(run_paths, desc="runs", unit="run", disable=None):
        run = read_run(path)
        if run.runid in runids:
            # Real run sets reuse runids (CAsT's thunlp runs are all "BERT-base"): name such runs by file.
            label = Path(path).stem
            print(
                f"toppref: note: runid {run.runid!r} of {path} is taken; calling this run {label!r}",
                file=sys.stderr,
            )
            if label in runids:
                raise ValueError(f"{path}: neither runid {run.runid!r} nor file name {label!r} is unique")
            run = replace(run, runid=label)
        runids.append(run.runid)
        all_scores.extend(evaluate_run(qrels, run, score_measures, options))
        if preference_measures:
            alignments.append(align(qrels, rank_run(run, ties=DOCID_DESCENDING, duplicates="collapse")))
    results = {}
    for measure in score_measures:
        _, topics, matrix = score_matrix(all_scores, measure.name)
        # Tests pair topics across runs, so only topics every run is scored on take part.
        is_common = ~np.isnan(matrix).any(axis=0)
        topic_scores = matrix[:, is_common].T
        results[measure.name] = MeasureResult(
            name=measure.name,
            test="t",
            topics=[t for t, kept in zip(topics, is_common, strict=True) if kept],
            topic_scores=topic_scores,
            preferences=score_differences(topic_scores),
        )
    for measure in tqdm(preference_measures, desc="run-versus-run measures", unit="measure", disable=None):
        topics, preferences = measure.compute(alignments, options.threshold)
        results[measure.name] = MeasureResult(
            name=measure.name,
            test=measure.test,
            topics=topics,
            topic_scores=preferences.sum(axis=2) / max(len(runids) - 1, 1),
            preferences=preferences,
            is_pairwise=True,
        )
    return runids, [results[m.name] for m in measures]


def _load(args: argparse.Namespace, command: str) -> tuple[Qrels, list[str], list[MeasureResult]] | int:
    """Parse, read and compute: the qrels as measured, the runids and the results; an int is the exit status
    of a reported error."""
    try:
        measures = _measures(args.measures)
        if not 0 < args.confidence < 1:
            raise ValueError(f"--confidence must be in (0, 1), got {args.confidence}")
        if args.resamples < 1:
            raise ValueError(f"--resamples must be at least 1, got {args.resamples}")
    except ValueError as error:
        print(f"toppref {command}: error: {error}", file=sys.stderr)
        return 2
    options = EvaluationOptions(threshold=args.threshold, missing_topics=args.missing_topics)
    try:
        qrels = read_qrels(args.qrels)
        if args.levels:
            qrels = levels_from_values(qrels)
        return (qrels, *collect(qrels, args.runs, measures, options))
    except (TrecFormatError, ValueError) as error:
        print(f"toppref {command}: error: {error}", file=sys.stderr)
        return 1


def compare_command(args: argparse.Namespace) -> int:
    tpr, fpr = judge_rates(*JUDGE_SETTINGS[args.judge_setting])
    tpr = args.tpr if args.tpr is not None else tpr
    fpr = args.fpr if args.fpr is not None else fpr
    if not (0 <= tpr <= 1 and 0 <= fpr <= 1) or args.sets < 1:
        print(
            f"toppref compare: error: --tpr and --fpr must lie in [0, 1] and --sets be at least 1 "
            f"(got {tpr}, {fpr}, {args.sets})",
            file=sys.stderr,
        )
        return 2
    if not 0 < args.alpha < 1:
        print(f"toppref compare: error: --alpha must be in (0, 1), got {args.alpha}", file=sys.stderr)
        return 2
    loaded = _load(args, "compare")
    if isinstance(loaded, int):
        return loaded
    qrels, runids, results = loaded
    report = _report(
        runids,
        results,
        alpha=args.alpha,
        correction="none" if args.hsd else args.correction,
        ordering=args.ordering,
        is_hsd=args.hsd,
        confidence=args.confidence,
        resamples=args.resamples,
        seed=args.seed,
    )
    if args.judges:
        try:
            _add_stability(report, args, qrels, tpr=tpr, fpr=fpr)
        except (TrecFormatError, ValueError) as error:
            print(f"toppref compare: error: {error}", file=sys.stderr)
            return 1
    if args.format == "json":
        json.dump(_without_nan(report), sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        _write_tsv(report)
    return 0


def _report(
    runids: list[str],
    results: list[MeasureResult],
    *,
    alpha: float,
    correction: str,
    ordering: str,
    is_hsd: bool,
    confidence: float,
    resamples: int,
    seed: int,
) -> dict:
    measures = {}
    for result in tqdm(results, desc="tests", unit="measure", disable=None):
        if not is_hsd:
            test, p_values = result.test, pairwise_p_values(result.preferences, test=result.test)
        elif result.is_pairwise:
            test, p_values = "hsd", randomized_hsd(result.preferences, resamples=resamples, seed=seed)
        else:
            test, p_values = "hsd", randomized_hsd_scores(result.topic_scores, resamples=resamples, seed=seed)
        intervals = (
            bootstrap_ci(result.topic_scores, confidence=confidence, resamples=resamples, seed=seed)
            if result.topics
            else np.full((len(runids), 2), np.nan)
        )
        mean_preference = result.preferences.mean(axis=0) if result.topics else np.zeros((len(runids),) * 2)
        pairs = [
            {
                "run_a": runids[a],
                "run_b": runids[b],
                "value": float(mean_preference[a, b]),
                "p_value": float(p_values[a, b]),
            }
            for a in range(len(runids))
            for b in range(a + 1, len(runids))
        ]
        measures[result.name] = {
            "test": test,
            "topics": len(result.topics),
            "sensitivity": sensitivity(p_values, alpha=alpha, correction=correction),
            "distinguished": sum(
                pair["p_value"] < alpha / (len(pairs) if correction == "bonferroni" else 1) for pair in pairs
            ),
            "runs": [
                {"runid": runid, "mean": float(mean), "ci_low": float(low), "ci_high": float(high)}
                for runid, mean, (low, high) in zip(runids, result.run_scores, intervals, strict=True)
            ],
            "pairs": pairs,
        }
    tau = {
        a.name: {b.name: _tau(a.ordering_scores(ordering), b.ordering_scores(ordering)) for b in results}
        for a in results
    }
    return {
        "runs": runids,
        "alpha": alpha,
        "correction": correction,
        "measures": measures,
        "kendall_tau": tau,
    }


def _add_stability(report: dict, args: argparse.Namespace, qrels: Qrels, *, tpr: float, fpr: float) -> None:
    """Run the judgment-error simulation for every score measure and add it to the report."""
    options = EvaluationOptions(threshold=args.threshold, missing_topics=args.missing_topics)
    for name in report["measures"]:
        report["measures"][name]["stability"] = []
        if name in PREFERENCE_MEASURES:
            print(
                f"toppref compare: note: no assessor-error simulation for {name} (score measures only)",
                file=sys.stderr,
            )
            continue
        runs = (read_run(path) for path in args.runs)
        prepared = simulation_input(qrels, runs, parse_measure(name), options)
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
                progress=lambda sets, name=name, judge=judge: tqdm(
                    sets, desc=f"{name} {judge} judge", unit="set", disable=None
                ),
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


def _without_nan(value):
    """NaN (undefined: one run, no pair, no case) as JSON null; bare NaN is not valid JSON."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {key: _without_nan(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_nan(item) for item in value]
    return value


def _tau(scores: np.ndarray, other_scores: np.ndarray) -> float:
    return kendall_tau(scores, other_scores) if len(scores) >= 2 else float("nan")


def _write_tsv(report: dict) -> None:
    out = sys.stdout
    names = list(report["measures"])
    for name, measure in report["measures"].items():
        out.write(
            f"sensitivity\t{name}\t{measure['test']}\t{measure['topics']}\t{len(measure['pairs'])}\t"
            f"{measure['distinguished']}\t{_number(measure['sensitivity'])}\n"
        )
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            out.write(f"tau\t{a}\t{b}\t{_number(report['kendall_tau'][a][b])}\n")
    for name, measure in report["measures"].items():
        for pair in measure["pairs"]:
            out.write(
                f"pair\t{name}\t{pair['run_a']}\t{pair['run_b']}\t{_number(pair['value'])}\t"
                f"{_number(pair['p_value'], digits=6)}\n"
            )
    for name, measure in report["measures"].items():
        for row in measure.get("stability", []):
            out.write(
                f"stability\t{name}\t{row['judge']}\t{_number(row['tpr'])}\t{_number(row['fpr'])}\t"
                f"{row['sets']}\t{_number(row['tau_mean'])}\t{_number(row['tau_sd'])}\t{row['significant']}\t"
                f"{_number(row['agreement'])}\t{_number(row['mapped_p'])}\n"
            )
    for name, measure in report["measures"].items():
        for run in measure["runs"]:
            out.write(
                f"run\t{name}\t{run['runid']}\t{_number(run['mean'])}\t{_number(run['ci_low'])}\t"
                f"{_number(run['ci_high'])}\n"
            )


def _number(value: float, digits: int = 4) -> str:
    # trec_eval prints 4 decimals; p-values get more so that small ones stay readable.
    if value != value:
        return "nan"
    return f"{value:.{digits}g}" if digits > 4 else f"{value:.{digits}f}"


def plot_command(args: argparse.Namespace) -> int:
    expected = 2 if args.kind == "scatter" else 1
    if len(args.measures) != expected:
        print(
            f"toppref plot: error: {args.kind} needs exactly {expected} measure(s) (-m), got {len(args.measures)}",
            file=sys.stderr,
        )
        return 2
    loaded = _load(args, "plot")
    if isinstance(loaded, int):
        return loaded
    _, runids, results = loaded
    if args.kind == "ci" and not results[0].topics:
        print(
            f"toppref plot: error: no topic is scored for every run under {results[0].name}", file=sys.stderr
        )
        return 1
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on servers and in CI
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(
        figsize=(6.4, 4.8) if args.kind == "scatter" else (max(6.4, 0.3 * len(runids)), 4.8)
    )
    if args.kind == "scatter":
        x, y = results
        axes.scatter(x.run_scores, y.run_scores, s=18)
        axes.set_xlabel(x.name)
        axes.set_ylabel(y.name)
        axes.set_title(f"{len(runids)} runs; Kendall's tau = {_tau(x.run_scores, y.run_scores):.3f}")
    else:
        (result,) = results
        intervals = bootstrap_ci(
            result.topic_scores, confidence=args.confidence, resamples=args.resamples, seed=args.seed
        )
        order = np.argsort(-result.run_scores, kind="stable")
        means = result.run_scores[order]
        errors = np.vstack([means - intervals[order, 0], intervals[order, 1] - means])
        axes.errorbar(np.arange(len(order)), means, yerr=errors, fmt="o", markersize=4, capsize=2)
        axes.set_xticks(np.arange(len(order)), [runids[i] for i in order], rotation=90, fontsize=7)
        axes.set_ylabel(f"{result.name} (mean over {len(result.topics)} topics)")
        axes.set_title(f"runs by {result.name} with {args.confidence:.0%} bootstrap intervals")
    figure.tight_layout()
    figure.savefig(args.output, format="png", dpi=150)
    pyplot.close(figure)
    print(args.output)
    return 0

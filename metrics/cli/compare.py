"""``toppref compare``: meta-evaluation of measures over a set of runs (per-run means with CIs, ranks,
Kendall's tau, paired significance, stability under assessor error), as in the tables of "Assessing top-k
preferences" (Clarke et al.). Reads files only (no Django)."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from config.cli import (
    UsageError,
    bounded_int,
    finite_float,
    note,
)
from metrics.cli.common import progress, read_runs
from metrics.cli.compare_output import without_nan, write_table
from metrics.cli.run_set import add_inputs, load
from metrics.core.comparison import PREFERENCE_MEASURES, compare
from metrics.core.evaluate import EvaluationOptions, parse_measure
from metrics.core.judgment_errors import (
    JUDGE_SETTINGS,
    JUDGES,
    judge_rates,
    judgment_error_input,
    judgment_error_stability,
)
from metrics.core.readers import Qrels
from metrics.core.significance import CORRECTIONS

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


def register(subparsers: argparse._SubParsersAction) -> None:
    preference_help = "\n".join(f"  {m.name:<11} {m.description}" for m in PREFERENCE_MEASURES.values())
    compare = subparsers.add_parser(
        "compare",
        description="Compare measures over a set of runs, as in the tables of Clarke et al., Diaz, and Diaz and Ferraro.",
        epilog=FORMAT_HELP % preference_help,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_inputs(compare)
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


def compare_command(args: argparse.Namespace) -> int:
    tpr, fpr = judge_rates(*JUDGE_SETTINGS[args.judge_setting])
    tpr = args.tpr if args.tpr is not None else tpr
    fpr = args.fpr if args.fpr is not None else fpr
    if not (0 <= tpr <= 1 and 0 <= fpr <= 1):
        raise UsageError(f"--tpr and --fpr must lie in [0, 1] (got {tpr}, {fpr})")
    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha must be in (0, 1), got {args.alpha}")
    qrels, runids, results = load(args, "compare")
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
        progress=progress("tests", "measure"),
    )
    if args.judges:
        _add_stability(report, args, qrels, tpr=tpr, fpr=fpr)
    if args.format == "json":
        json.dump(without_nan(report), sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        write_table(report, delimiter="," if args.format == "csv" else "\t")
    return 0


def _add_stability(report: dict, args: argparse.Namespace, qrels: Qrels, *, tpr: float, fpr: float) -> None:
    """Run the judgment-error simulation for every score measure and add it to the report."""
    options = EvaluationOptions(threshold=args.threshold, missing_topics=args.missing_topics)
    for name in report["measures"]:
        report["measures"][name]["stability"] = []
        if name in PREFERENCE_MEASURES:
            note("compare", f"no assessor-error simulation for {name} (score measures only)")
            continue
        prepared = judgment_error_input(qrels, read_runs(args.runs, "compare"), parse_measure(name), options)
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
                progress=progress(f"{name} {judge} judge", "set"),
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

"""Comparing runs and measures: what ``toppref compare``, the leaderboard and the API share.

One place computes, from per-topic scores, everything a comparison of rankers reports: each run's mean with a
percentile bootstrap confidence interval over topics and its rank under each measure, Kendall's tau between
the orderings of two measures (or of one measure under two qrels), pairwise significance with the
discriminative power of "Assessing top-k preferences" (Clarke, Vtyurina and Smucker, section 5, Eq. 2), and
paired significance against a baseline run (sign test and t-test, Holm-corrected). Pure: numpy and scipy.

- :func:`leaderboard` is the entry point for the leaderboard and the API (qrels + runs + measures -> rows).
- :func:`collect` and :func:`compare` are the two halves of ``toppref compare`` (score matrices, then report).
- :func:`distinct_run_names` is the one rule for runs that repeat a runid (docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from metrics.core.evaluate import EvaluationOptions, Measure, evaluate_run, parse_measure, score_matrix
from metrics.core.lexiprecision import lexiprecision_per_topic
from metrics.core.ranking import Alignment, align, rank_run
from metrics.core.readers import Qrels, Run
from metrics.core.rpp import mc4_scores, rpp_per_topic
from metrics.core.run_names import RunRename, describe_renames, distinct_run_names
from metrics.core.significance import (
    bootstrap_ci,
    kendall_tau,
    pairwise_p_values,
    randomized_hsd,
    randomized_hsd_scores,
    score_differences,
    sensitivity,
    sign_test,
    t_test,
)

__all__ = [
    "PREFERENCE_MEASURES",
    "LeaderboardRow",
    "MeasureResult",
    "PreferenceMeasure",
    "RunRename",
    "collect",
    "compare",
    "describe_renames",
    "distinct_run_names",
    "holm",
    "leaderboard",
    "leaderboard_rows",
    "leaderboard_tau",
    "parse_measures",
    "ranks",
    "tau",
]

Array = npt.NDArray[np.float64]
PreferenceCompute = Callable[[Sequence[Alignment], float], tuple[list[str], Array]]
Progress = Callable[[Iterable[Any]], Iterable[Any]]


def _no_progress(items: Iterable[Any]) -> Iterable[Any]:
    return items


@dataclass(frozen=True)
class PreferenceMeasure:
    """A run-versus-run measure: per-topic preferences ``(Q, K, K)`` and the significance test it uses."""

    name: str
    description: str
    test: str
    compute: PreferenceCompute
    function: Callable[..., object] | None = None  # what computes it; its docstring is the reference


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
            lexiprecision_per_topic,
        ),
        PreferenceMeasure(
            "rrlp",
            "lexiprecision, reciprocal-rank difference at that level (Diaz 2023 Eq. 2); t-test",
            "t",
            lambda alignments, threshold: lexiprecision_per_topic(
                alignments, magnitude="rr", threshold=threshold
            ),
            lexiprecision_per_topic,
        ),
        PreferenceMeasure(
            "rpp",
            "graded recall-paired preference, uniform p(i) (Diaz and Ferraro 2022 Eq. 5); t-test",
            "t",
            lambda alignments, _: rpp_per_topic(alignments, weighting="uniform"),
            rpp_per_topic,
        ),
        PreferenceMeasure(
            "dcgrpp",
            "graded RPP, p(i) proportional to 1/log2(i+1); t-test",
            "t",
            lambda alignments, _: rpp_per_topic(alignments, weighting="dcg"),
            rpp_per_topic,
        ),
        PreferenceMeasure(
            "invrpp",
            "graded RPP, p(i) proportional to 1/i; t-test",
            "t",
            lambda alignments, _: rpp_per_topic(alignments, weighting="inverse"),
            rpp_per_topic,
        ),
        PreferenceMeasure(
            "rpp_binary",
            "binary RPP, every positive value relevant (Diaz and Ferraro 2022 Eq. 4); t-test",
            "t",
            lambda alignments, _: rpp_per_topic(alignments, weighting="uniform", is_graded=False),
            rpp_per_topic,
        ),
    )
}

AnyMeasure = Measure | PreferenceMeasure
# Frozen, so one shared instance is a safe default argument.
DEFAULT_OPTIONS = EvaluationOptions()


def parse_measures(names: Sequence[str]) -> list[AnyMeasure]:
    """Measures by name: every ``evaluate`` measure (``compat@0.95``, ``ndcg@10``...) and the run-versus-run
    measures of :data:`PREFERENCE_MEASURES`. ``ValueError`` for an unknown name or one given twice."""
    measures: list[AnyMeasure] = []
    for name in names:
        key = name.strip().lower()
        measures.append(PREFERENCE_MEASURES[key] if key in PREFERENCE_MEASURES else parse_measure(name))
    canonical = [m.name for m in measures]
    repeated = sorted({name for name in canonical if canonical.count(name) > 1})
    if repeated:
        raise ValueError(f"measure given twice: {', '.join(repeated)}")
    return measures


@dataclass(frozen=True)
class MeasureResult:
    """One measure over K runs: ``topic_scores`` (Q, K) per-topic scores (win rates in [-1, 1] for a
    run-versus-run measure), ``preferences`` (Q, K, K) per-topic differences or preferences of a over b.
    Only topics every run is scored on take part, so that tests can pair them."""

    name: str
    test: str
    topics: list[str]
    topic_scores: Array
    preferences: Array
    is_pairwise: bool = False
    higher_is_better: bool = True

    @property
    def run_scores(self) -> Array:
        """The mean over topics per run, shape (K,); zeros with no topic."""
        if not self.topics:
            return np.zeros(self.topic_scores.shape[1])
        return np.asarray(self.topic_scores.mean(axis=0), dtype=np.float64)

    def ordering_scores(self, ordering: str) -> Array:
        """Scores that order the runs: the mean, or MC4 for a run-versus-run measure with ``mc4``."""
        if ordering == "mc4" and self.is_pairwise and self.topics:
            return np.asarray(mc4_scores(self.preferences), dtype=np.float64)
        return self.run_scores


def collect(
    qrels: Qrels,
    runs: Iterable[Run],
    measures: Sequence[AnyMeasure],
    options: EvaluationOptions = DEFAULT_OPTIONS,
    *,
    progress: Progress = _no_progress,
) -> tuple[list[str], list[MeasureResult]]:
    """Score every run (consumed one at a time) under each measure: the runids, in order, and one
    :class:`MeasureResult` per measure. Score measures keep the topics every run is scored on; run-versus-run
    measures order each run by score, ties by docid descending (trec_eval), and use every judged topic with a
    relevant item (a topic missing from a run retrieves nothing, as pref_eval)."""
    score_measures = [m for m in measures if isinstance(m, Measure)]
    preference_measures = [m for m in measures if isinstance(m, PreferenceMeasure)]
    runids: list[str] = []
    all_scores = []
    alignments: list[Alignment] = []
    for run in progress(runs):
        runids.append(run.runid)
        # score_matrix keeps rows in run order, so runids may repeat here until the caller names them apart.
        all_scores.extend(evaluate_run(qrels, run, score_measures, options))
        if preference_measures:
            alignments.append(align(qrels, rank_run(run, ties="docid_descending", duplicates="collapse")))
    results: dict[str, MeasureResult] = {}
    for measure in score_measures:
        _, topics, matrix = score_matrix(all_scores, measure.name)
        is_common = ~np.isnan(matrix).any(axis=0)
        topic_scores = np.asarray(matrix[:, is_common].T, dtype=np.float64)
        results[measure.name] = MeasureResult(
            name=measure.name,
            test="t",
            topics=[t for t, kept in zip(topics, is_common, strict=True) if kept],
            topic_scores=topic_scores,
            preferences=score_differences(topic_scores),
            higher_is_better=measure.family.higher_is_better,
        )
    for preference in progress(preference_measures):
        topics, preferences = preference.compute(alignments, options.threshold)
        results[preference.name] = MeasureResult(
            name=preference.name,
            test=preference.test,
            topics=topics,
            topic_scores=np.asarray(preferences.sum(axis=2) / max(len(runids) - 1, 1), dtype=np.float64),
            preferences=preferences,
            is_pairwise=True,
        )
    return runids, [results[m.name] for m in measures]


def ranks(scores: Array, *, higher_is_better: bool = True) -> list[int]:
    """Competition ranks (1, 2, 2, 4): rank 1 is the best score; equal scores share the better rank."""
    keys = -scores if higher_is_better else scores
    return [int(np.sum(keys < key)) + 1 for key in keys]


def tau(scores: Array, other_scores: Array) -> float:
    """Kendall's tau-b between two orderings of the same runs; nan with fewer than two runs or a constant."""
    if len(scores) < 2 or np.ptp(scores) == 0 or np.ptp(other_scores) == 0:
        return float("nan")
    return kendall_tau(scores, other_scores)


def holm(p_values: Sequence[float] | Array) -> Array:
    """Holm's step-down adjustment of a family of p-values (Holm 1979): the i-th smallest p becomes
    ``max_{j<=i} min(1, (m - j + 1) p_(j))``; nan entries stay nan and are not counted in m."""
    p = np.asarray(p_values, dtype=np.float64)
    adjusted = np.full(p.shape, np.nan)
    present = np.flatnonzero(~np.isnan(p))
    order = present[np.argsort(p[present], kind="stable")]
    m = len(order)
    running = 0.0
    for position, index in enumerate(order):
        running = max(running, min(1.0, (m - position) * float(p[index])))
        adjusted[index] = running
    return adjusted


def compare(
    runids: Sequence[str],
    results: Sequence[MeasureResult],
    *,
    alpha: float = 0.05,
    correction: str = "none",
    ordering: str = "win-rate",
    is_hsd: bool = False,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
    progress: Progress = _no_progress,
) -> dict[str, Any]:
    """The report of ``toppref compare`` as plain values (JSON-ready except for nan):
    ``{"runs", "alpha", "correction", "measures": {name: {"test", "topics", "sensitivity", "distinguished",
    "runs": [{"runid", "mean", "ci_low", "ci_high", "rank"}], "pairs": [{"run_a", "run_b", "value",
    "p_value"}]}}, "kendall_tau": {a: {b: tau}}}``. Significance: each measure's own test (t or sign) without
    correction ([C] section 5), or the randomized Tukey HSD (Carterette 2012) with ``is_hsd``; sensitivity is
    the share of run pairs with p < alpha (Bonferroni-corrected with ``correction="bonferroni"``)."""
    measures: dict[str, Any] = {}
    for result in progress(results):
        if not is_hsd:
            test, p_values = result.test, pairwise_p_values(result.preferences, test=result.test)
        elif result.is_pairwise:
            test, p_values = "hsd", randomized_hsd(result.preferences, resamples=resamples, seed=seed)
        else:
            test, p_values = "hsd", randomized_hsd_scores(result.topic_scores, resamples=resamples, seed=seed)
        rows = leaderboard_rows(
            runids,
            result.name,
            result.topics,
            result.topic_scores,
            higher_is_better=result.higher_is_better,
            confidence=confidence,
            resamples=resamples,
            seed=seed,
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
        level = alpha / (len(pairs) if correction == "bonferroni" and pairs else 1)
        measures[result.name] = {
            "test": test,
            "topics": len(result.topics),
            "sensitivity": sensitivity(p_values, alpha=alpha, correction=correction),  # type: ignore[arg-type]
            "distinguished": int(np.sum(p_values[np.triu_indices(len(runids), 1)] < level)),
            "runs": [
                {
                    "runid": row.run,
                    "mean": row.mean,
                    "ci_low": row.ci_low,
                    "ci_high": row.ci_high,
                    "rank": row.rank,
                }
                for row in rows
            ],
            "pairs": pairs,
        }
    kendall = {
        a.name: {b.name: tau(a.ordering_scores(ordering), b.ordering_scores(ordering)) for b in results}
        for a in results
    }
    return {
        "runs": list(runids),
        "alpha": alpha,
        "correction": correction,
        "measures": measures,
        "kendall_tau": kendall,
    }


@dataclass(frozen=True)
class LeaderboardRow:
    """One run under one measure. ``rank``: 1 is best (competition ranking, ties share the better rank);
    ``sign_p``/``t_p``: paired two-sided p-values against the baseline over the topics both are scored on,
    Holm-corrected over the other runs of the same measure (None for the baseline itself or without one);
    ``sign_p_unadjusted``/``t_p_unadjusted``: the same tests before Holm's correction."""

    run: str
    measure: str
    mean: float
    ci_low: float
    ci_high: float
    rank: int
    topics: int
    sign_p: float | None = None
    t_p: float | None = None
    sign_p_unadjusted: float | None = None
    t_p_unadjusted: float | None = None


def leaderboard(
    qrels: Qrels,
    runs: Iterable[Run],
    measures: Sequence[str],
    *,
    paths: Sequence[str | Path] | None = None,
    baseline: str | None = None,
    options: EvaluationOptions = DEFAULT_OPTIONS,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> list[LeaderboardRow]:
    """The leaderboard of ``runs`` under ``measures`` (``evaluate`` names such as ``compat@0.95``, ``ndcg@10``)
    against one ``qrels``: per run and measure the mean over topics, a percentile bootstrap ``confidence``
    interval over topics (Clarke et al. Fig. 9; seeded, so the same input gives the same rows), the rank, and
    with ``baseline`` (a run name) the sign-test and t-test p-values of each other run against it, Holm-corrected
    per measure. Only topics every run is scored on count (paired tests need the same topics), so ``mean`` may
    differ from ``toppref evaluate``'s when runs cover different topics.

    Run names are the runids, made unique by :func:`distinct_run_names` when ``paths`` are given (else a repeated
    runid is a ``ValueError``). Rows come measure by measure, runs in input order. To compare two qrels
    (preferences against graded), build one leaderboard per qrels and call :func:`leaderboard_tau`.
    ``ValueError`` for an unknown measure or baseline, or no run."""
    parsed = [parse_measure(name) for name in measures]
    runids, results = collect(qrels, runs, parsed, options)
    if not runids:
        raise ValueError("no run to rank")
    if paths is not None:
        names, _ = distinct_run_names(runids, paths)
    elif len(set(runids)) < len(runids):
        raise ValueError("runids repeat: pass the runs' paths to name them apart")
    else:
        names = runids
    if baseline is not None and baseline not in names:
        raise ValueError(f"baseline {baseline!r} is not one of the runs")
    rows = []
    for result in results:
        rows.extend(
            leaderboard_rows(
                names,
                result.name,
                result.topics,
                result.topic_scores,
                higher_is_better=result.higher_is_better,
                baseline=baseline,
                confidence=confidence,
                resamples=resamples,
                seed=seed,
            )
        )
    return rows


def leaderboard_tau(
    rows: Sequence[LeaderboardRow], other_rows: Sequence[LeaderboardRow], measure: str
) -> float:
    """Kendall's tau-b between the run orderings of two leaderboards (e.g. preference and graded qrels) under
    ``measure``, over the runs both contain; nan with fewer than two such runs or a constant score."""
    means = {row.run: row.mean for row in rows if row.measure == measure}
    other = {row.run: row.mean for row in other_rows if row.measure == measure}
    shared = [run for run in means if run in other]
    return tau(np.array([means[r] for r in shared]), np.array([other[r] for r in shared]))


def leaderboard_rows(
    names: Sequence[str],
    measure: str,
    topics: Sequence[str],
    topic_scores: Array,
    *,
    higher_is_better: bool = True,
    baseline: str | None = None,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
    intervals: Array | None = None,
) -> list[LeaderboardRow]:
    """The one definition of a leaderboard's rows for one measure, in the order of ``names``: ``topic_scores``
    (Q, K) holds the scores of the K runs named ``names`` on the Q ``topics`` every one of them is scored on.
    ``mean``: the mean over those topics; ``ci_low``/``ci_high``: the percentile bootstrap interval over them
    (Clarke et al. Fig. 9), the topics taken in sorted order so that the interval does not depend on the order
    of the lines in the files or of the rows in a database; ``rank``: competition ranking; with ``baseline``
    the paired sign and t-tests against it, Holm-corrected over the other runs. ``toppref compare``,
    :func:`leaderboard` and the web leaderboard (``metrics.leaderboard``) all build their rows here, so the same
    scores, seed and resamples give the same numbers everywhere. No topic: means 0 and nan intervals.
    ``intervals``: this measure's columns of one ``bootstrap_ci`` call over several measures' matrices on the same
    topics in sorted order, with the same confidence, resamples and seed (the same draws, so the same numbers;
    one matrix product instead of one per measure)."""
    scores = np.asarray(topic_scores, dtype=np.float64).reshape(len(topics), len(names))
    # the mean in the given order (bit for bit ``MeasureResult.run_scores``); the resampling in sorted order
    means = scores.mean(axis=0) if len(topics) else np.zeros(len(names))
    scores = scores[sorted(range(len(topics)), key=lambda index: topics[index])]
    if intervals is None:
        intervals = (
            bootstrap_ci(scores, confidence=confidence, resamples=resamples, seed=seed)
            if len(topics)
            else np.full((len(names), 2), np.nan)
        )
    rank = ranks(means, higher_is_better=higher_is_better)
    raw: dict[str, list[float | None]] = {"sign": [None] * len(names), "t": [None] * len(names)}
    adjusted: dict[str, list[float | None]] = {"sign": [None] * len(names), "t": [None] * len(names)}
    if baseline is not None and len(topics):
        base = list(names).index(baseline)
        others = [i for i in range(len(names)) if i != base]
        differences = scores[:, others] - scores[:, [base]]
        for test, p_values in (("sign", sign_test(differences)), ("t", t_test(differences))):
            for index, value, corrected in zip(others, p_values, holm(p_values), strict=True):
                raw[test][index], adjusted[test][index] = float(value), float(corrected)
    return [
        LeaderboardRow(
            run=name,
            measure=measure,
            mean=float(means[index]),
            ci_low=float(intervals[index, 0]),
            ci_high=float(intervals[index, 1]),
            rank=rank[index],
            topics=len(topics),
            sign_p=adjusted["sign"][index],
            t_p=adjusted["t"][index],
            sign_p_unadjusted=raw["sign"][index],
            t_p_unadjusted=raw["t"][index],
        )
        for index, name in enumerate(names)
    ]

"""The leaderboard of a campaign: every run of its collection scored against the campaign's preference
qrels and against the graded qrels, with a 95% bootstrap confidence interval, the rank under each measure,
Kendall's tau between the preference and graded orderings, and paired significance against a baseline run.

One function (``campaign_leaderboard``) gives the numbers the dashboard, the API and the CSV show; they are
built from the stored per-topic scores (``metrics.services.run_scores_compute``, i.e. ``metrics.core``'s
``evaluate_run``) by ``metrics.core.comparison.leaderboard_rows``, the function that makes the ``run`` lines of
``toppref compare``: the same qrels, runs, seed and resamples give the same means, intervals, ranks and
p-values here and there (Assessing top-k preferences, section 5 and figure 9).
"""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import asdict, dataclass

import numpy as np
from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, Max, Q

from config.celery import enqueue_on_commit
from judging.models import Campaign
from metrics.core.comparison import LeaderboardRow as CoreRow
from metrics.core.comparison import leaderboard_rows, ranks
from metrics.core.evaluate import parse_measure
from metrics.core.significance import bootstrap_ci, kendall_tau
from metrics.models import RunScore, TopicScore
from trecio import spreadsheet_safe

# Compatibility at the four p presets of the paper's Table 1 (0.80/0.85/0.90/0.95 as the analogues of
# NDCG@3/5/10/20; Assessing top-k preferences, section 5) beside the graded measures.
LEADERBOARD_MEASURES = [
    "compat@0.8",
    "compat@0.85",
    "compat@0.9",
    "compat@0.95",
    "ndcg@3",
    "ndcg@5",
    "ndcg@10",
    "ap",
    "rr",
]
QRELS = ("preferences", "graded")
# The defaults of `toppref compare`, so that the page, the API, the CSV and the command give the same numbers.
CONFIDENCE = 0.95
RESAMPLES = 10_000
SEED = 0


@dataclass(frozen=True)
class LeaderboardRow:
    """A row of ``metrics.core.comparison.leaderboard_rows`` with the qrels it was scored against; mean, interval,
    rank and topics are the core's (over the topics every run of the measure was scored on)."""

    run: str
    measure: str
    qrels: str
    mean: float
    ci_low: float
    ci_high: float
    rank: int
    topics: int
    # Paired tests against the baseline run on the topics both were scored on; Holm-corrected over the
    # runs compared under the same measure and qrels. None for the baseline itself or with no baseline.
    p_sign: float | None = None
    p_t: float | None = None
    p_sign_holm: float | None = None
    p_t_holm: float | None = None


def campaign_runs_score(*, campaign: Campaign, runs=None) -> int:
    """Score the collection's ready runs (or ``runs``) under the leaderboard measures against the campaign's
    combined preference qrels and the graded qrels; returns the number of stored scores. Idempotent."""
    from metrics.selectors import campaign_run_list
    from metrics.services import run_scores_compute
    from pools.models import Run

    if runs is None:
        runs = list(campaign_run_list(campaign=campaign).filter(status=Run.Status.READY))
    foreign = [run.name for run in runs if run.campaign_id not in (None, campaign.pk)]
    if foreign:
        raise ValueError(f"runs of another campaign: {', '.join(foreign)}")
    if not runs:
        return 0
    stored = run_scores_compute(campaign=campaign, measures=LEADERBOARD_MEASURES, runs=runs)
    stored += run_scores_compute(collection=campaign.collection, measures=LEADERBOARD_MEASURES, runs=runs)
    return len(stored)


def campaign_runs_score_request(*, campaign: Campaign) -> None:
    """Queue ``campaign_runs_score`` after commit (the dashboard's and the API's "score now")."""
    campaign_id = campaign.pk
    enqueue_on_commit("metrics.tasks.campaign_runs_score_task", campaign_id)


def _scores(campaign: Campaign):
    # Only the runs the campaign shows: the collection's and its own uploads, never another campaign's
    # (whose graded scores are stored without a campaign too).
    return RunScore.objects.filter(
        Q(campaign=campaign, qrels_kind=RunScore.QrelsKind.COMBINED)
        | Q(campaign__isnull=True, run__collection_id=campaign.collection_id),
        Q(run__campaign__isnull=True) | Q(run__campaign_id=campaign.pk),
        measure__in=LEADERBOARD_MEASURES,
    )


def leaderboard_stamp(*, campaign: Campaign) -> str:
    """Changes whenever the campaign's scores change: the key of the cached leaderboard and plots."""
    stamp = _scores(campaign).aggregate(last=Max("computed_at"), n=Count("pk"))
    last = stamp["last"].isoformat() if stamp["last"] else "none"
    return f"{campaign.pk}:{last}:{stamp['n']}"


def campaign_leaderboard(*, campaign: Campaign, baseline: str | None = None) -> dict[str, object]:
    """``{"rows": [LeaderboardRow...], "tau": {measure: tau}, "runs": [...], "baseline": ...}``: rows ordered
    by qrels, measure (as ``LEADERBOARD_MEASURES``) and rank. Three queries, the result cached until the
    scores change. ``tau`` is Kendall's tau-b between the runs' means under the preference and the graded
    qrels for each measure. An unknown ``baseline`` raises ``ValueError`` naming it."""
    key = (
        "leaderboard:v2:"  # v2: the core's rows (10,000 resamples); v1 entries are never read again
        + hashlib.sha256(f"{leaderboard_stamp(campaign=campaign)}|{baseline or ''}".encode()).hexdigest()
    )
    cached = cache.get(key)
    if cached is None:
        cached = _leaderboard_compute(campaign=campaign, baseline=baseline)
        cache.set(key, cached, timeout=24 * 3600)
    return cached


def _leaderboard_compute(*, campaign: Campaign, baseline: str | None) -> dict[str, object]:
    scores = list(_scores(campaign).values("pk", "run__name", "measure", "qrels_kind", "mean"))
    run_names = sorted({row["run__name"] for row in scores})
    if baseline is not None and baseline not in run_names:
        raise ValueError(f"baseline: no scored run named {baseline!r}")
    cells: dict[int, dict[str, float]] = {row["pk"]: {} for row in scores}
    for run_score_id, topic_id, value in TopicScore.objects.filter(run_score_id__in=list(cells)).values_list(
        "run_score_id", "topic__topic_id", "value"
    ):
        cells[run_score_id][topic_id] = value
    groups = []
    for qrels in QRELS:
        kind = RunScore.QrelsKind.GRADED if qrels == "graded" else RunScore.QrelsKind.COMBINED
        for measure in LEADERBOARD_MEASURES:
            group = sorted(
                (row for row in scores if row["measure"] == measure and row["qrels_kind"] == kind),
                key=lambda row: row["run__name"],
            )
            if group:
                topics = sorted(set.intersection(*(set(cells[row["pk"]]) for row in group)))
                matrix = np.array([[cells[row["pk"]][t] for row in group] for t in topics], dtype=float)
                groups.append((qrels, measure, group, topics, matrix.reshape(len(topics), len(group))))
    intervals = _intervals_by_topics([(topics, matrix) for *_, topics, matrix in groups])
    rows: list[LeaderboardRow] = []
    means: dict[tuple[str, str], dict[str, float]] = {}
    for (qrels, measure, group, topics, matrix), interval in zip(groups, intervals, strict=True):
        measure_rows = _measure_rows(
            group, cells, topics, matrix, interval, measure=measure, qrels=qrels, baseline=baseline
        )
        means[(qrels, measure)] = {row.run: row.mean for row in measure_rows}
        rows.extend(measure_rows)
    tau = {}
    for measure in LEADERBOARD_MEASURES:
        preference, graded = means.get(("preferences", measure)), means.get(("graded", measure))
        if not preference or not graded:
            continue
        common = sorted(set(preference) & set(graded))
        if len(common) >= 2:
            value = kendall_tau(
                np.array([preference[r] for r in common]), np.array([graded[r] for r in common])
            )
            tau[measure] = None if np.isnan(value) else value
    return {"rows": rows, "tau": tau, "runs": run_names, "baseline": baseline}


def _intervals_by_topics(matrices: list[tuple[list[str], np.ndarray]]) -> list[np.ndarray | None]:
    """The bootstrap intervals of every matrix (rows: sorted topics), one ``bootstrap_ci`` call per topic set:
    with one seed the resamples of a topic set are the same for every measure, so one call over the measures'
    columns side by side gives each measure exactly the intervals of its own call, in one matrix product."""
    by_topics: dict[tuple[str, ...], list[int]] = {}
    for index, (topics, _) in enumerate(matrices):
        if topics:
            by_topics.setdefault(tuple(topics), []).append(index)
    result: list[np.ndarray | None] = [None] * len(matrices)
    for indices in by_topics.values():
        combined = np.hstack([matrices[i][1] for i in indices])
        intervals = bootstrap_ci(combined, confidence=CONFIDENCE, resamples=RESAMPLES, seed=SEED)
        start = 0
        for i in indices:
            width = matrices[i][1].shape[1]
            result[i] = intervals[start : start + width]
            start += width
    return result


def _measure_rows(
    group, cells, topics, matrix, intervals, *, measure: str, qrels: str, baseline: str | None
) -> list[LeaderboardRow]:
    """One measure under one qrels: ``metrics.core.comparison.leaderboard_rows`` (the rows of ``toppref
    compare``) over the topics every run of the group was scored on, best first."""
    names = [row["run__name"] for row in group]
    if not topics:
        # Nothing to resample or pair: the stored means, each its own interval.
        stored = np.array([row["mean"] for row in group], dtype=float)
        core_rows = [
            CoreRow(
                run=name,
                measure=measure,
                mean=float(mean),
                ci_low=float(mean),
                ci_high=float(mean),
                rank=rank,
                topics=0,
            )
            for name, mean, rank in zip(names, stored, ranks(stored), strict=True)
        ]
    else:
        core_rows = leaderboard_rows(
            names,
            measure,
            topics,
            matrix,
            higher_is_better=parse_measure(measure).family.higher_is_better,
            baseline=baseline if baseline in names else None,
            confidence=CONFIDENCE,
            resamples=RESAMPLES,
            seed=SEED,
            intervals=intervals,
        )
    # A run scored on exactly the common topics (every run, on the demo and CAsT) shows its stored mean: the
    # same number over the same topics, bit for bit ``toppref evaluate``'s (the core's differs by summation order).
    stored_means = {row["run__name"]: row["mean"] for row in group if len(cells[row["pk"]]) == len(topics)}
    return [
        LeaderboardRow(
            run=row.run,
            measure=measure,
            qrels=qrels,
            mean=stored_means.get(row.run, row.mean),
            ci_low=row.ci_low,
            ci_high=row.ci_high,
            rank=row.rank,
            topics=row.topics,
            p_sign=row.sign_p_unadjusted,
            p_t=row.t_p_unadjusted,
            p_sign_holm=row.sign_p,
            p_t_holm=row.t_p,
        )
        for row in sorted(core_rows, key=lambda row: (row.rank, row.run))
    ]


LEADERBOARD_CSV_COLUMNS = [
    "run",
    "measure",
    "qrels",
    "mean",
    "ci_low",
    "ci_high",
    "rank",
    "topics",
    "p_sign",
    "p_t",
    "p_sign_holm",
    "p_t_holm",
]


def leaderboard_csv(*, leaderboard: dict[str, object]) -> bytes:
    """The leaderboard rows as CSV (full precision, so a script gets the same numbers as the API)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(LEADERBOARD_CSV_COLUMNS)
    for row in leaderboard["rows"]:
        values = asdict(row)
        # Text cells (run names come from uploads) quoted against formulas; numbers stay numbers.
        writer.writerow(
            [
                ""
                if values[c] is None
                else spreadsheet_safe(values[c])
                if isinstance(values[c], str)
                else values[c]
                for c in LEADERBOARD_CSV_COLUMNS
            ]
        )
    return out.getvalue().encode("utf-8")


def leaderboard_export_request(*, campaign: Campaign, kind: str, requested_by=None):
    """Request an export of any kind: the leaderboard is built here (it needs the scores), every other kind
    by the judging app's task. Raises ``judging.services.exports.ExportKindError`` for an unknown kind."""
    from judging.services.exports import export_request

    if kind != "leaderboard":
        return export_request(campaign=campaign, kind=kind, requested_by=requested_by)
    with transaction.atomic():
        export = export_request(campaign=campaign, kind=kind, requested_by=requested_by, enqueue=False)
        export_id = export.pk
        enqueue_on_commit("metrics.tasks.export_leaderboard_build_task", export_id)
    return export


def leaderboard_export_build(*, export) -> object:
    """Build a leaderboard export (idempotent: a ready export is left as it is)."""
    from judging.models import Export
    from judging.services.exports import export_store

    export.refresh_from_db()
    if export.status == Export.Status.READY:
        return export
    Export.objects.filter(pk=export.pk).update(status=Export.Status.RUNNING, progress=0.0)
    content = leaderboard_csv(leaderboard=campaign_leaderboard(campaign=export.campaign))
    return export_store(export=export, content=content)

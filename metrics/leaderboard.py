"""The leaderboard of a campaign: every run of its collection scored against the campaign's preference
qrels and against the graded qrels, with a 95% bootstrap confidence interval, the rank under each measure,
Kendall's tau between the preference and graded orderings, and paired significance against a baseline run.

One function (``campaign_leaderboard``) gives the numbers the dashboard, the API and the CSV show; they are
built from the stored per-topic scores (``metrics.services.run_scores_compute``, i.e. ``metrics.core``'s
``evaluate_run``), so the means equal ``toppref evaluate`` on the exported qrels. The statistics come from
``metrics.core.significance`` (Assessing top-k preferences, section 5 and figure 9).
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
from metrics.core.comparison import holm
from metrics.core.significance import bootstrap_ci, kendall_tau, sign_test, t_test
from metrics.models import RunScore, TopicScore

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
CONFIDENCE = 0.95
RESAMPLES = 2_000


@dataclass(frozen=True)
class LeaderboardRow:
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
    from metrics.services import run_scores_compute
    from pools.models import Run

    if runs is None:
        runs = list(campaign.collection.runs.filter(status=Run.Status.READY))
    if not runs:
        return 0
    stored = run_scores_compute(campaign=campaign, measures=LEADERBOARD_MEASURES, runs=runs)
    stored += run_scores_compute(collection=campaign.collection, measures=LEADERBOARD_MEASURES, runs=runs)
    return len(stored)


def campaign_runs_score_request(*, campaign: Campaign) -> None:
    """Queue ``campaign_runs_score`` after commit (the dashboard's and the API's "score now")."""
    from metrics.tasks import campaign_runs_score_task

    campaign_id = campaign.pk
    enqueue_on_commit(campaign_runs_score_task, campaign_id)


def _scores(campaign: Campaign):
    return RunScore.objects.filter(
        Q(campaign=campaign, qrels_kind=RunScore.QrelsKind.COMBINED)
        | Q(campaign__isnull=True, run__collection_id=campaign.collection_id),
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
        "leaderboard:"
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
    means: dict[tuple[str, str], dict[str, float]] = {}
    for qrels in QRELS:
        kind = RunScore.QrelsKind.GRADED if qrels == "graded" else RunScore.QrelsKind.COMBINED
        for measure in LEADERBOARD_MEASURES:
            group = sorted(
                (row for row in scores if row["measure"] == measure and row["qrels_kind"] == kind),
                key=lambda row: (-row["mean"], row["run__name"]),
            )
            if group:
                means[(qrels, measure)] = {row["run__name"]: row["mean"] for row in group}
                groups.append((qrels, measure, group, _topic_matrix(group, cells)))
    intervals = _bootstrap_by_topic_set([(topics, matrix) for *_, (topics, matrix) in groups])
    rows: list[LeaderboardRow] = []
    for (qrels, measure, group, (topics, matrix)), interval in zip(groups, intervals, strict=True):
        rows.extend(
            _measure_rows(
                group, cells, topics, matrix, interval, qrels=qrels, measure=measure, baseline=baseline
            )
        )
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


def _topic_matrix(group, cells) -> tuple[tuple[str, ...], np.ndarray]:
    """The topics every run of the group was scored on (the bootstrap and the paired tests need complete
    columns) and the (topics, runs) matrix of their scores."""
    topics = tuple(sorted(set.intersection(*(set(cells[row["pk"]]) for row in group))))
    matrix = np.array([[cells[row["pk"]][t] for row in group] for t in topics], dtype=float)
    return topics, matrix.reshape(len(topics), len(group))


def _bootstrap_by_topic_set(matrices: list[tuple[tuple[str, ...], np.ndarray]]) -> list[np.ndarray | None]:
    """95% bootstrap intervals of every matrix's columns. Matrices over the same topics are resampled together
    in one seeded call (a resample of the topics applies to every column alike, as for the runs of one
    measure), which keeps a CAsT-sized leaderboard to a couple of bootstrap runs instead of eighteen."""
    by_topics: dict[tuple[str, ...], list[int]] = {}
    for index, (topics, _) in enumerate(matrices):
        by_topics.setdefault(topics, []).append(index)
    result: list[np.ndarray | None] = [None] * len(matrices)
    for topics, indices in by_topics.items():
        if not topics:
            continue
        combined = np.hstack([matrices[i][1] for i in indices])
        intervals = bootstrap_ci(combined, confidence=CONFIDENCE, resamples=RESAMPLES, seed=0)
        start = 0
        for i in indices:
            width = matrices[i][1].shape[1]
            result[i] = intervals[start : start + width]
            start += width
    return result


def _measure_rows(
    group, cells, topics, matrix, intervals, *, qrels: str, measure: str, baseline: str | None
) -> list[LeaderboardRow]:
    names = [row["run__name"] for row in group]
    if intervals is None:
        intervals = np.array([[row["mean"], row["mean"]] for row in group])
    p_sign: dict[str, float] = {}
    p_t: dict[str, float] = {}
    if baseline is not None and baseline in names and topics:
        b = names.index(baseline)
        others = [i for i in range(len(names)) if i != b]
        if others:
            differences = matrix[:, others] - matrix[:, [b]]
            for i, ps, pt in zip(others, sign_test(differences), t_test(differences), strict=True):
                p_sign[names[i]], p_t[names[i]] = float(ps), float(pt)
    holm_sign, holm_t = _holm_by_run(p_sign), _holm_by_run(p_t)
    result, rank = [], 0
    for position, row in enumerate(group):
        # competition ranking: equal means share the better rank
        if position == 0 or row["mean"] != group[position - 1]["mean"]:
            rank = position + 1
        name = row["run__name"]
        result.append(
            LeaderboardRow(
                run=name,
                measure=measure,
                qrels=qrels,
                mean=row["mean"],
                ci_low=float(intervals[position][0]),
                ci_high=float(intervals[position][1]),
                rank=rank,
                topics=len(cells[row["pk"]]),
                p_sign=p_sign.get(name),
                p_t=p_t.get(name),
                p_sign_holm=holm_sign.get(name),
                p_t_holm=holm_t.get(name),
            )
        )
    return result


def _holm_by_run(p_values: dict[str, float]) -> dict[str, float]:
    """Holm's correction (metrics.core's) of a family of p-values keyed by run name."""
    names = list(p_values)
    return dict(zip(names, (float(p) for p in holm([p_values[name] for name in names])), strict=True))


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
        writer.writerow(["" if values[c] is None else values[c] for c in LEADERBOARD_CSV_COLUMNS])
    return out.getvalue().encode("utf-8")


def leaderboard_export_request(*, campaign: Campaign, kind: str, requested_by=None):
    """Request an export of any kind: the leaderboard is built here (it needs the scores), every other kind
    by the judging app's task. Raises ``judging.services.exports.ExportKindError`` for an unknown kind."""
    from judging.services.exports import export_request
    from metrics.tasks import export_leaderboard_build_task

    if kind != "leaderboard":
        return export_request(campaign=campaign, kind=kind, requested_by=requested_by)
    with transaction.atomic():
        export = export_request(campaign=campaign, kind=kind, requested_by=requested_by, enqueue=False)
        export_id = export.pk
        enqueue_on_commit(export_leaderboard_build_task, export_id)
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

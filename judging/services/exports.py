"""Exports of a campaign, built by a background task into private files with their SHA-256: preference
qrels (``topic Q0 docid value``, the three forms of ``campaign_export``), the judgment log as CSV, its release
form (no worker identifier, dates only), the workers table and the judge model's confidence in every candidate
(``topic<TAB>docid<TAB>p_top_k<TAB>p_best``). Every builder orders its rows completely and
writes no build time, so re-making the export of a finished campaign gives the same bytes (docs/decisions.md,
"Exports are deterministic")."""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Callable, Iterator, Mapping

from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from config.celery import enqueue_on_commit
from judging.models import Assignment, Campaign, Export, Judgment, TournamentJudgment
from judging.selectors import (
    PREFERENCE_KINDS,
    campaign_qrels_lines,
    campaign_worker_table,
    judgment_is_counted,
)
from judging.selectors.llm import campaign_llm_log
from judging.services.confidence import confidence_lines
from judging.services.errors import JudgingError
from trecio import spreadsheet_safe

# Kinds this app builds; ``leaderboard`` is the metrics app's (it owns the scores).
JUDGING_EXPORT_KINDS = (
    *PREFERENCE_KINDS,
    "judgments",
    "judgments_release",
    "workers",
    "llm_log",
    "confidence",
)
EXTENSIONS = {
    "judgments": "csv",
    "judgments_release": "csv",
    "workers": "csv",
    "leaderboard": "csv",
    "llm_log": "csv",
    "confidence": "tsv",
}

JUDGMENT_LOG_COLUMNS = [
    "topic",
    "left",
    "right",
    "winner",
    "winner_side",
    "round",
    "stage",
    "hit",
    "worker",
    "is_challenge",
    "is_counted",
    "milliseconds",
    "shown_at",
    "judged_at",
]
RELEASE_COLUMNS = [c for c in JUDGMENT_LOG_COLUMNS if c not in ("worker", "shown_at", "judged_at")] + [
    "judged_on"
]
WORKER_COLUMNS = [
    "worker",
    "hits_submitted",
    "hits_discarded",
    "challenge_pass_rate",
    "agreement",
    "left_rate",
    "median_seconds",
    "is_excluded",
    # added after the columns above, so scripts that read them by position still do
    "reliability",
    "model_reliability",
]

# The language model's log (``campaign_llm_log``): one row per question in one order, for audit. ``order`` is
# ``ab`` when passage 1 is the pair's first docid in sorted order, ``ba`` when it is the second.
LLM_LOG_COLUMNS = [
    "topic",
    "passage_1",
    "passage_2",
    "order",
    "model",
    "prompt_hash",
    "reply",
    "choice",
    "outcome",
    "attempts",
    "tokens_in",
    "tokens_out",
    "is_cached",
    "asked_at",
]
Progress = Callable[[float], None]


class ExportKindError(JudgingError, ValueError):
    """An export kind that does not exist or that this app does not build."""


@transaction.atomic
def export_request(*, campaign: Campaign, kind: str, requested_by=None, enqueue: bool = True) -> Export:
    """Record a pending export and queue its build after commit. Refuses an unknown kind (naming the
    known ones). ``enqueue=False`` lets the metrics app queue its own builder (the leaderboard)."""
    if kind not in Export.Kind.values:
        raise ExportKindError(f"kind: {kind!r} is not one of {', '.join(Export.Kind.values)}")
    export = Export.objects.create(campaign=campaign, kind=kind, requested_by=requested_by)
    if enqueue:
        export_id = export.pk
        enqueue_on_commit("judging.tasks.export_build_task", export_id)
    return export


def export_build(*, export: Export) -> Export:
    """Build the export's file and store it with its checksum; a ready export is left as it is (the task
    may run twice). A failure is recorded on the export (status ``failed``, ``error``), not raised."""
    export.refresh_from_db()
    if export.status == Export.Status.READY:
        return export
    if export.kind not in JUDGING_EXPORT_KINDS:
        raise ExportKindError(f"kind: {export.kind!r} is built by the metrics app")
    _export_mark(export=export, status=Export.Status.RUNNING, progress=0.0)

    def progress(fraction: float) -> None:
        Export.objects.filter(pk=export.pk).update(progress=round(fraction, 3))

    try:
        content = export_content(campaign=export.campaign, kind=export.kind, progress=progress)
    except Exception as error:  # recorded for the researcher; the task does not retry a bad export
        Export.objects.filter(pk=export.pk).update(
            status=Export.Status.FAILED, error=str(error)[:2000], finished_at=timezone.now()
        )
        export.refresh_from_db()
        return export
    return export_store(export=export, content=content)


def export_store(*, export: Export, content: bytes) -> Export:
    """Save ``content`` as the export's private file, with its SHA-256 and size, and mark it ready."""
    extension = EXTENSIONS.get(export.kind, "txt")
    name = f"{export.campaign.name}-{export.kind}-{export.pk}.{extension}"
    with transaction.atomic():
        export = Export.objects.select_for_update().get(pk=export.pk)
        # a FieldFile is truthy exactly when it has a name
        if export.file.name:
            export.file.storage.delete(export.file.name)
        export.file.save(f"{export.campaign.name}/{name}", ContentFile(content), save=False)
        export.sha256 = hashlib.sha256(content).hexdigest()
        export.size_bytes = len(content)
        export.status = Export.Status.READY
        export.progress = 1.0
        export.error = ""
        export.finished_at = timezone.now()
        export.save()
    return export


def _export_mark(*, export: Export, status: str, progress: float) -> None:
    Export.objects.filter(pk=export.pk).update(status=status, progress=progress)


def export_content(*, campaign: Campaign, kind: str, progress: Progress | None = None) -> bytes:
    """The bytes of one export kind of a campaign (deterministic for a finished campaign)."""
    progress = progress or (lambda fraction: None)
    if kind in PREFERENCE_KINDS:
        return "".join(campaign_qrels_lines(campaign=campaign, kind=kind)).encode("utf-8")
    if kind == "confidence":
        return "".join(confidence_lines(campaign=campaign)).encode("utf-8")
    if kind == "workers":
        # The judgment log's pseudonyms (w1, w2... by first answer), never the provider's worker ids, so the
        # two exports can be joined and neither names a worker.
        pseudonyms = campaign_worker_pseudonyms(campaign=campaign)
        order = {worker_id: number for number, worker_id in enumerate(pseudonyms)}
        rows = sorted(campaign_worker_table(campaign=campaign), key=lambda row: order[row["worker_id"]])
        return _csv(
            WORKER_COLUMNS,
            (_worker_cells({**row, "worker": pseudonyms[row["worker_id"]]}) for row in rows),
        )
    if kind in ("judgments", "judgments_release"):
        release = kind == "judgments_release"
        columns = RELEASE_COLUMNS if release else JUDGMENT_LOG_COLUMNS
        return _csv(columns, (_log_row(row, release=release) for row in _judgment_log(campaign, progress)))
    if kind == "llm_log":
        return _csv(LLM_LOG_COLUMNS, (_llm_log_cells(row) for row in campaign_llm_log(campaign=campaign)))
    raise ExportKindError(f"kind: {kind!r} is not one of {', '.join(JUDGING_EXPORT_KINDS)}")


def _csv(header: list[str], rows) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def _llm_log_cells(row: Mapping[str, object]) -> list[str]:
    first, second = str(row["first"]), str(row["second"])
    cells = {**row, "passage_1": first, "passage_2": second, "order": "ab" if first < second else "ba"}
    return [_cell(cells[column]) for column in LLM_LOG_COLUMNS]


def _worker_cells(row: Mapping[str, object]) -> list[str]:
    return [_cell(row[column]) for column in WORKER_COLUMNS]


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, int):
        return str(value)
    # Text (ids from uploaded files) may start like a formula: quoted for spreadsheets (trecio.spreadsheet).
    return spreadsheet_safe(str(value))


def _log_row(row: dict, *, release: bool) -> list[str]:
    if release:
        values = [row[c] for c in RELEASE_COLUMNS[:-1]]
        judged = row["judged_at"]
        values.append(judged.date().isoformat() if judged else "")
    else:
        values = [row[c] for c in JUDGMENT_LOG_COLUMNS]
        for i in (-2, -1):
            values[i] = values[i].isoformat() if values[i] else ""
    return [_cell(v) for v in values]


def campaign_worker_pseudonyms(*, campaign: Campaign) -> dict[int, str]:
    """The campaign's one pseudonym table, which every export uses (so the files join on ``worker``):
    ``{worker id: "w1", "w2", ...}`` in the order of each worker's first answer, then workers without an
    answer, by id. Only workers whose work counts are numbered, those with an assignment the provider
    confirmed (a logged-in judge's is confirmed at once): a claim under a forged or invented id is nobody's
    work, and must not shift the real workers' numbers."""
    confirmed = Assignment.objects.filter(campaign=campaign, confirmed_at__isnull=False)
    first_answers = (
        Judgment.objects.filter(assignment__in=confirmed)
        .values("assignment__worker_id")
        .annotate(first=Min("pk"))
        .order_by("first")
        .values_list("assignment__worker_id", flat=True)
    )
    pseudonyms: dict[int, str] = {}
    for worker_id in first_answers:
        pseudonyms.setdefault(worker_id, f"w{len(pseudonyms) + 1}")
    others = (
        confirmed.exclude(worker_id__in=list(pseudonyms))
        .values_list("worker_id", flat=True)
        .distinct()
        .order_by("worker_id")
    )
    for worker_id in others:
        pseudonyms.setdefault(worker_id, f"w{len(pseudonyms) + 1}")
    return pseudonyms


def _judgment_log(campaign: Campaign, progress: Progress) -> Iterator[dict]:
    """Every answer of the campaign in a total order (judgment id), workers pseudonymised as ``w1``, ``w2``...
    in the order of their first answer, so the log is the same however often it is made (the crowd's by
    ``campaign_worker_pseudonyms``, the table the workers export uses)."""
    if campaign.mode == Campaign.Mode.TOURNAMENT:
        assessors: dict[int, str] = {}

        def pseudonym(key: int) -> str:
            return assessors.setdefault(key, f"w{len(assessors) + 1}")

        rows = TournamentJudgment.objects.filter(campaign_topic__campaign=campaign).order_by("pk")
        total = rows.count() or 1
        for i, (topic, left, right, winner, side, ms, assessor, created) in enumerate(
            rows.values_list(
                "campaign_topic__topic__topic_id",
                "left__docid",
                "right__docid",
                "winner__docid",
                "winner_side",
                "milliseconds",
                "assessor_id",
                "created_at",
            ).iterator(chunk_size=5000)
        ):
            if i % 5000 == 0:
                progress(i / total)
            yield {
                "topic": topic,
                "left": left,
                "right": right,
                "winner": winner,
                "winner_side": side,
                "round": None,
                "stage": None,
                "hit": None,
                "worker": pseudonym(assessor),
                "is_challenge": False,
                "is_counted": True,
                "milliseconds": ms,
                "shown_at": None,
                "judged_at": created,
            }
        return
    workers = campaign_worker_pseudonyms(campaign=campaign)
    # Answers the provider never confirmed (a forged assignment's) are not the campaign's data.
    judgments = Judgment.objects.filter(
        assignment__campaign=campaign, assignment__confirmed_at__isnull=False
    ).order_by("pk")
    total = judgments.count() or 1
    for i, row in enumerate(
        judgments.values(
            "slot__topic__topic_id",
            "slot__left__docid",
            "slot__right__docid",
            "winner__docid",
            "winner_side",
            "slot__pair__round__number",
            "slot__pair__round__stage",
            "assignment__hit__number",
            "assignment__worker_id",
            "slot__is_challenge",
            "assignment__status",
            "assignment__confirmed_at",
            "milliseconds",
            "shown_at",
            "created_at",
        ).iterator(chunk_size=5000)
    ):
        if i % 5000 == 0:
            progress(i / total)
        yield {
            "topic": row["slot__topic__topic_id"],
            "left": row["slot__left__docid"],
            "right": row["slot__right__docid"],
            "winner": row["winner__docid"],
            "winner_side": row["winner_side"],
            "round": row["slot__pair__round__number"],
            "stage": row["slot__pair__round__stage"],
            "hit": row["assignment__hit__number"],
            "worker": workers[row["assignment__worker_id"]],
            "is_challenge": row["slot__is_challenge"],
            "is_counted": judgment_is_counted(
                assignment_status=row["assignment__status"],
                confirmed=row["assignment__confirmed_at"] is not None,
                is_challenge=row["slot__is_challenge"],
            ),
            "milliseconds": row["milliseconds"],
            "shown_at": row["shown_at"],
            "judged_at": row["created_at"],
        }

"""Runs uploaded from the dashboard or the API: stored as they arrive into private storage, then validated
by a background task that reports its progress on the Run (``status``, ``progress``, ``error`` as
``file:line: problem``) and, once the run is ready, scores it for its campaign once that is finished. A
run uploaded to a campaign is that campaign's only (docs/decisions.md, "Tenancy")."""

from __future__ import annotations

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from config.celery import enqueue_on_commit
from judging.models import Campaign
from pools import trec
from pools.models import Run
from pools.services.importing import ImportRejectedError, topic_pks_resolving
from pools.services.runs import RUN_NAME_PATTERN

PROGRESS_EVERY_LINES = 50_000


class RunUploadError(ValueError):
    """An upload refused before storing anything; the message names the field."""


@transaction.atomic
def run_upload(*, campaign: Campaign, name: str, upload: UploadedFile, uploaded_by=None) -> Run:
    """Store an uploaded TREC run as a pending Run of ``campaign`` (only that campaign lists, scores and ranks
    it; Django streams the upload in chunks to the storage) and queue its validation after commit. Refuses a
    bad name, one the campaign shows already (its own runs and the collection's), and an empty file; nothing
    is stored then."""
    from metrics.selectors import campaign_run_list

    if not RUN_NAME_PATTERN.match(name or ""):
        raise RunUploadError(
            f"name: {name!r} must be 1-200 letters, digits, '.', '_', '+' or '-', starting with a letter or digit"
        )
    if campaign_run_list(campaign=campaign).filter(name=name).exists():
        raise RunUploadError(f"name: campaign {campaign.name} already has a run {name!r}")
    if not upload.size:
        raise RunUploadError("file: the uploaded run is empty")
    run = Run(
        collection_id=campaign.collection_id,
        campaign=campaign,
        name=name,
        status=Run.Status.PENDING,
        progress=0.0,
        uploaded_by=uploaded_by,
    )
    run.file.save(f"{name}.run", upload, save=False)
    saved = run.file.name
    try:
        run.save()
    except BaseException:
        run.file.storage.delete(saved)
        raise
    run_id = run.pk
    enqueue_on_commit("metrics.tasks.run_validate_task", run_id)
    return run


def run_validate(*, run: Run, display_name: str | None = None) -> Run:
    """Stream the stored run, checking every line (6 columns, integer rank, finite score) and its topics
    against the collection; record line and topic counts and status ``ready``, or ``failed`` with the first
    problem as ``file:line: problem``. A run that is already ready or failed is left alone (idempotent)."""
    run.refresh_from_db()
    if run.status in (Run.Status.READY, Run.Status.FAILED):
        return run
    display_name = display_name or f"{run.name}.run"
    Run.objects.filter(pk=run.pk).update(status=Run.Status.VALIDATING, progress=0.0)
    path = run.file.path
    total = _count_lines(path) or 1
    line_count = 0
    topic_first_lines: dict[str, int] = {}
    try:
        for line in trec.iter_run(path):
            line_count += 1
            topic_first_lines.setdefault(line.topic_id, line.line_number)
            if line_count % PROGRESS_EVERY_LINES == 0:
                Run.objects.filter(pk=run.pk).update(progress=min(line_count / total, 0.99))
        if line_count == 0:
            raise trec.TrecFormatError(path, 1, "the run has no lines")
        with transaction.atomic():
            topic_pks_resolving(run.collection, topic_first_lines, path=display_name, create_unknown=False)
            Run.objects.filter(pk=run.pk).update(
                status=Run.Status.READY,
                progress=1.0,
                line_count=line_count,
                topic_count=len(topic_first_lines),
                error="",
            )
    except trec.TrecFormatError as error:
        _fail(run, f"{display_name}:{error.line_number}: {error.problem}")
    except ImportRejectedError as error:
        _fail(run, str(error))
    run.refresh_from_db()
    return run


def run_validate_and_score(*, run: Run) -> Run:
    """Validate an uploaded run; once ready, score it for its campaign (or, a collection run, for the
    collection's finished campaigns). Idempotent: a validated run is not read again, and scoring replaces."""
    from metrics.leaderboard import campaign_runs_score

    run = run_validate(run=run)
    if run.status == Run.Status.READY:
        campaigns = Campaign.objects.filter(collection=run.collection, status=Campaign.Status.DONE)
        if run.campaign_id is not None:  # a campaign's upload is scored for that campaign only
            campaigns = campaigns.filter(pk=run.campaign_id)
        for campaign in campaigns:
            campaign_runs_score(campaign=campaign, runs=[run])
    return run


def _fail(run: Run, message: str) -> None:
    Run.objects.filter(pk=run.pk).update(status=Run.Status.FAILED, error=message[:2000])


def _count_lines(path) -> int:
    count = 0
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            count += chunk.count(b"\n")
    return count

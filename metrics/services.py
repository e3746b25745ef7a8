"""Writes of the metrics app: compute and store the scores of a collection's runs."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from judging.models import Campaign
from judging.selectors import campaign_preferences
from metrics.core.evaluate import EvaluationOptions, TopicScores, evaluate_run, parse_measure
from metrics.core.readers import Qrels, read_run
from metrics.models import RunScore, TopicScore
from pools.models import Collection, Run, Topic
from pools.selectors import collection_qrels


class ScoreRequestError(ValueError):
    """A score computation that cannot be done as asked (bad measure, wrong collection...)."""


def run_scores_compute(
    *,
    collection: Collection | None = None,
    campaign: Campaign | None = None,
    measures: Sequence[str],
    qrels_kind: str | None = None,
    runs: Sequence[Run] | None = None,
    options: EvaluationOptions | None = None,
) -> list[RunScore]:
    """Score runs against a collection's graded qrels (``collection``) or a campaign's preference qrels
    (``campaign``, ``qrels_kind`` one of combined / top_k / best, default combined), and store the per-topic
    and mean scores. ``runs`` defaults to every run of the collection; ``measures`` are ``toppref evaluate``
    names. Replaces the stored scores of exactly these (run, judgments, measure) combinations, so running it
    twice leaves the same rows (idempotent). The run files are read before the write transaction; the write
    locks the collection row so that concurrent computations queue. Returns the new RunScores."""
    if (collection is None) == (campaign is None):
        raise ScoreRequestError("give either a collection (graded qrels) or a campaign (preference qrels)")
    try:
        parsed = [parse_measure(name) for name in measures]
    except ValueError as error:
        raise ScoreRequestError(str(error)) from None
    if not parsed:
        raise ScoreRequestError("no measure given")
    if campaign is not None:
        collection = campaign.collection
        qrels_kind = qrels_kind or RunScore.QrelsKind.COMBINED
        if qrels_kind == RunScore.QrelsKind.GRADED:
            raise ScoreRequestError("graded scores belong to the collection: pass collection=, not campaign=")
        values = campaign_preferences(campaign=campaign, kind=qrels_kind)
    else:
        if qrels_kind not in (None, RunScore.QrelsKind.GRADED):
            raise ScoreRequestError(f"qrels kind {qrels_kind!r} needs a campaign")
        qrels_kind = RunScore.QrelsKind.GRADED
        values = collection_qrels(collection=collection)
    if runs is None:
        # A campaign's scores cover only the runs it shows (never another campaign's uploads).
        from metrics.selectors import campaign_run_list

        runs = campaign_run_list(campaign=campaign) if campaign is not None else collection.runs.all()
    runs = list(runs)
    foreign = [run.name for run in runs if run.collection_id != collection.pk]
    if campaign is not None:
        foreign += [run.name for run in runs if run.campaign_id not in (None, campaign.pk)]
    if foreign:
        raise ScoreRequestError(f"runs not in collection {collection.name!r}: {', '.join(foreign)}")
    qrels = Qrels.from_records(
        (topic_id, docid, value)
        for topic_id, topic_values in values.items()
        for docid, value in topic_values.items()
    )
    options = options or EvaluationOptions()
    scored = [(run, evaluate_run(qrels, _read_stored_run(run), parsed, options)) for run in runs]
    return _run_scores_store(
        collection=collection,
        campaign=campaign,
        qrels_kind=qrels_kind,
        measures=[m.name for m in parsed],
        scored=scored,
    )


def _read_stored_run(run: Run):
    """Read a stored run file; storages without a local path are copied to a temporary file first."""
    try:
        path = run.file.path
    except NotImplementedError:
        path = None
    if path is not None:
        return read_run(path)
    with run.file.open("rb") as source, tempfile.NamedTemporaryFile(suffix=".run") as copy:
        shutil.copyfileobj(source, copy)
        copy.flush()
        return read_run(Path(copy.name))


@transaction.atomic
def _run_scores_store(
    *,
    collection: Collection,
    campaign: Campaign | None,
    qrels_kind: str,
    measures: list[str],
    scored: list[tuple[Run, list[TopicScores]]],
) -> list[RunScore]:
    Collection.objects.select_for_update().get(pk=collection.pk)
    RunScore.objects.filter(
        run__in=[run for run, _ in scored], campaign=campaign, qrels_kind=qrels_kind, measure__in=measures
    ).delete()
    topic_pks = dict(Topic.objects.filter(collection=collection).values_list("topic_id", "pk"))
    now = timezone.now()
    run_scores = RunScore.objects.bulk_create(
        [
            RunScore(
                run=run,
                campaign=campaign,
                qrels_kind=qrels_kind,
                measure=scores.measure,
                mean=scores.mean,
                topic_count=len(scores.topics),
                computed_at=now,
            )
            for run, per_measure in scored
            for scores in per_measure
        ]
    )
    flat = [scores for _, per_measure in scored for scores in per_measure]
    TopicScore.objects.bulk_create(
        [
            TopicScore(run_score=run_score, topic_id=topic_pks[topic], value=float(value))
            for run_score, scores in zip(run_scores, flat, strict=True)
            for topic, value in zip(scores.topics, scores.values, strict=True)
            # qrels come from the database, so every scored topic exists; this guards lenient imports only
            if topic in topic_pks
        ],
        batch_size=5000,
    )
    return run_scores

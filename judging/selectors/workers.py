"""Worker analytics of a campaign: HITs, challenge pass rate, agreement with the final ordering."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from django.db.models import Exists, OuterRef, Q

from judging.models import Assignment, Campaign, CampaignConfidence, Candidate, Judgment, WorkerExclusion


class WorkerRow(TypedDict):
    """One worker of ``campaign_worker_table``; the rates are None when there is nothing to divide."""

    worker_id: int
    worker: str
    is_excluded: bool
    # "global" (staff), "owner" (the campaign's owner excluded them) or None: the scope of the exclusion.
    excluded_by: str | None
    hits_submitted: int
    hits_discarded: int
    challenge_pass_rate: float | None
    agreement: float | None
    left_rate: float | None
    median_seconds: float | None
    # 1 - the engine's estimated probability that this judge reverses a pair (person or model alike), from
    # their challenges and their votes against the others' (``campaign_error_model``).
    reliability: float | None
    # The judge model's reliability of this judge (Crowd-BT's eta: the probability that they answer by the model
    # rather than at random), from the campaign's last background fit (``CampaignConfidence``); None before it.
    model_reliability: float | None


def worker_excluded_here(*, campaign: Campaign) -> Q:
    """A filter of Worker rows: excluded for ``campaign``, globally or by its owner (docs/decisions.md,
    "Tenancy"; another owner's exclusions do not count here)."""
    return Q(is_excluded=True) | Q(
        Exists(WorkerExclusion.objects.filter(worker_id=OuterRef("pk"), owner_id=campaign.owner_id))
    )


def _final_ranks(*, campaign: Campaign) -> dict[tuple[int, int], int]:
    """``{(topic pk, item pk): rank}`` of every ranked candidate of a finished topic."""
    ranks: dict[tuple[int, int], int] = {}
    for topic_pk, item_pk, rank in Candidate.objects.filter(
        campaign_topic__campaign=campaign, rank__isnull=False
    ).values_list("campaign_topic__topic_id", "item_id", "rank"):
        if rank is not None:  # always, by the filter; the field is nullable
            ranks[(topic_pk, item_pk)] = rank
    return ranks


@dataclass
class _WorkerTally:
    """A worker's counts while ``campaign_worker_table`` reads the judgments: [hits, total] pairs."""

    worker_id: int
    worker: str
    excluded_by: str | None
    hits_submitted: int = 0
    hits_discarded: int = 0
    challenges: list[int] = field(default_factory=lambda: [0, 0])
    agreement: list[int] = field(default_factory=lambda: [0, 0])
    left: list[int] = field(default_factory=lambda: [0, 0])
    milliseconds: list[int] = field(default_factory=list)


def campaign_worker_table(*, campaign: Campaign) -> list[WorkerRow]:
    """One row per worker who took a HIT of the campaign (three queries whatever its size): HITs submitted,
    challenge pass rate, agreement of their answers with the final ordering (over answered pairs whose two
    items both got a distinct final rank), share of left choices, median seconds per answer, excluded.
    The challenge questions are the quality check of the paper (Assessing top-k preferences, section 4.3)."""
    import statistics

    workers: dict[int, _WorkerTally] = {}
    excluded_by_owner = set(
        WorkerExclusion.objects.filter(
            owner_id=campaign.owner_id,
            worker_id__in=Assignment.objects.filter(campaign=campaign).values("worker_id"),
        ).values_list("worker_id", flat=True)
    )
    # Only assignments the provider confirmed: a forged worker id is nobody's row (the campaign page counts
    # the unconfirmed answers apart).
    for worker_pk, provider, external_id, is_excluded, status in (
        Assignment.objects.filter(campaign=campaign, confirmed_at__isnull=False)
        .order_by("worker_id", "pk")
        .values_list("worker_id", "worker__provider", "worker__external_id", "worker__is_excluded", "status")
    ):
        tally = workers.get(worker_pk)
        if tally is None:
            scope = "global" if is_excluded else "owner" if worker_pk in excluded_by_owner else None
            tally = workers[worker_pk] = _WorkerTally(
                worker_id=worker_pk, worker=f"{provider}:{external_id}", excluded_by=scope
            )
        if status in (Assignment.Status.ACCEPTED, Assignment.Status.DISCARDED):
            tally.hits_submitted += 1
        if status == Assignment.Status.DISCARDED:
            tally.hits_discarded += 1
    ranks = _final_ranks(campaign=campaign)
    for worker_pk, is_challenge, expected, winner, side, ms, topic_pk, left, right in (
        Judgment.objects.filter(assignment__campaign=campaign, assignment__confirmed_at__isnull=False)
        .order_by()
        .values_list(
            "assignment__worker_id",
            "slot__is_challenge",
            "slot__expected_winner_id",
            "winner_id",
            "winner_side",
            "milliseconds",
            "slot__topic_id",
            "slot__left_id",
            "slot__right_id",
        )
    ):
        found = workers.get(worker_pk)
        if found is None:
            continue
        if is_challenge:
            found.challenges[0] += winner == expected
            found.challenges[1] += 1
        else:
            loser = right if winner == left else left
            winner_rank, loser_rank = ranks.get((topic_pk, winner)), ranks.get((topic_pk, loser))
            if winner_rank is not None and loser_rank is not None and winner_rank != loser_rank:
                found.agreement[0] += winner_rank < loser_rank
                found.agreement[1] += 1
        if side:
            found.left[0] += side == "left"
            found.left[1] += 1
        if ms is not None:
            found.milliseconds.append(ms)

    def ratio(pair: list[int]) -> float | None:
        return pair[0] / pair[1] if pair[1] else None

    from judging.selectors.adaptive import campaign_error_model, worker_key

    errors = campaign_error_model(campaign=campaign)
    fitted = (
        CampaignConfidence.objects.filter(campaign=campaign).values_list("judges", flat=True).first() or {}
    )

    return [
        {
            "worker_id": tally.worker_id,
            "worker": tally.worker,
            "is_excluded": tally.excluded_by is not None,
            "excluded_by": tally.excluded_by,
            "hits_submitted": tally.hits_submitted,
            "hits_discarded": tally.hits_discarded,
            "challenge_pass_rate": ratio(tally.challenges),
            "agreement": ratio(tally.agreement),
            "left_rate": ratio(tally.left),
            "median_seconds": (statistics.median(tally.milliseconds) / 1000 if tally.milliseconds else None),
            "reliability": 1 - errors.of(worker_key(tally.worker_id)),
            "model_reliability": _model_eta(fitted, worker_key(tally.worker_id)),
        }
        for tally in workers.values()
    ]


def _model_eta(judges: dict[str, list[float]], key: str) -> float | None:
    """The eta the stored fit gives judge ``key`` (stored as ``[eta, votes, challenges, failed]``), or None."""
    fitted = judges.get(key)
    return float(fitted[0]) if fitted else None

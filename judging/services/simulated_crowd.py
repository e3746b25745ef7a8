"""The simulated crowd: workers and assessors driving the real services, so the demo, the benchmark and the tests go
through exactly the code real crowd workers and dedicated assessors use. Answers come from an engine oracle
(``PerfectOracle``, ``NoisyOracle``, ``ReplayOracle``)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Q

from judging.engine import Oracle
from judging.models import Campaign, Hit, HitSlot, Worker
from judging.services.campaigns import campaign_advance
from judging.services.errors import JudgingError
from judging.services.judgments import assignment_submit, hit_assign_next, worker_get_or_create
from judging.services.tournaments import tournament_judgment_submit, tournament_next_pair

SIMULATED_PROVIDER = "simulated"
# How many workers may join an adaptive campaign beyond ``worker_count`` when all at hand judged a pair before.
MAX_EXTRA_WORKERS = 1000


class CampaignStalledError(JudgingError):
    """The campaign is not finished but nothing is left to judge or to advance (a bug or a lost worker)."""


@dataclass(frozen=True)
class SimulationReport:
    """What a simulated run did: HITs submitted (``hits``, of which ``discarded_hits`` failed a challenge),
    answers given (``answers``, challenges included) and the workers that took part."""

    hits: int
    discarded_hits: int
    answers: int
    workers: int


def campaign_simulate(
    *,
    campaign: Campaign,
    oracle: Oracle,
    worker_count: int = 5,
    drive: bool = True,
    timeout_seconds: float = 600.0,
    poll_seconds: float = 0.05,
) -> SimulationReport:
    """Let ``worker_count`` simulated workers take open HITs in turn and answer every slot with ``oracle``
    until the crowd campaign is done. A worker excluded after a failed challenge is replaced by a new one.

    ``drive=True`` runs ``campaign_advance`` itself whenever no HIT is available (needed where on-commit
    tasks do not run, e.g. inside a test transaction; a no-op when eager tasks already did the work); when
    that finds nothing to do and a Celery worker runs the tasks, it waits for the worker as ``drive=False``;
    ``drive=False`` leaves closing rounds and building HITs to the Celery workers and polls until they have,
    raising ``CampaignStalledError`` after ``timeout_seconds`` without progress."""
    workers = [_simulated_worker(campaign, i) for i in range(worker_count)]
    created = worker_count
    # Workers who joined because every one at hand had judged a pair of the open HITs (``MAX_EXTRA_WORKERS``);
    # those who replace an excluded worker are not counted here: under a noisy crowd they run to thousands.
    joined = 0
    just_joined = False
    hits = discarded = answers = 0
    turn = 0
    idle_since = time.monotonic()
    # The slots of the campaign's open HITs, read for many HITs at once (a HIT's slots never change).
    hit_slots: dict[int, list[tuple]] = {}
    while True:
        slot_index = turn % len(workers)
        assignment = hit_assign_next(campaign=campaign, worker=workers[slot_index])
        if assignment is None:
            # No HIT to hand out: the campaign is done, or rounds must close and HITs be built first.
            campaign.refresh_from_db(fields=["status"])
            if campaign.status == Campaign.Status.DONE:
                break
            if (
                campaign.mode == Campaign.Mode.ADAPTIVE
                and not just_joined
                and joined < MAX_EXTRA_WORKERS
                and Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN).exists()
            ):
                # This worker judged a pair of every open HIT before (adaptive repeat votes go to workers who
                # have not): a new worker joins and takes one, as a real crowd's would, before anything waits.
                workers.append(_simulated_worker(campaign, created))
                created += 1
                joined += 1
                turn = len(workers) - 1
                just_joined = True
                continue
            # A worker who judged nothing found no HIT either: the open ones wait for something else.
            just_joined = False
            if drive:
                counts = campaign_advance(campaign=campaign)
                if any(counts.values()):
                    idle_since = time.monotonic()
                    continue
                campaign.refresh_from_db(fields=["status"])
                if campaign.status == Campaign.Status.DONE:
                    break
                if _tasks_run_in_process():
                    raise CampaignStalledError(
                        f"campaign {campaign.name}: nothing to judge and nothing to advance"
                    )
                # "Nothing to advance" with a Celery worker running is no stall: the worker has just closed
                # the round or is building its HITs (and committed them after this process looked), so wait
                # for it as drive=False does.
            if time.monotonic() - idle_since > timeout_seconds:
                raise CampaignStalledError(f"campaign {campaign.name}: no HIT for {timeout_seconds} s")
            time.sleep(poll_seconds)
            continue
        idle_since = time.monotonic()
        just_joined = False
        if assignment.hit_id not in hit_slots:
            hit_slots.update(_open_hit_slots(campaign, since=assignment.hit_id))
        winners = {}
        for position, topic_id, left_id, left, right_id, right in hit_slots.pop(assignment.hit_id):
            winners[position] = left_id if oracle.prefer(topic_id, left, right) == left else right_id
        assignment = assignment_submit(assignment=assignment, winners=winners)
        hits += 1
        answers += len(winners)
        if assignment.status == assignment.Status.DISCARDED:
            discarded += 1
            workers[slot_index] = _simulated_worker(campaign, created)
            created += 1
        turn += 1
    return SimulationReport(hits=hits, discarded_hits=discarded, answers=answers, workers=created)


def tournament_simulate(
    *, campaign: Campaign, oracle: Oracle, assessor_username: str = "simulated-assessor"
) -> int:
    """Let one simulated dedicated assessor (a user created on first use) judge every tournament pair of the
    campaign with ``oracle``; returns the number of judgments made."""
    assessor, _ = get_user_model().objects.get_or_create(username=assessor_username)
    judgments = 0
    while (question := tournament_next_pair(campaign=campaign, assessor=assessor)) is not None:
        topic_id = question.campaign_topic.topic.topic_id
        preferred = oracle.prefer(topic_id, question.left.docid, question.right.docid)
        winner, loser = (
            (question.left, question.right)
            if preferred == question.left.docid
            else (question.right, question.left)
        )
        tournament_judgment_submit(
            campaign_topic=question.campaign_topic, assessor=assessor, winner=winner, loser=loser
        )
        judgments += 1
    return judgments


def _open_hit_slots(campaign: Campaign, *, since: int) -> dict[int, list[tuple]]:
    """The slots of HIT ``since`` and of the campaign's open HITs made after it, by HIT."""
    slots: dict[int, list[tuple]] = {}
    rows = (
        HitSlot.objects.filter(hit__campaign=campaign, hit_id__gte=since)
        .filter(Q(hit__status=Hit.Status.OPEN) | Q(hit_id=since))
        .order_by("hit_id", "position")
        .values_list(
            "hit_id", "position", "topic__topic_id", "left_id", "left__docid", "right_id", "right__docid"
        )
    )
    for hit, *slot in rows:
        slots.setdefault(hit, []).append(tuple(slot))
    return slots


def _tasks_run_in_process() -> bool:
    """Whether Celery tasks run eagerly here (no broker, no worker): then nobody else advances the campaign."""
    from config.celery import app

    return bool(app.conf.task_always_eager)


def _simulated_worker(campaign: Campaign, index: int) -> Worker:
    return worker_get_or_create(provider=SIMULATED_PROVIDER, external_id=f"{campaign.name}-{index}")

"""The per-topic state machine of a crowd campaign: open a round, close it when every pair has a valid
judgment (cull in stage 1, rank in stage 2), finish the topic (paper 000 section 4.3; issue 4 item 2).

Every transition runs in one transaction holding the topic's row lock (``select_for_update``; on SQLite the
IMMEDIATE transaction mode serialises writers), so two judgments completing a round at the same moment
advance it exactly once. Each step re-reads the state it acts on, so running it again changes nothing.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from judging.engine import CrowdParams, RankedItem, crowd_round_plan, stage1_close, stage2_rank
from judging.models import Campaign, CampaignTopic, Candidate, Pair, Round

FINISHED_STATES = (CampaignTopic.State.DONE, CampaignTopic.State.NOTHING_TO_JUDGE)


def campaign_params(campaign: Campaign) -> CrowdParams:
    """The engine's parameters for a campaign."""
    return CrowdParams(
        k=campaign.k,
        F=campaign.final_stage_size,
        P=campaign.opponents,
        culling=campaign.culling,
        max_rounds=campaign.max_rounds,
    )


def round_rng(*, seed: int, topic_id: str, number: int) -> random.Random:
    """The random source of one round of one topic: a function of (seed, topic, round) only, so a round
    regenerated after a crash (or by the pure engine) gets the same pairs, whatever the order topics ran in."""
    return random.Random(f"{seed}:{topic_id}:round:{number}")


@transaction.atomic
def round_generate(*, campaign_topic: CampaignTopic) -> Round | None:
    """Open the topic's next round unless one is open or the topic is finished; returns the open round
    (None when the topic finished, e.g. a pool of 0-1 candidates). Safe to run twice."""
    campaign_topic = (
        CampaignTopic.objects.select_for_update()
        .select_related("campaign", "topic")
        .get(pk=campaign_topic.pk)
    )
    if (
        campaign_topic.state in FINISHED_STATES
        or campaign_topic.campaign.mode != campaign_topic.campaign.Mode.CROWD
    ):
        return None
    open_round = campaign_topic.rounds.filter(closed_at__isnull=True).first()
    if open_round is not None:
        return open_round
    last = campaign_topic.rounds.order_by("-number").first()
    stage = (last.outcome or {}).get("next_stage") if last is not None else None
    return _round_open(campaign_topic=campaign_topic, stage=stage)


@transaction.atomic
def round_close_if_complete(*, round: Round) -> bool:
    """Close the round once every pair has a valid judgment: stage 1 culls (and reinstates) candidates and
    opens the next round; stage 2 ranks the pool and finishes the topic. Returns whether this call closed
    the round; False when a pair is still unjudged or the round was already closed."""
    from judging.tasks import hit_build_task

    # Most calls come from HITs that completed only part of a round: answer those without taking the lock.
    if Pair.objects.filter(round_id=round.pk, winner__isnull=True).exists():
        return False
    campaign_topic = (
        CampaignTopic.objects.select_for_update()
        .select_related("campaign", "topic")
        .get(pk=round.campaign_topic_id)
    )
    round = Round.objects.get(pk=round.pk)
    if round.closed_at is not None:
        return False
    pairs = list(round.pairs.values_list("left__docid", "right__docid", "winner__docid"))
    if any(winner is None for _, _, winner in pairs):
        return False
    outcomes = [(winner, right if winner == left else left) for left, right, winner in pairs]
    candidates = list(
        campaign_topic.candidates.filter(is_active=True)
        .order_by("position")
        .values_list("item__docid", flat=True)
    )
    campaign = campaign_topic.campaign
    if round.stage == 1:
        result = stage1_close(
            candidates,
            [(left, right) for left, right, _ in pairs],
            outcomes,
            params=campaign_params(campaign),
            round_number=round.number,
        )
        Candidate.objects.filter(campaign_topic=campaign_topic, item__docid__in=result.culled).update(
            is_active=False, culled_in_round=round.number
        )
        round.outcome = {
            "survivors": result.survivors,
            "culled": result.culled,
            "reinstated": result.reinstated,
            "wins": result.wins,
            "opponents": result.opponents,
            "next_stage": result.next_stage,
        }
        round.closed_at = timezone.now()
        round.save(update_fields=["outcome", "closed_at"])
        _round_open(campaign_topic=campaign_topic, stage=result.next_stage)
    else:
        wins = Counter(winner for winner, _ in outcomes)
        round.outcome = {"wins": {docid: wins[docid] for docid in candidates}}
        round.closed_at = timezone.now()
        round.save(update_fields=["outcome", "closed_at"])
        _topic_finish(campaign_topic=campaign_topic, ranked=stage2_rank(candidates, outcomes, k=campaign.k))
    campaign_id = campaign.pk
    transaction.on_commit(lambda: hit_build_task.delay(campaign_id))
    return True


@transaction.atomic
def topic_finish(*, campaign_topic: CampaignTopic, ranked: Sequence[RankedItem]) -> CampaignTopic:
    """Store the topic's final ranking (rank and wins on its candidates), mark it done, and mark the campaign
    done when this was its last unfinished topic. A finished topic is left as it is."""
    campaign_topic = (
        CampaignTopic.objects.select_for_update().select_related("campaign").get(pk=campaign_topic.pk)
    )
    if campaign_topic.state in FINISHED_STATES:
        return campaign_topic
    _topic_finish(campaign_topic=campaign_topic, ranked=ranked)
    return campaign_topic


def _round_open(*, campaign_topic: CampaignTopic, stage: int | None = None) -> Round | None:
    """Plan and store the next round; the caller holds the topic's lock. A plan without pairs (0-1
    candidates) finishes the topic instead."""
    campaign = campaign_topic.campaign
    candidates = list(
        campaign_topic.candidates.filter(is_active=True)
        .order_by("position")
        .values_list("item_id", "item__docid")
    )
    docids = [docid for _, docid in candidates]
    number = campaign_topic.round_number + 1
    rng = round_rng(seed=campaign.seed, topic_id=campaign_topic.topic.topic_id, number=number)
    plan = crowd_round_plan(docids, params=campaign_params(campaign), rng=rng, stage=stage)
    if not plan.pairs:
        _topic_finish(campaign_topic=campaign_topic, ranked=stage2_rank(docids, [], k=campaign.k))
        return None
    item_ids = {docid: item_id for item_id, docid in candidates}
    round = Round.objects.create(
        campaign_topic=campaign_topic, number=number, stage=plan.stage, candidate_count=len(docids)
    )
    Pair.objects.bulk_create(
        [Pair(round=round, left_id=item_ids[left], right_id=item_ids[right]) for left, right in plan.pairs]
    )
    campaign_topic.state = CampaignTopic.State.STAGE_1 if plan.stage == 1 else CampaignTopic.State.STAGE_2
    campaign_topic.round_number = number
    campaign_topic.save(update_fields=["state", "round_number", "updated_at"])
    return round


def _topic_finish(*, campaign_topic: CampaignTopic, ranked: Sequence[RankedItem]) -> None:
    """Write the ranking and the finished state; the caller holds the topic's lock. The campaign row is
    locked before counting unfinished topics, so the last two topics finishing at once cannot both miss
    that the campaign is complete."""
    by_docid = {item.docid: item for item in ranked}
    candidates = list(campaign_topic.candidates.filter(item__docid__in=by_docid).select_related("item"))
    for candidate in candidates:
        candidate.rank = by_docid[candidate.item.docid].rank
        candidate.wins = by_docid[candidate.item.docid].wins
    Candidate.objects.bulk_update(candidates, ["rank", "wins"])
    is_trivial = campaign_topic.candidates.count() <= 1
    campaign_topic.state = CampaignTopic.State.NOTHING_TO_JUDGE if is_trivial else CampaignTopic.State.DONE
    campaign_topic.finished_at = timezone.now()
    campaign_topic.assessor = None
    campaign_topic.assessor_lease_until = None
    campaign_topic.save(
        update_fields=["state", "finished_at", "assessor", "assessor_lease_until", "updated_at"]
    )
    campaign = Campaign.objects.select_for_update().get(pk=campaign_topic.campaign_id)
    unfinished = CampaignTopic.objects.filter(campaign=campaign).exclude(state__in=FINISHED_STATES)
    if campaign.status in (Campaign.Status.RUNNING, Campaign.Status.PAUSED) and not unfinished.exists():
        campaign.status = Campaign.Status.DONE
        campaign.finished_at = timezone.now()
        campaign.save(update_fields=["status", "finished_at"])

"""Dedicated assessors: one single-elimination tournament per topic (paper 000 section 4.2), its engine state
stored as JSON on the topic so it resumes across sessions and days. An assessor leases a topic while judging
it, so concurrent assessors never receive the same pair."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from judging.engine import Tournament
from judging.models import Campaign, CampaignTopic, TournamentJudgment
from judging.services.errors import TopicLeasedError, TournamentPairError
from judging.services.rounds import _topic_finish
from pools.models import Item

DEFAULT_LEASE = timedelta(minutes=30)


@dataclass(frozen=True)
class TournamentQuestion:
    """The pair an assessor should judge next, left/right as the tournament asks it."""

    campaign_topic: CampaignTopic
    left: Item
    right: Item


def tournament_rng(*, seed: int, topic_id: str) -> random.Random:
    """The random source of one topic's bracket: a function of (seed, topic) only."""
    return random.Random(f"{seed}:{topic_id}:tournament")


@transaction.atomic
def tournament_next_pair(
    *, campaign: Campaign, assessor: AbstractBaseUser, lease: timedelta = DEFAULT_LEASE
) -> TournamentQuestion | None:
    """The next pair for ``assessor``: from the topic they hold, else from a topic nobody holds (or whose
    lease ran out), which they then hold for ``lease``. Topics are locked with ``SKIP LOCKED`` on PostgreSQL,
    so two assessors asking at once get different topics. None when every tournament is finished or held."""
    now = timezone.now()
    running = CampaignTopic.objects.filter(campaign=campaign, state=CampaignTopic.State.TOURNAMENT)
    while True:
        campaign_topic = (
            running.filter(assessor=assessor).select_for_update(of=("self",)).order_by("pk").first()
            or running.filter(Q(assessor__isnull=True) | Q(assessor_lease_until__lt=now))
            .select_for_update(skip_locked=True, of=("self",))
            .order_by("pk")
            .first()
        )
        if campaign_topic is None:
            return None
        tournament = Tournament.from_state(campaign_topic.tournament_state)
        pair = tournament.next_pair()
        if pair is None:
            # Only reachable for a state saved before its last judgment finished it; finish it now.
            _tournament_finish(campaign_topic=campaign_topic, tournament=tournament)
            continue
        campaign_topic.assessor = assessor
        campaign_topic.assessor_lease_until = now + lease
        campaign_topic.save(update_fields=["assessor", "assessor_lease_until", "updated_at"])
        items = {
            item.docid: item
            for item in Item.objects.filter(collection_id=campaign.collection_id, docid__in=pair)
        }
        return TournamentQuestion(campaign_topic=campaign_topic, left=items[pair[0]], right=items[pair[1]])


@transaction.atomic
def tournament_judgment_submit(
    *,
    campaign_topic: CampaignTopic,
    assessor: AbstractBaseUser,
    winner: Item,
    loser: Item,
    milliseconds: int | None = None,
) -> TournamentJudgment:
    """Record the assessor's preference for the pair the topic's tournament is waiting for, and finish the
    topic when that placed its k-th item. A repeated submit for a pair already judged returns the stored
    judgment (the first answer stands). Raises ``TournamentPairError`` for any other pair and
    ``TopicLeasedError`` if another assessor holds the topic; nothing changes then."""
    campaign_topic = (
        CampaignTopic.objects.select_for_update().select_related("campaign").get(pk=campaign_topic.pk)
    )
    existing = TournamentJudgment.objects.filter(
        Q(left=winner, right=loser) | Q(left=loser, right=winner), campaign_topic=campaign_topic
    ).first()
    if existing is not None:
        return existing
    if campaign_topic.state != CampaignTopic.State.TOURNAMENT:
        raise TournamentPairError(
            f"topic {campaign_topic.topic_id} of campaign {campaign_topic.campaign} is {campaign_topic.state}"
        )
    now = timezone.now()
    if (
        campaign_topic.assessor_id not in (None, assessor.pk)
        and campaign_topic.assessor_lease_until is not None
        and campaign_topic.assessor_lease_until >= now
    ):
        raise TopicLeasedError(
            f"topic {campaign_topic.topic_id} is held by another assessor until {campaign_topic.assessor_lease_until}"
        )
    tournament = Tournament.from_state(campaign_topic.tournament_state)
    pair = tournament.next_pair()
    if pair is None or {winner.docid, loser.docid} != set(pair):
        raise TournamentPairError(
            f"topic {campaign_topic.topic_id}: the tournament waits for {pair}, not ({winner.docid}, {loser.docid})"
        )
    tournament.record(winner.docid, loser.docid)
    left, right = (winner, loser) if pair[0] == winner.docid else (loser, winner)
    judgment = TournamentJudgment.objects.create(
        campaign_topic=campaign_topic,
        assessor=assessor,
        left=left,
        right=right,
        winner=winner,
        winner_side="left" if left == winner else "right",
        milliseconds=milliseconds,
    )
    campaign_topic.tournament_state = tournament.to_state()
    campaign_topic.assessor = assessor
    campaign_topic.assessor_lease_until = now + DEFAULT_LEASE
    campaign_topic.save(update_fields=["tournament_state", "assessor", "assessor_lease_until", "updated_at"])
    if tournament.is_done:
        _tournament_finish(campaign_topic=campaign_topic, tournament=tournament)
    return judgment


def _tournament_open(*, campaign_topic: CampaignTopic) -> None:
    """Start the topic's tournament (the caller holds its lock); a pool of 0-1 candidates finishes at once."""
    campaign = campaign_topic.campaign
    candidates = list(campaign_topic.candidates.order_by("position").values_list("item__docid", flat=True))
    tournament = Tournament.start(
        candidates,
        k=campaign.k,
        rng=tournament_rng(seed=campaign.seed, topic_id=campaign_topic.topic.topic_id),
    )
    campaign_topic.tournament_state = tournament.to_state()
    campaign_topic.state = CampaignTopic.State.TOURNAMENT
    campaign_topic.save(update_fields=["tournament_state", "state", "updated_at"])
    if tournament.is_done:
        _tournament_finish(campaign_topic=campaign_topic, tournament=tournament)


def _tournament_finish(*, campaign_topic: CampaignTopic, tournament: Tournament) -> None:
    """Store the placed items as ranks 1..k, with the judgments each won, and finish the topic."""
    _topic_finish(campaign_topic=campaign_topic, ranked=tournament.ranking())

"""Dedicated assessors: one single-elimination tournament per topic (Clarke, Vtyurina and Smucker, "Assessing
top-k preferences", section 4.2), its engine state
stored as JSON on the topic so it resumes across sessions and days. An assessor leases a topic while judging
it, so concurrent assessors never receive the same pair."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from judging.engine import Tournament
from judging.models import Campaign, CampaignTopic, Correction, TournamentJudgment
from judging.selectors.rows import model_rows
from judging.services.errors import (
    InvalidTimingError,
    TopicLeasedError,
    TournamentPairError,
    UndoRefusedError,
)
from judging.services.locks import first_locked, row_locked
from judging.services.topic_state import topic_close
from pools.models import Item, Topic

DEFAULT_LEASE = timedelta(minutes=30)
# A lease renewed less than this long ago is not written again (the next page after an answer, a reload).
LEASE_RENEWAL_STEP = timedelta(minutes=1)


@dataclass(frozen=True)
class TournamentQuestion:
    """The pair an assessor should judge next, left/right as the tournament asks it, with the topic's
    progress as the tournament's state tells it (no query): ``done`` judgments, at most ``remaining`` more
    (``Tournament.remaining_bound``), ``placed`` of ``target`` places decided, and the ``judged`` docids,
    those an assessor has read in an earlier pair of the topic."""

    campaign_topic: CampaignTopic
    left: Item
    right: Item
    done: int = 0
    remaining: int = 1
    placed: int = 0
    target: int = 1
    judged: frozenset[str] = frozenset()


@transaction.atomic
def tournament_next_pair(
    *, campaign: Campaign, assessor: User, lease: timedelta = DEFAULT_LEASE
) -> TournamentQuestion | None:
    """The next pair for ``assessor``: from the topic they hold, else from a topic nobody holds (or whose
    lease ran out), which they then hold for ``lease``. Topics are locked with ``SKIP LOCKED`` on PostgreSQL,
    so two assessors asking at once get different topics. None when every tournament is finished or held."""
    now = timezone.now()
    running = "campaign_id = %s AND state = %s"
    while True:
        # Plain SQL, the same locks as the ORM's select_for_update (docs/decisions.md, "Plain SQL on the answer
        # path"): the assessor's own topic, waited for, else the first free one nobody else is taking.
        campaign_topic = first_locked(
            CampaignTopic,
            f"{running} AND assessor_id = %s",
            [campaign.pk, CampaignTopic.State.TOURNAMENT, assessor.pk],
        ) or first_locked(
            CampaignTopic,
            f"{running} AND (assessor_id IS NULL OR assessor_lease_until < %s)",
            [campaign.pk, CampaignTopic.State.TOURNAMENT, now],
            skip_locked=True,
        )
        if campaign_topic is None:
            return None
        tournament = _tournament_of(campaign_topic)
        pair = tournament.next_pair()
        if pair is None:
            # Only reachable for a state saved before its last judgment finished it; finish it now.
            _tournament_finish(campaign_topic=campaign_topic, tournament=tournament)
            continue
        renewed_lately = (
            campaign_topic.assessor_id == assessor.pk
            and campaign_topic.assessor_lease_until is not None
            and campaign_topic.assessor_lease_until >= now + lease - LEASE_RENEWAL_STEP
        )
        if not renewed_lately:  # (an answer renews it too: the page after it writes nothing)
            campaign_topic.assessor = assessor
            campaign_topic.assessor_lease_until = now + lease
            campaign_topic.save(update_fields=["assessor", "assessor_lease_until", "updated_at"])
        items = {
            item.docid: item
            for item in model_rows(
                Item,
                f"FROM {Item._meta.db_table} i WHERE i.collection_id = %s AND i.docid IN (%s, %s)",
                [campaign.collection_id, *pair],
                alias="i",
            )
        }
        (campaign_topic.topic,) = model_rows(
            Topic, f"FROM {Topic._meta.db_table} p WHERE p.id = %s", [campaign_topic.topic_id], alias="p"
        )
        return TournamentQuestion(
            campaign_topic=campaign_topic,
            left=items[pair[0]],
            right=items[pair[1]],
            done=tournament.judgment_count,
            remaining=tournament.remaining_bound(),
            placed=len(tournament.top_k()),
            target=tournament.target,
            judged=tournament.judged_items(),
        )


@transaction.atomic
def tournament_judgment_submit(
    *,
    campaign_topic: CampaignTopic,
    assessor: User,
    winner: Item,
    loser: Item,
    milliseconds: int | None = None,
) -> TournamentJudgment:
    """Record the assessor's preference for the pair the topic's tournament is waiting for, and finish the
    topic when that placed its k-th item. A repeated submit for a pair already judged returns the stored
    judgment (the first answer stands). Stores the side the winner was shown on and the ``milliseconds`` the
    page measured. Raises ``TournamentPairError`` for any other pair, ``TopicLeasedError`` if another assessor
    holds the topic and ``InvalidTimingError`` for a timing out of range; nothing changes then."""
    campaign_topic = row_locked(CampaignTopic, campaign_topic.pk)
    # A repeated answer: the pair judged either way round (plain SQL, docs/decisions.md, "Plain SQL on the
    # answer path").
    stored = model_rows(
        TournamentJudgment,
        f"FROM {TournamentJudgment._meta.db_table} j WHERE j.campaign_topic_id = %s"
        " AND ((j.left_id = %s AND j.right_id = %s) OR (j.left_id = %s AND j.right_id = %s)) ORDER BY j.id LIMIT 1",
        [campaign_topic.pk, winner.pk, loser.pk, loser.pk, winner.pk],
        alias="j",
    )
    existing = stored[0] if stored else None
    if existing is not None:
        return existing
    if campaign_topic.state != CampaignTopic.State.TOURNAMENT:
        raise TournamentPairError(
            f"topic {campaign_topic.topic_id} of campaign {campaign_topic.campaign} is {campaign_topic.state}"
        )
    now = timezone.now()
    _refuse_if_leased_to_another(campaign_topic, assessor, now)
    tournament = _tournament_of(campaign_topic)
    pair = tournament.next_pair()
    if pair is None or {winner.docid, loser.docid} != set(pair):
        raise TournamentPairError(
            f"topic {campaign_topic.topic_id}: the tournament waits for {pair}, not ({winner.docid}, {loser.docid})"
        )
    InvalidTimingError.check(milliseconds, what=f"topic {campaign_topic.topic_id}")
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


@transaction.atomic
def tournament_judgment_undo(
    *, campaign_topic: CampaignTopic, assessor: User, judgment_id: int
) -> Correction:
    """Take back the assessor's last answer in a topic, ``judgment_id``, while the topic's tournament is
    still running: the answer is stored as a ``Correction``, its judgment deleted and the tournament's state
    rebuilt without it (the state is the bracket and the log of answers, so the replay gives exactly the
    tournament before that answer), so the same pair is asked again. Taking the same answer back again
    returns the stored correction. Refused with nothing changed: an answer that is not the topic's last or
    not this assessor's, a finished topic (``UndoRefusedError``: its ranking is stored and may be scored),
    a topic another assessor holds (``TopicLeasedError``)."""
    campaign_topic = row_locked(CampaignTopic, campaign_topic.pk)
    stored = Correction.objects.filter(kind=Correction.Kind.TOURNAMENT, judgment_id=judgment_id).first()
    if (
        stored is not None
        and stored.campaign_topic_id == campaign_topic.pk
        and stored.assessor_id == assessor.pk
    ):
        return stored
    if campaign_topic.state != CampaignTopic.State.TOURNAMENT:
        raise UndoRefusedError(
            f"topic {campaign_topic.topic_id} is {campaign_topic.state}: its answers count"
        )
    now = timezone.now()
    _refuse_if_leased_to_another(campaign_topic, assessor, now)
    last = TournamentJudgment.objects.filter(campaign_topic=campaign_topic).order_by("-pk").first()
    if last is None or last.pk != judgment_id or last.assessor_id != assessor.pk:
        raise UndoRefusedError(
            f"judgment {judgment_id} is not {assessor}'s last answer in topic {campaign_topic.topic_id}"
        )
    state = dict(campaign_topic.tournament_state or {})
    logged = [tuple(outcome) for outcome in state.get("judgments", [])]
    loser = last.right if last.winner_id == last.left_id else last.left
    if not logged or logged[-1] != (last.winner.docid, loser.docid):
        raise UndoRefusedError(f"judgment {judgment_id} is not the last one the tournament recorded")
    tournament = Tournament.from_state({**state, "judgments": logged[:-1]})
    correction = Correction.objects.create(
        kind=Correction.Kind.TOURNAMENT,
        judgment_id=last.pk,
        campaign_topic=campaign_topic,
        assessor=assessor,
        left_id=last.left_id,
        right_id=last.right_id,
        winner_id=last.winner_id,
        winner_side=last.winner_side,
        milliseconds=last.milliseconds,
        answered_at=last.created_at,
    )
    last.delete()
    campaign_topic.tournament_state = tournament.to_state()
    campaign_topic.assessor = assessor
    campaign_topic.assessor_lease_until = now + DEFAULT_LEASE
    campaign_topic.save(update_fields=["tournament_state", "assessor", "assessor_lease_until", "updated_at"])
    return correction


def _tournament_of(campaign_topic: CampaignTopic) -> Tournament:
    """The topic's tournament as stored; a topic in the tournament state always has one."""
    if campaign_topic.tournament_state is None:
        raise TournamentPairError(f"topic {campaign_topic.topic_id} has no tournament")
    return Tournament.from_state(campaign_topic.tournament_state)


def _tournament_finish(*, campaign_topic: CampaignTopic, tournament: Tournament) -> None:
    """Store the placed items as ranks 1..k, with the judgments each won, and finish the topic."""
    topic_close(campaign_topic=campaign_topic, ranked=tournament.ranking())


def _refuse_if_leased_to_another(campaign_topic: CampaignTopic, assessor, now) -> None:
    """``TopicLeasedError`` while another assessor's lease on the topic runs: answers and corrections alike."""
    if (
        campaign_topic.assessor_id not in (None, assessor.pk)
        and campaign_topic.assessor_lease_until is not None
        and campaign_topic.assessor_lease_until >= now
    ):
        raise TopicLeasedError(
            f"topic {campaign_topic.topic_id} is held by another assessor until {campaign_topic.assessor_lease_until}"
        )

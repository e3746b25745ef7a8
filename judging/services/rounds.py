"""The per-topic state machine of a crowd campaign, stored: open a round, close it when every pair has a
valid judgment (cull in stage 1, rank in stage 2), finish the topic (Clarke, Vtyurina and Smucker,
"Assessing top-k preferences", section 4.3). The decisions are the engine's topic machine
(``judging.engine.topic``); these services load its state from the rows and store what it decides.

Every transition runs in one transaction holding the topic's row lock (``select_for_update``; on SQLite the
IMMEDIATE transaction mode serialises writers), so two judgments completing a round at the same moment
advance it exactly once. Each step re-reads the state it acts on, so running it again changes nothing.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from config.celery import enqueue_on_commit
from judging.engine import (
    AdaptiveState,
    ErrorModel,
    RoundPlan,
    TopicState,
    adaptive_round_close,
    open_candidates,
    topic_round_close,
)
from judging.models import Assignment, CampaignTopic, Candidate, Judgment, Pair, Round
from judging.selectors.adaptive import worker_key
from judging.services.prepared import (
    instance_update,
    instance_update_write,
    prepared_get,
    prepared_rows,
    prepared_update_write,
    writes_run,
)
from judging.services.topic_state import (
    FINISHED_STATES,
    adaptive_params,
    adaptive_state_load,
    campaign_error_model,
    campaign_params,
    campaign_runs_in_waves,
    round_store,
    topic_close,
)


@transaction.atomic
def round_generate(*, campaign_topic: CampaignTopic) -> Round | None:
    """Open the topic's next round unless one is open or the topic is finished; returns the open round
    (None when the topic finished, e.g. a pool of 0-1 candidates). Safe to run twice."""
    campaign_topic = (
        CampaignTopic.objects.select_for_update()
        .select_related("campaign", "topic")
        .get(pk=campaign_topic.pk)
    )
    if campaign_topic.state in FINISHED_STATES or not campaign_topic.campaign.is_crowd:
        return None
    if campaign_runs_in_waves(campaign_topic.campaign):
        # A budgeted campaign opens its rounds wave by wave (``judging.services.waves``), never one topic alone.
        return campaign_topic.rounds.filter(closed_at__isnull=True).first()
    open_round = campaign_topic.rounds.filter(closed_at__isnull=True).first()
    if open_round is not None:
        return open_round
    return round_store(campaign_topic=campaign_topic)


@transaction.atomic
def round_close_if_complete(*, round: Round) -> bool:
    """Close the round once every pair has a valid judgment: stage 1 culls (and reinstates) candidates and
    opens the next round; stage 2 ranks the pool and finishes the topic. Returns whether this call closed
    the round; False when a pair is still unjudged or the round was already closed."""
    # Callers ask for rounds they found complete (a counted HIT's rounds are checked after commit), so the
    # check is made once, under the topic's lock.
    # The statements every close runs are prepared once (judging.services.prepared).
    campaign_topic = prepared_get(
        "round_close: topic locked",
        lambda *, pk: (
            CampaignTopic.objects.select_for_update().select_related("campaign", "topic").filter(pk=pk)
        ),
        pk=round.campaign_topic_id,
    )
    round = prepared_get("round_close: round", lambda *, pk: Round.objects.filter(pk=pk), pk=round.pk)
    if round.closed_at is not None:
        return False
    pairs = prepared_rows(
        "round_close: pairs",
        lambda *, round_id: (
            Pair.objects.filter(round_id=round_id)
            .order_by("pk")
            .values_list("left__docid", "right__docid", "winner__docid")
        ),
        round_id=round.pk,
    )
    if any(winner is None for _, _, winner in pairs):
        return False
    campaign = campaign_topic.campaign
    if campaign_runs_in_waves(campaign):
        # A budgeted campaign's rounds close together, wave by wave, as the simulator closes them
        # (``judging.services.waves``): this one is complete, the wave may be too.
        enqueue_on_commit("judging.tasks.campaign_wave_advance_task", campaign.pk)
        return False
    if campaign.mode == campaign.Mode.ADAPTIVE:
        _adaptive_round_close(campaign_topic=campaign_topic, round=round)
        return True
    # The state before this round: its active candidates in stored order (what ``topic_state_load`` reads),
    # with the item ids the next round's pairs need, in one query.
    candidates = prepared_rows(
        "round_close: active candidates",
        lambda *, campaign_topic_id: (
            Candidate.objects.filter(campaign_topic_id=campaign_topic_id, is_active=True)
            .order_by("position")
            .values_list("item__docid", "item_id")
        ),
        campaign_topic_id=campaign_topic.pk,
    )
    state = TopicState(
        topic=campaign_topic.topic.topic_id,
        candidates=tuple(docid for docid, _ in candidates),
        rounds=campaign_topic.round_number,
    )
    closing = topic_round_close(
        state,
        number=round.number,
        plan=RoundPlan(stage=round.stage, pairs=[(left, right) for left, right, _ in pairs]),
        outcomes=[(winner, right if winner == left else left) for left, right, winner in pairs],
        params=campaign_params(campaign),
    )
    round.closed_at = timezone.now()
    if closing.stage1 is not None:
        result = closing.stage1
        # The culled candidates are among the active ones just read: their rows by item id, the cull and the
        # round's outcome in one prepared statement on PostgreSQL (different tables; neither reads the other).
        item_ids = dict(candidates)
        cull = prepared_update_write(
            "round_close: cull",
            lambda *, campaign_topic_id, items, number: (
                Candidate.objects.filter(campaign_topic_id=campaign_topic_id, item_id__in=items),
                {"is_active": False, "culled_in_round": number},
            ),
            campaign_topic_id=campaign_topic.pk,
            items=[item_ids[docid] for docid in result.culled],
            number=round.number,
        )
        round.outcome = {
            "survivors": result.survivors,
            "culled": result.culled,
            "reinstated": result.reinstated,
            "wins": result.wins,
            "opponents": result.opponents,
            "next_stage": result.next_stage,
        }
        writes_run(
            [*([cull] if cull is not None else []), instance_update_write(round, ["outcome", "closed_at"])]
        )
        if round_store(campaign_topic=campaign_topic, state=closing.state, item_ids=item_ids):
            # Only new pairs give HIT building something to do; a finished topic queues none.
            campaign_id = campaign.pk
            enqueue_on_commit("judging.tasks.hit_build_task", campaign_id)
    else:
        assert closing.ranked is not None  # a closed stage-2 round always ranks the pool
        round.outcome = {"wins": closing.wins}
        instance_update(round, ["outcome", "closed_at"])
        topic_close(campaign_topic=campaign_topic, ranked=closing.ranked)
    return True


def _adaptive_round_close(*, campaign_topic: CampaignTopic, round: Round) -> None:
    """Close a complete adaptive round (``adaptive_round_record``, with the crowd's error estimate now), then
    open the next round or finish the topic. The caller holds the topic's lock."""
    campaign = campaign_topic.campaign
    adaptive_round_record(
        campaign_topic=campaign_topic, round=round, errors=campaign_error_model(campaign=campaign)
    )
    if round_store(campaign_topic=campaign_topic):
        campaign_id = campaign.pk
        enqueue_on_commit("judging.tasks.hit_build_task", campaign_id)


def round_votes(*, round: Round) -> list[tuple[str, str, str, str]]:
    """The votes of a complete round, ``(left, right, winner, worker)`` in pair order: each pair's winner with
    the worker of the judgment that counted."""
    # The judge whose answer gave the pair its winner: a machine judge's tie on it gave none.
    counted = Judgment.objects.filter(
        slot__pair=OuterRef("pk"), assignment__status=Assignment.Status.ACCEPTED, tie=""
    ).values("assignment__worker_id")[:1]
    return [
        (left, right, winner, worker_key(worker_id))
        for left, right, winner, worker_id in round.pairs.annotate(worker_id=Subquery(counted))
        .order_by("pk")
        .values_list("left__docid", "right__docid", "winner__docid", "worker_id")
    ]


def adaptive_round_record(
    *, campaign_topic: CampaignTopic, round: Round, errors: ErrorModel, state: AdaptiveState | None = None
) -> AdaptiveState:
    """Close a complete adaptive round without opening the next: add its votes (``round_votes``) to the topic's
    stored state (``state`` when the caller has it loaded), decide what the sequential test settles under
    ``errors`` (``adaptive_round_close``), mark the candidates that left (k others confirmed above them) and
    store the round's outcome. Returns the topic's new state. The caller holds the topic's lock."""
    params = adaptive_params(campaign_topic.campaign)
    before = state if state is not None else adaptive_state_load(campaign_topic=campaign_topic)
    after = adaptive_round_close(
        before,
        number=round.number,
        stage=round.stage,
        votes=round_votes(round=round),
        params=params,
        errors=errors,
    )
    campaign_topic.adaptive_state = after.to_json()
    campaign_topic.save(update_fields=["adaptive_state", "updated_at"])
    still_open = open_candidates(after, k=params.k)
    out = [docid for docid in open_candidates(before, k=params.k) if docid not in set(still_open)]
    Candidate.objects.filter(campaign_topic=campaign_topic, item__docid__in=out, is_active=True).update(
        is_active=False, culled_in_round=round.number
    )
    # A verified pair that ends as a tie or reversed can leave its loser with fewer than k confirmed betters:
    # it is open again (challenges are drawn from the open candidates, as in the simulation).
    Candidate.objects.filter(
        campaign_topic=campaign_topic, item__docid__in=still_open, is_active=False
    ).update(is_active=True, culled_in_round=None)
    # A verified pair may be decided again (reversed, or a tie).
    decided = [
        key for key in after.decided if key not in before.decided or before.decided[key] != after.decided[key]
    ]
    round.closed_at = timezone.now()
    round.outcome = {
        "open": still_open,
        "out": out,
        "confirmed": [[*key, after.decided[key]] for key in decided if after.decided[key] is not None],
        "tied": [list(key) for key in decided if after.decided[key] is None],
    }
    instance_update(round, ["outcome", "closed_at"])
    return after

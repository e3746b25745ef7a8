"""The transitions of one campaign topic that the other services share: open its next crowd round, start
its tournament, write its final ranking. Each runs inside the caller's transaction while the caller holds
the topic's row lock (``select_for_update``); the public services of ``rounds``, ``tournaments`` and
``campaigns`` take that lock and call these. The decisions themselves come from the engine's topic machine
(``judging.engine.topic``) and seeding rule, the same ones the pure simulator drives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.utils import timezone

from judging.engine import (
    AdaptiveState,
    CrowdParams,
    RankedItem,
    TopicState,
    Tournament,
    adaptive_round_open,
    open_candidates,
    topic_round_open,
    tournament_rng,
)
from judging.models import Campaign, CampaignTopic, Candidate, Pair, Round
from judging.selectors.adaptive import adaptive_params, campaign_error_model
from judging.services.prepared import (
    Write,
    instance_update_write,
    instances_insert,
    prepared_get,
    prepared_rows,
    rows_insert_writes,
    writes_run,
)

FINISHED_STATES = CampaignTopic.FINISHED_STATES


def campaign_params(campaign: Campaign) -> CrowdParams:
    """The engine's parameters for a campaign."""
    return CrowdParams(
        k=campaign.k,
        F=campaign.final_stage_size,
        P=campaign.opponents,
        culling=campaign.culling,
        max_rounds=campaign.max_rounds,
    )


def campaign_runs_in_waves(campaign: Campaign) -> bool:
    """Whether the campaign's rounds open and close together, wave by wave, as ``simulate_adaptive`` runs them:
    an adaptive campaign with a judgment budget (``max_judgments``; ``judging.services.waves``)."""
    return campaign.mode == Campaign.Mode.ADAPTIVE and campaign.max_judgments is not None


def adaptive_state_load(*, campaign_topic: CampaignTopic) -> AdaptiveState:
    """The engine's ``AdaptiveState`` of a topic: every candidate in stored order and the stored votes."""
    candidates = campaign_topic.candidates.order_by("position").values_list("item__docid", flat=True)
    return AdaptiveState.from_json(
        campaign_topic.topic.topic_id, tuple(candidates), campaign_topic.adaptive_state
    )


def adaptive_round_store(*, campaign_topic: CampaignTopic) -> Round | None:
    """Open the adaptive topic's next round as the engine plans it (``adaptive_round_open``): one pair row per
    vote asked (``copy`` 0, 1, ...); when nothing is left to ask, finish the topic with the engine's ranking
    and return None. The caller holds the topic's lock."""
    campaign = campaign_topic.campaign
    params = adaptive_params(campaign)
    state = adaptive_state_load(campaign_topic=campaign_topic)
    opening = adaptive_round_open(
        state, params=params, seed=campaign.seed, errors=campaign_error_model(campaign=campaign)
    )
    if opening.ranked is not None:
        topic_close(campaign_topic=campaign_topic, ranked=opening.ranked)
        return None
    item_ids = dict(campaign_topic.candidates.values_list("item__docid", "item_id"))
    round = Round.objects.create(
        campaign_topic=campaign_topic,
        number=opening.number,
        stage=opening.stage,
        candidate_count=len(open_candidates(state, k=params.k)),
    )
    Pair.objects.bulk_create(
        [
            Pair(round=round, left_id=item_ids[left], right_id=item_ids[right], copy=copy)
            for request in opening.requests
            for left, right in [request.pair]
            for copy in range(request.votes)
        ]
    )
    campaign_topic.state = CampaignTopic.State.STAGE_1 if opening.stage == 1 else CampaignTopic.State.STAGE_2
    campaign_topic.round_number = opening.number
    campaign_topic.save(update_fields=["state", "round_number", "updated_at"])
    return round


def topic_state_load(*, campaign_topic: CampaignTopic) -> TopicState:
    """The engine's ``TopicState`` of a topic between rounds, from its rows: active candidates in stored
    order (``position``, the engine's ``candidate_order``), rounds opened so far, and stage 2 forced when
    the last closed round asked for it."""
    candidates = campaign_topic.candidates.filter(is_active=True).order_by("position")
    last = campaign_topic.rounds.order_by("-number").first()
    next_stage = (last.outcome or {}).get("next_stage") if last is not None else None
    return TopicState(
        topic=campaign_topic.topic.topic_id,
        candidates=tuple(candidates.values_list("item__docid", flat=True)),
        rounds=campaign_topic.round_number,
        forced_stage=2 if next_stage == 2 else None,
    )


def round_store(
    *,
    campaign_topic: CampaignTopic,
    state: TopicState | None = None,
    item_ids: Mapping[str, int] | None = None,
) -> Round | None:
    """Store the topic's next round as the topic machine plans it (``topic_round_open``) and mark the topic
    in stage 1 or 2; a plan without pairs (0-1 candidates) finishes the topic instead and returns None.
    ``state`` and ``item_ids`` (docid -> item id of the candidates) save reloading them when the caller has
    them at hand. The caller holds the topic's lock."""
    campaign = campaign_topic.campaign
    if campaign.mode == Campaign.Mode.ADAPTIVE:
        return adaptive_round_store(campaign_topic=campaign_topic)
    if state is None:
        state = topic_state_load(campaign_topic=campaign_topic)
    opening = topic_round_open(state, params=campaign_params(campaign), seed=campaign.seed)
    if opening.ranked is not None:
        topic_close(campaign_topic=campaign_topic, ranked=opening.ranked)
        return None
    if item_ids is None:
        item_ids = dict(
            campaign_topic.candidates.filter(item__docid__in=state.candidates).values_list(
                "item__docid", "item_id"
            )
        )
    round = Round(
        campaign_topic=campaign_topic,
        number=opening.number,
        stage=opening.plan.stage,
        candidate_count=len(state.candidates),
    )
    # Stored as create, bulk_create and save store them, without compiling per round (every round of a
    # campaign after its first comes this way: judging.services.prepared). The pairs go in as rows (nobody
    # uses them as instances after), with the topic's update: different tables, neither reads the other's
    # write, so on PostgreSQL one statement after the round's insert, whose key the pairs need.
    instances_insert([round])
    campaign_topic.state = (
        CampaignTopic.State.STAGE_1 if opening.plan.stage == 1 else CampaignTopic.State.STAGE_2
    )
    campaign_topic.round_number = opening.number
    writes_run(
        [
            *rows_insert_writes(
                Pair,
                ["round_id", "left_id", "right_id"],
                [(round.pk, item_ids[left], item_ids[right]) for left, right in opening.plan.pairs],
            ),
            instance_update_write(campaign_topic, ["state", "round_number", "updated_at"]),
        ]
    )
    return round


def rounds_open_first(
    *, campaign: Campaign, states: Sequence[tuple[CampaignTopic, TopicState]], item_ids: Mapping[str, int]
) -> None:
    """Open the first round of every topic of a starting crowd campaign (``states``: each new topic with its
    state, in the order ``round_store`` would take them one by one): the same rounds and pairs, stored in the
    same order, in a few statements for the whole campaign instead of a handful per topic. Topics whose plan
    has no pairs (0-1 candidates) finish as ``round_store`` finishes them. ``item_ids`` maps every candidate's
    docid to its item id. The caller holds the campaign's lock and created the topics in its transaction."""
    params = campaign_params(campaign)
    openings = [
        (campaign_topic, state, topic_round_open(state, params=params, seed=campaign.seed))
        for campaign_topic, state in states
    ]
    planned = [
        (campaign_topic, state, opening)
        for campaign_topic, state, opening in openings
        if opening.ranked is None
    ]
    rounds = Round.objects.bulk_create(
        [
            Round(
                campaign_topic=campaign_topic,
                number=opening.number,
                stage=opening.plan.stage,
                candidate_count=len(state.candidates),
            )
            for campaign_topic, state, opening in planned
        ]
    )
    Pair.objects.bulk_create(
        [
            Pair(round=round, left_id=item_ids[left], right_id=item_ids[right])
            for round, (_, _, opening) in zip(rounds, planned, strict=True)
            for left, right in opening.plan.pairs
        ]
    )
    moved: dict[tuple[str, int], list[int]] = {}
    for campaign_topic, _, opening in planned:
        stage = CampaignTopic.State.STAGE_1 if opening.plan.stage == 1 else CampaignTopic.State.STAGE_2
        campaign_topic.state, campaign_topic.round_number = stage, opening.number
        moved.setdefault((stage, opening.number), []).append(campaign_topic.pk)
    now = timezone.now()
    for (new_state, number), pks in moved.items():
        CampaignTopic.objects.filter(pk__in=pks).update(state=new_state, round_number=number, updated_at=now)
    for campaign_topic, _, opening in openings:
        if opening.ranked is not None:
            topic_close(campaign_topic=campaign_topic, ranked=opening.ranked)


def tournament_open(*, campaign_topic: CampaignTopic) -> None:
    """Start the topic's tournament, its bracket drawn from ``tournament_rng(seed, topic)`` over the pool in
    stored order; a pool of 0-1 candidates finishes at once. The caller holds the topic's lock."""
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
        topic_close(campaign_topic=campaign_topic, ranked=tournament.ranking())


def topic_close(*, campaign_topic: CampaignTopic, ranked: Sequence[RankedItem]) -> None:
    """Write the topic's final ranking (rank and wins on its candidates) and its finished state, and mark
    the campaign done when this was its last unfinished topic. The caller holds the topic's lock; the
    campaign row is locked before counting unfinished topics, so the last two topics finishing at once
    cannot both miss that the campaign is complete."""
    by_docid = {item.docid: item for item in ranked}
    # Every candidate of the topic in one prepared read: the ranked ones get their rank, and their number
    # tells whether there was anything to judge.
    candidates = prepared_rows(
        "topic_close: candidates",
        lambda *, campaign_topic_id: (
            Candidate.objects.filter(campaign_topic_id=campaign_topic_id)
            .order_by("pk")
            .values_list("pk", "item__docid")
        ),
        campaign_topic_id=campaign_topic.pk,
    )
    ranks = [
        (pk, by_docid[docid].rank, by_docid[docid].wins) for pk, docid in candidates if docid in by_docid
    ]
    is_trivial = len(candidates) <= 1
    campaign_topic.state = CampaignTopic.State.NOTHING_TO_JUDGE if is_trivial else CampaignTopic.State.DONE
    campaign_topic.finished_at = timezone.now()
    campaign_topic.assessor = None
    campaign_topic.assessor_lease_until = None
    # The candidates' ranks and the topic's state: different tables, neither reads the other's write, so on
    # PostgreSQL one statement.
    writes_run(
        [
            *_candidates_rank(ranks),
            instance_update_write(
                campaign_topic, ["state", "finished_at", "assessor", "assessor_lease_until", "updated_at"]
            ),
        ]
    )
    campaign = prepared_get(
        "topic_close: campaign locked",
        lambda *, pk: Campaign.objects.select_for_update().filter(pk=pk),
        pk=campaign_topic.campaign_id,
    )
    unfinished = prepared_rows(
        "topic_close: an unfinished topic",
        lambda *, campaign_id: (
            CampaignTopic.objects.filter(campaign_id=campaign_id)
            .exclude(state__in=FINISHED_STATES)
            .values_list("pk")[:1]
        ),
        campaign_id=campaign.pk,
    )
    # A finished campaign's runs are scored by the metrics app's own sweep (metrics sits above judging).
    if campaign.status in (Campaign.Status.RUNNING, Campaign.Status.PAUSED) and not unfinished:
        campaign.status = Campaign.Status.DONE
        campaign.finished_at = timezone.now()
        campaign.save(update_fields=["status", "finished_at"])


def _candidates_rank(ranks: Sequence[tuple[int, int, int]]) -> list[Write]:
    """The write giving each candidate ``(pk, rank, wins)`` its rank and wins (none for no ranks), for
    ``writes_run``: one UPDATE by primary key, what ``bulk_update`` writes, in plain SQL, since Django's
    building of that statement (a CASE per field, a WHEN per candidate) cost more CPU than the rest of
    closing the topic."""
    if not ranks:
        return []
    table = Candidate._meta.db_table
    whens = " ".join(["WHEN %s THEN %s"] * len(ranks))
    sql = (
        f"UPDATE {table} SET rank = CASE id {whens} END, wins = CASE id {whens} END"
        f" WHERE id IN ({', '.join(['%s'] * len(ranks))})"
    )
    params = [value for pk, rank, _ in ranks for value in (pk, int(rank))]
    params += [value for pk, _, wins in ranks for value in (pk, int(wins))]
    params += [pk for pk, _, _ in ranks]
    return [Write(sql, params, label="candidates' ranks")]

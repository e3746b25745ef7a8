"""A budgeted adaptive campaign (``Campaign.max_judgments``), run as ``toppref simulate --mode adaptive
--max-judgments`` runs it: in waves. Every open topic's round opens with the others, the wave's votes are cut at
the budget, and the rounds close together once every pair of the wave has its answer; once the crowd is seen to
err on close pairs, the judge model's rounds take over (fit to every vote and challenge, pairs chosen across
topics), until the budget is spent or every topic is settled, and the topics still open are ranked by the model.

Every decision is the engine's (``judging.engine.simulator``: ``closure_rounds_end``, ``closure_wave_queue``,
``model_round_fit``, ``model_round_open``, ``model_round_queue``, ``model_round_close``, ``model_ranking``, and the
adaptive topic machine); this module loads their inputs from the rows and stores what they decide. The model's
fit takes seconds on a CAsT-sized campaign, so a wave advances in a task (``campaign_wave_advance_task``, queued
after the commit that completed its last round) or in the sweep (``campaign_advance``), never in a request's own
work. ``Campaign.wave_state`` keeps what the engine carries from wave to wave: the waves opened, whether the
model's rounds have taken over, and the last fit's reliabilities (the next fit starts from them, as the
simulator's does)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.db import transaction
from django.utils import timezone

from config.celery import enqueue_on_commit
from judging.engine import (
    AdaptiveState,
    adaptive_round_open,
    closure_cut_fit,
    closure_cut_ranking,
    closure_rounds_end,
    closure_wave_queue,
    judge_model_start_from_json,
    judge_model_start_to_json,
    model_ranking,
    model_round_close,
    model_round_fit,
    model_round_open,
    model_round_queue,
    model_round_vote_counts,
    open_candidates,
)
from judging.engine.adaptive import Pair as PairKey
from judging.models import Campaign, CampaignTopic, Candidate, Pair, Round
from judging.selectors.adaptive import adaptive_params, campaign_error_evidence, campaign_error_model
from judging.selectors.confidence import campaign_challenge_answers
from judging.selectors.progress import CLOSURE_PHASE, JUDGE_MODEL_PHASE, wave_state_of
from judging.services.rounds import adaptive_round_record, round_votes
from judging.services.topic_state import FINISHED_STATES, campaign_runs_in_waves, topic_close


@transaction.atomic
def campaign_wave_advance(*, campaign: Campaign) -> dict[str, int]:
    """Move a budgeted campaign on by one wave once its open wave is complete: close every open round (closure
    rounds under the crowd's error estimate after the wave, as the simulator closes them; model rounds by adding
    their votes), then open the next wave, or finish the topics still open (ranked by the judge model when it
    ends them). Does nothing while a pair of the open wave waits for its answer, or for a campaign that is not
    running, paused or budgeted; running it again changes nothing. Returns how many ``rounds_closed``,
    ``rounds_opened`` and ``topics_finished``. The campaign's row is locked first, then its topics'."""
    counts = {"rounds_closed": 0, "rounds_opened": 0, "topics_finished": 0}
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if not campaign_runs_in_waves(campaign) or campaign.status not in (
        Campaign.Status.RUNNING,
        Campaign.Status.PAUSED,
    ):
        return counts
    open_rounds = Round.objects.filter(campaign_topic__campaign=campaign, closed_at__isnull=True)
    if Pair.objects.filter(round__in=open_rounds, winner__isnull=True).exists():
        return counts
    topics = {
        campaign_topic.topic.topic_id: campaign_topic
        for campaign_topic in CampaignTopic.objects.select_for_update(of=("self",))
        .filter(campaign=campaign)
        .select_related("campaign", "topic")
    }
    states = _states_load(campaign, topics)
    wave = wave_state_of(campaign)
    rounds = sorted(open_rounds.select_related("campaign_topic__topic"), key=_round_topic)
    if rounds:
        if wave["phase"] == CLOSURE_PHASE:
            # One estimate for the whole wave, from its challenges and the votes before it, as the simulator
            # closes every topic of a wave with the estimate taken after judging it.
            errors = campaign_error_model(campaign=campaign)
            for round in rounds:
                topic = _round_topic(round)
                states[topic] = adaptive_round_record(
                    campaign_topic=topics[topic], round=round, errors=errors, state=states[topic]
                )
        else:
            for round in rounds:
                topic = _round_topic(round)
                votes = round_votes(round=round)
                states[topic] = model_round_close(states[topic], votes)
                topics[topic].adaptive_state = states[topic].to_json()
                topics[topic].save(update_fields=["adaptive_state", "updated_at"])
                round.outcome = {"model_round": True, "votes": len(votes)}
                round.closed_at = timezone.now()
                round.save(update_fields=["outcome", "closed_at"])
        counts["rounds_closed"] = len(rounds)
    active = sorted(
        topic for topic, campaign_topic in topics.items() if campaign_topic.state not in FINISHED_STATES
    )
    judgments = Pair.objects.filter(round__campaign_topic__campaign=campaign, winner__isnull=False).count()
    assert campaign.max_judgments is not None  # campaign_runs_in_waves
    budget = campaign.max_judgments
    params = adaptive_params(campaign)
    # As the simulator's loop, which decides only while a topic is open.
    if wave["phase"] == CLOSURE_PHASE and active:
        if closure_rounds_end(
            campaign_error_evidence(campaign=campaign),
            states.values(),
            judgments=judgments,
            max_judgments=budget,
            waves=wave["waves"],
        ):
            if judgments >= budget:
                # Cut at the budget in the closure rounds: ranked as the simulator ranks them then.
                model = closure_cut_fit(
                    states,
                    grades=_grades(campaign),
                    challenges=campaign_challenge_answers(campaign=campaign),
                    k=params.k,
                    seed=campaign.seed,
                )
                for topic in active:
                    topic_close(campaign_topic=topics[topic], ranked=closure_cut_ranking(model, topic))
                    counts["topics_finished"] += 1
                active = []
            else:
                wave["phase"] = JUDGE_MODEL_PHASE
        else:
            errors = campaign_error_model(campaign=campaign)
            openings = {}
            for topic in active:
                opening = adaptive_round_open(states[topic], params=params, seed=campaign.seed, errors=errors)
                if opening.ranked is not None:
                    topic_close(campaign_topic=topics[topic], ranked=opening.ranked)
                    counts["topics_finished"] += 1
                else:
                    openings[topic] = opening
            if openings:
                wave["waves"] += 1
                queue = closure_wave_queue(openings, budget_left=budget - judgments)
                rounds_opened = {
                    topic: (opening.number, opening.stage, len(open_candidates(states[topic], k=params.k)))
                    for topic, opening in openings.items()
                }
                _wave_store(topics, rounds_opened, queue)
                counts["rounds_opened"] = len(openings)
    if wave["phase"] == JUDGE_MODEL_PHASE and active:
        start = judge_model_start_from_json(wave["start"]) if wave["start"] is not None else None
        model = model_round_fit(
            states,
            grades=_grades(campaign),
            challenges=campaign_challenge_answers(campaign=campaign),
            k=params.k,
            seed=campaign.seed,
            start=start,
        )
        wave["start"] = judge_model_start_to_json(model)
        chosen = model_round_open(
            model,
            model_round_vote_counts(states, active),
            budget_left=budget - judgments,
            rounds_done=wave["waves"],
            params=params,
        )
        if chosen:
            wave["waves"] += 1
            rounds_opened = {
                topic: (states[topic].rounds + 1, 1, len(states[topic].candidates))
                for topic in sorted(chosen)
            }
            _wave_store(topics, rounds_opened, model_round_queue(chosen))
            counts["rounds_opened"] = len(chosen)
        else:
            for topic in active:
                topic_close(campaign_topic=topics[topic], ranked=model_ranking(model, topic))
                counts["topics_finished"] += 1
    campaign.wave_state = wave
    campaign.save(update_fields=["wave_state"])
    if counts["rounds_opened"]:
        enqueue_on_commit("judging.tasks.hit_build_task", campaign.pk)
    return counts


def _round_topic(round: Round) -> str:
    return round.campaign_topic.topic.topic_id


def _states_load(campaign: Campaign, topics: Mapping[str, CampaignTopic]) -> dict[str, AdaptiveState]:
    """Every topic's ``AdaptiveState``: its candidates in stored order and its stored votes, in one query."""
    candidates: dict[int, list[str]] = {}
    for topic_pk, docid in (
        Candidate.objects.filter(campaign_topic__campaign=campaign)
        .order_by("campaign_topic_id", "position")
        .values_list("campaign_topic_id", "item__docid")
    ):
        candidates.setdefault(topic_pk, []).append(docid)
    return {
        topic: AdaptiveState.from_json(
            topic, tuple(candidates.get(campaign_topic.pk, ())), campaign_topic.adaptive_state
        )
        for topic, campaign_topic in topics.items()
    }


def _grades(campaign: Campaign) -> dict[str, dict[str, float]]:
    """The NIST grade of every candidate, by topic: the judge model's prior."""
    grades: dict[str, dict[str, float]] = {}
    for topic, docid, grade in Candidate.objects.filter(campaign_topic__campaign=campaign).values_list(
        "campaign_topic__topic__topic_id", "item__docid", "grade"
    ):
        grades.setdefault(topic, {})[docid] = float(grade)
    return grades


def _wave_store(
    topics: Mapping[str, CampaignTopic],
    rounds_opened: Mapping[str, tuple[int, int, int]],
    queue: Sequence[tuple[str, PairKey]],
) -> None:
    """Store a wave: a round per topic of ``rounds_opened`` (topic -> number, stage, open candidates), even one
    the budget left without a pair (it closes with the others, as the simulator's does), and a pair row per vote
    of ``queue`` in its order (its ``copy``: the votes of that pair before it in the wave), so that HIT building,
    which packs copy by copy in row order, packs them as the simulator does."""
    rounds = {
        topic: Round.objects.create(
            campaign_topic=topics[topic], number=number, stage=stage, candidate_count=candidate_count
        )
        for topic, (number, stage, candidate_count) in sorted(rounds_opened.items())
    }
    for topic, (number, stage, _) in rounds_opened.items():
        campaign_topic = topics[topic]
        campaign_topic.state = CampaignTopic.State.STAGE_1 if stage == 1 else CampaignTopic.State.STAGE_2
        campaign_topic.round_number = number
        campaign_topic.save(update_fields=["state", "round_number", "updated_at"])
    item_ids: dict[tuple[int, str], int] = {
        (topic_pk, docid): item_id
        for topic_pk, docid, item_id in Candidate.objects.filter(
            campaign_topic__in=[topics[topic] for topic in rounds_opened]
        ).values_list("campaign_topic_id", "item__docid", "item_id")
    }
    copies: dict[tuple[str, PairKey], int] = {}
    pairs = []
    for topic, (left, right) in queue:
        copy = copies.get((topic, (left, right)), 0)
        copies[(topic, (left, right))] = copy + 1
        topic_pk = topics[topic].pk
        pairs.append(
            Pair(
                round=rounds[topic],
                left_id=item_ids[(topic_pk, left)],
                right_id=item_ids[(topic_pk, right)],
                copy=copy,
            )
        )
    Pair.objects.bulk_create(pairs)

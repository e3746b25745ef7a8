"""Reads of adaptive campaigns (judging.engine.adaptive): the engine's parameters of a campaign, the crowd's
estimated error rates, and per topic the candidates still open, those confirmed out (k others confirmed above
them) and the pairs that ended as ties."""

from __future__ import annotations

import math
from typing import TypedDict

from django.db.models import Sum

from judging.engine import (
    DEFAULT_ADAPTIVE_PARAMS,
    AdaptiveParams,
    AdaptiveState,
    ErrorEvidence,
    ErrorModel,
    error_estimate_from_votes,
    open_candidates,
)
from judging.engine.adaptive import budget_params, decisive_limits, decisive_within_reach
from judging.models import Assignment, Campaign, CampaignTopic
from judging.selectors.progress import TOPIC_STATE_WORDS
from trecio import topic_order_key


def adaptive_params(campaign: Campaign) -> AdaptiveParams:
    """The engine's parameters for an adaptive campaign (F: the engine's default, at least k); a campaign with a
    judgment budget gets the budget's rules (``budget_params``), as ``simulate_adaptive`` gives them."""
    params = AdaptiveParams(
        k=campaign.k,
        F=max(campaign.k, DEFAULT_ADAPTIVE_PARAMS.F),
        max_votes=campaign.max_votes,
        confidence=campaign.confidence,
        model_rounds=campaign.model_rounds,
    )
    return params if campaign.max_judgments is None else budget_params(params)


def worker_key(worker_id: int) -> str:
    """How a worker is named in an adaptive topic's votes."""
    return f"w{worker_id}"


def campaign_worker_challenges(*, campaign: Campaign) -> list[tuple[int, int, int]]:
    """``(worker id, challenges, failures)`` of every worker who answered a challenge, in worker order: each
    counted or discarded assignment keeps its challenges and failures, summed here per worker (what the adaptive
    error estimate and the judge model read of the challenges)."""
    return list(
        Assignment.objects.filter(
            campaign=campaign,
            status__in=(Assignment.Status.ACCEPTED, Assignment.Status.DISCARDED),
            challenges__gt=0,
        )
        .order_by("worker_id")
        .values("worker_id")
        .annotate(answers=Sum("challenges"), failed=Sum("challenges_failed"))
        .values_list("worker_id", "answers", "failed")
    )


def _campaign_error_evidence(*, campaign: Campaign) -> tuple[ErrorEvidence, list[dict]]:
    """The challenges of every counted or discarded HIT, per worker, and each topic's stored summary of its
    votes."""
    evidence = ErrorEvidence()
    for worker_id, answers, failed in campaign_worker_challenges(campaign=campaign):
        evidence.challenges[worker_key(worker_id)] = [answers, failed]
    # Each topic's stored summary of its votes (the database extracts the one key), not every vote.
    topics = CampaignTopic.objects.filter(campaign=campaign, adaptive_state__isnull=False).order_by("pk")
    summaries = [
        data for data in topics.values_list("adaptive_state__evidence", flat=True) if data is not None
    ]
    return evidence, summaries


def campaign_error_evidence(*, campaign: Campaign) -> ErrorEvidence:
    """The challenges of every counted or discarded HIT, per worker (what the switch to the judge model's rounds
    weighs against the topics' votes: ``noise_depends_on_items``)."""
    return _campaign_error_evidence(campaign=campaign)[0]


def campaign_error_model(*, campaign: Campaign) -> ErrorModel:
    """The campaign's estimated error rates now (``error_estimate``): the challenges of every submitted HIT
    and the votes of every topic."""
    return error_estimate_from_votes(*_campaign_error_evidence(campaign=campaign))


class AdaptiveCrowd(TypedDict):
    error_rate: float
    error_percent: float
    challenges: int
    challenge_failures: int
    decisive_within_reach: bool
    plain_margin: int
    decisive_margin: int


def campaign_adaptive_crowd(*, campaign: Campaign) -> AdaptiveCrowd | None:
    """What an adaptive campaign's crowd looks like to the engine now: its estimated error rate, the
    challenges behind it, and the margin of agreeing votes (votes for one side less votes for the other) that
    confirms a pair at the plain level and at the decisive one (pairs that put a candidate out or order the
    top-k), or whether that level is out of the crowd's reach within ``max_votes`` (``decisive_within_reach``);
    None for other modes."""
    if campaign.mode != Campaign.Mode.ADAPTIVE:
        return None
    evidence, summaries = _campaign_error_evidence(campaign=campaign)
    errors = error_estimate_from_votes(evidence, summaries)
    params = adaptive_params(campaign)
    risk = 1 - params.confidence
    weight = errors.weight("")
    return AdaptiveCrowd(
        error_rate=errors.rate,
        error_percent=round(100 * errors.rate, 1),
        challenges=sum(n for n, _ in evidence.challenges.values()),
        challenge_failures=sum(failed for _, failed in evidence.challenges.values()),
        decisive_within_reach=decisive_within_reach(params, errors),
        plain_margin=math.ceil(math.log((1 - risk) / risk) / weight - 1e-9),
        decisive_margin=math.ceil(decisive_limits(params, errors)[0] / weight - 1e-9),
    )


class AdaptiveTopicRow(TypedDict):
    topic: str
    state: str
    state_label: str
    open: list[str]
    out: list[str]
    tied: list[tuple[str, str]]
    confirmed: int
    votes: int


def campaign_adaptive_topics(*, campaign: Campaign) -> list[AdaptiveTopicRow]:
    """One row per topic of an adaptive campaign (empty for other modes), topics in natural id order."""
    if campaign.mode != Campaign.Mode.ADAPTIVE:
        return []
    candidates: dict[int, list[str]] = {}
    rows = (
        CampaignTopic.objects.filter(campaign=campaign)
        .order_by("candidates__campaign_topic_id", "candidates__position")
        .values_list("pk", "candidates__item__docid")
    )
    for pk, docid in rows:
        if docid is not None:
            candidates.setdefault(pk, []).append(docid)
    out: list[AdaptiveTopicRow] = []
    for pk, topic, state_name, data in (
        CampaignTopic.objects.filter(campaign=campaign)
        .order_by("topic__topic_id")
        .values_list("pk", "topic__topic_id", "state", "adaptive_state")
    ):
        state = AdaptiveState.from_json(topic, tuple(candidates.get(pk, [])), data)
        still_open = open_candidates(state, k=campaign.k)
        out.append(
            AdaptiveTopicRow(
                topic=topic,
                state=state_name,
                state_label=TOPIC_STATE_WORDS.get(state_name, state_name),
                open=still_open,
                out=[d for d in state.candidates if d not in set(still_open)],
                tied=[pair for pair, winner in sorted(state.decided.items()) if winner is None],
                confirmed=sum(1 for winner in state.decided.values() if winner is not None),
                votes=sum(len(v) for v in state.votes.values()),
            )
        )
    return sorted(out, key=lambda row: topic_order_key(row["topic"]))

"""Reads of adaptive campaigns (judging.engine.adaptive): per topic, the candidates still open, those confirmed
out (k others confirmed above them) and the pairs that ended as ties."""

from __future__ import annotations

from typing import TypedDict

from judging.engine import AdaptiveState, open_candidates
from judging.models import Campaign, CampaignTopic


class AdaptiveTopicRow(TypedDict):
    topic: str
    state: str
    open: list[str]
    out: list[str]
    tied: list[tuple[str, str]]
    confirmed: int
    votes: int


def campaign_adaptive_topics(*, campaign: Campaign) -> list[AdaptiveTopicRow]:
    """One row per topic of an adaptive campaign (empty for other modes), topics in id order."""
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
                open=still_open,
                out=[d for d in state.candidates if d not in set(still_open)],
                tied=[pair for pair, winner in sorted(state.decided.items()) if winner is None],
                confirmed=sum(1 for winner in state.decided.values() if winner is not None),
                votes=sum(len(v) for v in state.votes.values()),
            )
        )
    return out

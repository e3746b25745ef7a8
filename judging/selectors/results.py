"""Results of a campaign: each finished topic's top-k, the preference qrels built from it, and what a
researcher looks at in them (ties at rank k, intransitive triples, the top-k with its passages)."""

from __future__ import annotations

from collections import defaultdict
from typing import TypedDict

from judging.engine import RankedItem, preference_values
from judging.models import Campaign, CampaignTopic, Candidate, Pair
from pools.models import GradedJudgment
from trecio import topic_order_key

PREFERENCE_KINDS = ("combined", "top_k", "best")


class TieAtK(TypedDict):
    """A topic of ``campaign_ties_at_k``: the items tied at the lowest rank of its top-k."""

    topic: str
    items: list[str]
    rank: int
    count: int


class IntransitiveTriple(TypedDict):
    topic: str
    items: list[str]


class TopKItem(TypedDict):
    docid: str
    text: str
    rank: int
    wins: int | None


class TopKTopic(TypedDict):
    """A finished topic of ``campaign_top_k_with_text``."""

    topic: str
    question: str
    items: list[TopKItem]


def campaign_ranked(*, campaign: Campaign) -> dict[str, list[RankedItem]]:
    """Each finished topic's top-k, best first (ties at rank k included), by external topic id."""
    ranked: dict[str, list[RankedItem]] = defaultdict(list)
    rows = (
        Candidate.objects.filter(
            campaign_topic__campaign=campaign,
            campaign_topic__state__in=CampaignTopic.FINISHED_STATES,
            rank__isnull=False,
        )
        .order_by("campaign_topic__topic__topic_id", "rank", "item__docid")
        .values_list("campaign_topic__topic__topic_id", "item__docid", "rank", "wins")
    )
    for topic_id, docid, rank, wins in rows:
        if rank is None:  # excluded by the filter; the field is nullable
            continue
        ranked[topic_id].append(RankedItem(docid=docid, rank=rank, wins=wins or 0))
    return dict(ranked)


def campaign_preferences(*, campaign: Campaign, kind: str = "combined") -> dict[str, dict[str, float]]:
    """The campaign's preference qrels ``{topic_id: {docid: value}}`` for every graded topic of its
    collection (engine ``preference_values``): ``combined`` codes the top-k as 10*(k+1-rank) above the grades
    (as the released TREC-CAsT-2019 file), ``top_k`` keeps only the top-k, ``best`` only rank 1. Topics not
    finished yet contribute their grades (combined) or zeros."""
    if kind not in PREFERENCE_KINDS:
        raise ValueError(f"kind must be one of {', '.join(PREFERENCE_KINDS)} (got {kind!r})")
    graded: dict[str, dict[str, float]] = defaultdict(dict)
    rows = GradedJudgment.objects.filter(topic__collection_id=campaign.collection_id).values_list(
        "topic__topic_id", "item__docid", "grade"
    )
    for topic_id, docid, grade in rows:
        graded[topic_id][docid] = grade
    ranked = campaign_ranked(campaign=campaign)
    return {
        topic_id: preference_values(graded[topic_id], ranked.get(topic_id, []), k=campaign.k, kind=kind)
        for topic_id in sorted(graded)
    }


def campaign_qrels_lines(*, campaign: Campaign, kind: str = "combined") -> list[str]:
    """The campaign's preference qrels as ``topic Q0 docid value`` lines (trecio's exact number format), in
    the order ``campaign_preferences`` gives the topics and by docid within a topic: what ``campaign_export``
    prints and the dashboard's and API's exports store, readable by ``toppref compat`` and ``evaluate``."""
    from trecio import qrels_line

    preferences = campaign_preferences(campaign=campaign, kind=kind)
    return [
        qrels_line(topic_id, docid, value)
        for topic_id, values in preferences.items()
        for docid, value in sorted(values.items())
    ]


def campaign_ties_at_k(*, campaign: Campaign) -> list[TieAtK]:
    """Finished topics whose top-k has a tie across rank k (more than k items ranked k or better): the
    paper keeps them all (Assessing top-k preferences, section 4.3), a researcher may want to look."""
    rows = (
        Candidate.objects.filter(campaign_topic__campaign=campaign, rank__isnull=False, rank__lte=campaign.k)
        .order_by("campaign_topic__topic__topic_id", "rank", "item__docid")
        .values_list("campaign_topic__topic__topic_id", "item__docid", "rank")
    )
    by_topic: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for topic_id, docid, rank in rows:
        if rank is not None:  # always, by the filter; the field is nullable
            by_topic[topic_id].append((docid, rank))
    return [
        {
            "topic": topic_id,
            "items": [docid for docid, rank in items if rank == max(r for _, r in items)],
            "rank": max(r for _, r in items),
            "count": len(items),
        }
        for topic_id, items in sorted(by_topic.items(), key=lambda entry: topic_order_key(entry[0]))
        if len(items) > campaign.k
    ]


def campaign_intransitive_triples(*, campaign: Campaign, limit: int = 100) -> list[IntransitiveTriple]:
    """Preference cycles a > b > c > a among the judged stage-2 pairs of each topic (stage 2 judges all
    pairs, so every triple is complete there); at most ``limit``, topics in id order."""
    beats: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for topic_id, left, right, winner in (
        Pair.objects.filter(round__campaign_topic__campaign=campaign, round__stage=2, winner__isnull=False)
        .order_by()
        .values_list("round__campaign_topic__topic__topic_id", "left__docid", "right__docid", "winner__docid")
    ):
        loser = right if winner == left else left
        beats[topic_id][winner].add(loser)
    triples: list[IntransitiveTriple] = []
    for topic_id in sorted(beats):
        graph = beats[topic_id]
        for a in sorted(graph):
            for b in sorted(graph[a]):
                for c in sorted(graph.get(b, ())):
                    # each cycle once: start from its smallest item
                    if a in graph.get(c, ()) and a < b and a < c:
                        triples.append({"topic": topic_id, "items": [a, b, c]})
                        if len(triples) >= limit:
                            return triples
    return triples


def campaign_top_k_with_text(*, campaign: Campaign) -> list[TopKTopic]:
    """Each finished topic's top-k (ties at rank k included) with the passages' text, topics in natural id
    order (d2 before d10), one query."""
    by_topic: dict[str, TopKTopic] = {}
    for topic_id, question, docid, text, rank, wins in (
        Candidate.objects.filter(
            campaign_topic__campaign=campaign,
            campaign_topic__state__in=CampaignTopic.FINISHED_STATES,
            rank__isnull=False,
            rank__lte=campaign.k,
        )
        .order_by("campaign_topic__topic__topic_id", "rank", "item__docid")
        .values_list(
            "campaign_topic__topic__topic_id",
            "campaign_topic__topic__question",
            "item__docid",
            "item__text",
            "rank",
            "wins",
        )
    ):
        if rank is None:  # excluded by the filter; the field is nullable
            continue
        entry = by_topic.setdefault(topic_id, {"topic": topic_id, "question": question, "items": []})
        entry["items"].append({"docid": docid, "text": text, "rank": rank, "wins": wins})
    return [by_topic[topic_id] for topic_id in sorted(by_topic, key=topic_order_key)]


def campaign_candidate_pools(*, campaign: Campaign) -> dict[str, list[str]]:
    """Each topic's thinned candidate pool (the items the campaign judges), in stored order, by topic id: what
    ``judging.engine.top_k_agreement`` scores a campaign's top-k against an oracle within. One query."""
    pools: dict[str, list[str]] = {
        topic_id: []
        for topic_id in CampaignTopic.objects.filter(campaign=campaign).values_list(
            "topic__topic_id", flat=True
        )
    }
    for topic_id, docid in (
        Candidate.objects.filter(campaign_topic__campaign=campaign)
        .order_by("campaign_topic__topic__topic_id", "position")
        .values_list("campaign_topic__topic__topic_id", "item__docid")
    ):
        pools[topic_id].append(docid)
    return pools

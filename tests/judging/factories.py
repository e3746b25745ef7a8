"""factory_boy factories for the judging models, and a builder for tiny graded collections."""

from __future__ import annotations

from collections.abc import Mapping

import factory

from judging.models import Campaign, Worker
from pools.models import Collection, GradedJudgment, Item, Topic
from tests.pools.factories import CollectionFactory


class CampaignFactory(factory.django.DjangoModelFactory):
    """A draft crowd campaign with the paper's parameters (k=5, F=9, P=7). Prefer ``campaign_create`` in
    tests of behaviour; this factory is for fixtures that only need a row."""

    class Meta:
        model = Campaign

    collection = factory.SubFactory(CollectionFactory)
    name = factory.Sequence(lambda n: f"campaign-{n}")
    seed = 7


class WorkerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Worker

    provider = "local"
    external_id = factory.Sequence(lambda n: f"worker-{n}")


def collection_with_grades(
    grades: Mapping[str, Mapping[str, float]],
    *,
    name: str = "tiny",
    conversations: Mapping[str, str] | None = None,
) -> Collection:
    """A collection whose topics, items and graded judgments are ``{topic_id: {docid: grade}}``, judgments
    created in the mapping's order (the order thinning keeps). ``conversations`` sets topics' conversation ids."""
    collection = CollectionFactory(name=name)
    docids = sorted({docid for topic in grades.values() for docid in topic})
    items = {
        item.docid: item
        for item in Item.objects.bulk_create([Item(collection=collection, docid=docid) for docid in docids])
    }
    conversations = conversations or {}
    for topic_id, topic_grades in grades.items():
        topic = Topic.objects.create(
            collection=collection,
            topic_id=topic_id,
            question=f"question {topic_id}?",
            conversation_id=conversations.get(topic_id, ""),
        )
        GradedJudgment.objects.bulk_create(
            [
                GradedJudgment(topic=topic, item=items[docid], grade=grade)
                for docid, grade in topic_grades.items()
            ]
        )
    return collection


def graded_pool(
    topic_prefix: str, relevant: int, nonrelevant: int = 3, *, grade: float = 3
) -> dict[str, float]:
    """``relevant`` items of ``grade`` and ``nonrelevant`` items of grade 0 named after the topic:
    ``{prefix}-r00..`` and ``{prefix}-n00..``."""
    pool = {f"{topic_prefix}-r{i:02d}": grade for i in range(relevant)}
    pool.update({f"{topic_prefix}-n{i:02d}": 0 for i in range(nonrelevant)})
    return pool


def judge_round(round, winner_of) -> None:
    """Give every pair of ``round`` the winner ``winner_of(left_docid, right_docid)`` directly in the database,
    bypassing HITs (for tests of the round state machine)."""
    from judging.models import Pair

    pairs = list(Pair.objects.filter(round=round).select_related("left", "right"))
    for pair in pairs:
        pair.winner = (
            pair.left if winner_of(pair.left.docid, pair.right.docid) == pair.left.docid else pair.right
        )
    Pair.objects.bulk_update(pairs, ["winner"])


def by_value(values):
    """A ``winner_of`` for ``judge_round``: the higher value wins, equal values the smaller docid."""
    return lambda a, b: a if (values[a], b) > (values[b], a) else b

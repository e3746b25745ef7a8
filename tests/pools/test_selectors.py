"""Reads of the pools app."""

import pytest

from pools import selectors, services
from pools.models import Run
from pools.trec import read_qrels
from tests.pools.factories import CollectionFactory, GradedJudgmentFactory, ItemFactory, TopicFactory

pytestmark = pytest.mark.django_db


def test_collection_qrels_round_trips_an_imported_file(tmp_path):
    collection = CollectionFactory(is_strict=False)
    other = GradedJudgmentFactory(grade=4)
    path = tmp_path / "q.txt"
    path.write_text("2 Q0 b 1\n1 Q0 c 0\n1 Q0 a 2.5\n")
    services.qrels_import(collection=collection, path=path)
    qrels = selectors.collection_qrels(collection=collection)
    assert qrels == read_qrels(path)
    assert list(qrels) == ["1", "2"] and list(qrels["1"]) == ["a", "c"]
    assert selectors.collection_qrels(collection=other.topic.collection) == {
        other.topic.topic_id: {other.item.docid: 4.0}
    }


def test_collection_list_with_counts():
    collection = CollectionFactory(name="a")
    TopicFactory(collection=collection)
    GradedJudgmentFactory(topic=TopicFactory(collection=collection))
    row = selectors.collection_list_with_counts().get(name="a")
    assert (row.topic_count, row.item_count, row.run_count) == (2, 1, 0)


def test_collection_list_with_counts_counts_each_relation_once_and_empty_as_zero():
    # given a collection with several rows in every relation (a join of them would multiply), and an empty one
    collection = CollectionFactory(name="full")
    topics = [TopicFactory(collection=collection) for _ in range(3)]
    items = [ItemFactory(collection=collection) for _ in range(4)]
    for topic in topics:
        for item in items:
            GradedJudgmentFactory(topic=topic, item=item)
    Run.objects.bulk_create([Run(collection=collection, name=name) for name in ("a", "b")])
    CollectionFactory(name="empty")
    rows = selectors.collection_list_with_counts()
    assert [(row.name, row.topic_count, row.item_count, row.run_count) for row in rows] == [
        ("empty", 0, 0, 0),
        ("full", 3, 4, 2),
    ]

"""Reads of the pools app."""

import pytest

from pools import selectors, services
from pools.thinning import thin_qrels
from pools.trec import read_qrels
from tests.pools.factories import CollectionFactory, GradedJudgmentFactory, TopicFactory

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


def test_collection_candidate_pools_of_cast_equal_thinning_the_file(cast_dir):
    collection = CollectionFactory(is_strict=False)
    services.qrels_import(collection=collection, path=cast_dir / "qrels.graded.txt")
    pools = selectors.collection_candidate_pools(collection=collection, k=5)
    assert pools == thin_qrels(read_qrels(cast_dir / "qrels.graded.txt"), 5)
    assert sum(len(pool) for pool in pools.values()) == 2673


def test_collection_list_with_counts():
    collection = CollectionFactory(name="a")
    TopicFactory(collection=collection)
    GradedJudgmentFactory(topic=TopicFactory(collection=collection))
    row = selectors.collection_list_with_counts().get(name="a")
    assert (row.topic_count, row.item_count, row.run_count) == (2, 1, 0)

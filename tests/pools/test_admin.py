"""Admin pages of the pools app render, search and escape passage text."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.pools.factories import GradedJudgmentFactory, ItemFactory, TopicFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("model", ["collection", "topic", "item", "gradedjudgment", "run"])
def test_changelist_renders(admin_client, model):
    GradedJudgmentFactory(topic=TopicFactory(topic_id="31_1"), grade=3)
    response = admin_client.get(reverse(f"admin:pools_{model}_changelist"))
    assert response.status_code == 200


def test_item_changelist_escapes_passage_text(admin_client):
    ItemFactory(docid="evil", text='<script>alert("x")</script> and more')
    response = admin_client.get(reverse("admin:pools_item_changelist"), {"q": "evil"})
    html = response.content.decode()
    assert '<script>alert("x")</script>' not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; and more" in html


def test_judgment_search_by_topic_id_and_docid(admin_client):
    GradedJudgmentFactory(topic=TopicFactory(topic_id="31_1"), item__docid="MARCO_1", grade=3)
    GradedJudgmentFactory(topic=TopicFactory(topic_id="40_2"), item__docid="CAR_2", grade=1)
    url = reverse("admin:pools_gradedjudgment_changelist")
    by_topic = admin_client.get(url, {"q": "31_1"}).context["cl"].result_list
    by_docid = admin_client.get(url, {"q": "CAR_2"}).context["cl"].result_list
    assert [judgment.item.docid for judgment in by_topic] == ["MARCO_1"]
    assert [judgment.topic.topic_id for judgment in by_docid] == ["40_2"]


def test_collection_changelist_shows_counts(admin_client):
    judgment = GradedJudgmentFactory()
    GradedJudgmentFactory(topic=judgment.topic)
    collection = judgment.topic.collection
    result = admin_client.get(reverse("admin:pools_collection_changelist")).context["cl"].result_list
    row = next(entry for entry in result if entry.pk == collection.pk)
    assert (row.topic_total, row.item_total, row.run_total) == (1, 2, 0)
    assert row.judgment_total == 2


def test_collection_changelist_queries_do_not_grow_with_collections(admin_client, django_assert_num_queries):
    # given the page's query count with one collection
    GradedJudgmentFactory()
    url = reverse("admin:pools_collection_changelist")
    with CaptureQueriesContext(connection) as one_collection:
        admin_client.get(url)
    # when four more collections with judgments are listed, then no query per row is added
    for _ in range(4):
        GradedJudgmentFactory()
    with django_assert_num_queries(len(one_collection)):
        admin_client.get(url)

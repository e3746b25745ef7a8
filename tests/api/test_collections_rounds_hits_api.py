"""Collection file uploads (topics, passages, qrels), rounds and HITs of a campaign through the API."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from judging.models import Hit, Round
from pools.models import Collection, GradedJudgment, Item, Topic
from tests.api.conftest import token_client

pytestmark = pytest.mark.django_db


def _post(client, url, name, content):
    return client.post(url, {"file": SimpleUploadedFile(name, content)}, format="multipart")


def test_topics_passages_and_qrels_upload(api, assessor):
    api.post("/api/collections/", {"name": "uploaded", "is_strict": True}, format="json")
    topics = _post(api, "/api/collections/uploaded/topics/", "topics.tsv", b"t1\tWhy is the sky blue?\n")
    assert topics.status_code == 200 and topics.json()["created"] == 1
    qrels = _post(api, "/api/collections/uploaded/qrels/", "q.txt", b"t1 0 d1 2\nt1 0 d2 0\n")
    assert qrels.status_code == 200 and qrels.json()["created"] == 2
    passages = _post(api, "/api/collections/uploaded/passages/", "p.tsv", b"d1\tRayleigh scattering.\n")
    assert passages.status_code == 200
    collection = Collection.objects.get(name="uploaded")
    assert Topic.objects.get(collection=collection).question == "Why is the sky blue?"
    assert GradedJudgment.objects.filter(topic__collection=collection).count() == 2
    assert Item.objects.get(collection=collection, docid="d1").text == "Rayleigh scattering."
    assert (
        _post(token_client(assessor), "/api/collections/uploaded/qrels/", "q.txt", b"t1 0 d3 1\n").status_code
        == 403
    )


def test_a_bad_qrels_line_names_file_and_line_and_imports_nothing(api):
    api.post("/api/collections/", {"name": "strict"}, format="json")
    _post(api, "/api/collections/strict/topics/", "topics.tsv", b"t1\tq\n")
    response = _post(api, "/api/collections/strict/qrels/", "bad.qrels", b"t1 0 d1 2\nt1 0 d2 high\n")
    assert response.status_code == 400
    assert response.json()["file"][0].startswith("bad.qrels:2: ")
    assert not GradedJudgment.objects.exists()
    assert _post(api, "/api/collections/missing/qrels/", "q.txt", b"").status_code == 404


def test_rounds_and_hits(api, outsiders, finished_campaign):
    rounds = api.get("/api/campaigns/demo-done/rounds/?limit=500").json()
    assert rounds["count"] == Round.objects.filter(campaign_topic__campaign=finished_campaign).count()
    assert all(not r["is_open"] for r in rounds["results"])
    hits = api.get("/api/campaigns/demo-done/hits/").json()
    assert hits["count"] == Hit.objects.filter(campaign=finished_campaign).count()
    assert [h["number"] for h in hits["results"]] == sorted(h["number"] for h in hits["results"])
    for client, expected in outsiders:
        assert client.get("/api/campaigns/demo-done/rounds/").status_code == expected
        assert client.get("/api/campaigns/demo-done/hits/").status_code == expected

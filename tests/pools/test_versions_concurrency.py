"""An import and a campaign start at once, with real threads against PostgreSQL: the start waits for the
import's lock on the collection and starts on its result, so a started campaign never has grades that its
version no longer holds. Skipped on SQLite, whose IMMEDIATE transactions serialise writers anyway."""

import threading
import time
from pathlib import Path

import pytest
from django.db import connection, connections, transaction

from judging.models import Candidate
from judging.services import campaign_create, campaign_start
from pools.models import Collection, GradedJudgment
from pools.services import demo_load, qrels_import

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks")

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"


@pytest.mark.django_db(transaction=True)
def test_a_start_during_an_import_starts_on_the_imports_result(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    demo = demo_load(directory=DEMO_DIR).collection
    draft = campaign_create(collection=demo, name="draft", seed=1)
    qrels = tmp_path / "fix.qrels"
    qrels.write_text("d1 Q0 d1-p02 9\n")
    imported = threading.Event()
    results = {}

    def import_and_hold():
        try:
            with transaction.atomic():
                results["import"] = qrels_import(collection=demo, path=qrels, replace=True)
                imported.set()
                # Holds the collection's lock while the start below tries to take it (a pause, not a
                # measurement: were the start not to wait, it would read the grades of before the import).
                time.sleep(1.0)
        finally:
            imported.set()
            connections.close_all()

    def start():
        try:
            imported.wait(timeout=30)
            results["start"] = campaign_start(campaign=draft, topic_ids=["d1"])
        except Exception as error:  # noqa: BLE001 - reported to the test
            results["start"] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=import_and_hold), threading.Thread(target=start)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert results["import"].version == 1 and not results["import"].new_version
    assert results["start"].status == "running" and results["start"].collection_id == demo.pk
    assert Collection.objects.filter(name="demo").count() == 1
    stored = GradedJudgment.objects.get(topic__collection=demo, topic__topic_id="d1", item__docid="d1-p02")
    candidate = Candidate.objects.get(campaign_topic__campaign=draft, item__docid="d1-p02")
    assert stored.grade == candidate.grade == 9

"""A real ``celery -A config worker`` process against Redis and the test's PostgreSQL database runs a small
crowd campaign to completion: tasks cross the broker, the worker closes rounds and builds HITs, simulated
workers submit from this process. Skipped unless REDIS_URL and DATABASE_URL are set (CI sets both)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.db import connection

from config.celery import app
from judging.engine import PerfectOracle
from judging.models import Campaign, CampaignTopic, Hit
from judging.selectors import campaign_ranked
from judging.services import campaign_create
from judging.services.simulated_crowd import campaign_simulate
from judging.tasks import campaign_start_task
from tests.judging.factories import collection_with_grades, graded_pool

REPO_DIR = Path(__file__).resolve().parents[2]


def isolated_redis_db() -> str:
    """A Redis database of its own, so that a developer's worker on the default database never takes these
    tasks, and one per pytest-xdist process (gw0 -> 15, gw1 -> 14, ... down to 2; 0 and 1 are the suite's and
    the full-stack demo's), so that two processes' worker tests never purge or take each other's tasks."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    return os.environ.get("TOPPREF_TEST_REDIS_DB", str(15 - int(worker) % 14))


TEST_REDIS_DB = isolated_redis_db()

pytestmark = [
    pytest.mark.celery_worker,
    pytest.mark.skipif(
        not (os.environ.get("REDIS_URL") and os.environ.get("DATABASE_URL")),
        reason="needs REDIS_URL and DATABASE_URL (a real broker and a database a second process can reach)",
    ),
]


def isolated_broker_url() -> str:
    parts = urlsplit(os.environ["REDIS_URL"])
    return urlunsplit((parts.scheme, parts.netloc, f"/{TEST_REDIS_DB}", parts.query, parts.fragment))


def worker_database_url() -> str:
    settings = connection.settings_dict
    user = settings["USER"] or ""
    password = f":{settings['PASSWORD']}" if settings["PASSWORD"] else ""
    host = settings["HOST"] or "127.0.0.1"
    port = settings["PORT"] or "5432"
    return f"postgres://{user}{password}@{host}:{port}/{settings['NAME']}"


def reset_broker_connections() -> None:
    """Drop the app's cached broker connections so the next send uses the current ``broker_url``. Celery has
    no public call for this; its pools are rebuilt lazily when these attributes are None."""
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def celery_worker_process(transactional_db, tmp_path):
    """Point this process's Celery app at the broker (not eager) and start a worker on the test database."""
    broker_url = isolated_broker_url()
    saved = {key: app.conf[key] for key in ("task_always_eager", "broker_url")}
    app.conf.update(task_always_eager=False, broker_url=broker_url)
    reset_broker_connections()
    app.control.purge()
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": worker_database_url(),
        "REDIS_URL": broker_url,
        "DATABASE_CONN_MAX_AGE": "0",
    }
    log = (tmp_path / "worker.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--concurrency=2",
            "--loglevel=WARNING",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=REPO_DIR,
        env=env,
        # A file, not a pipe: nobody reads while the test runs, and a full pipe would block the worker.
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, so its prefork children can be killed with it
    )
    log.close()  # the worker has its own copy
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        app.control.purge()
        app.conf.update(**saved)
        reset_broker_connections()


def test_a_real_worker_runs_a_small_campaign_to_completion(celery_worker_process):
    # Given a stage-1 topic (12 candidates), a stage-2 topic (6) and a nothing-to-judge topic (1)
    grades = {"1_1": graded_pool("a", 12), "1_2": graded_pool("b", 6), "1_3": graded_pool("c", 1)}
    values = {
        topic: {docid: 100.0 - i for i, docid in enumerate(pool) if pool[docid] > 0}
        for topic, pool in grades.items()
    }
    collection = collection_with_grades(grades)
    campaign = campaign_create(collection=collection, name="worker", seed=6)

    # When the start goes through the broker and simulated workers answer the HITs the worker builds
    campaign_start_task.delay(campaign.pk)
    started = time.monotonic()
    while not Hit.objects.filter(campaign=campaign).exists():
        assert celery_worker_process.poll() is None, "the worker died: see worker.log in the test's tmp_path"
        assert time.monotonic() - started < 60, "the worker built no HIT within 60 s"
        time.sleep(0.1)
    report = campaign_simulate(
        campaign=campaign, oracle=PerfectOracle(values), drive=False, timeout_seconds=60
    )

    # Then the worker closed every round and the campaign finished with the oracle's best first
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.DONE
    assert set(CampaignTopic.objects.filter(campaign=campaign).values_list("state", flat=True)) == {
        "done",
        "nothing_to_judge",
    }
    ranked = campaign_ranked(campaign=campaign)
    assert {topic: items[0].docid for topic, items in ranked.items()} == {
        "1_1": "a-r00",
        "1_2": "b-r00",
        "1_3": "c-r00",
    }
    assert report.discarded_hits == 0 and report.hits == Hit.objects.filter(campaign=campaign).count()


def test_demo_run_works_with_a_real_worker_running(celery_worker_process):
    # Given the demo collection and a worker that closes rounds and builds HITs as soon as it is told
    from io import StringIO

    from django.core.management import call_command

    call_command("demo_load", stdout=StringIO())
    out = StringIO()

    # When the demo runs on the full stack (its simulated workers in this process)
    call_command("demo_run", stdout=out)

    # Then "advance did nothing" while the worker did it is no stall: both demo campaigns finish, and the
    # open ones are left for people to judge with their HITs built
    assert celery_worker_process.poll() is None, "the worker died: see worker.log in the test's tmp_path"
    statuses = dict(Campaign.objects.values_list("name", "status"))
    assert statuses["demo-crowd"] == Campaign.Status.DONE
    assert statuses["demo-tournament"] == Campaign.Status.DONE
    assert statuses["demo-open-crowd"] == Campaign.Status.RUNNING
    assert Hit.objects.filter(campaign__name="demo-open-crowd", status="open").exists()
    assert "Open to judge in the browser" in out.getvalue()

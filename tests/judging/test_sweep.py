"""The periodic sweep recovers what a lost enqueue left undone (a process that died between a commit and its
enqueue) and runs the clocks, in each configuration: the request middleware of the embedded default (no
Redis, no beat) and ``campaign_advance --loop``. Inside a test transaction on-commit callbacks never run, which
is exactly a lost enqueue; ``django_capture_on_commit_callbacks`` shows that one was due."""

import os
import subprocess
import sys
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.http import HttpResponse
from django.test import RequestFactory, override_settings
from django.utils import timezone

from judging import middleware as sweep_middleware
from judging.management.commands import campaign_advance as campaign_advance_command
from judging.middleware import SweepMiddleware
from judging.models import Assignment, Campaign, Hit, Round
from judging.services import assignment_start, assignment_submit, campaign_create, campaign_start
from tests.conftest import REPO_DIR
from tests.judging.factories import WorkerFactory, collection_with_grades, graded_pool
from tests.judging.test_judgments import honest_answers


def started_without_its_hits(django_capture_on_commit_callbacks):
    """A started one-topic crowd campaign (6 candidates: one stage-2 round of 15 pairs, two HITs) whose
    HIT-building enqueue was lost."""
    collection = collection_with_grades({"1_1": graded_pool("a", 6)})
    campaign = campaign_create(collection=collection, name="c", seed=3)
    with django_capture_on_commit_callbacks(execute=False) as lost:
        campaign_start(campaign=campaign)
    assert len(lost) == 1 and Hit.objects.count() == 0
    return campaign


def submit_every_hit_losing_the_round_close(django_capture_on_commit_callbacks):
    for hit in Hit.objects.filter(status="open").order_by("number"):
        with django_capture_on_commit_callbacks(execute=False) as lost:
            assignment_submit(
                assignment=assignment_start(hit=hit, worker=WorkerFactory()), winners=honest_answers(hit)
            )
        assert len(lost) == 1
    assert Round.objects.get().closed_at is None


def page(request):
    return HttpResponse("page")


@pytest.fixture
def clock(monkeypatch):
    """The middleware's monotonic clock, moved by hand."""
    now = [1000.0]
    monkeypatch.setattr(sweep_middleware.time, "monotonic", lambda: now[0])
    return now


@pytest.mark.django_db
@override_settings(TOPPREF_SWEEP_SECONDS=60)
def test_requests_of_the_embedded_default_recover_lost_enqueues_once_the_interval_passed(
    django_capture_on_commit_callbacks, clock
):
    # Given a campaign whose HIT building was lost, served by a freshly started process
    campaign = started_without_its_hits(django_capture_on_commit_callbacks)
    sweeping = SweepMiddleware(page)

    # When the first request comes in, the sweep builds the HITs
    response = sweeping(RequestFactory().get("/"))
    assert response.content == b"page" and Hit.objects.filter(status="open").count() == 2

    # And when every HIT is counted but the round's close is lost, a request within the interval does nothing
    submit_every_hit_losing_the_round_close(django_capture_on_commit_callbacks)
    clock[0] += 59
    sweeping(RequestFactory().get("/"))
    assert Round.objects.get().closed_at is None

    # Then the first request past the interval closes the round and finishes the campaign
    clock[0] += 2
    sweeping(RequestFactory().get("/"))
    campaign.refresh_from_db()
    assert Round.objects.get().closed_at is not None and campaign.status == "done"


@pytest.mark.django_db
@override_settings(TOPPREF_SWEEP_SECONDS=60)
def test_the_request_sweep_expires_an_overdue_assignment(django_capture_on_commit_callbacks, clock):
    campaign = started_without_its_hits(django_capture_on_commit_callbacks)
    SweepMiddleware(page)(RequestFactory().get("/"))
    late = assignment_start(hit=campaign.hits.order_by("number").first(), worker=WorkerFactory())
    Assignment.objects.filter(pk=late.pk).update(deadline_at=timezone.now() - timedelta(seconds=1))

    SweepMiddleware(page)(RequestFactory().get("/"))

    late.refresh_from_db()
    assert late.status == "expired" and Hit.objects.get(pk=late.hit_id).status == "open"


@pytest.mark.django_db
@override_settings(TOPPREF_SWEEP_SECONDS=60)
def test_a_failing_sweep_is_logged_and_never_breaks_the_page(monkeypatch, caplog):
    def broken():
        raise RuntimeError("database went away")

    monkeypatch.setattr(sweep_middleware, "campaign_advance_running", broken)

    response = SweepMiddleware(page)(RequestFactory().get("/"))

    assert response.content == b"page"
    assert "the periodic sweep failed" in caplog.text and "database went away" in caplog.text


@override_settings(TOPPREF_SWEEP_SECONDS=0)
def test_the_request_sweep_is_off_when_its_interval_is_zero():
    from django.core.exceptions import MiddlewareNotUsed

    with pytest.raises(MiddlewareNotUsed):
        SweepMiddleware(page)


@pytest.mark.django_db
def test_campaign_advance_loop_sweeps_every_interval_until_interrupted(
    django_capture_on_commit_callbacks, monkeypatch
):
    # Given a campaign whose HIT building was lost
    campaign = started_without_its_hits(django_capture_on_commit_callbacks)
    naps = []

    def sleep(seconds):
        naps.append(seconds)
        if len(naps) == 2:
            raise KeyboardInterrupt
        # Between two sweeps every HIT is counted, and the round's close is lost
        submit_every_hit_losing_the_round_close(django_capture_on_commit_callbacks)

    monkeypatch.setattr(campaign_advance_command.time, "sleep", sleep)
    out = StringIO()

    # When the loop runs until Ctrl-C
    call_command("campaign_advance", "--loop", "--interval", "5", stdout=out)

    # Then the first sweep built the HITs and the second closed the round, finishing the campaign
    lines = out.getvalue().splitlines()
    assert naps == [5.0, 5.0] and lines[-1] == "stopped"
    assert [line.split(" ", 2)[2] for line in lines[:-1]] == [
        "c: rounds_opened 0, rounds_closed 0, hits_expired 0, hits_built 2",
        "c: rounds_opened 0, rounds_closed 1, hits_expired 0, hits_built 0",
    ]
    campaign.refresh_from_db()
    assert campaign.status == "done"


@pytest.mark.django_db
def test_campaign_advance_expires_overdue_work_of_a_paused_campaign_too(django_capture_on_commit_callbacks):
    campaign = started_without_its_hits(django_capture_on_commit_callbacks)
    call_command("campaign_advance", stdout=StringIO())
    late = assignment_start(hit=campaign.hits.order_by("number").first(), worker=WorkerFactory())
    Assignment.objects.filter(pk=late.pk).update(deadline_at=timezone.now() - timedelta(seconds=1))
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.PAUSED)

    call_command("campaign_advance", stdout=StringIO())

    late.refresh_from_db()
    assert late.status == "expired"


@pytest.mark.django_db
@pytest.mark.parametrize("interval", ["0", "-1", "nan", "inf"])
def test_campaign_advance_refuses_an_interval_that_is_not_a_positive_number(interval):
    with pytest.raises(CommandError, match="--interval must be a positive number of seconds"):
        call_command("campaign_advance", "--loop", "--interval", interval, stdout=StringIO())


@pytest.mark.parametrize(("redis_url", "interval"), [(None, "60.0"), ("redis://127.0.0.1:6379/9", "0.0")])
def test_the_request_sweep_runs_by_default_only_where_there_is_no_beat(redis_url, interval):
    env = {
        k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DJANGO_ENV", "TOPPREF_SWEEP_SECONDS"}
    }
    if redis_url:
        env["REDIS_URL"] = redis_url
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; django.setup();"
        "from django.conf import settings as s; print(s.TOPPREF_SWEEP_SECONDS,"
        " 'judging.middleware.SweepMiddleware' in s.MIDDLEWARE)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=60
    )

    assert result.stdout.split() == [interval, "True"], result.stderr


@pytest.mark.django_db
def test_the_beat_tasks_expire_overdue_assignments_and_recover_lost_enqueues(
    django_capture_on_commit_callbacks,
):
    from judging import tasks

    # Given a campaign whose HIT building was lost, then whose round close was lost, and an overdue assignment
    campaign = started_without_its_hits(django_capture_on_commit_callbacks)
    assert tasks.campaign_advance_running_task.delay().get() == 1
    first, second = campaign.hits.order_by("number")
    late = assignment_start(hit=second, worker=WorkerFactory())
    Assignment.objects.filter(pk=late.pk).update(deadline_at=timezone.now() - timedelta(seconds=1))

    # When beat runs the clock task, the overdue assignment expires and its HIT is free again
    tasks.hit_expire_overdue_task.delay()
    late.refresh_from_db()
    assert late.status == "expired"

    # And when every HIT is counted but the round's close is lost, the periodic sweep closes it
    submit_every_hit_losing_the_round_close(django_capture_on_commit_callbacks)
    tasks.campaign_advance_running_task.delay()
    campaign.refresh_from_db()
    assert campaign.status == "done" and {first.pk, second.pk} == set(
        Hit.objects.filter(status="accepted").values_list("pk", flat=True)
    )

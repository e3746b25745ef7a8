"""Faults a judge never sees: with the broker unreachable, an answer that is stored gets its success (the
round-closing enqueue is logged and left to the sweep), and the sweep closes the round later; the sweep's
cost does not grow with the campaign."""

from __future__ import annotations

import logging
import re
import socket

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config.celery import app
from judging.models import Assignment, Campaign, HitSlot, Judgment, Round
from judging.services import campaign_advance
from judging.services.sweep import campaign_advance_running
from judging.views.judge import INSTRUCTIONS_SEEN
from tests.judging.factories import by_value, graded_pool, judge_round
from tests.judging.pages_fixtures import crowd_campaign, user_with_role


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def reset_broker_connections() -> None:
    """Drop the app's cached broker connections so the next send uses the current ``broker_url``."""
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def broker_down():
    saved = {key: app.conf[key] for key in ("task_always_eager", "broker_url")}
    app.conf.update(task_always_eager=False, broker_url=f"redis://127.0.0.1:{closed_port()}/0")
    reset_broker_connections()
    yield
    app.conf.update(**saved)
    reset_broker_connections()


def hidden(html: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', html).group(1)


def answer_hit(client, html: str, **headers) -> tuple[int, str]:
    """Answer every question of the HIT on the page, as a careful judge (challenges passed); the last
    response's status and page."""
    assignment = hidden(html, "assignment")
    status = 0
    for _ in range(HitSlot.objects.filter(hit__assignments=assignment).count()):
        position = hidden(html, "position")
        slot = HitSlot.objects.get(hit__assignments=assignment, position=position)
        side = "right" if slot.is_challenge and slot.expected_winner_id == slot.right_id else "left"
        data = {"kind": "hit", "assignment": assignment, "position": position, "side": side}
        response = client.post("/judge/answer/", data, **headers)
        status = response.status_code
        if status == 303:
            html = client.get(response["Location"]).content.decode()
        else:
            html = response.content.decode()
    return status, html


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("headers", [{}, {"HTTP_X_TOPPREF_NEXT": "1"}], ids=["form", "one-request"])
def test_with_the_broker_down_a_stored_answer_succeeds_and_the_sweep_closes_the_round(
    client, caplog, headers, request
):
    crowd_campaign()  # one topic, 15 pairs in two HITs
    client.force_login(user_with_role("cat", "crowd"))
    session = client.session
    session[INSTRUCTIONS_SEEN] = True
    session.save()
    answer_hit(client, client.get("/judge/next/").content.decode())  # the first HIT, broker up (eager)
    assert Assignment.objects.filter(status=Assignment.Status.ACCEPTED).count() == 1
    html = client.get("/judge/next/").content.decode()

    request.getfixturevalue("broker_down")
    with caplog.at_level(logging.WARNING, logger="toppref.enqueue"):
        status, _ = answer_hit(client, html, **headers)  # its last answer completes the round

    assert status == (200 if headers else 303)
    assert Judgment.objects.count() == HitSlot.objects.count()  # every question of both HITs stored
    assert Assignment.objects.filter(status="accepted").count() == 2
    assert "round_close_if_complete_task" in caplog.text and "sweep" in caplog.text
    round = Round.objects.get(number=1)
    assert round.closed_at is None  # complete, left open by the lost enqueue

    request.getfixturevalue("broker_down")  # (still down: the sweep itself runs in-process)
    app.conf.update(task_always_eager=True)
    campaign_advance_running()

    round.refresh_from_db()
    assert round.closed_at is not None


@pytest.mark.django_db
def test_the_sweep_costs_the_same_number_of_queries_however_much_the_campaign_did():
    # two stage-1 topics (30 candidates each: several rounds) and a stage-2 one
    grades = {"1_1": graded_pool("a", 30), "1_2": graded_pool("b", 30), "1_3": graded_pool("c", 6)}
    values = {docid: 100.0 - int(docid[3:]) for pool in grades.values() for docid in pool}
    campaign = crowd_campaign(grades=grades)
    with CaptureQueriesContext(connection) as at_start:
        counts = campaign_advance(campaign=campaign)
    assert not any(counts.values())

    closed = 0
    for _ in range(2):  # several rounds judged and closed, their HITs built
        for round in Round.objects.filter(campaign_topic__campaign=campaign, closed_at__isnull=True):
            judge_round(round, by_value(values))
        closed += campaign_advance(campaign=campaign)["rounds_closed"]
    assert closed >= 4 and Campaign.objects.get(pk=campaign.pk).status == Campaign.Status.RUNNING
    with CaptureQueriesContext(connection) as later:
        counts = campaign_advance(campaign=campaign)

    assert not any(counts.values())
    assert len(later) == len(at_start)

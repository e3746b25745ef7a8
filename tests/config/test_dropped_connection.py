"""A database connection dropped in the middle of a request (``pg_terminate_backend``, as a PostgreSQL
restart or a proxy would): a pair page or an answer runs once more on a fresh connection, and the judge never
sees a 500; an answer is stored once. Without the retry the same fault is an error."""

from __future__ import annotations

import re

import psycopg
import pytest
from django.db import OperationalError, connection

from judging.models import Judgment
from judging.views.judge import INSTRUCTIONS_SEEN
from tests.judging.pages_fixtures import crowd_campaign, user_with_role

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="terminates a PostgreSQL backend")
RETRY = "config.middleware.DroppedConnectionRetryMiddleware"


def terminate_before(sql_start: str):
    """An execute wrapper that, before the first statement starting with ``sql_start``, has PostgreSQL
    terminate this connection's backend (from a second connection), then lets the statement run into it."""
    done = []

    def wrapper(execute, sql, params, many, context):
        if not done and sql.startswith(sql_start):
            done.append(sql)
            pid = context["connection"].connection.info.backend_pid
            settings = connection.get_connection_params()
            with psycopg.connect(**settings, autocommit=True) as other:
                other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        return execute(sql, params, many, context)

    return wrapper, done


def judge(client):
    crowd_campaign()
    client.force_login(user_with_role("cat", "crowd"))
    session = client.session
    session[INSTRUCTIONS_SEEN] = True
    session.save()
    return client.get("/judge/next/").content.decode()


def answer_data(html: str) -> dict[str, str]:
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))
    return {**fields, "side": "left", "ms": "1200"}


@pytest.mark.django_db(transaction=True)
def test_a_pair_page_whose_connection_is_terminated_mid_request_is_served(client):
    first = judge(client)
    wrapper, done = terminate_before("SELECT s.position")  # the question, late in the page

    with connection.execute_wrapper(wrapper):
        page = client.get("/judge/next/")

    assert done and page.status_code == 200 and 'id="pair-form"' in page.content.decode()
    assert answer_data(page.content.decode())["position"] == answer_data(first)["position"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "when",
    ['INSERT INTO "judging_judgment"', "SELECT s.position"],
    ids=["inside-the-answer-transaction", "after-the-answer-committed"],
)
def test_an_answer_whose_connection_is_terminated_is_stored_once_and_succeeds(client, when):
    html = judge(client)
    wrapper, done = terminate_before(when)

    with connection.execute_wrapper(wrapper):
        response = client.post("/judge/answer/", answer_data(html), HTTP_X_TOPPREF_NEXT="1")

    assert done and response.status_code == 200 and "1 of 13 answered" in response.content.decode()
    assert Judgment.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_without_the_retry_the_same_fault_is_an_error(client, settings):
    settings.MIDDLEWARE = [name for name in settings.MIDDLEWARE if name != RETRY]
    judge(client)
    wrapper, done = terminate_before("SELECT s.position")

    with connection.execute_wrapper(wrapper), pytest.raises(OperationalError):
        client.get("/judge/next/")
    assert done
    connection.close()  # as Django does at the end of a request that failed so

"""One request per answer: an answer POST with ``X-Toppref-Next: 1`` stores the answer and answers 200 with the
next page's HTML (what its 303's target renders; a judge's next pair as its title and #judge block, all the
page's script keeps) and ``X-Toppref-Location``; without the header the POST still
answers 303; refusals keep their status. The pair page and the answer path stay within a few queries."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from judging.models import Assignment, Campaign, HitSlot, Judgment, Worker
from judging.views.judge import INSTRUCTIONS_SEEN
from tests.judging.pages_fixtures import crowd_campaign, mturk_query, tournament_campaign, user_with_role

NEXT = {"HTTP_X_TOPPREF_NEXT": "1"}


def hidden(html: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', html).group(1)


def title_and_judge_block(html: str) -> tuple[str, str]:
    """What the pair page's script keeps of a page: its title and the content of its #judge block."""
    title = re.search(r"<title>(.*?)</title>", html, re.S).group(1)
    block = re.search(r'<div id="judge">(.*)</div>\s*</(?:main|body)>', html, re.S).group(1)
    return title, block


def logged_in(client: Client, user) -> Client:
    client.force_login(user)
    session = client.session
    session[INSTRUCTIONS_SEEN] = True
    session.save()
    return client


def hit_answer_data(html: str, side: str | None = None) -> dict[str, str]:
    """The answer to the question on the page: ``side``, else a careful judge's (challenges passed)."""
    assignment, position = hidden(html, "assignment"), hidden(html, "position")
    if side is None:
        slot = HitSlot.objects.get(hit__assignments=assignment, position=position)
        side = "right" if slot.is_challenge and slot.expected_winner_id == slot.right_id else "left"
    return {"kind": "hit", "assignment": assignment, "position": position, "side": side}


@pytest.mark.django_db
def test_a_crowd_answer_with_the_header_returns_the_next_pair_in_one_request(client):
    crowd_campaign()
    client = logged_in(client, user_with_role("cat", "crowd"))
    html = client.get("/judge/next/").content.decode()

    response = client.post("/judge/answer/", hit_answer_data(html), **NEXT)

    page = response.content.decode()
    assert response.status_code == 200 and response["X-Toppref-Location"] == "/judge/next/"
    assert "1 of 13 answered" in page and Judgment.objects.count() == 1
    # what the 303's target renders for the script to keep (title, #judge block), apart from the fresh signed
    # time stamp and CSRF mask; the page around it (header, log-out form) is not sent again
    stamp = re.compile(r'name="(shown|csrfmiddlewaretoken)" value="[^"]*"')
    target = client.get("/judge/next/").content.decode()
    assert title_and_judge_block(stamp.sub("", page)) == title_and_judge_block(stamp.sub("", target))
    assert "Log out" in target and "Log out" not in page and page.count("csrfmiddlewaretoken") == 1


@pytest.mark.django_db
def test_without_the_header_the_form_keeps_its_303_and_refusals_keep_their_status(client):
    crowd_campaign()
    client = logged_in(client, user_with_role("cat", "crowd"))
    html = client.get("/judge/next/").content.decode()

    plain = client.post("/judge/answer/", hit_answer_data(html))
    refused = client.post("/judge/answer/", {**hit_answer_data(html), "side": "middle"}, **NEXT)

    assert plain.status_code == 303 and plain["Location"] == "/judge/next/"
    assert "X-Toppref-Location" not in plain
    assert refused.status_code == 400 and "X-Toppref-Location" not in refused
    assert "That answer was not understood." in refused.content.decode()


@pytest.mark.django_db
def test_the_last_answer_of_a_hit_brings_the_next_hit_or_nothing_left(client):
    crowd_campaign()
    client = logged_in(client, user_with_role("cat", "crowd"))
    html = client.get("/judge/next/").content.decode()
    for _ in range(13):
        response = client.post("/judge/answer/", hit_answer_data(html), **NEXT)
        assert response.status_code == 200
        html = response.content.decode()

    # the first HIT counted, and the response already shows the next HIT's first question
    assert Assignment.objects.filter(status=Assignment.Status.ACCEPTED).count() == 1
    assert re.search(r"HIT: 0 of \d+ answered", html)


@pytest.mark.django_db
def test_a_tournament_answer_with_the_header_returns_the_next_pair(client):
    tournament_campaign()
    client = logged_in(client, user_with_role("ann", "assessors"))
    html = client.get("/judge/next/").content.decode()
    data = {name: hidden(html, name) for name in ("kind", "topic", "left", "right")}

    response = client.post("/judge/answer/", {**data, "side": "left"}, **NEXT)

    assert response.status_code == 200 and response["X-Toppref-Location"] == "/judge/next/"
    assert "1 judged" in response.content.decode()


@pytest.mark.django_db
def test_an_external_hit_answer_with_the_header_returns_the_hit_page_with_its_token(client):
    campaign = crowd_campaign(provider=Campaign.Provider.MTURK)
    hit = campaign.hits.first()
    html = client.get(f"/hits/{hit.public_id}/", {**mturk_query(hit), "begin": "1"}).content.decode()
    url = f"/hits/{hit.public_id}/answer/"

    for number in range(13):
        response = client.post(
            url,
            {"token": hidden(html, "token"), "position": hidden(html, "position"), "side": "left"},
            **NEXT,
        )
        assert response.status_code == 200, response.content
        assert response["X-Toppref-Location"].startswith(f"/hits/{hit.public_id}/?token=")
        html = response.content.decode()
        if number < 12:
            assert f"{number + 1} of 13 answered" in html

    # the last answer brings the page that submits the HIT
    assert client.get(response["X-Toppref-Location"]).content.decode().count("submit") >= 1
    assert Judgment.objects.count() == 13 and "/submit/" in html


@pytest.mark.django_db
def test_a_crowd_answer_in_a_held_hit_costs_at_most_twelve_queries_with_its_next_pair(
    client, django_assert_max_num_queries
):
    # given a judge halfway through a HIT
    crowd_campaign()
    client = logged_in(client, user_with_role("cat", "crowd"))
    html = client.get("/judge/next/").content.decode()
    html = client.post("/judge/answer/", hit_answer_data(html), **NEXT).content.decode()
    data = hit_answer_data(html)

    # when they answer: user, roles, the assignment with its slot (one statement), BEGIN, the worker, HIT and
    # assignment locks (on PostgreSQL; one read on SQLite, where the session is read too without REDIS_URL),
    # the stored answer with the HIT's unanswered slots, the insert, COMMIT, the held assignment (without the
    # worker's lock) and its next question
    with django_assert_max_num_queries(12):
        response = client.post("/judge/answer/", data, **NEXT)

    # then the answer is stored and the next question shown
    assert response.status_code == 200 and "2 of 13 answered" in response.content.decode()
    assert Judgment.objects.count() == 2


@pytest.mark.django_db
def test_the_held_hit_page_shows_the_same_question_and_an_excluded_worker_gets_none(client):
    # given a judge holding a HIT
    crowd_campaign()
    user = user_with_role("cat", "crowd")
    client = logged_in(client, user)
    first = client.get("/judge/next/").content.decode()
    stamp = re.compile(r'name="(shown|csrfmiddlewaretoken)" value="[^"]*"')

    # when they ask again, then excluded, ask once more
    again = client.get("/judge/next/").content.decode()
    Worker.objects.filter(user=user).update(is_excluded=True)
    refused = client.get("/judge/next/")

    # then the same question (the held HIT read without the lock), and no pair for an excluded worker
    assert stamp.sub("", again) == stamp.sub("", first)
    assert refused.status_code == 403 and 'id="pair-form"' not in refused.content.decode()
    assert "Thank you for your work" in refused.content.decode()

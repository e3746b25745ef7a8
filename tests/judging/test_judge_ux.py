"""The judge side of a first hour and of a long session, through the pages (Django's test client): the login
lands each person where their work is, the page after a HIT's last answer says it was submitted (with the
form alone too, once), the undo view takes back one answer and refuses what counts already, the start page
counts in words, and the answer path keeps its queries."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from judging.models import Assignment, Correction, Judgment, TournamentJudgment
from tests.judging.pages_fixtures import PASSWORD, crowd_campaign, tournament_campaign, user_with_role
from tests.judging.test_one_request_per_answer import NEXT, hidden, hit_answer_data, logged_in


def log_in(client, username: str, next_url: str | None = None):
    data = {"username": username, "password": PASSWORD}
    url = "/accounts/login/" + (f"?next={next_url}" if next_url else "")
    return client.post(url, {**data, **({"next": next_url} if next_url else {})})


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("username", "group", "staff", "landing"),
    [
        ("rita", "researchers", False, "/dashboard/"),
        ("admin", None, True, "/dashboard/"),
        ("ann", "assessors", False, "/judge/"),
        ("cat", "crowd", False, "/judge/"),
        ("nobody", None, False, "/judge/"),
    ],
)
def test_the_login_lands_each_person_where_their_work_is(client, username, group, staff, landing):
    user = user_with_role(username, group)
    get_user_model().objects.filter(pk=user.pk).update(is_staff=staff)

    response = log_in(client, username)

    assert response.status_code == 302 and response["Location"] == landing


@pytest.mark.django_db
def test_a_safe_next_wins_and_another_sites_next_does_not(client):
    user_with_role("rita", "researchers")

    assert log_in(client, "rita", "/judge/instructions/")["Location"] == "/judge/instructions/"
    client.post("/accounts/logout/")
    assert log_in(client, "rita", "https://example.org/")["Location"] == "/dashboard/"


@pytest.mark.django_db
def test_the_hit_end_is_said_once_after_the_forms_last_answer(client):
    # Given a crowd judge answering a whole HIT with the plain form (no script: 303 after each answer)
    crowd_campaign()
    client = logged_in(client, user_with_role("cat", "crowd"))
    html = client.get("/judge/next/").content.decode()
    for _ in range(13):
        response = client.post("/judge/answer/", hit_answer_data(html))
        assert response.status_code == 303 and response["Location"] == "/judge/next/"
        html = client.get("/judge/next/").content.decode()
    # Then the page after the last answer says so, and the one after that no more
    assert re.search(r"HIT submitted: 1 done today\. Next: a new HIT of \d+ pairs\.", html)
    assert re.search(r"HIT: 0 of \d+ answered", html)
    assert "HIT submitted" not in client.get("/judge/next/").content.decode()
    assert Assignment.objects.filter(status=Assignment.Status.ACCEPTED).count() == 1


@pytest.mark.django_db
def test_the_undo_view_takes_back_one_answer_and_refuses_an_earlier_one(client):
    crowd_campaign()
    client = logged_in(client, user_with_role("cat", "crowd"))
    html = client.get("/judge/next/").content.decode()
    for _ in range(2):
        html = client.post("/judge/answer/", hit_answer_data(html), **NEXT).content.decode()
    first, second = Judgment.objects.order_by("pk")
    assert f'name="judgment" value="{second.pk}"' in html
    form = {name: hidden(html, name) for name in ("kind", "assignment", "position")}

    undone = client.post("/judge/undo/", {**form, "judgment": second.pk}, **NEXT)
    again = client.post("/judge/undo/", {**form, "judgment": second.pk}, **NEXT)
    earlier = client.post("/judge/undo/", {**form, "judgment": first.pk + 999})

    assert undone.status_code == 200 and "Answer taken back: choose again." in undone.content.decode()
    assert "HIT: 1 of 13 answered" in undone.content.decode()
    assert again.status_code == 200 and earlier.status_code == 409
    assert Correction.objects.count() == 1 and list(Judgment.objects.all()) == [first]


@pytest.mark.django_db
def test_a_tournament_page_offers_undo_only_right_after_the_answer_and_marks_read_passages(client):
    tournament_campaign()
    client = logged_in(client, user_with_role("ann", "assessors"))
    html = client.get("/judge/next/").content.decode()
    assert 'id="undo"' not in html and "read in an earlier pair" not in html
    for _ in range(4):
        data = {name: hidden(html, name) for name in ("kind", "topic", "left", "right")}
        html = client.post("/judge/answer/", {**data, "side": "left"}, **NEXT).content.decode()
    judgment = TournamentJudgment.objects.order_by("-pk").first()
    assert f'name="judgment" value="{judgment.pk}"' in html
    assert "read in an earlier pair" in html  # a winner comes back
    assert 'id="undo"' not in client.get("/judge/next/").content.decode()  # a later visit: not offered


@pytest.mark.django_db
def test_the_start_page_counts_in_words(client):
    tournament_campaign()
    client = logged_in(client, user_with_role("ann", "assessors"))

    html = client.get("/judge/").content.decode()

    assert "1 tournament topic<" in html and "tournament topics" not in html

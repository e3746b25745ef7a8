"""Judging pages through Django's test client against the real database: roles, the pair page, answers
(stored once, with side and time), instructions once, external HIT pages with signed tokens, and every
refusal listed for the external pages (4xx, nothing changed)."""

from __future__ import annotations

import re

import pytest
from django.core import signing
from django.test import Client
from django.urls import reverse

from judging.models import Assignment, Campaign, Hit, HitSlot, Judgment, TournamentJudgment, Worker
from judging.services import assignment_confirm, hit_build
from judging.views.judge import INSTRUCTIONS_SEEN
from judging.views.tokens import SALT, token_make
from tests.judging.pages_fixtures import (
    MTURK_SUBMIT,
    crowd_campaign,
    mturk_query,
    tournament_campaign,
    user_with_role,
)


def logged_in(client: Client, user, *, seen: bool = True) -> Client:
    client.force_login(user)
    if seen:
        session = client.session
        session[INSTRUCTIONS_SEEN] = True
        session.save()
    return client


def hidden(html: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', html).group(1)


def snapshot():
    return (
        Judgment.objects.count(),
        TournamentJudgment.objects.count(),
        list(Assignment.objects.order_by("pk").values_list("status", "completion_code", "external_id")),
        Worker.objects.filter(is_excluded=True).count(),
    )


# --- logged-in judges ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_judge_pages_need_a_login(client):
    response = client.get("/judge/next/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


@pytest.mark.django_db
def test_assessor_answers_tournament_pair_with_side_and_milliseconds(client):
    tournament_campaign()
    client = logged_in(client, user_with_role("ann", "assessors"))

    page = client.get("/judge/next/")

    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="kind" value="tournament"' in html
    response = client.post(
        "/judge/answer/",
        {
            "kind": "tournament",
            "topic": hidden(html, "topic"),
            "left": hidden(html, "left"),
            "right": hidden(html, "right"),
            "side": "right",
            "ms": "1234",
        },
    )
    assert response.status_code == 303 and response["Location"] == "/judge/next/"
    judgment = TournamentJudgment.objects.get()
    assert judgment.winner_id == int(hidden(html, "right"))
    assert (judgment.winner_side, judgment.milliseconds) == ("right", 1234)


@pytest.mark.django_db
def test_double_answer_of_a_tournament_pair_counts_once(client):
    tournament_campaign()
    client = logged_in(client, user_with_role("ann", "assessors"))
    html = client.get("/judge/next/").content.decode()
    data = {k: hidden(html, k) for k in ("kind", "topic", "left", "right")}

    client.post("/judge/answer/", {**data, "side": "left"})
    client.post("/judge/answer/", {**data, "side": "right"})

    judgment = TournamentJudgment.objects.get()
    assert judgment.winner_id == int(data["left"])


@pytest.mark.django_db
def test_crowd_user_answers_hit_questions_and_progress_moves(client):
    crowd_campaign()
    client = logged_in(client, user_with_role("cat", "crowd"))

    html = client.get("/judge/next/").content.decode()
    assert "0 of 13 answered" in html
    position = hidden(html, "position")
    client.post(
        "/judge/answer/",
        {"kind": "hit", "assignment": hidden(html, "assignment"), "position": position, "side": "left"},
    )

    judgment = Judgment.objects.get()
    assert (judgment.slot.position, judgment.winner_side, judgment.milliseconds) == (
        int(position),
        "left",
        None,
    )
    assert "1 of 13 answered" in client.get("/judge/next/").content.decode()


@pytest.mark.django_db
def test_crowd_user_cannot_reach_a_tournament_and_assessor_cannot_answer_a_hit(client):
    campaign = tournament_campaign()
    crowd_campaign()
    assessor, crowd = user_with_role("ann", "assessors"), user_with_role("cat", "crowd")
    assessor_page = logged_in(Client(), assessor).get("/judge/next/").content.decode()
    crowd_page = logged_in(Client(), crowd).get("/judge/next/").content.decode()
    before = snapshot()

    as_crowd = logged_in(Client(), crowd).post(
        "/judge/answer/",
        {
            "kind": "tournament",
            "side": "left",
            **{k: hidden(assessor_page, k) for k in ("topic", "left", "right")},
        },
    )
    as_assessor = logged_in(Client(), assessor).post(
        "/judge/answer/",
        {"kind": "hit", "side": "left", **{k: hidden(crowd_page, k) for k in ("assignment", "position")}},
    )

    assert (as_crowd.status_code, as_assessor.status_code) == (403, 403)
    assert snapshot() == before
    assert campaign.campaign_topics.get().tournament_judgments.count() == 0


@pytest.mark.django_db
def test_an_answer_naming_an_item_of_another_collection_or_a_slot_not_in_the_hit_is_not_found(client):
    from pools.models import Collection, Item

    # given an assessor's pair and a crowd judge's pair, and an item of another collection
    tournament_campaign()
    crowd_campaign(name="crowd-b")
    assessor_page = (
        logged_in(Client(), user_with_role("ann", "assessors")).get("/judge/next/").content.decode()
    )
    crowd = logged_in(client, user_with_role("cat", "crowd"))
    crowd_page = crowd.get("/judge/next/").content.decode()
    stranger = Item.objects.create(
        collection=Collection.objects.create(name="elsewhere"), docid="x", text="x"
    )
    before = snapshot()

    # when each answer names what is not theirs to answer
    wrong_items = [
        logged_in(Client(), user_with_role(f"ann{n}", "assessors")).post(
            "/judge/answer/",
            {
                "kind": "tournament",
                "side": "left",
                "topic": hidden(assessor_page, "topic"),
                "left": left,
                "right": right,
            },
        )
        for n, (left, right) in enumerate(
            [(stranger.pk, hidden(assessor_page, "right")), (hidden(assessor_page, "left"), stranger.pk)]
        )
    ]
    wrong_slot = crowd.post(
        "/judge/answer/",
        {"kind": "hit", "side": "left", "assignment": hidden(crowd_page, "assignment"), "position": 999},
    )

    # then nothing is found and nothing changes
    assert [response.status_code for response in [*wrong_items, wrong_slot]] == [404, 404, 404]
    assert snapshot() == before


@pytest.mark.django_db
def test_crowd_user_cannot_answer_another_users_assignment(client):
    crowd_campaign()
    owner_page = logged_in(Client(), user_with_role("cat", "crowd")).get("/judge/next/").content.decode()
    before = snapshot()

    response = logged_in(client, user_with_role("dan", "crowd")).post(
        "/judge/answer/",
        {"kind": "hit", "side": "left", **{k: hidden(owner_page, k) for k in ("assignment", "position")}},
    )

    assert response.status_code == 404 and snapshot() == before


@pytest.mark.django_db
def test_instructions_come_once_before_the_first_pair(client):
    tournament_campaign()
    client = logged_in(client, user_with_role("ann", "assessors"), seen=False)

    first = client.get("/judge/next/")
    assert first.status_code == 302 and first["Location"] == "/judge/instructions/?first=1"
    page = client.get(first["Location"]).content.decode()
    for criterion in ("best answers the question", "less extraneous information", "better-formatted"):
        assert criterion in page
    assert page.index("best answers") < page.index("less extraneous") < page.index("better-formatted")
    assert client.post("/judge/instructions/")["Location"] == "/judge/next/"
    assert client.get("/judge/next/").status_code == 200


@pytest.mark.django_db
def test_nothing_left_to_judge_is_a_200_page(client):
    client = logged_in(client, user_with_role("ann", "assessors"))
    response = client.get("/judge/next/")
    assert response.status_code == 200 and b"Nothing left to judge" in response.content


@pytest.mark.django_db
def test_researcher_without_judging_role_is_refused(client):
    client = logged_in(client, user_with_role("rita", "researchers"))
    assert client.get("/judge/next/").status_code == 403


@pytest.mark.django_db
def test_logged_in_forms_need_the_csrf_token():
    tournament_campaign()
    client = Client(enforce_csrf_checks=True)
    logged_in(client, user_with_role("ann", "assessors"))
    response = client.post("/judge/answer/", {"kind": "tournament", "side": "left"})
    assert response.status_code == 403 and TournamentJudgment.objects.count() == 0


# --- passages are inert text ------------------------------------------------------------------------------

HOSTILE = {
    "x-script": "<script>alert(1)</script> tail",
    "x-img": '<img src=x onerror="alert(2)">',
    "x-area": "</textarea><b>bold</b>",
    "x-link": '<a href="javascript:alert(3)">click</a>',
    "x-long": "w" * 10_000,
    "x-ok": "plain",
}


@pytest.mark.django_db
def test_hostile_passages_render_escaped_on_the_pair_page(client):
    from pools.models import Item

    campaign = tournament_campaign(grades={"3_1": {docid: 3 for docid in HOSTILE}})
    for docid, text in HOSTILE.items():
        Item.objects.filter(collection=campaign.collection, docid=docid).update(text=text)
    client = logged_in(client, user_with_role("ann", "assessors"))
    seen = ""
    for _ in range(12):
        html = client.get("/judge/next/").content.decode()
        if "Nothing left" in html:
            break
        seen += html
        client.post(
            "/judge/answer/",
            {"side": "left", **{k: hidden(html, k) for k in ("kind", "topic", "left", "right")}},
        )
    for raw in ("<script>alert", "<img src=x", "</textarea><b>", '<a href="javascript'):
        assert raw not in seen
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in seen and "w" * 10_000 in seen


# --- headers ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_page_denies_framing_and_inline_script_except_hit_pages_which_mturk_may_frame(client, settings):
    settings.TOPPREF_FRAME_ANCESTORS = ["http://127.0.0.1:8123"]
    campaign = crowd_campaign(provider=Campaign.Provider.MTURK)
    hit = campaign.hits.first()
    for url in ("/accounts/login/", "/judge/instructions/", "/admin/login/", "/"):
        response = client.get(url)
        assert response["X-Frame-Options"] == "DENY", url
        assert "frame-ancestors 'none'" in response["Content-Security-Policy"], url
        assert "script-src 'self';" in response["Content-Security-Policy"]

    response = client.get(f"/hits/{hit.public_id}/", {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"})

    assert response.status_code == 200 and "X-Frame-Options" not in response
    policy = response["Content-Security-Policy"]
    assert (
        "frame-ancestors https://worker.mturk.com https://workersandbox.mturk.com https://www.mturk.com http://127.0.0.1:8123"
        in policy
    )
    assert "'unsafe-inline'" not in policy and "script-src 'self';" in policy


# --- external HIT pages ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_mturk_preview_shows_instructions_and_example_only(client):
    campaign = crowd_campaign(provider=Campaign.Provider.MTURK)
    hit = campaign.hits.first()
    real_texts = list(HitSlot.objects.filter(hit=hit).values_list("left__text", flat=True))

    response = client.get(
        f"/hits/{hit.public_id}/", {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "HIT1"}
    )

    html = response.content.decode()
    assert response.status_code == 200 and "Preview" in html and "best answers the question" in html
    assert 'name="token"' not in html
    assert Assignment.objects.count() == 0 and Worker.objects.count() == 0
    assert not any(text and text in html for text in real_texts)


def accept(client: Client, hit: Hit, **query) -> str:
    response = client.get(f"/hits/{hit.public_id}/", {**mturk_query(hit, **query), "begin": "1"})
    assert response.status_code == 200, response.content
    return response.content.decode()


def answer_all(client: Client, hit: Hit, html: str, *, side_of=lambda position: "left") -> str:
    url = f"/hits/{hit.public_id}/answer/"
    while 'name="position"' in html:
        position = int(hidden(html, "position"))
        response = client.post(
            url,
            {"token": hidden(html, "token"), "position": position, "side": side_of(position), "ms": "900"},
        )
        assert response.status_code == 303
        html = client.get(response["Location"]).content.decode()
    return html


@pytest.mark.django_db
def test_mturk_worker_accepts_answers_and_submits(client, settings):
    campaign = crowd_campaign(provider=Campaign.Provider.MTURK)
    hit = campaign.hits.first()

    html = answer_all(client, hit, accept(client, hit))

    assignment = Assignment.objects.get()
    assert (assignment.external_id, assignment.worker.external_id) == ("ASSIGN1", "AWORKER1")
    assert (
        assignment.submitted_at is not None and Judgment.objects.filter(assignment=assignment).count() == 13
    )
    assert set(Judgment.objects.values_list("milliseconds", flat=True)) == {900}
    response = client.post(f"/hits/{hit.public_id}/submit/", {"token": hidden(html, "token")})
    page = response.content.decode()
    assert response.status_code == 200
    assert f'action="{MTURK_SUBMIT}/mturk/externalSubmit"' in page
    assert 'name="assignmentId" value="ASSIGN1"' in page
    assignment.refresh_from_db()
    assert assignment.completion_code


@pytest.mark.django_db
def test_reload_loses_nothing_and_counts_nothing_twice(client):
    campaign = crowd_campaign(provider=Campaign.Provider.MTURK)
    hit = campaign.hits.first()
    html = accept(client, hit)
    token, position = hidden(html, "token"), hidden(html, "position")
    client.post(f"/hits/{hit.public_id}/answer/", {"token": token, "position": position, "side": "left"})
    # the back button re-posts the same question with the other side; a reload re-opens the MTurk URL
    client.post(f"/hits/{hit.public_id}/answer/", {"token": token, "position": position, "side": "right"})
    reloaded = accept(client, hit)

    judgment = Judgment.objects.get()
    assert judgment.winner_side == "left"
    assert "1 of 13 answered" in reloaded and Assignment.objects.count() == 1


@pytest.mark.django_db
def test_failed_challenge_excludes_the_worker_who_is_still_paid_and_sees_a_polite_page(client):
    campaign = crowd_campaign(
        provider=Campaign.Provider.MTURK,
        grades={"1_1": {**{f"a-r{i}": 3 for i in range(6)}, "a-n0": 0, "a-n1": 0}},
    )
    hit = campaign.hits.order_by("number").first()
    slots = {slot.position: slot for slot in HitSlot.objects.filter(hit=hit)}

    def wrong_on_challenges(position):
        slot = slots[position]
        if slot.is_challenge:
            return "right" if slot.expected_winner_id == slot.left_id else "left"
        return "left"

    answer_all(client, hit, accept(client, hit), side_of=wrong_on_challenges)
    # Nothing is judged of a claim MTurk has not confirmed (the worker id may be forged).
    assert Assignment.objects.get().status == Assignment.Status.SUBMITTED
    assert not Worker.objects.get(external_id="AWORKER1").is_excluded
    assignment_confirm(assignment=Assignment.objects.get())  # MTurk lists it: what crowd_sync does

    assignment = Assignment.objects.get()
    assert assignment.status == Assignment.Status.DISCARDED and assignment.earned_usd is not None
    assert Worker.objects.get(external_id="AWORKER1").is_excluded
    pairs = set(HitSlot.objects.filter(hit=hit, pair__isnull=False).values_list("pair_id", flat=True))
    hit_build(campaign=campaign)  # what the task queued on commit does
    requeued = Hit.objects.filter(campaign=campaign, slots__pair_id__in=pairs).exclude(pk=hit.pk)
    assert requeued.exists()
    again = client.get(
        f"/hits/{requeued.first().public_id}/", mturk_query(requeued.first(), assignment="ASSIGN2")
    )
    assert again.status_code == 403 and b"Thank you" in again.content
    assert Assignment.objects.count() == 1


@pytest.mark.django_db
def test_refusals_of_the_external_pages_change_nothing(client, settings):
    settings.TOPPREF_HIT_TOKEN_MAX_AGE = 3600
    campaign = crowd_campaign(provider=Campaign.Provider.MTURK, grades={"1_1": graded_pool_for_two_hits()})
    hit, other_hit = campaign.hits.order_by("number")[:2]
    html = accept(client, hit)
    token = hidden(html, "token")
    position = hidden(html, "position")
    other_html = accept(Client(), other_hit, worker="AOTHER", assignment="ASSIGN9")
    other_token = hidden(other_html, "token")
    before = snapshot()
    answer_url = f"/hits/{hit.public_id}/answer/"
    payload = signing.loads(token, salt=SALT)
    expired = signing.dumps(payload, salt=SALT, compress=True)
    settings.TOPPREF_HIT_TOKEN_MAX_AGE = -1  # every token is now too old

    assert (
        client.post(answer_url, {"token": expired, "position": position, "side": "left"}).status_code == 403
    )
    settings.TOPPREF_HIT_TOKEN_MAX_AGE = 3600
    forged = token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB")
    not_signed = token_make(
        assignment_id=payload["a"], worker_id=payload["w"], hit_public_id=payload["h"], provider="mturk"
    ).replace(":", ";")
    responses = {
        "forged": client.post(answer_url, {"token": forged, "position": position, "side": "left"}),
        "garbage": client.post(answer_url, {"token": not_signed, "position": position, "side": "left"}),
        "other HIT's token": client.post(
            answer_url, {"token": other_token, "position": position, "side": "left"}
        ),
        "question not in HIT": client.post(answer_url, {"token": token, "position": 99, "side": "left"}),
        "no side": client.post(answer_url, {"token": token, "position": position}),
        "cross-site": client.post(
            answer_url,
            {"token": token, "position": position, "side": "left"},
            HTTP_ORIGIN="https://evil.example",
        ),
        "another worker's assignment id": client.get(
            f"/hits/{hit.public_id}/", mturk_query(hit, worker="AINTRUDER")
        ),
        "turkSubmitTo outside the allow-list": client.get(
            f"/hits/{hit.public_id}/", mturk_query(hit, submit="https://evil.example")
        ),
        "bad worker id": client.get(f"/hits/{hit.public_id}/", mturk_query(hit, worker="worker1")),
        "duplicated worker id": client.get(
            f"/hits/{hit.public_id}/?assignmentId=ASSIGN1&hitId=HIT1&workerId=AWORKER1&workerId=AWORKER2&turkSubmitTo={MTURK_SUBMIT}"
        ),
        "submit before the last answer": client.post(f"/hits/{hit.public_id}/submit/", {"token": token}),
    }

    assert {name: r.status_code for name, r in responses.items() if not 400 <= r.status_code < 500} == {}
    assert snapshot() == before


def graded_pool_for_two_hits():
    return {**{f"a-r{i}": 3 for i in range(7)}, "a-n0": 0, "a-n1": 0}


@pytest.mark.django_db
def test_turk_submit_to_may_name_a_configured_origin(client, settings):
    settings.TOPPREF_MTURK_SUBMIT_HOSTS = ["http://127.0.0.1:8123"]
    hit = crowd_campaign(provider=Campaign.Provider.MTURK).hits.first()
    html = accept(client, hit, submit="http://127.0.0.1:8123/")
    assert 'name="position"' in html
    assert (
        "http://127.0.0.1:8123"
        in client.get(f"/hits/{hit.public_id}/", mturk_query(hit))["Content-Security-Policy"]
    )


@pytest.mark.django_db
def test_replayed_final_submit_is_refused(client):
    hit = crowd_campaign(provider=Campaign.Provider.MTURK).hits.first()
    html = answer_all(client, hit, accept(client, hit))
    token = hidden(html, "token")
    assert client.post(f"/hits/{hit.public_id}/submit/", {"token": token}).status_code == 200
    before = snapshot()

    replay = client.post(f"/hits/{hit.public_id}/submit/", {"token": token})

    assert replay.status_code == 409 and snapshot() == before


PROLIFIC_PID = "5f1e2d3c4b5a69788796a5b4"


@pytest.mark.django_db
def test_prolific_participant_gets_the_same_hit_on_reload_and_a_code_after_checking(client):
    campaign = crowd_campaign(provider=Campaign.Provider.PROLIFIC)
    Campaign.objects.filter(pk=campaign.pk).update(provider_state={"completion_code": "C0DE42"})
    query = {"PROLIFIC_PID": PROLIFIC_PID, "STUDY_ID": "a" * 24, "SESSION_ID": "b" * 24}
    entry = f"/hits/campaign/{campaign.public_id}/"

    first, second = client.get(entry, query), client.get(entry, query)

    assert first.status_code == 303 and second.status_code == 303
    assert first["Location"].split("?")[0] == second["Location"].split("?")[0]
    hit = Hit.objects.get(public_id=first["Location"].split("/")[2])
    html = answer_all(client, hit, client.get(first["Location"] + "&begin=1").content.decode())
    assert Assignment.objects.get().completion_code == ""
    response = client.post(f"/hits/{hit.public_id}/submit/", {"token": hidden(html, "token")})
    assert response.status_code == 303
    assert response["Location"] == "https://app.prolific.com/submissions/complete?cc=C0DE42"
    assert Assignment.objects.get().completion_code == "C0DE42"


@pytest.mark.django_db
def test_prolific_ids_are_validated(client):
    campaign = crowd_campaign(provider=Campaign.Provider.PROLIFIC)
    response = client.get(
        f"/hits/campaign/{campaign.public_id}/",
        {"PROLIFIC_PID": "not-an-id", "STUDY_ID": "s", "SESSION_ID": "x"},
    )
    assert response.status_code == 400 and b"PROLIFIC_PID is not valid" in response.content
    assert Worker.objects.count() == 0


@pytest.mark.django_db
def test_hit_pages_of_a_local_campaign_are_not_reachable_with_mturk_parameters(client):
    hit = crowd_campaign().hits.first()
    assert client.get(reverse("judging:hit", args=[hit.public_id]), mturk_query(hit)).status_code == 404
    assert Assignment.objects.count() == 0


@pytest.mark.django_db
def test_campaign_status_counts_assessors_exclusions_and_answers_per_kind(client):
    from judging.selectors import campaign_progress
    from tests.judging.factories import graded_pool

    def judging_status(campaign):
        progress = campaign_progress(campaign=campaign)
        return {
            "assessors_active": progress.assessors_active,
            "workers_excluded": progress.workers_excluded,
            "answers": progress.answers,
        }

    tournament = tournament_campaign(grades={"2_1": graded_pool("t", 6), "2_2": graded_pool("u", 6)})
    for name in ("ann", "bob"):  # two assessors, each holding one topic
        page_client = logged_in(Client(), user_with_role(name, "assessors"))
        html = page_client.get("/judge/next/").content.decode()
        page_client.post(
            "/judge/answer/",
            {"side": "left", **{k: hidden(html, k) for k in ("kind", "topic", "left", "right")}},
        )
    crowd = crowd_campaign(provider=Campaign.Provider.MTURK)
    hit = crowd.hits.order_by("number").first()
    slots = {slot.position: slot for slot in HitSlot.objects.filter(hit=hit)}
    answer_all(
        client,
        hit,
        accept(client, hit),
        side_of=lambda p: (
            "right" if slots[p].is_challenge and slots[p].expected_winner_id == slots[p].left_id else "left"
        ),
    )
    assignment_confirm(assignment=Assignment.objects.get(campaign=crowd))  # MTurk lists it

    assert judging_status(tournament) == {
        "assessors_active": 2,
        "workers_excluded": 0,
        "answers": {"preferences": 0, "challenges": 0, "tournament": 2},
    }
    challenges = sum(slot.is_challenge for slot in slots.values())
    assert judging_status(crowd) == {
        "assessors_active": 0,
        "workers_excluded": 1,
        "answers": {"preferences": 13 - challenges, "challenges": challenges, "tournament": 0},
    }


@pytest.mark.django_db
def test_without_a_script_the_server_times_the_answer_from_a_signed_stamp(client):
    tournament_campaign(grades={"2_1": graded_pool_for_two_hits()})
    client = logged_in(client, user_with_role("ann", "assessors"))
    html = client.get("/judge/next/").content.decode()
    fields = {k: hidden(html, k) for k in ("kind", "topic", "left", "right")}
    client.post("/judge/answer/", {**fields, "side": "left", "ms": "", "shown": hidden(html, "shown")})
    html = client.get("/judge/next/").content.decode()
    fields = {k: hidden(html, k) for k in ("kind", "topic", "left", "right")}
    client.post("/judge/answer/", {**fields, "side": "left", "ms": "", "shown": hidden(html, "shown") + "x"})

    timed, forged = TournamentJudgment.objects.order_by("pk")
    assert timed.milliseconds is not None and 0 <= timed.milliseconds < 60_000
    assert forged.milliseconds is None

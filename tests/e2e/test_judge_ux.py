"""The first hour of a researcher and of a judge, and hour three of a long session, in a real browser: each
person lands where their work is and can log out from every page; the end of a HIT and of a tournament topic
is said in words and to screen readers; the instructions open at their top on a phone and at 200%; the last
answer can be taken back and one answer stays stored; the question's words are highlighted (safely) and the
switch is remembered; a passage read before is marked; a sitting's count and a break suggestion. Screenshots
go to tests/e2e/artifacts/ (looked at by hand when the pages change)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from judging.engine import tournament_judgment_bound
from judging.models import (
    Assignment,
    CampaignTopic,
    Correction,
    HitSlot,
    Judgment,
    TournamentJudgment,
)
from pools.models import Item
from tests.e2e.conftest import screenshot
from tests.e2e.test_accessibility import axe_source, axe_violations, log_in, new_page  # noqa: F401
from tests.e2e.test_judging_pages import answer_with_key, demo_campaigns, wait_for_focus
from tests.judging.pages_fixtures import PASSWORD, crowd_campaign, tournament_campaign, user_with_role

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PHONE = {"width": 390, "height": 844}
# 1366x768 at 200% zoom: the same CSS pixels as a 683x384 window, drawn at twice the density.
ZOOM_200 = {"width": 683, "height": 384}


def researcher(username: str = "rita", *, also: str | None = None):
    user = user_with_role(username, "researchers")
    if also:
        user.groups.add(Group.objects.get_or_create(name=also)[0])
    return user


def start_judging(page, base_url: str) -> None:
    page.goto(f"{base_url}/judge/next/")
    if page.locator("#start-judging").count():
        page.click("#start-judging")
    page.wait_for_selector("#pair-form")
    page.wait_for_function("() => document.readyState === 'complete'")


def right_side(page) -> str:
    """The side a careful crowd judge picks on the page's question: the expected one for a challenge."""
    assignment = Assignment.objects.get(worker__user__username="crowd", status="in_progress")
    slot = HitSlot.objects.get(
        hit=assignment.hit, position=int(page.locator("input[name=position]").input_value())
    )
    if slot.is_challenge:
        return "1" if slot.expected_winner_id == slot.left_id else "2"
    return "1"


def test_each_person_lands_where_their_work_is_and_logs_out_from_every_page(live_server, browser):
    crowd_campaign()
    researcher("rita")
    researcher("both", also="assessors")
    user_with_role("ann", "assessors")
    get_user_model().objects.create_superuser("admin", "admin@localhost", PASSWORD)
    landings = {}
    for username in ("rita", "admin", "ann", "both"):
        page = new_page(browser, {"width": 1280, "height": 800})
        log_in(page, live_server.url, username)
        landings[username] = page.url.removeprefix(live_server.url)
        page.context.close()
    # the demo's "Log in as a researcher: admin" and any researcher land on the dashboard, judges on /judge/
    assert landings == {
        "rita": "/dashboard/",
        "admin": "/dashboard/",
        "ann": "/judge/",
        "both": "/dashboard/",
    }

    # a safe next wins; another site's does not
    page = new_page(browser, {"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/accounts/login/?next=/judge/instructions/")
    page.fill("#id_username", "rita")
    page.fill("#id_password", PASSWORD)
    page.click("#log-in")
    page.wait_for_url(f"{live_server.url}/judge/instructions/")
    page.context.close()
    page = new_page(browser, {"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/accounts/login/?next=https://example.org/")
    page.fill("#id_username", "ann")
    page.fill("#id_password", PASSWORD)
    page.click("#log-in")
    page.wait_for_url(f"{live_server.url}/judge/")
    page.context.close()

    # every page's header names the user and logs out; a researcher who judges moves between the two
    page = new_page(browser, PHONE)
    log_in(page, live_server.url, "both")
    for url in ("/", "/dashboard/", "/judge/", "/judge/instructions/", "/judge/next/"):
        page.goto(live_server.url + url)
        header = page.locator("header")
        assert "both" in header.inner_text(), url
        assert header.get_by_role("button", name="Log out").count() == 1, url
    page.goto(f"{live_server.url}/judge/")
    screenshot(page, "judgeux_judge_start_researcher_phone")
    page.get_by_role("link", name="Dashboard").click()
    page.wait_for_url(f"{live_server.url}/dashboard/")
    screenshot(page, "judgeux_dashboard_header_phone")
    page.locator("header").get_by_role("link", name="Judge").click()
    page.wait_for_url(f"{live_server.url}/judge/")
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{live_server.url}/accounts/login/")
    page.goto(f"{live_server.url}/dashboard/")
    assert "/accounts/login/" in page.url  # the session ended
    page.context.close()


def test_the_instructions_open_at_their_top_with_the_start_button_focused(live_server, browser):
    crowd_campaign()
    user_with_role("crowd", "crowd")
    for label, viewport, scale in (("phone", PHONE, 3), ("200pct", ZOOM_200, 2)):
        page = new_page(browser, viewport, device_scale_factor=scale)
        log_in(page, live_server.url, "crowd")
        page.goto(f"{live_server.url}/judge/next/")  # a first-time judge is sent to the instructions
        page.wait_for_selector("#start-judging")
        wait_for_focus(page, "start-judging")
        page.wait_for_timeout(300)  # a late scroll would show here
        assert page.evaluate("window.scrollY") == 0, label
        assert page.locator(".criteria li").first.is_visible()
        screenshot(page, f"judgeux_instructions_{label}")
        page.keyboard.press("Enter")  # the start button is first for the keyboard
        page.wait_for_selector("#pair-form")
        page.context.close()


def test_a_crowd_judge_hears_that_the_hit_was_submitted_and_what_comes_next(live_server, browser, axe_source):  # noqa: F811
    crowd_campaign()
    user_with_role("crowd", "crowd")
    page = new_page(browser, {"width": 1280, "height": 800})
    log_in(page, live_server.url, "crowd")
    start_judging(page, live_server.url)
    for _ in range(13):
        answer_with_key(page, right_side(page))
    notice = page.locator("#judge-notice")
    assert re.fullmatch(r"HIT submitted: 1 done today\. Next: a new HIT of \d+ pairs\.", notice.inner_text())
    page.wait_for_selector("#judge-status:has-text('HIT submitted: 1 done today')")
    assert re.search(r"Pair 1 of \d+ ready$", page.inner_text("#judge-status"))
    assert re.fullmatch(r"HIT: 0 of \d+ answered", page.inner_text("#progress-label"))
    screenshot(page, "judgeux_hit_submitted")
    assert axe_violations(page, axe_source) == []
    # the next answer on the new HIT says nothing more about the last one
    answer_with_key(page, right_side(page))
    assert page.locator("#judge-notice").count() == 0
    page.context.close()


def test_an_assessor_is_told_the_topic_is_finished_and_the_bound_was_honest(live_server, browser, axe_source):  # noqa: F811
    _, tournament = demo_campaigns()
    user_with_role("assessor", "assessors")
    page = new_page(browser, {"width": 1280, "height": 800})
    log_in(page, live_server.url, "assessor")
    start_judging(page, live_server.url)
    promised, read_marks, answers = [], 0, 0
    while page.locator("#pair-form").count():
        promised.append(int(page.title().split(" of at most ")[1].split(" ")[0]))
        read_marks += page.locator(".read-mark").count()
        if answers == 3:
            screenshot(page, "judgeux_tournament_read_before")
        answer_with_key(page, "1" if answers % 2 else "2")
        answers += 1
        assert answers < 100
    # every "at most" the page promised held, and the first was tighter than the paper's bound
    topic = CampaignTopic.objects.get(campaign=tournament)
    assert all(bound >= answers for bound in promised)
    assert promised[0] < tournament_judgment_bound(topic.candidates.count(), 5)
    assert read_marks > 0  # the winners came back, marked as read
    assert topic.state == CampaignTopic.State.DONE
    notice = page.inner_text("#judge-notice")
    assert (
        notice
        == f"Topic {topic.topic.topic_id} is finished: its top 5 are placed after {answers} answers. Thank you."
    )
    assert "Every topic open to you is finished" in page.inner_text("#judge")
    assert "Come back later" not in page.inner_text("#judge")
    page.wait_for_selector("#judge-status:has-text('is finished')")
    screenshot(page, "judgeux_topic_finished")
    assert axe_violations(page, axe_source) == []
    page.context.close()


def test_undo_takes_back_the_last_answer_and_one_answer_stays_stored(live_server, browser, axe_source):  # noqa: F811
    crowd_campaign()
    user_with_role("crowd", "crowd")
    page = new_page(browser, PHONE)
    log_in(page, live_server.url, "crowd")
    start_judging(page, live_server.url)
    assert page.locator("#undo").count() == 0  # nothing to take back yet
    for _ in range(3):
        answer_with_key(page, right_side(page))
    assert page.inner_text("#progress-label") == "HIT: 3 of 13 answered"
    position = int(page.locator("input[name=position]").input_value())
    taken_back = Judgment.objects.order_by("-pk").first()
    page.locator("#undo").scroll_into_view_if_needed()
    screenshot(page, "judgeux_undo_button_phone")
    assert axe_violations(page, axe_source) == []
    page.click("#undo")
    page.wait_for_selector("#judge-status:has-text('Answer taken back')")
    assert page.inner_text("#progress-label") == "HIT: 2 of 13 answered"
    assert int(page.locator("input[name=position]").input_value()) < position
    assert page.locator("#undo").count() == 1  # the answer before is the last one now
    screenshot(page, "judgeux_undone_phone")
    answer_with_key(page, right_side(page))
    assert page.inner_text("#progress-label") == "HIT: 3 of 13 answered"

    correction = Correction.objects.get()
    assert correction.judgment_id == taken_back.pk and correction.slot_id == taken_back.slot_id
    assignment = Assignment.objects.get(worker__user__username="crowd")
    assert Judgment.objects.filter(assignment=assignment).count() == 3
    assert Judgment.objects.filter(assignment=assignment, slot_id=taken_back.slot_id).count() == 1
    page.context.close()


def test_an_assessor_undoes_with_the_u_key_and_without_javascript(live_server, browser):
    tournament_campaign()
    user_with_role("ann", "assessors")
    page = new_page(browser, {"width": 1280, "height": 800})
    log_in(page, live_server.url, "ann")
    start_judging(page, live_server.url)
    answer_with_key(page, "1")
    answer_with_key(page, "2")
    pair = (page.inner_text("#left-text"), page.inner_text("#right-text"))
    page.focus("#question")
    page.keyboard.press("u")
    page.wait_for_selector("#judge-status:has-text('Answer taken back')")
    assert TournamentJudgment.objects.count() == 1 and Correction.objects.count() == 1
    assert (page.inner_text("#left-text"), page.inner_text("#right-text")) != pair  # the second pair again
    assert page.locator("#undo").count() == 0  # one answer back, not a chain
    page.context.close()

    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    log_in(page, live_server.url, "ann")
    page.goto(f"{live_server.url}/judge/next/")
    page.click("#choose-left")
    page.click("#undo")  # a plain POST, then a 303 to the same pair
    assert "Answer taken back" in page.inner_text("#judge-notice")
    assert TournamentJudgment.objects.count() == 1 and Correction.objects.count() == 2
    context.close()


def test_query_words_are_highlighted_safely_and_the_switch_is_remembered(live_server, browser):
    campaign = tournament_campaign()
    topic = campaign.collection.topics.get()
    topic.question = "Why does a kettle need descaling?"
    topic.save(update_fields=["question"])
    hostile = '<b onmouseover="alert(1)">kettle</b> <img src=x onerror=alert(2)> kettles descaled'
    Item.objects.filter(collection=campaign.collection).update(text=hostile)
    user_with_role("ann", "assessors")
    page = new_page(browser, {"width": 1280, "height": 800})
    log_in(page, live_server.url, "ann")
    start_judging(page, live_server.url)

    marks = page.locator("#left-text mark.term").all_inner_texts()
    assert marks == ["kettle", "kettles", "descaled"]
    # the passage stays text: no element but the marks, and its text unchanged
    assert page.evaluate("document.querySelectorAll('#left-text *:not(mark)').length") == 0
    assert page.inner_text("#left-text") == hostile
    screenshot(page, "judgeux_highlight_on")

    page.uncheck("#highlight-toggle")
    assert page.locator("#judge mark").count() == 0 and page.inner_text("#left-text") == hostile
    page.focus("#question")  # keys never act on the switches
    answer_with_key(page, "1")
    assert page.locator("#judge mark").count() == 0 and not page.is_checked("#highlight-toggle")
    page.reload()
    page.wait_for_selector("#pair-form")
    assert page.locator("#judge mark").count() == 0 and not page.is_checked("#highlight-toggle")
    screenshot(page, "judgeux_highlight_off")
    page.check("#highlight-toggle")
    assert page.locator("#right-text mark.term").count() == 3
    page.context.close()


def test_keys_off_buttons_a_sittings_count_and_a_break_suggestion(live_server, browser, axe_source):  # noqa: F811
    crowd_campaign()
    user_with_role("crowd", "crowd")
    page = new_page(browser, {"width": 1280, "height": 800})
    log_in(page, live_server.url, "crowd")
    start_judging(page, live_server.url)
    assert page.inner_text("#choose-left").endswith("(1)")
    page.uncheck("#shortcuts-toggle")
    assert page.inner_text("#choose-left") == "← Left is better"
    assert page.inner_text("#choose-right") == "Right is better →"
    page.check("#shortcuts-toggle")
    page.focus("#question")
    assert not page.locator("#sitting").is_visible()
    for _ in range(3):
        answer_with_key(page, right_side(page))
    assert page.inner_text("#sitting") == "This sitting: 3 answers in 0 minutes."
    assert not page.locator("#break-hint").is_visible()

    # an hour into the sitting, the next pair suggests a break, once
    page.evaluate(
        "() => { const s = JSON.parse(sessionStorage.getItem('toppref.sitting'));"
        " s.start -= 60 * 60 * 1000; sessionStorage.setItem('toppref.sitting', JSON.stringify(s)); }"
    )
    answer_with_key(page, right_side(page))
    hint = page.locator("#break-hint")
    assert hint.is_visible() and "short break" in hint.inner_text()
    page.wait_for_selector("#judge-status:has-text('short break')")
    screenshot(page, "judgeux_break_hint")
    assert axe_violations(page, axe_source) == []
    answer_with_key(page, right_side(page))
    assert not page.locator("#break-hint").is_visible()
    assert page.inner_text("#sitting").startswith("This sitting: 5 answers in 6")
    page.context.close()

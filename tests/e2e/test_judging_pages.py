"""The judging pages in a real browser (Debian's chromium through Playwright), against the live server and the
real database: an assessor finishing a demo tournament topic with the keyboard alone, a crowd user finishing a
HIT, an MTurk worker previewing, accepting and submitting inside a stand-in worker site's iframe, a worker
excluded after a failed challenge whose pairs go to someone else, a reload in the middle of a HIT, and hostile
passages that must stay text."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from judging.management.commands.demo_run import open_for_browser_judging
from judging.models import (
    Assignment,
    Campaign,
    CampaignTopic,
    Hit,
    HitSlot,
    Judgment,
    TournamentJudgment,
    Worker,
)
from judging.services import assignment_confirm
from pools.models import Collection, Item
from tests.e2e.conftest import screenshot
from tests.judging.pages_fixtures import PASSWORD, crowd_campaign, tournament_campaign, user_with_role

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def demo_campaigns():
    call_command("demo_load", verbosity=0)
    return open_for_browser_judging(collection=Collection.objects.get(name="demo"), k=5, seed=1)


def wait_for_focus(page, element_id: str) -> None:
    """Chrome applies ``autofocus`` a frame after the load event: keys pressed before it would be lost."""
    page.wait_for_function("id => document.activeElement && document.activeElement.id === id", arg=element_id)


def log_in_with_keyboard(page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/judge/")
    wait_for_focus(page, "id_username")
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_selector("#judge-next")
    wait_for_focus(page, "judge-next")


def progress_label(page) -> str:
    label = page.locator("#judge .progress-label")
    return label.inner_text() if label.count() else ""


def answer_with_key(page, key: str) -> None:
    """Press a key on the pair page and wait until the next pair (or the end) replaced it. The key is pressed
    once the pair page has loaded with its (deferred) script: a key pressed while a click's navigation is still
    on its way reaches the page before, or a page whose script has not run yet, and is lost."""
    page.wait_for_function(
        "() => document.readyState === 'complete' && !!document.querySelector('#pair-form')"
    )
    before = progress_label(page)
    page.keyboard.press(key)
    page.wait_for_function(
        "before => { const l = document.querySelector('#judge .progress-label');"
        " return !l || l.textContent !== before; }",
        arg=before,
    )


def test_assessor_finishes_a_demo_tournament_topic_with_the_keyboard_alone(live_server, page):
    _, tournament = demo_campaigns()
    user_with_role("assessor", "assessors")
    campaign_topic = CampaignTopic.objects.get(campaign=tournament)

    log_in_with_keyboard(page, live_server.url, "assessor")
    page.keyboard.press("Enter")  # the start page focuses "Judge the next pair"
    page.wait_for_selector("#start-judging")
    assert page.url.endswith("/judge/instructions/?first=1")
    wait_for_focus(page, "start-judging")
    page.keyboard.press("Enter")  # "start judging" has the focus
    page.wait_for_selector("#pair-form")
    page.evaluate("window.__noReload = true")
    screenshot(page, "assessor_pair")
    keys = ["1", "ArrowRight", "2", "ArrowLeft"]
    presses = 0
    while page.locator("#pair-form").count():
        answer_with_key(page, keys[presses % len(keys)])
        presses += 1
        assert presses < 100
    assert "Nothing left to judge" in page.inner_text("#judge")
    assert page.evaluate("window.__noReload") is True  # the next pair came without a page load
    screenshot(page, "assessor_done")

    campaign_topic.refresh_from_db()
    assert campaign_topic.state == CampaignTopic.State.DONE
    judgments = TournamentJudgment.objects.filter(campaign_topic=campaign_topic)
    assert judgments.count() == presses
    assert all(j.milliseconds is not None and j.winner_side in ("left", "right") for j in judgments)


def test_crowd_user_finishes_a_hit(live_server, page):
    crowd, _ = demo_campaigns()
    user_with_role("crowd", "crowd")

    log_in_with_keyboard(page, live_server.url, "crowd")
    page.goto(f"{live_server.url}/judge/next/")
    page.click("#start-judging")
    page.wait_for_selector("#pair-form")
    assert progress_label(page) == "HIT: 0 of 13 answered"
    left_box = page.locator("#left-text").bounding_box()
    right_box = page.locator("#right-text").bounding_box()
    assert abs(left_box["width"] - right_box["width"]) < 1  # equal-width passages
    button_box = page.locator("#choose-right").bounding_box()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    screenshot(page, "crowd_pair")
    for number in range(13):
        # the test knows the challenges (the page does not): answer them right so the HIT counts
        assignment = Assignment.objects.get(worker__user__username="crowd", status="in_progress")
        slot = HitSlot.objects.get(
            hit=assignment.hit, position=int(page.locator("input[name=position]").input_value())
        )
        side = "left" if slot.is_challenge and slot.expected_winner_id == slot.left_id else "right"
        if slot.is_challenge is False and number % 2:
            side = "left"
        if number % 2:
            before = progress_label(page)
            page.click(f"#choose-{side}")
            page.wait_for_function(
                "b => document.querySelector('#judge .progress-label').textContent !== b", arg=before
            )
        else:
            answer_with_key(page, "1" if side == "left" else "2")
        assert page.locator("#choose-right").bounding_box() == button_box  # the buttons do not move

    assignment = Assignment.objects.get(worker__user__username="crowd", hit__status="accepted")
    assert assignment.status == Assignment.Status.ACCEPTED
    assert Judgment.objects.filter(assignment=assignment).count() == 13
    assert progress_label(page) == "HIT: 0 of 13 answered"  # the next HIT of the campaign
    assert Assignment.objects.filter(worker__user__username="crowd").count() == 2
    screenshot(page, "crowd_next_hit")
    assert crowd.hits.filter(status=Hit.Status.ACCEPTED).count() == 1


def test_mturk_worker_previews_accepts_and_submits_inside_the_worker_site_frame(
    live_server, page, fake_mturk
):
    campaign = crowd_campaign(provider=Campaign.Provider.MTURK)
    hit = campaign.hits.order_by("number").first()
    base = f"{live_server.url}/hits/{hit.public_id}/"

    fake_mturk.frame_url = f"{base}?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=HIT1"
    page.goto(fake_mturk.origin + "/")
    frame = page.frame_locator("#hit")
    frame.locator("text=This is a preview").wait_for()
    screenshot(page, "mturk_preview")
    assert Assignment.objects.count() == 0

    fake_mturk.frame_url = (
        f"{base}?assignmentId=ASSIGNA1&hitId=HIT1&workerId=AWORKERONE&turkSubmitTo={fake_mturk.origin}"
    )
    page.goto(fake_mturk.origin + "/")
    frame.locator("#begin").click()
    frame.locator("#pair-form").wait_for()
    screenshot(page, "mturk_pair_in_frame")
    for _ in range(13):
        hit_frame = next(f for f in page.frames if "/hits/" in f.url)
        before = hit_frame.inner_text("#judge .progress-label")
        hit_frame.click("#choose-left")
        hit_frame.wait_for_function(
            "b => { const l = document.querySelector('#judge .progress-label'); return !l || l.textContent !== b; }",
            arg=before,
        )
    screenshot(page, "mturk_done_in_frame")
    frame.locator("#finish").click()
    page.frame_locator("#hit").locator("#received").wait_for()
    screenshot(page, "mturk_submitted")

    assert [submission["assignmentId"] for submission in fake_mturk.submissions] == [["ASSIGNA1"]]
    assignment = Assignment.objects.get()
    assert assignment.completion_code and fake_mturk.submissions[0]["completionCode"] == [
        assignment.completion_code
    ]
    assert Judgment.objects.filter(assignment=assignment).count() == 13


def test_worker_failing_a_challenge_is_excluded_and_the_pairs_go_to_someone_else(live_server, page, browser):
    campaign = crowd_campaign(
        provider=Campaign.Provider.MTURK,
        grades={"1_1": {**{f"a-r{i}": 3 for i in range(6)}, "a-n0": 0, "a-n1": 0}},
    )
    hit = campaign.hits.order_by("number").first()
    pairs = set(HitSlot.objects.filter(hit=hit, pair__isnull=False).values_list("pair_id", flat=True))
    slots = {slot.position: slot for slot in HitSlot.objects.filter(hit=hit)}
    query = "assignmentId=ASSIGNX1&hitId=HIT1&workerId=AFAILER&turkSubmitTo=https://workersandbox.mturk.com"
    page.goto(f"{live_server.url}/hits/{hit.public_id}/?{query}&begin=1")
    while page.locator("#pair-form").count():
        slot = slots[int(page.locator("input[name=position]").input_value())]
        wrong = slot.is_challenge and slot.expected_winner_id == slot.left_id
        answer_with_key(page, "2" if wrong else "1")
    assert "All your answers are saved" in page.inner_text("#judge")  # paid: it still submits
    # Nothing is judged until MTurk lists the assignment (a forged worker id must not exclude anyone).
    assert not Worker.objects.get(external_id="AFAILER").is_excluded
    assignment_confirm(assignment=Assignment.objects.get(external_id="ASSIGNX1"))  # what crowd_sync does

    assert Worker.objects.get(external_id="AFAILER").is_excluded
    again = Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN, slots__pair_id__in=pairs).distinct()
    assert again.exists()
    other = again.first()
    page.goto(f"{live_server.url}/hits/{other.public_id}/?{query.replace('ASSIGNX1', 'ASSIGNX2')}")
    assert "Thank you for your work" in page.inner_text("#judge")
    screenshot(page, "excluded_worker")

    second = browser.new_context().new_page()
    second.goto(
        f"{live_server.url}/hits/{other.public_id}/?assignmentId=ASSIGNY1&hitId=HIT1&workerId=ASECOND"
        "&turkSubmitTo=https://workersandbox.mturk.com&begin=1"
    )
    second.wait_for_selector("#pair-form")
    screenshot(second, "requeued_pairs_for_another_worker")
    assert Assignment.objects.get(external_id="ASSIGNY1").hit_id == other.pk
    second.context.close()


def test_a_reload_in_the_middle_of_a_hit_loses_nothing_and_counts_nothing_twice(live_server, page):
    campaign = crowd_campaign(provider=Campaign.Provider.MTURK)
    hit = campaign.hits.order_by("number").first()
    url = (
        f"{live_server.url}/hits/{hit.public_id}/?assignmentId=ASSIGNR1&hitId=HIT1&workerId=ARELOAD"
        "&turkSubmitTo=https://workersandbox.mturk.com"
    )
    page.goto(url)
    page.click("#begin")
    for _ in range(4):
        answer_with_key(page, "1")
    page.reload()
    assert page.inner_text("#judge .progress-label") == "4 of 13 answered"
    page.go_back()
    page.goto(url)  # the worker opens the HIT again from MTurk
    assert page.inner_text("#judge .progress-label") == "4 of 13 answered"
    screenshot(page, "reloaded_hit")
    while page.locator("#pair-form").count():
        answer_with_key(page, "ArrowRight")

    assignment = Assignment.objects.get()
    assert Judgment.objects.filter(assignment=assignment).count() == 13
    assert (
        list(Judgment.objects.filter(assignment=assignment).values_list("winner_side", flat=True)).count(
            "left"
        )
        == 4
    )


def test_hostile_passages_stay_text_in_the_browser(live_server, page):
    call_command("demo_load", verbosity=0)
    demo_script = Item.objects.get(collection__name="demo", docid="d6-p23").text
    texts = {
        "h-script": demo_script,
        "h-img": '<img src=x onerror="alert(2)"> image',
        "h-area": "</textarea><script>alert(3)</script>",
        "h-link": '<a href="javascript:alert(4)">click me</a>',
        "h-long": "x" * 10_000,
        "h-ok": "An ordinary passage.",
    }
    campaign = tournament_campaign(grades={"9_1": {docid: 3 for docid in texts}})
    for docid, text in texts.items():
        Item.objects.filter(collection=campaign.collection, docid=docid).update(text=text)
    user_with_role("assessor", "assessors")
    log_in_with_keyboard(page, live_server.url, "assessor")
    page.goto(f"{live_server.url}/judge/instructions/")
    page.click("#start-judging")
    page.wait_for_selector("#pair-form")
    shown = ""
    screenshot(page, "hostile_passages")
    while page.locator("#pair-form").count():
        shown += page.inner_text("#left-text") + page.inner_text("#right-text")
        answer_with_key(page, "1")
    assert page.locator("#judge img, #judge a[href^=javascript]").count() == 0
    assert "<script>alert(1)</script>" in shown and '<img src=x onerror="alert(2)">' in shown
    page_width = page.evaluate("document.documentElement.scrollWidth")
    assert page_width <= 1280  # the 10,000-character word wraps inside its column


def test_pages_run_under_their_content_security_policy_without_violations(live_server, page):
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_superuser("root", "root@localhost", PASSWORD)
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(f"{page.url}: {message.text[:60]}")
            if "Content Security Policy" in message.text
            else None
        ),
    )
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    for url in ("/", "/judge/", "/judge/instructions/", "/admin/", "/api/docs/"):
        page.goto(f"{live_server.url}{url}")
        page.wait_for_load_state("networkidle")
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui", timeout=20_000)
    screenshot(page, "api_docs_under_csp")
    assert violations == [], "\n".join(violations)


def test_the_pair_page_works_without_javascript(live_server, browser):
    tournament_campaign()
    user_with_role("assessor", "assessors")
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    log_in_with_keyboard(page, live_server.url, "assessor")
    page.goto(f"{live_server.url}/judge/next/")
    page.click("#start-judging")
    for _ in range(3):
        before = page.inner_text("#judge .progress-label")
        page.click("#choose-right")  # a plain POST, then a 303 to the next pair
        assert page.inner_text("#judge .progress-label") != before
    screenshot(page, "pair_without_javascript")
    context.close()

    judgments = TournamentJudgment.objects.all()
    assert judgments.count() == 3 and {j.winner_side for j in judgments} == {"right"}
    # without the script the server times each answer from the signed time the pair was rendered
    assert all(j.milliseconds is not None and 0 <= j.milliseconds < 60_000 for j in judgments)


def test_two_crowd_users_finish_a_live_adaptive_demo_campaign_through_the_pages(live_server, page, browser):
    # Given a running adaptive campaign on the demo collection and two crowd users answering as its
    # preference qrels say (repeat votes of a pair must go to the other one)
    from judging.engine import PerfectOracle
    from judging.services import campaign_create, campaign_start
    from judging.services.campaigns import campaign_advance
    from pools.trec import read_qrels
    from tests.conftest import DEMO_DIR

    call_command("demo_load", verbosity=0)
    oracle = PerfectOracle(read_qrels(DEMO_DIR / "qrels.preference.txt"))
    campaign = campaign_start(
        campaign=campaign_create(
            collection=Collection.objects.get(name="demo"), name="live-adaptive", mode="adaptive", seed=1
        )
    )
    campaign_advance(campaign=campaign)
    pages = {}
    for username in ("crowd1", "crowd2"):
        user_with_role(username, "crowd")
        context_page = page if not pages else browser.new_context().new_page()
        log_in_with_keyboard(context_page, live_server.url, username)
        pages[username] = context_page

    # When they take turns at /judge/next/ until nothing is left
    for _turn in range(60):
        campaign.refresh_from_db()
        if campaign.status == Campaign.Status.DONE:
            break
        for username, user_page in pages.items():
            user_page.goto(f"{live_server.url}/judge/next/")
            if user_page.locator("#start-judging").count():
                user_page.click("#start-judging")
            while user_page.locator("#pair-form").count():
                assignment = Assignment.objects.get(worker__user__username=username, status="in_progress")
                slot = HitSlot.objects.select_related("left", "right", "topic").get(
                    hit=assignment.hit, position=int(user_page.locator("input[name=position]").input_value())
                )
                if slot.is_challenge:
                    side = "left" if slot.expected_winner_id == slot.left_id else "right"
                else:
                    preferred = oracle.prefer(slot.topic.topic_id, slot.left.docid, slot.right.docid)
                    side = "left" if preferred == slot.left.docid else "right"
                before = progress_label(user_page)
                user_page.click(f"#choose-{side}")
                user_page.wait_for_function(
                    "b => { const l = document.querySelector('#judge .progress-label');"
                    " return !l || l.textContent !== b; }",
                    arg=before,
                )
                if (
                    Assignment.objects.filter(worker__user__username=username, status="in_progress").count()
                    == 0
                ):
                    break
        campaign_advance(campaign=campaign)

    # Then the campaign is done, both workers judged, and nobody judged one pair twice
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.DONE
    assert Assignment.objects.filter(status="accepted").values("worker").distinct().count() == 2
    seen = set()
    for worker, topic, left, right in Judgment.objects.filter(slot__is_challenge=False).values_list(
        "assignment__worker_id", "slot__topic_id", "slot__left_id", "slot__right_id"
    ):
        key = (worker, topic, frozenset((left, right)))
        assert key not in seen
        seen.add(key)

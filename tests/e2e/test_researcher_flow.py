"""A researcher's whole flow in a real browser (Playwright driving Debian's chromium) against a live server:
log in, create a campaign on the demo collection from the dashboard, start it, let simulated workers judge
(``campaign_simulate``), watch the progress reach the end without reloading, upload a run, see the
leaderboard and both plots, and download the qrels. Screenshots go to tests/e2e/artifacts/."""

import os
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client

from judging.models import Campaign, Export
from pools.models import Run
from pools.services import demo_load

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed"),
]


@pytest.fixture
def browser_page():
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are still synchronous.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        yield context
        context.close()
        browser.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


def test_researcher_runs_a_campaign_and_reads_the_leaderboard(live_server, browser_page, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    collection = demo_load(directory=DEMO_DIR).collection
    # the demo's runs are uploaded by the researcher below; keep one aside for that
    run_file = tmp_path / "upload.run"
    run_file.write_bytes(Run.objects.order_by("name").first().file.open("rb").read())
    user = User.objects.create_user(username="alice", password="unused-password")
    Group.objects.get_or_create(name="researchers")[0].user_set.add(user)

    # log in: the session of a logged-in client, handed to the browser
    client = Client()
    client.force_login(user)
    browser_page.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page = browser_page.new_page()
    page.on("dialog", lambda dialog: dialog.accept())

    # create a campaign on the demo collection from the dashboard
    page.goto(f"{live_server.url}/dashboard/")
    page.get_by_role("link", name="New campaign").click()
    page.fill("input[name=name]", "browser-demo")
    page.select_option("select[name=collection]", collection.name)
    page.fill("input[name=seed]", "2")
    page.get_by_role("button", name="Create draft").click()
    page.wait_for_url("**/dashboard/campaigns/browser-demo/")
    assert Campaign.objects.get(name="browser-demo").owner == user

    # start it (a confirmation dialog, accepted)
    page.locator("button[data-action=start]").click()
    page.wait_for_selector("text=browser-demo: started")
    assert Campaign.objects.get(name="browser-demo").status == "running"

    # simulated workers judge everything; the page catches up by itself
    call_command("campaign_simulate", "browser-demo", "--oracle", str(DEMO_DIR / "qrels.preference.txt"))
    page.wait_for_function(
        "document.querySelector('[data-field=percent]').textContent === '100'", timeout=20_000
    )
    assert page.locator("[data-field=status]").inner_text() == "done"
    page.reload()
    page.screenshot(path=str(ARTIFACTS / "campaign_page.png"), full_page=True)

    # upload a run: validated, then scored for the finished campaign
    page.fill("input[name=name]", "uploaded-run")
    page.set_input_files("input[type=file]", str(run_file))
    page.get_by_role("button", name="Upload run").click()
    page.wait_for_selector("text=run uploaded-run uploaded")
    assert Run.objects.get(name="uploaded-run").status == "ready"
    page.locator("button[data-action=score]").click()
    page.wait_for_selector("text=the runs are being scored")

    # the leaderboard with both plots
    page.get_by_role("link", name="Leaderboard").click()
    page.wait_for_selector("#leaderboard")
    assert "uploaded-run" in page.locator("#leaderboard").inner_text()
    for image in page.locator(".plots img").all():
        image.scroll_into_view_if_needed()
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
    assert page.locator(".plots img").count() == 2
    page.screenshot(path=str(ARTIFACTS / "leaderboard.png"), full_page=True)

    # download the combined qrels
    page.goto(f"{live_server.url}/dashboard/campaigns/browser-demo/")
    page.select_option("select[name=kind]", "combined")
    page.get_by_role("button", name="Export").click()
    page.wait_for_selector("text=(combined) requested")
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download").first.click()
    downloaded = Path(download_info.value.path()).read_text()
    export = Export.objects.get(campaign__name="browser-demo", kind="combined")
    assert downloaded == export.file.open("rb").read().decode() and " Q0 " in downloaded

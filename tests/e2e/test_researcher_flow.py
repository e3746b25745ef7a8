"""A researcher's whole flow in a real browser (Playwright driving Debian's chromium) against a live server:
log in, create a campaign on the demo collection from the dashboard, start it, let simulated workers judge
(``campaign_simulate``), watch the progress reach the end without reloading, upload a run, see the
leaderboard and both plots, and download the qrels. Screenshots go to tests/e2e/artifacts/."""

from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from playwright.sync_api import expect

from judging.models import Campaign, Export
from pools.models import Run
from pools.services import demo_load
from tests.e2e.conftest import screenshot

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def browser_page(browser):
    """A fresh context of the session's chromium (tests/e2e/conftest.py), with downloads allowed."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    yield context
    context.close()


def test_researcher_runs_a_campaign_and_reads_the_leaderboard(live_server, browser_page, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    collection = demo_load(directory=DEMO_DIR).collection
    # the demo's runs are uploaded by the researcher below; keep one aside for that
    run_file = tmp_path / "upload.run"
    run_file.write_bytes(Run.objects.order_by("name").first().file.open("rb").read())
    user = User.objects.create_user(username="alice", password="a-long-test-password")
    Group.objects.get_or_create(name="researchers")[0].user_set.add(user)
    page = browser_page.new_page()
    page.on("dialog", lambda dialog: dialog.accept())

    # log in through the login page, as a researcher does
    page.goto(f"{live_server.url}/accounts/login/?next=/dashboard/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "a-long-test-password")
    page.press("input[name=password]", "Enter")
    page.wait_for_url("**/dashboard/")

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
    # (locator waits, not wait_for_function: the pages' CSP allows no eval, and this test keeps it on)
    expect(page.locator("[data-field=percent]")).to_have_text("100", timeout=20_000)
    assert page.locator("[data-field=status]").inner_text() == "done"
    page.reload()
    screenshot(page, "campaign_page", full_page=True)

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
        expect(image).to_have_js_property("complete", True)
        assert image.evaluate("img => img.naturalWidth") > 0
    assert page.locator(".plots img").count() == 2
    screenshot(page, "leaderboard", full_page=True)

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

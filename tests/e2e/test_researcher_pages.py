"""A researcher's first hour in a real browser: the dashboard's tables on a phone (390×844, a touch screen)
keep every number whole, keep their first column in view while the rest scrolls and say that they scroll; the
controls are at least 44 px high for a finger and in the page's type; the leaderboard's figures are SVG with
labels of 10 px or more at 100% zoom, their numbers in tables beside them; the favicon and the API docs' way
back. Screenshots go to tests/e2e/artifacts/ (researcher_*.png), looked at by hand when the pages change."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from judging.management.commands.demo_run import open_for_browser_judging
from pools.models import Collection
from tests.e2e.conftest import ARTIFACTS, screenshot
from tests.e2e.test_accessibility import DEMO_DIR, log_in, new_page, sideways_overflow
from tests.judging.pages_fixtures import PASSWORD

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}


@pytest.fixture
def scored(live_server, tmp_path, settings):
    """The demo's open crowd campaign judged to the end by simulated workers and its runs scored."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    call_command("demo_load", verbosity=0)
    crowd, _ = open_for_browser_judging(collection=Collection.objects.get(name="demo"), k=5, seed=1)
    call_command("campaign_simulate", crowd.name, "--oracle", str(DEMO_DIR / "qrels.preference.txt"))
    call_command("runs_score", crowd.name, verbosity=0)
    get_user_model().objects.create_superuser("root", "root@localhost", PASSWORD)
    return crowd


# For every scroll box: does it scroll, is its hint shown, and after scrolling it to the end, does its first
# column still start at the box's left edge; for every number: is it on one line and whole inside its cell.
TABLES = """() => [...document.querySelectorAll('.table-scroll')].filter(box => box.offsetParent).map(box => {
  const scrolls = box.scrollWidth > box.clientWidth + 1;
  const hint = box.previousElementSibling;
  const hinted = !!hint && hint.classList.contains('scroll-hint') && hint.offsetParent !== null;
  box.scrollLeft = box.scrollWidth;
  const first = box.querySelector('tbody tr > :first-child');
  const stuck = first ? Math.abs(first.getBoundingClientRect().left - box.getBoundingClientRect().left) < 2 : true;
  box.scrollLeft = 0;
  const broken = [...box.querySelectorAll('td.num')].filter(cell => {
    const spans = cell.classList.contains('range') ? [...cell.children] : [cell];
    return spans.some(node => {
      const range = document.createRange(); range.selectNodeContents(node);
      const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
      return lines.size > 1;
    }) || cell.scrollWidth > cell.clientWidth + 1;
  }).map(cell => cell.textContent.trim());
  return {id: box.getAttribute('aria-labelledby') || box.getAttribute('aria-label'), scrolls, hinted, stuck, broken};
})"""

CONTROLS = """() => [...document.querySelectorAll('main button, main select, main input:not([type=hidden]):not([type=checkbox]), main .button, main .tabs a')]
  .filter(node => node.offsetParent !== null)
  .map(node => ({name: node.name || node.textContent.trim().slice(0, 30), height: node.getBoundingClientRect().height,
                 font: parseFloat(getComputedStyle(node).fontSize)}))"""


def test_researcher_tables_and_controls_fit_a_phone(live_server, browser, scored):
    page = new_page(browser, PHONE, has_touch=True, is_mobile=True, device_scale_factor=2)
    log_in(page, live_server.url, "root")
    assert page.evaluate("matchMedia('(pointer: coarse)').matches")
    urls = {
        "campaign": f"/dashboard/campaigns/{scored.name}/",
        "leaderboard": f"/dashboard/campaigns/{scored.name}/leaderboard/",
        "workers": f"/dashboard/campaigns/{scored.name}/workers/",
        "campaigns": "/dashboard/",
        "home": "/",
    }
    scrolling: list[str] = []
    for name, url in urls.items():
        page.goto(live_server.url + url)
        page.wait_for_load_state("networkidle")
        # viewport screenshots, scrolled: a full-page one drops the touch emulation (and its 44 px controls)
        screenshot(page, f"researcher_{name}_390")
        for part, where in (("tables", ".table-scroll"), ("forms", "form[enctype]")):
            if page.locator(where).count():
                page.locator(where).first.scroll_into_view_if_needed()
                screenshot(page, f"researcher_{name}_390_{part}")
        assert sideways_overflow(page) == 0, name
        for table in page.evaluate(TABLES):
            assert table["broken"] == [], (name, table)  # no number wraps or spills out of its cell
            if table["scrolls"]:
                scrolling.append(f"{name}:{table['id']}")
                assert table["hinted"] and table["stuck"], (name, table)
            else:
                assert not table["hinted"], (name, table)
        small = [c for c in page.evaluate(CONTROLS) if c["height"] < 44 or c["font"] < 14]
        assert small == [], (name, small)
    # the workers table (7 columns) scrolls on a phone, its worker column staying in view
    assert "workers:workers-caption" in scrolling, scrolling
    # the leaderboard's table fits: its range column wraps between its two numbers, never inside one
    assert not any(s.startswith("leaderboard:leaderboard-caption") for s in scrolling), scrolling
    # the legend, in words, opens from above the table
    page.goto(live_server.url + urls["leaderboard"])
    page.click("#legend summary")
    assert page.get_by_text("Persistence (the p of compat@p)").is_visible()
    page.locator("#legend").scroll_into_view_if_needed()
    screenshot(page, "researcher_leaderboard_390_legend")
    page.goto(f"{live_server.url}/dashboard/campaigns/{scored.name}/workers/")
    box = page.locator(".table-scroll").first
    box.evaluate("box => { box.scrollLeft = box.scrollWidth; }")
    screenshot(page, "researcher_workers_390_scrolled")
    page.context.close()


def test_leaderboard_figures_are_svg_readable_at_100_percent(live_server, browser, scored):
    page = new_page(browser, LAPTOP)
    log_in(page, live_server.url, "root")
    page.goto(f"{live_server.url}/dashboard/campaigns/{scored.name}/leaderboard/?measure=ndcg@10:graded")
    page.wait_for_load_state("networkidle")
    screenshot(page, "researcher_leaderboard_1280", full_page=True)
    images = page.locator(".plots img")
    assert images.count() == 2
    for index in range(2):
        image = images.nth(index)
        image.scroll_into_view_if_needed()
        source = image.evaluate("img => img.currentSrc")
        response = page.request.get(source)
        assert response.headers["content-type"] == "image/svg+xml"
        svg = response.text()
        view_width = float(re.search(r'viewBox="0 0 ([\d.]+) ', svg).group(1))
        shown_width = image.evaluate("img => img.getBoundingClientRect().width")
        smallest = min(float(size) for size in re.findall(r"font-size: ?([\d.]+)px", svg))
        # the smallest label as drawn on the page at 100% zoom
        assert smallest * shown_width / view_width >= 10, (source, smallest, shown_width, view_width)
        image.screenshot(path=str(ARTIFACTS / f"researcher_figure_{index + 1}.png"))
        # a PNG of the same figure is offered as a download
        download = image.locator("xpath=..").locator("a[download]")
        assert download.get_attribute("href").split("?")[0].endswith(".png")
    # each figure's numbers are in a table on the page too
    page.click("#figure-intervals summary")
    assert page.locator("#intervals-table tbody tr").count() == page.locator("#leaderboard tbody tr").count()
    # the figure opened on its own (to zoom in) is drawn with its styles: its policy allows them
    page.goto(images_source := page.locator(".plots img").nth(1).evaluate("img => img.currentSrc"))
    screenshot(page, "researcher_figure_9_alone")
    assert images_source.split("?")[0].endswith("intervals.svg")
    page.context.close()


def test_favicon_and_the_api_docs_way_back(live_server, browser):
    page = new_page(browser, LAPTOP)
    response = page.goto(f"{live_server.url}/favicon.ico")
    assert response.status == 200 and response.headers["content-type"] == "image/svg+xml"
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info", timeout=20_000)
    screenshot(page, "researcher_api_docs")
    page.get_by_role("link", name="← toppref").click()
    page.wait_for_load_state()
    assert page.url == f"{live_server.url}/"
    page.context.close()

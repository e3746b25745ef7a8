"""The leaderboard page in words and figures: measures named for a newcomer with their code beside them, the
legend of ``manage.py scores_show`` (one definition, metrics/core/legend.py), headed tables, and the figures as
SVG whose every number is the API's and whose axes fit the measure (Clarke, Vtyurina and Smucker, "Assessing
top-k preferences", figures 4 and 9)."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from io import StringIO

import pytest
from django.core.management import call_command

from metrics.core.legend import FAMILY_MEANING, QRELS_MEANING, measure_title, qrels_difference

pytestmark = pytest.mark.django_db
PAGE = "/dashboard/campaigns/demo-done/leaderboard/"
SVG = "{http://www.w3.org/2000/svg}"
RUNS = {"bm25ish", "neural", "oracleish", "random"}


def _text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_measures_are_named_in_words_with_their_code_and_the_cli_legend(
    client, researcher, finished_campaign
):
    client.force_login(researcher)
    page = client.get(PAGE).content.decode()
    text = _text(page)
    # the measure picker and the table's caption name the measure in words, the code name beside it
    assert (
        '<option value="compat@0.95:preferences" selected>Compatibility with the preference top-k, '
        "persistence 0.95 (compat@0.95:preferences)</option>" in page
    )
    assert "Runs ranked by Compatibility with the preference top-k, persistence 0.95" in text
    assert '<option value="ndcg@10:graded"' in page and "NDCG to rank 10 with the graded judgments" in text
    # the legend says what compat, its persistence and the two qrels are, in the words scores_show prints
    out = StringIO()
    call_command("scores_show", "demo-done", "-m", "compat@0.95", "ndcg@10", stdout=out)
    printed = " ".join(out.getvalue().split())
    for shared in (qrels_difference("combined"), "compat@p = " + FAMILY_MEANING["compat"]):
        assert shared in printed
    assert qrels_difference() in text
    assert (
        "persistence p = " in printed
        and "the chance that a reader goes on from one passage to the next" in text
    )
    assert QRELS_MEANING["preferences"] in text and QRELS_MEANING["graded"] in text
    # every table has a header row: the Kendall's tau one too
    tau = page[page.index('id="tau"') :]
    assert (
        tau.index('<thead><tr><th scope="col">Measure</th><th scope="col" class="num">Kendall\'s tau</th>')
        < 40
    )


def test_figures_are_svg_with_readable_labels_and_axes_that_fit_the_measure(
    client, researcher, finished_campaign
):
    client.force_login(researcher)
    page = client.get(PAGE + "?measure=ndcg@10:graded").content.decode()
    # the page shows SVG and offers the PNG as a download; the captions name the paper
    sources = re.findall(r'<img[^>]* src="([^"]+)"', page)
    assert [html.unescape(s).split("?")[0].rsplit(".", 1)[1] for s in sources] == ["svg", "svg"]
    assert page.count("<a download href=") == 2
    assert _text(page).count('Clarke, Vtyurina and Smucker, "Assessing top-k preferences"') == 2
    for source in sources:
        response = client.get(html.unescape(source))
        assert response["Content-Type"] == "image/svg+xml"
        root = ET.fromstring(response.content)
        # text stays text, at 8 pt or more (10.7 px when the figure is shown at its size, as the page does)
        sizes = [float(m) for m in re.findall(r"font-size: ?([\d.]+)px", response.content.decode())]
        assert sizes and min(sizes) >= 8, sizes
        texts = [t.text for t in root.iter(f"{SVG}text") if t.text]
        # both axes are labelled, in words over the code name
        assert measure_title("ndcg@10", "graded") in texts and "(ndcg@10:graded)" in texts
        if "scatter" in source:
            assert (
                measure_title("compat@0.95", "preferences") in texts and "(compat@0.95:preferences)" in texts
            )
        else:
            assert "Run (best mean first)" in texts
            # every run's name labels its row, horizontally
            names = {t.text: t.get("transform") or "" for t in root.iter(f"{SVG}text") if t.text in RUNS}
            assert set(names) == set(RUNS) and not any(
                "rotate(-90" in transform for transform in names.values()
            )
            # the ndcg axis ends at 1: no tick label above 1
            ticks = [float(t) for t in texts if re.fullmatch(r"[\d.]+", t or "")]
            assert ticks and max(ticks) == 1.0, ticks


def test_each_figure_numbers_are_the_api_numbers(client, api, researcher, finished_campaign):
    client.force_login(researcher)
    page = client.get(PAGE + "?measure=rr:preferences&x=ap:graded&y=compat@0.8:preferences").content.decode()
    api_rows = api.get("/api/campaigns/demo-done/leaderboard/?limit=1000").json()["results"]
    means = {(r["run"], r["measure"], r["qrels"]): r for r in api_rows}
    scatter = re.findall(
        r'<tr><th scope="row">([^<]+)</th><td class="num">([\d.]+)</td><td class="num">([\d.]+)</td></tr>',
        page[page.index('id="scatter-table"') : page.index('id="figure-intervals"')],
    )
    assert len(scatter) == len({r["run"] for r in api_rows}) > 1
    for run, across, up in scatter:
        assert across == f"{means[(run, 'ap', 'graded')]['mean']:.4f}"
        assert up == f"{means[(run, 'compat@0.8', 'preferences')]['mean']:.4f}"
    intervals = re.findall(
        r'<tr><th scope="row">([^<]+)</th><td class="num">([\d.]+)</td><td class="num">([\d.]+)</td>'
        r'<td class="num">([\d.]+)</td></tr>',
        page[page.index('id="intervals-table"') :],
    )
    for run, mean, low, high in intervals:
        row = means[(run, "rr", "preferences")]
        assert (mean, low, high) == (f"{row['mean']:.4f}", f"{row['ci_low']:.4f}", f"{row['ci_high']:.4f}")
    assert [float(mean) for _, mean, _, _ in intervals] == sorted(
        (float(m) for _, m, _, _ in intervals), reverse=True
    )


def test_campaign_page_in_words_topics_in_natural_order(client, researcher, finished_campaign):
    client.force_login(researcher)
    page = client.get("/dashboard/campaigns/demo-done/").content.decode()
    topics = re.findall(r'<tr data-topic="([^"]+)">', page)
    assert topics == ["c1_1", "d11"]
    # a finished campaign's forecast is not "not planned yet"; states in words, their code kept for scripts
    assert "not planned yet" not in page
    assert '<td data-field="state" data-state="done">done</td>' in page
    progress = client.get("/dashboard/campaigns/demo-done/progress.json").json()
    assert progress["topics"]["d11"] == {
        "state": "done",
        "label": "done",
        "round": progress["topics"]["d11"]["round"],
        "judged": progress["topics"]["d11"]["judged"],
    }


def test_topic_states_are_words(client, researcher, demo_collection):
    from judging.selectors.progress import campaign_progress_table
    from judging.services import campaign_create, campaign_start

    campaign = campaign_start(
        campaign=campaign_create(collection=demo_collection, name="words", seed=1, owner=researcher),
        topic_ids=["d1", "d10", "d2", "d11"],
    )
    table = campaign_progress_table(campaign=campaign)
    assert [row["topic"] for row in table["topics"]] == ["d1", "d2", "d10", "d11"]
    labels = {row["state"]: row["state_label"] for row in table["topics"]}
    assert "stage_1" not in labels.values() and all(
        " " in label or label in ("done", "tournament") for label in labels.values()
    )


def test_favicon_is_served(client):
    response = client.get("/favicon.ico", follow=True)
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert b"<svg" in b"".join(response.streaming_content if response.streaming else [response.content])


def test_api_docs_have_a_way_back_to_the_site(client):
    page = client.get("/api/docs/").content.decode()
    assert '<nav class="api-back" aria-label="Site"><a href="/">' in page and 'href="/dashboard/"' in page


def test_a_figure_drawn_while_another_is_being_saved_keeps_its_text_as_text():
    """A threaded server draws a page's two figures at once. The SVG settings are process-wide (matplotlib's
    rcParams, set and restored by a context): the figure whose save finishes first restores the settings the
    other one is still drawing with, unless drawing is one at a time. The first save is held open here until the
    second has had every chance to start; the second must come out with text, not outlines."""
    import threading

    from metrics import leaderboard_plots

    def figure(hold: threading.Event, inside: threading.Event):
        drawn = leaderboard_plots._figure()
        drawn.add_subplot().set_title("a title")
        save = drawn.savefig

        def held_save(*args, **kwargs):
            inside.set()
            hold.wait()
            save(*args, **kwargs)

        drawn.savefig = held_save
        return drawn

    first_hold, first_inside = threading.Event(), threading.Event()
    second_hold, second_inside = threading.Event(), threading.Event()
    images: dict[str, bytes] = {}

    def render(name, drawn):
        images[name] = leaderboard_plots._render(drawn, "svg")

    first = threading.Thread(target=render, args=("first", figure(first_hold, first_inside)))
    second = threading.Thread(target=render, args=("second", figure(second_hold, second_inside)))
    first.start()
    assert first_inside.wait(10)
    second.start()
    second_inside.wait(0.5)  # drawing one at a time, the second waits for the first and never gets inside
    first_hold.set()
    first.join(10)
    second_hold.set()
    second.join(10)
    for name in ("first", "second"):
        assert b"font-size" in images[name] and b"a title" in images[name], name

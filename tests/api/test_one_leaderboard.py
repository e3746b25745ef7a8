"""One leaderboard: ``toppref compare``, ``GET /api/campaigns/{name}/leaderboard/`` and the leaderboard CSV give the
same mean, interval and rank for every run and measure (issue 18), because the web leaderboard is built by the
core's ``leaderboard_rows`` with the command's defaults (seed 0, 10,000 resamples, 95%)."""

import csv
import io
import json

import pytest
from django.test import Client

from config.cli import main as toppref
from judging.selectors import campaign_qrels_lines
from metrics.leaderboard import LEADERBOARD_MEASURES
from pools.models import Run
from pools.selectors import collection_qrels
from trecio import qrels_line

pytestmark = pytest.mark.django_db

FIELDS = ("mean", "ci_low", "ci_high", "rank")


def _compare(qrels_path, runs, capsys) -> dict[tuple[str, str], dict]:
    """``toppref compare --format json`` of every run under the leaderboard's measures, by (run name, measure)."""
    capsys.readouterr()
    argv = ["compare", str(qrels_path), *[r.file.path for r in runs], "-m", *LEADERBOARD_MEASURES]
    assert toppref([*argv, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # compare names runs by runid (by file when runids repeat), in the order given: map back to the run names
    names = {name: run.name for name, run in zip(report["runs"], runs, strict=True)}
    return {
        (names[row["runid"]], measure): row
        for measure, result in report["measures"].items()
        for row in result["runs"]
    }


def test_compare_api_and_csv_agree_on_every_run_and_measure(
    api, researcher, finished_campaign, tmp_path, capsys
):
    runs = list(Run.objects.filter(collection=finished_campaign.collection).order_by("name"))
    preference = tmp_path / "combined.qrels"
    preference.write_text("\n".join(campaign_qrels_lines(campaign=finished_campaign)) + "\n")
    graded = tmp_path / "graded.qrels"
    graded.write_text(
        "".join(
            qrels_line(topic, docid, grade) + "\n"
            for topic, grades in collection_qrels(collection=finished_campaign.collection).items()
            for docid, grade in grades.items()
        )
    )
    expected = {"preferences": _compare(preference, runs, capsys), "graded": _compare(graded, runs, capsys)}

    api_rows = api.get("/api/campaigns/demo-done/leaderboard/?limit=1000").json()["results"]
    browser = Client()
    browser.force_login(researcher)
    response = browser.get("/dashboard/campaigns/demo-done/leaderboard.csv")
    csv_rows = list(csv.DictReader(io.StringIO(response.content.decode())))

    for source, rows in (("api", api_rows), ("csv", csv_rows)):
        seen = set()
        for row in rows:
            key = (row["run"], row["measure"])
            want = expected[row["qrels"]][key]
            for field in FIELDS:
                assert float(row[field]) == pytest.approx(want[field], abs=1e-9), (
                    source,
                    row["qrels"],
                    key,
                    field,
                )
            seen.add((row["qrels"], *key))
        # every run under every measure and both qrels, nothing missing
        assert len(seen) == len(rows) == 2 * len(LEADERBOARD_MEASURES) * len(runs), source

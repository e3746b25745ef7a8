"""One campaign progress: ``campaign_status --json``, ``GET /api/campaigns/{name}/`` (``progress``) and the
dashboard's ``progress.json`` are adapters of one ``CampaignProgress`` row (issue 18): every key they share has
the same value (money compared as an amount: the command prints a number, the API and the page "12.30")."""

import json
from collections import Counter
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.test import Client

pytestmark = pytest.mark.django_db


def _same(a, b) -> bool:
    if isinstance(a, (int, float, str, Decimal)) and isinstance(b, (int, float, str, Decimal)):
        if isinstance(a, bool) or isinstance(b, bool) or (isinstance(a, str) and isinstance(b, str)):
            return a == b
        return Decimal(str(a)) == Decimal(str(b))
    return a == b


@pytest.mark.parametrize("campaign_name", ["demo-done", "demo-draft"])
def test_status_json_api_and_dashboard_progress_agree_on_every_shared_key(
    api, researcher, finished_campaign, draft_campaign, capsys, campaign_name
):
    capsys.readouterr()
    call_command("campaign_status", campaign_name, "--json")
    status = json.loads(capsys.readouterr().out)
    progress = api.get(f"/api/campaigns/{campaign_name}/").json()["progress"]
    browser = Client()
    browser.force_login(researcher)
    page = browser.get(f"/dashboard/campaigns/{campaign_name}/progress.json").json()

    # progress.json's `topics` is the page's per-topic table (a contract older than this row): it must agree
    # with the counts by state that the others call `topics`
    assert Counter(row["state"] for row in page.pop("topics").values()) == Counter(status["topics"])
    shared = 0
    for one, other in ((status, progress), (status, page), (progress, page)):
        for key in one.keys() & other.keys():
            assert _same(one[key], other[key]), (key, one[key], other[key])
            shared += 1
    # the keys the issue names are there in all three
    for key in ("status", "topics_done", "topics_total", "judgments", "hits", "spend_usd", "pairs_queued"):
        assert key in status and key in progress and key in page
    assert {"topics_finished", "pairs_judged", "spent_usd", "hits_by_status"} <= progress.keys() & page.keys()
    assert shared > 50

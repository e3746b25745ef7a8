"""Bounds where input enters the API: uploads past TOPPREF_MAX_UPLOAD_MB, pagination limits past 2^63, the
planner's parameters and cost, spreadsheet-safe CSV exports, and pausing a crowd campaign whose provider
cannot be reached. Every refusal is a 4xx naming the problem."""

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from judging.models import Campaign, Judgment
from judging.services.exports import export_content
from pools.models import Item, Run

pytestmark = pytest.mark.django_db

BEYOND_INT64 = str(2**63)  # 9223372036854775808: one past SQLite's largest integer


@pytest.mark.parametrize(
    "url",
    [
        "/api/collections/",
        "/api/campaigns/",
        "/api/campaigns/demo-done/judgments/",
        "/api/campaigns/demo-done/rounds/",
        "/api/campaigns/demo-done/hits/",
        "/api/campaigns/demo-done/runs/",
        "/api/campaigns/demo-done/exports/",
        "/api/campaigns/demo-done/topics/",
        "/api/campaigns/demo-done/workers/",
        "/api/campaigns/demo-done/leaderboard/",
    ],
)
def test_a_limit_or_offset_past_2_63_is_a_page_not_a_500(api, finished_campaign, url):
    huge_limit = api.get(f"{url}?limit={BEYOND_INT64}")
    assert huge_limit.status_code == 200, huge_limit.content
    body = huge_limit.json()
    assert len(body["results"]) == min(body["count"], 1000)  # the ceiling, config.pagination.MAX_PAGE_SIZE
    huge_offset = api.get(f"{url}?offset={BEYOND_INT64}&limit={BEYOND_INT64}")
    assert huge_offset.status_code == 200 and huge_offset.json()["results"] == []


def test_the_run_list_filter_by_name_takes_any_text(api, finished_campaign):
    name = Run.objects.filter(collection=finished_campaign.collection).first().name
    assert [r["name"] for r in api.get(f"/api/campaigns/demo-done/runs/?name={name}").json()["results"]] == [
        name
    ]
    assert api.get("/api/campaigns/demo-done/runs/?name=a%00b").json()["results"] == []


def test_integer_path_parameters_past_2_63_are_404(api, finished_campaign):
    assert api.get(f"/api/exports/{BEYOND_INT64}/").status_code == 404
    assert api.post(f"/api/campaigns/demo-done/workers/{BEYOND_INT64}/exclude/").status_code == 404


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        # the cases: 21 s of CPU for one trial; challenges_per_hit 1e9 past 30 s; trials unbounded
        ({"pool_size": 50, "k": 47, "P": 48, "F": 49, "trials": 1}, "P"),
        ({"pool_size": 10, "challenges_per_hit": 10**9}, "challenges_per_hit"),
        ({"pool_size": 10, "preferences_per_hit": 10**9}, "preferences_per_hit"),
        ({"pool_size": 10, "trials": 10**9}, "trials"),
        ({"pool_size": 10, "F": 10**6, "P": 7}, "F"),
        ({"pool_size": 10, "seed": 2**64}, "seed"),
    ],
)
def test_plan_parameters_are_bounded_as_the_cli_s(api, body, problem):
    response = api.post("/api/plan/", body, format="json")
    assert response.status_code == 400 and problem in response.json(), response.json()


def test_plan_cost_is_bounded_naming_the_work(api):
    # each parameter within its range, together too much work: refused before simulating anything
    response = api.post(
        "/api/plan/", {"pool_size": 10_000, "P": 16, "F": 20, "k": 5, "trials": 1000}, format="json"
    )
    assert response.status_code == 400
    [message] = response.json()["non_field_errors"]
    assert "judgments (at most 10,000,000)" in message


def test_the_default_plan_still_runs(api):
    response = api.post("/api/plan/", {"pool_size": 20, "trials": 5}, format="json")
    assert response.status_code == 200 and response.json()["trials"] == 5


def _upload(client, name: str, content: bytes):
    return client.post(
        "/api/campaigns/demo-done/runs/",
        {"name": name, "file": SimpleUploadedFile(f"{name}.txt", content)},
        format="multipart",
    )


def test_an_upload_past_the_limit_is_413_naming_the_limit_and_stores_nothing(
    api, finished_campaign, settings
):
    settings.TOPPREF_MAX_UPLOAD_MB = 0.01  # 10,485 bytes
    before = Run.objects.count()
    response = _upload(api, "big", b"1 Q0 d 1 1 t\n" * 2000)
    assert response.status_code == 413
    assert "TOPPREF_MAX_UPLOAD_MB=0.01 (10,485 bytes)" in response.json()["detail"]
    assert Run.objects.count() == before
    assert _upload(api, "small", b"1 Q0 d 1 1 t\n").status_code == 202


def test_the_dashboard_s_run_upload_has_the_same_limit(client, researcher, finished_campaign, settings):
    settings.TOPPREF_MAX_UPLOAD_MB = 0.01
    client.force_login(researcher)
    response = client.post(
        "/dashboard/campaigns/demo-done/runs/",
        {"name": "big", "file": SimpleUploadedFile("big.run", b"1 Q0 d 1 1 t\n" * 2000)},
    )
    assert response.status_code == 413 and response["Content-Type"].startswith("text/plain")
    assert b"TOPPREF_MAX_UPLOAD_MB=0.01" in response.content
    assert not Run.objects.filter(name="big").exists()


def test_a_body_streaming_past_the_limit_is_stopped_while_read(settings):
    # a body whose length was not announced is counted as it arrives (config.uploads)
    from config.uploads import UploadSizeLimitHandler, UploadTooLargeError

    settings.TOPPREF_MAX_UPLOAD_MB = 1
    handler = UploadSizeLimitHandler()
    assert handler.receive_data_chunk(b"x" * (1 << 20), 0) == b"x" * (1 << 20)
    with pytest.raises(UploadTooLargeError, match="TOPPREF_MAX_UPLOAD_MB=1 "):
        handler.receive_data_chunk(b"x", 1 << 20)


def _rows(content: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(content.decode("utf-8"))))


def test_csv_exports_quote_cells_that_a_spreadsheet_would_run(finished_campaign):
    # an uploaded collection may name a passage like a formula (OWASP "CSV injection")
    judged = Judgment.objects.filter(assignment__campaign=finished_campaign).first().slot.left
    Item.objects.filter(pk=judged.pk).update(docid="=cmd|' /C calc'!A0")
    for kind in ("judgments", "judgments_release"):
        rows = _rows(export_content(campaign=finished_campaign, kind=kind))
        cells = [value for row in rows for value in row.values()]
        assert "'=cmd|' /C calc'!A0" in cells, kind
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in cells), kind
        assert all(row["milliseconds"].lstrip("-").isdigit() or row["milliseconds"] == "" for row in rows)


def test_leaderboard_csv_quotes_run_names_and_keeps_numbers(finished_campaign):
    from metrics.leaderboard import campaign_leaderboard, leaderboard_csv

    Run.objects.filter(collection=finished_campaign.collection).filter(pk=Run.objects.first().pk).update(
        name="-2+3"
    )
    rows = _rows(leaderboard_csv(leaderboard=campaign_leaderboard(campaign=finished_campaign)))
    assert "'-2+3" in {row["run"] for row in rows}
    assert all(float(row["mean"]) == float(row["mean"]) for row in rows)  # numbers, unquoted


def test_the_workers_export_uses_the_judgment_log_s_pseudonyms(finished_campaign):
    log = _rows(export_content(campaign=finished_campaign, kind="judgments"))
    workers = _rows(export_content(campaign=finished_campaign, kind="workers"))
    external_ids = set(finished_campaign.assignments.values_list("worker__external_id", flat=True).distinct())
    assert {row["worker"] for row in workers} == {row["worker"] for row in log}
    assert [row["worker"] for row in workers] == [f"w{i}" for i in range(1, len(workers) + 1)]
    assert not external_ids & {row["worker"] for row in workers}
    # the same worker under the same pseudonym: their HIT count matches their answers' HITs in the log
    hits = {row["worker"]: len({r["hit"] for r in log if r["worker"] == row["worker"]}) for row in workers}
    assert all(
        int(row["hits_submitted"]) + int(row["hits_discarded"]) >= hits[row["worker"]] for row in workers
    )


@pytest.mark.django_db(transaction=True)
def test_pausing_an_mturk_campaign_without_credentials_is_applied_and_said(researcher, monkeypatch, tmp_path):
    from pathlib import Path

    from judging.services import campaign_create
    from pools.services import demo_load
    from tests.api.conftest import token_client

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    collection = demo_load(directory=Path(__file__).resolve().parents[2] / "demo").collection
    campaign = campaign_create(collection=collection, name="turk", seed=1, provider="mturk", owner=researcher)
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.RUNNING)
    response = token_client(researcher).post("/api/campaigns/turk/pause/")
    assert response.status_code == 200
    assert response.json()["status"] == "paused"
    assert "could not be withdrawn now" in response.json()["detail"]
    assert "credentials" in response.json()["detail"]
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.PAUSED


def test_static_files_get_the_pages_security_headers(client):
    for url in (
        "/static/toppref.css",
        "/static/drf_spectacular_sidecar/swagger-ui-dist/oauth2-redirect.html",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "frame-ancestors 'none'" in response["Content-Security-Policy"], url
        assert "script-src 'self'" in response["Content-Security-Policy"], url
        assert response["X-Frame-Options"] == "DENY", url
        assert response["X-Content-Type-Options"] == "nosniff", url

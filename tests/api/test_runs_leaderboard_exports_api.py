"""Runs, leaderboard and exports through the API: upload and background validation, the leaderboard's
numbers equal to ``toppref evaluate`` on the exported qrels, exports built into private files."""

import hashlib
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from config.cli import main as toppref
from judging.models import Export
from pools.models import Run
from tests.api.conftest import token_client

pytestmark = pytest.mark.django_db


def _upload(client, name: str, content: bytes, campaign: str = "demo-done"):
    return client.post(
        f"/api/campaigns/{campaign}/runs/",
        {"name": name, "file": SimpleUploadedFile(f"{name}.txt", content)},
        format="multipart",
    )


def _lines(run_file) -> bytes:
    with run_file.open("rb") as handle:
        return handle.read()


def test_run_upload_is_validated_in_the_background_and_scored(
    api, finished_campaign, django_capture_on_commit_callbacks
):
    # given one of the demo runs under a new name
    content = _lines(Run.objects.filter(collection=finished_campaign.collection).first().file)
    # when it is uploaded (the validation task runs on commit)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = _upload(api, "again", content)
    assert response.status_code == 202 and response.json()["status"] == "pending"
    status_url = response.json()["status_url"]
    assert response["Location"] == status_url == "/api/campaigns/demo-done/runs/?name=again"
    assert len(callbacks) == 1
    # then it is ready, counted, and scored for the finished campaign
    run = Run.objects.get(name="again")
    assert run.status == "ready" and run.progress == 1.0 and run.line_count == content.count(b"\n")
    assert run.uploaded_by.username == "alice"
    listed = api.get("/api/campaigns/demo-done/runs/").json()
    assert "again" in [r["name"] for r in listed["results"]]
    [shown] = api.get(status_url).json()["results"]
    assert (shown["name"], shown["status"], shown["progress"]) == ("again", "ready", 1.0)
    rows = api.get("/api/campaigns/demo-done/leaderboard/?measure=compat@0.95&qrels=preferences").json()[
        "results"
    ]
    assert "again" in [row["run"] for row in rows]


def test_a_bad_run_fails_with_file_line_problem(api, finished_campaign, django_capture_on_commit_callbacks):
    content = b"1 Q0 doc 1 2.0 tag\n1 Q0 doc2 two 1.0 tag\n"
    with django_capture_on_commit_callbacks(execute=True):
        assert _upload(api, "broken", content).status_code == 202
    run = Run.objects.get(name="broken")
    assert run.status == "failed"
    assert run.error.startswith("broken.run:2: ")
    listed = {r["name"]: r for r in api.get("/api/campaigns/demo-done/runs/").json()["results"]}
    assert listed["broken"]["error"] == run.error and listed["broken"]["status"] == "failed"


def test_run_upload_refusals_name_the_field_and_store_nothing(api, outsiders, finished_campaign):
    before = Run.objects.count()
    taken = _upload(api, Run.objects.first().name, b"1 Q0 d 1 1 t\n")
    bad_name = _upload(api, "../etc", b"1 Q0 d 1 1 t\n")
    empty = _upload(api, "empty", b"")
    assert taken.status_code == 400 and "name" in taken.json()
    assert bad_name.status_code == 400 and "name" in bad_name.json()
    assert empty.status_code == 400 and "file" in empty.json()
    for client, expected in outsiders:
        assert _upload(client, "sneaky", b"1 Q0 d 1 1 t\n").status_code == expected
    assert Run.objects.count() == before


def test_leaderboard_rows_have_the_contract_fields(api, outsiders, finished_campaign):
    body = api.get("/api/campaigns/demo-done/leaderboard/?limit=1000").json()
    rows = body["results"]
    runs = sorted(Run.objects.filter(collection=finished_campaign.collection).values_list("name", flat=True))
    assert body["count"] == len(runs) * 9 * 2
    assert {r["measure"] for r in rows} == {
        "compat@0.8",
        "compat@0.85",
        "compat@0.9",
        "compat@0.95",
        "ndcg@3",
        "ndcg@5",
        "ndcg@10",
        "ap",
        "rr",
    }
    assert {r["qrels"] for r in rows} == {"preferences", "graded"}
    for row in rows:
        assert row["ci_low"] <= row["mean"] + 1e-12 and row["mean"] <= row["ci_high"] + 1e-12
    compat = sorted(
        (r for r in rows if r["measure"] == "compat@0.95" and r["qrels"] == "preferences"),
        key=lambda r: r["rank"],
    )
    assert [r["rank"] for r in compat][0] == 1 and sorted(r["run"] for r in compat) == runs
    assert all(a["mean"] >= b["mean"] for a, b in zip(compat, compat[1:], strict=False))
    for client, expected in outsiders:
        assert client.get("/api/campaigns/demo-done/leaderboard/").status_code == expected


def test_leaderboard_baseline_significance(api, finished_campaign):
    baseline = Run.objects.filter(collection=finished_campaign.collection).order_by("name").first().name
    rows = api.get(
        f"/api/campaigns/demo-done/leaderboard/?baseline={baseline}&measure=ndcg@10&qrels=graded"
    ).json()["results"]
    base = next(r for r in rows if r["run"] == baseline)
    others = [r for r in rows if r["run"] != baseline]
    assert base["p_t"] is None and base["p_sign"] is None
    for row in others:
        assert 0 <= row["p_t"] <= row["p_t_holm"] <= 1 and 0 <= row["p_sign"] <= row["p_sign_holm"] <= 1
    bad = api.get("/api/campaigns/demo-done/leaderboard/?baseline=nope")
    assert bad.status_code == 400 and "baseline" in bad.json()


def test_leaderboard_equals_toppref_evaluate_on_the_exported_qrels(
    api, finished_campaign, tmp_path, capsys, django_capture_on_commit_callbacks
):
    # given the campaign's combined preference qrels, exported through the API
    with django_capture_on_commit_callbacks(execute=True):
        export_id = api.post("/api/campaigns/demo-done/exports/", {"kind": "combined"}, format="json").json()[
            "id"
        ]
    download = api.get(f"/api/exports/{export_id}/download/")
    qrels = tmp_path / "combined.qrels"
    qrels.write_bytes(b"".join(download.streaming_content))
    runs = list(Run.objects.filter(collection=finished_campaign.collection).order_by("name"))
    # when `toppref evaluate -m compat@0.95 ndcg@10` scores every run on it
    capsys.readouterr()
    assert (
        toppref(
            [
                "evaluate",
                str(qrels),
                *[r.file.path for r in runs],
                "-m",
                "compat@0.95",
                "ndcg@10",
                "--format",
                "json",
            ]
        )
        == 0
    )
    evaluated = json.loads(capsys.readouterr().out)
    # then the API's leaderboard (preference qrels) has exactly those means
    rows = api.get("/api/campaigns/demo-done/leaderboard/?qrels=preferences&limit=1000").json()["results"]
    api_means = {(r["run"], r["measure"]): r["mean"] for r in rows}
    # (records come run by run in the order the files were given; runid is the file's tag)
    assert len(evaluated) == 2 * len(runs)
    compared = 0
    for index, record in enumerate(evaluated):
        run = runs[index // 2]
        assert api_means[(run.name, record["measure"])] == record["mean"]
        compared += 1
    assert compared == 2 * len(runs)


KINDS = ["combined", "top_k", "best", "judgments", "judgments_release", "workers", "leaderboard"]


def test_every_export_kind_is_built_with_its_checksum_and_is_byte_identical_when_remade(
    api, finished_campaign, django_capture_on_commit_callbacks
):
    for kind in KINDS:
        contents = []
        for _ in range(2):
            with django_capture_on_commit_callbacks(execute=True):
                response = api.post("/api/campaigns/demo-done/exports/", {"kind": kind}, format="json")
            assert response.status_code == 202 and response.json()["kind"] == kind
            detail = api.get(f"/api/exports/{response.json()['id']}/").json()
            assert detail["status"] == "ready" and detail["progress"] == 1.0
            content = b"".join(api.get(f"/api/exports/{detail['id']}/download/").streaming_content)
            assert hashlib.sha256(content).hexdigest() == detail["checksum"]
            assert len(content) == detail["size_bytes"]
            contents.append(content)
        assert contents[0] == contents[1] and contents[0], kind
    listed = api.get("/api/campaigns/demo-done/exports/").json()
    assert listed["count"] == 2 * len(KINDS)


def test_export_files_reveal_what_they_should(api, finished_campaign, django_capture_on_commit_callbacks):
    texts = {}
    for kind in ("combined", "judgments", "judgments_release"):
        with django_capture_on_commit_callbacks(execute=True):
            export_id = api.post("/api/campaigns/demo-done/exports/", {"kind": kind}, format="json").json()[
                "id"
            ]
        texts[kind] = b"".join(api.get(f"/api/exports/{export_id}/download/").streaming_content).decode()
    first = texts["combined"].splitlines()[0].split()
    assert len(first) == 4 and first[1] == "Q0"
    log_header, *log_rows = texts["judgments"].splitlines()
    release_header, *release_rows = texts["judgments_release"].splitlines()
    assert "worker" in log_header.split(",") and "worker" not in release_header.split(",")
    assert len(log_rows) == len(release_rows) > 0
    judged_on = release_header.split(",").index("judged_on")
    assert all(len(row.split(",")[judged_on]) == 10 for row in release_rows)  # YYYY-MM-DD only
    worker = log_header.split(",").index("worker")
    assert all(row.split(",")[worker].startswith("w") for row in log_rows)


def test_exports_are_private(
    api, outsiders, staff, finished_campaign, client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        export_id = api.post("/api/campaigns/demo-done/exports/", {"kind": "combined"}, format="json").json()[
            "id"
        ]
    export = Export.objects.get(pk=export_id)
    for outsider, expected in outsiders:
        assert outsider.get(f"/api/exports/{export_id}/").status_code == (404 if expected == 404 else 403)
        assert outsider.get(f"/api/exports/{export_id}/download/").status_code in (403, 404)
        assert (
            outsider.post(
                "/api/campaigns/demo-done/exports/", {"kind": "combined"}, format="json"
            ).status_code
            == expected
        )
    assert token_client(staff).get(f"/api/exports/{export_id}/download/").status_code == 200
    # no public path serves the file
    assert client.get(f"/media/{export.file.name}").status_code == 404
    assert Export.objects.count() == 1


def test_unknown_export_kind_names_the_field(api, finished_campaign):
    response = api.post("/api/campaigns/demo-done/exports/", {"kind": "everything"}, format="json")
    assert response.status_code == 400 and "kind" in response.json()
    assert not Export.objects.exists()


def test_score_now_is_for_the_owner_only(
    api, outsiders, finished_campaign, django_capture_on_commit_callbacks
):
    from metrics.models import RunScore

    RunScore.objects.filter(campaign=finished_campaign).delete()
    for client, expected in outsiders:
        with django_capture_on_commit_callbacks(execute=True):
            assert client.post("/api/campaigns/demo-done/runs/score/").status_code == expected
    assert not RunScore.objects.filter(campaign=finished_campaign).exists()
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post("/api/campaigns/demo-done/runs/score/").status_code == 202
    assert RunScore.objects.filter(campaign=finished_campaign).count() == 4 * 9

"""A simulated CAsT 2019 campaign: its exported combined qrels, scored by ``toppref evaluate -m compat@0.95
ndcg@10``, give exactly the API's and the dashboard's leaderboard numbers for each of the 23 CAsT runs."""

import csv
import io
import json

import pytest

from config.cli import main as toppref
from judging.engine import PerfectOracle
from judging.services import campaign_create, campaign_start
from judging.services.simulated_crowd import campaign_simulate
from metrics.leaderboard import campaign_runs_score
from pools.models import GradedJudgment, Run
from pools.services import collection_create, qrels_import, run_import
from pools.trec import read_qrels

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

# Enough topics for several stage-1 rounds and ties; all 173 take minutes per database.
TOPICS = 8


def test_cast_leaderboard_equals_toppref_evaluate_for_the_23_runs(
    cast_dir, api, client, researcher, settings, tmp_path, capsys, django_capture_on_commit_callbacks
):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    collection = collection_create(name="cast2019", is_strict=False)
    qrels_import(collection=collection, path=cast_dir / "qrels.graded.txt")
    run_paths = sorted((cast_dir / "runs").glob("*.run"))
    assert len(run_paths) == 23
    for path in run_paths:
        run_import(collection=collection, path=path)
    judged = GradedJudgment.objects.filter(topic__collection=collection).values_list(
        "topic__topic_id", flat=True
    )
    topic_ids = sorted(set(judged))[:TOPICS]
    with django_capture_on_commit_callbacks(execute=True):
        campaign = campaign_start(
            campaign=campaign_create(collection=collection, name="cast", seed=1, owner=researcher),
            topic_ids=topic_ids,
        )
    with django_capture_on_commit_callbacks(execute=True):
        campaign_simulate(
            campaign=campaign, oracle=PerfectOracle(read_qrels(cast_dir / "qrels.preference.txt"))
        )
    campaign.refresh_from_db()
    assert campaign.status == "done"
    campaign_runs_score(campaign=campaign)

    # the combined qrels, exported through the API
    with django_capture_on_commit_callbacks(execute=True):
        export_id = api.post("/api/campaigns/cast/exports/", {"kind": "combined"}, format="json").json()["id"]
    qrels = tmp_path / "cast.combined.qrels"
    qrels.write_bytes(b"".join(api.get(f"/api/exports/{export_id}/download/").streaming_content))

    runs = list(Run.objects.filter(collection=collection).order_by("name"))
    capsys.readouterr()
    command = ["evaluate", str(qrels), *[r.file.path for r in runs], "-m", "compat@0.95", "ndcg@10"]
    assert toppref([*command, "--format", "json"]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    expected = {(runs[i // 2].name, record["measure"]): record["mean"] for i, record in enumerate(evaluated)}
    assert len(expected) == 2 * 23

    rows = api.get("/api/campaigns/cast/leaderboard/?qrels=preferences&limit=1000").json()["results"]
    from_api = {
        (r["run"], r["measure"]): r["mean"] for r in rows if r["measure"] in ("compat@0.95", "ndcg@10")
    }
    assert from_api == expected

    client.force_login(researcher)
    table = csv.DictReader(
        io.StringIO(client.get("/dashboard/campaigns/cast/leaderboard.csv").content.decode())
    )
    from_dashboard = {
        (r["run"], r["measure"]): float(r["mean"])
        for r in table
        if r["qrels"] == "preferences" and r["measure"] in ("compat@0.95", "ndcg@10")
    }
    assert from_dashboard == expected

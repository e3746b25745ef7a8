"""A finished campaign has its runs scored against its preference qrels (issue 4, item 8), by the metrics
app's periodic sweep (the judging app never names a metrics task)."""

from pathlib import Path

import pytest

from judging.engine import PerfectOracle
from judging.models import Campaign
from judging.selectors import campaign_preferences
from judging.services import campaign_create, campaign_start
from judging.services.simulated_crowd import campaign_simulate
from metrics.core.evaluate import evaluate_run, parse_measure
from metrics.core.readers import Qrels, read_run
from metrics.models import RunScore
from metrics.tasks import CAMPAIGN_MEASURES, campaign_scores_sweep_task
from pools.services import demo_load
from pools.trec import read_qrels

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"


@pytest.mark.django_db(transaction=True)
def test_finishing_a_crowd_campaign_scores_every_run_against_its_preferences(settings, tmp_path):
    # given the demo collection with its four runs
    settings.MEDIA_ROOT = str(tmp_path / "media")
    collection = demo_load(directory=DEMO_DIR).collection
    # when a crowd campaign runs to completion with a perfect oracle (real commits: on_commit tasks run)
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="scored", seed=3))
    campaign_simulate(campaign=campaign, oracle=PerfectOracle(read_qrels(DEMO_DIR / "qrels.preference.txt")))
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.DONE
    assert not RunScore.objects.filter(campaign=campaign).exists()
    # when the sweep runs (celery beat), twice: the second finds nothing left to score
    assert campaign_scores_sweep_task() == 1
    assert campaign_scores_sweep_task() == 0
    # then every run has every campaign measure stored against the combined preference qrels
    scores = RunScore.objects.filter(campaign=campaign, qrels_kind="combined")
    assert sorted(scores.values_list("run__name", "measure")) == sorted(
        (run.name, measure) for run in collection.runs.all() for measure in CAMPAIGN_MEASURES
    )
    # and the stored means are those of the pure library on the exported qrels
    values = campaign_preferences(campaign=campaign, kind="combined")
    qrels = Qrels.from_records((t, d, v) for t, docs in values.items() for d, v in docs.items())
    measure = parse_measure("compat@0.8")
    for run in collection.runs.all():
        [expected] = evaluate_run(qrels, read_run(run.file.path), [measure])
        assert scores.get(run=run, measure="compat@0.8").mean == pytest.approx(expected.mean, abs=1e-12)

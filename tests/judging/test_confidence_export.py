"""``campaign_export --kind confidence``: the judge model's p_top_k and p_best of every candidate of a campaign."""

import pytest
from django.core.management import call_command

from judging.engine import PerfectOracle
from judging.models import Candidate
from judging.services import campaign_create, campaign_start
from judging.services.simulated_crowd import campaign_simulate
from tests.judging.test_pipeline import tiny_collection


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["adaptive", "crowd"])
def test_confidence_export_lists_every_candidate_with_calibrated_looking_probabilities(
    tmp_path, capsys, mode
):
    # given a finished campaign judged by a consistent crowd
    collection, _, values = tiny_collection()
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c", mode=mode, seed=11))
    campaign_simulate(campaign=campaign, oracle=PerfectOracle(values), worker_count=3)
    # when its confidence is exported
    out = tmp_path / "confidence.tsv"
    call_command("campaign_export", "c", "--kind", "confidence", "--out", str(out))
    capsys.readouterr()
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    # then every candidate has one line, probabilities adding up to k (or the pool) and to 1 per topic
    expected = sorted(
        Candidate.objects.filter(campaign_topic__campaign=campaign).values_list(
            "campaign_topic__topic__topic_id", "item__docid"
        )
    )
    assert sorted((topic, docid) for topic, docid, _, _ in rows) == expected
    for topic in {topic for topic, _ in expected}:
        mine = [(docid, float(p), float(b)) for t, docid, p, b in rows if t == topic]
        assert sum(p for _, p, _ in mine) == pytest.approx(min(campaign.k, len(mine)), abs=0.01)
        assert sum(b for _, _, b in mine) == pytest.approx(1.0, abs=0.01)
        # the most likely best is the crowd's own best
        best = max(mine, key=lambda row: row[2])[0]
        assert best == PerfectOracle(values).ranking(topic, [d for d, _, _ in mine])[0]
    # and the same call gives the same bytes
    again = tmp_path / "again.tsv"
    call_command("campaign_export", "c", "--kind", "confidence", "--out", str(again))
    assert again.read_bytes() == out.read_bytes()

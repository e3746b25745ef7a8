"""Stored scores: the service, the task, the selectors (real database)."""

import math
from pathlib import Path

import pytest

from metrics.models import RunScore, TopicScore
from metrics.services import ScoreRequestError, run_scores_compute
from metrics.tasks import run_scores_compute_task
from pools.services import run_import
from tests.judging.factories import CampaignFactory, collection_with_grades

GRADES = {"t1": {"a": 2, "b": 1, "c": 0}, "t2": {"d": 1, "e": 0}}
# Hand-checked: good ranks a, c, b on t1 (P@1 = 1, RR = 1) and d on t2 (1, 1); poor ranks c, b on t1
# (P@1 = 0, RR = 1/2) and e, d on t2 (0, 1/2).
RUNS = {
    "good": "t1 Q0 a 1 3.0 good\nt1 Q0 c 2 2.0 good\nt1 Q0 b 3 1.0 good\nt2 Q0 d 1 1.0 good\n",
    "poor": "t1 Q0 c 1 2.0 poor\nt1 Q0 b 2 1.0 poor\nt2 Q0 e 1 2.0 poor\nt2 Q0 d 2 1.0 poor\n",
}


@pytest.fixture
def collection(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    collection = collection_with_grades(GRADES)
    for name, text in RUNS.items():
        path = Path(tmp_path) / f"{name}.run"
        path.write_text(text)
        run_import(collection=collection, path=path)
    return collection


def _stored(**filters):
    return {
        (s.run.name, s.measure): (
            s.mean,
            s.topic_count,
            {t.topic.topic_id: t.value for t in s.topic_scores.all()},
        )
        for s in RunScore.objects.filter(**filters).select_related("run")
    }


@pytest.mark.django_db
def test_run_scores_compute_stores_per_topic_and_mean_scores(collection):
    # when the collection's runs are scored against its graded qrels
    created = run_scores_compute(collection=collection, measures=["p@1", "rr"])
    # then one row per run and measure, with the hand-checked values
    assert len(created) == 4
    assert _stored(campaign__isnull=True, qrels_kind="graded") == {
        ("good", "p@1"): (1.0, 2, {"t1": 1.0, "t2": 1.0}),
        ("good", "rr"): (1.0, 2, {"t1": 1.0, "t2": 1.0}),
        ("poor", "p@1"): (0.0, 2, {"t1": 0.0, "t2": 0.0}),
        ("poor", "rr"): (0.5, 2, {"t1": 0.5, "t2": 0.5}),
    }


@pytest.mark.django_db
def test_run_scores_compute_twice_replaces_instead_of_adding(collection):
    run_scores_compute(collection=collection, measures=["rr"])
    first = _stored()
    run_scores_compute(collection=collection, measures=["rr"])
    assert _stored() == first
    assert RunScore.objects.count() == 2 and TopicScore.objects.count() == 4


@pytest.mark.django_db
def test_campaign_scores_are_kept_apart_from_graded_scores(collection):
    # given a campaign that has not finished a topic: its combined qrels are the grades themselves
    campaign = CampaignFactory(collection=collection)
    run_scores_compute(collection=collection, measures=["rr"])
    run_scores_compute(campaign=campaign, measures=["rr"])
    graded = _stored(campaign__isnull=True)
    combined = _stored(campaign=campaign, qrels_kind="combined")
    assert combined == graded and RunScore.objects.count() == 4
    # best-only qrels without a finished topic hold no relevant item: every RR is 0
    run_scores_compute(campaign=campaign, measures=["rr"], qrels_kind="best")
    assert {key: value[0] for key, value in _stored(qrels_kind="best").items()} == {
        ("good", "rr"): 0.0,
        ("poor", "rr"): 0.0,
    }


@pytest.mark.django_db
def test_bad_requests_change_nothing(collection):
    run_scores_compute(collection=collection, measures=["rr"])
    before = _stored()
    with pytest.raises(ScoreRequestError, match="unknown measure"):
        run_scores_compute(collection=collection, measures=["rr", "nope@3"])
    with pytest.raises(ScoreRequestError, match="either a collection"):
        run_scores_compute(measures=["rr"])
    with pytest.raises(ScoreRequestError, match="needs a campaign"):
        run_scores_compute(collection=collection, measures=["rr"], qrels_kind="best")
    assert _stored() == before


@pytest.mark.django_db
def test_task_loads_by_id_and_ignores_a_deleted_collection(collection):
    assert run_scores_compute_task.delay(collection_id=collection.pk, measures=["p@1"]).get() == 2
    assert set(_stored()) == {("good", "p@1"), ("poor", "p@1")}
    assert run_scores_compute_task.delay(collection_id=collection.pk + 1000, measures=["p@1"]).get() == 0


@pytest.mark.django_db
def test_stored_topic_scores_are_the_hand_checked_values(collection):
    run_scores_compute(collection=collection, measures=["rr", "ppref"])

    def topic_values(run: str, measure: str) -> dict[str, float]:
        return dict(
            TopicScore.objects.filter(run_score__run__name=run, run_score__measure=measure).values_list(
                "topic__topic_id", "value"
            )
        )

    assert topic_values("good", "rr") == {"t1": 1.0, "t2": 1.0}
    assert topic_values("poor", "rr") == {"t1": 0.5, "t2": 0.5}
    # ppref, hand-checked: good orders a>b (a 1, b 3) right, a>c right, b>c wrong (c 2, b 3): 2/3 on t1
    ppref = topic_values("good", "ppref@1000")
    assert ppref["t1"] == pytest.approx(2 / 3) and not math.isnan(ppref["t2"])

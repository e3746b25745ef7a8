"""End to end: a crowd campaign on the demo collection published to the fake MTurk server, every HIT
completed, synced, approved and paid, finished with the same preference qrels as a simulated run with the
same answers.

The external HIT page (/hits/<uuid>/) is built in parallel by another branch; here each worker completes their
HIT through the services the page calls (``assignment_start``, ``assignment_submit``), standing in for it.
"""

import pytest

from judging.engine import PerfectOracle
from judging.models import Assignment, Campaign, Hit, HitSlot
from judging.selectors import campaign_preferences
from judging.services import (
    assignment_start,
    assignment_submit,
    campaign_advance,
    campaign_create,
    campaign_start,
    worker_get_or_create,
)
from judging.services.simulated_crowd import campaign_simulate
from judging.tasks import campaign_publish_task, crowd_sync_task
from pools.models import Collection
from pools.services import demo_load
from pools.trec import read_qrels
from tests.conftest import DEMO_DIR
from tests.judging.crowd.fake_mturk import FakeMTurk


def answer(hit: Hit, oracle: PerfectOracle) -> dict[int, int]:
    slots = HitSlot.objects.filter(hit=hit).values_list(
        "position", "topic__topic_id", "left_id", "left__docid", "right_id", "right__docid"
    )
    return {
        position: left_id if oracle.prefer(topic_id, left, right) == left else right_id
        for position, topic_id, left_id, left, right_id, right in slots
    }


@pytest.mark.slow
@pytest.mark.django_db
def test_a_demo_campaign_on_mturk_finishes_paid_with_the_preferences_of_a_simulated_run(settings):
    demo_load(directory=DEMO_DIR)
    collection = Collection.objects.get(name="demo")
    oracle = PerfectOracle(read_qrels(DEMO_DIR / "qrels.preference.txt"))
    simulated = campaign_start(campaign=campaign_create(collection=collection, name="simulated", seed=1))
    campaign_simulate(campaign=simulated, oracle=oracle)
    campaign = campaign_start(
        campaign=campaign_create(collection=collection, name="turk", seed=1, provider="mturk")
    )

    with FakeMTurk() as fake:
        settings.TOPPREF_MTURK_ENDPOINT_URL = fake.url
        campaign_advance(campaign=campaign)  # builds the first HITs (on-commit tasks do not run in a test)
        campaign_publish_task.apply(args=[campaign.pk]).get()
        workers = 0
        for _ in range(200):
            campaign.refresh_from_db()
            if campaign.status == Campaign.Status.DONE:
                break
            for hit in Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN).order_by("number"):
                assert hit.external_id in fake.hits, "every open HIT is published before it is taken"
                workers += 1
                worker_id = f"A{workers:05d}WORKER"
                assignment = assignment_start(
                    hit=hit, worker=worker_get_or_create(provider="mturk", external_id=worker_id)
                )
                assignment_submit(assignment=assignment, winners=answer(hit, oracle))
                fake.submit(hit.external_id, worker_id)
            # Rounds close and new HITs are built (the tasks' work), then the sync approves and publishes.
            campaign_advance(campaign=campaign)
            crowd_sync_task.apply(args=[campaign.pk]).get()
        crowd_sync_task.apply(args=[campaign.pk]).get()  # the last approvals, after the campaign is done

    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.DONE
    assert campaign_preferences(campaign=campaign) == campaign_preferences(campaign=simulated)
    hits = Hit.objects.filter(campaign=campaign)
    assert hits.count() == len(fake.hits) == len(fake.tokens) == workers
    assert sorted(hits.values_list("external_id", flat=True)) == sorted(fake.hits)
    assignments = Assignment.objects.filter(campaign=campaign)
    assert assignments.count() == workers == len(fake.approved)
    assert not assignments.filter(paid_at__isnull=True).exists()
    assert sorted(assignments.values_list("external_id", flat=True)) == sorted(fake.approved)

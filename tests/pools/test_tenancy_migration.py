"""The tenancy migrations on existing data (docs/decisions.md, "Tenancy"): collections get the owner of the
campaigns that use them when it is unique, uploaded runs their uploader's campaign when it is unique, a
challenge-failure exclusion its campaign owner's scope, and scores of another campaign's run go."""

import pytest
from django.utils import timezone

from tests.migrations import latest_targets, migrate_to

BEFORE = [("pools", "0003_surface_schema"), ("judging", "0003_role_groups"), ("metrics", "0001_initial")]


@pytest.mark.django_db(transaction=True)
def test_existing_data_gets_owners_campaign_runs_and_scoped_exclusions():
    apps = migrate_to(BEFORE)
    User = apps.get_model("auth", "User")
    Collection = apps.get_model("pools", "Collection")
    Run = apps.get_model("pools", "Run")
    Campaign = apps.get_model("judging", "Campaign")
    Hit = apps.get_model("judging", "Hit")
    Worker = apps.get_model("judging", "Worker")
    RunScore = apps.get_model("metrics", "RunScore")
    alice = User.objects.create(username="alice")
    bob = User.objects.create(username="bob")
    mine = Collection.objects.create(name="mine")
    shared = Collection.objects.create(name="shared")
    alices = Campaign.objects.create(collection=mine, name="a1", owner=alice)
    Campaign.objects.create(collection=shared, name="a2", owner=alice)
    bobs = Campaign.objects.create(collection=shared, name="b1", owner=bob)
    uploaded = Run.objects.create(
        collection=shared, name="bobs-run", file="runs/shared/bobs-run.run", uploaded_by=bob
    )
    imported = Run.objects.create(collection=shared, name="bm25", file="runs/shared/bm25.run")
    now = timezone.now()
    # the old scoring stored bob's run under alice's campaign too
    for campaign in (bobs, Campaign.objects.get(name="a2")):
        RunScore.objects.create(
            run=uploaded,
            campaign=campaign,
            qrels_kind="combined",
            measure="ap",
            mean=0.5,
            topic_count=1,
            computed_at=now,
        )
    hit = Hit.objects.create(campaign=alices, number=1)
    cheater = Worker.objects.create(
        provider="mturk",
        external_id="A1",
        is_excluded=True,
        exclusion_reason=f"failed 1 challenge(s) in HIT {hit.pk}",
    )
    spammer = Worker.objects.create(
        provider="mturk", external_id="A2", is_excluded=True, exclusion_reason="spam"
    )

    apps = migrate_to(latest_targets())
    Collection = apps.get_model("pools", "Collection")
    Run = apps.get_model("pools", "Run")
    Worker = apps.get_model("judging", "Worker")
    WorkerExclusion = apps.get_model("judging", "WorkerExclusion")
    RunScore = apps.get_model("metrics", "RunScore")

    assert Collection.objects.get(name="mine").owner_id == alice.pk
    assert Collection.objects.get(name="shared").owner_id is None  # two owners use it: staff's
    assert Run.objects.get(pk=uploaded.pk).campaign_id == bobs.pk
    assert Run.objects.get(pk=imported.pk).campaign_id is None
    assert list(RunScore.objects.values_list("campaign_id", flat=True)) == [bobs.pk]
    assert not Worker.objects.get(pk=cheater.pk).is_excluded
    assert WorkerExclusion.objects.get(worker_id=cheater.pk).owner_id == alice.pk
    assert Worker.objects.get(pk=spammer.pk).is_excluded
    assert not WorkerExclusion.objects.filter(worker_id=spammer.pk).exists()

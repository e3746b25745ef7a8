"""The migration that gives assignments their challenge counts fills them in for assignments counted or
discarded before it: the error estimate of an adaptive campaign sums them per worker."""

import pytest

from tests.migrations import latest_targets, migrate_to

BEFORE = [("judging", "0006_campaign_path_indexes")]
AFTER = [("judging", "0007_assignment_challenge_counts")]


@pytest.fixture
def back_to_latest():
    """The rest of the suite expects the test database at the last migration of every app, whichever it is."""
    yield
    migrate_to(latest_targets())


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
def test_counted_and_discarded_assignments_get_their_challenges_and_failures():
    apps = migrate_to(BEFORE)
    Collection = apps.get_model("pools", "Collection")
    Topic = apps.get_model("pools", "Topic")
    Item = apps.get_model("pools", "Item")
    Campaign = apps.get_model("judging", "Campaign")
    Hit = apps.get_model("judging", "Hit")
    HitSlot = apps.get_model("judging", "HitSlot")
    Worker = apps.get_model("judging", "Worker")
    Assignment = apps.get_model("judging", "Assignment")
    Judgment = apps.get_model("judging", "Judgment")
    collection = Collection.objects.create(name="c")
    topic = Topic.objects.create(collection=collection, topic_id="t1")
    good, bad, other = (
        Item.objects.create(collection=collection, docid=d) for d in ("good", "junk", "other")
    )
    campaign = Campaign.objects.create(collection=collection, name="camp")
    assignments = {}
    for number, (status, answers) in enumerate(
        [("accepted", [good, good]), ("discarded", [good, bad]), ("in_progress", [bad, bad])], start=1
    ):
        hit = Hit.objects.create(campaign=campaign, number=number)
        worker = Worker.objects.create(provider="local", external_id=f"w{number}")
        assignment = Assignment.objects.create(hit=hit, campaign=campaign, worker=worker, status=status)
        # two challenges: good beats junk
        for position, winner in enumerate(answers):
            slot = HitSlot.objects.create(
                hit=hit,
                position=position,
                topic=topic,
                left=good,
                right=bad,
                is_challenge=True,
                expected_winner=good,
            )
            Judgment.objects.create(assignment=assignment, slot=slot, winner=winner)
        assignments[status] = assignment.pk

    apps = migrate_to(AFTER)
    Assignment = apps.get_model("judging", "Assignment")
    counts = {
        status: tuple(Assignment.objects.filter(pk=pk).values_list("challenges", "challenges_failed").get())
        for status, pk in assignments.items()
    }
    # an assignment still in progress counts nothing yet: its submit will set them
    assert counts == {"accepted": (2, 0), "discarded": (2, 1), "in_progress": (0, 0)}

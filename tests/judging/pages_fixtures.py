"""Builders for the judging-page tests: users in role groups, a running crowd campaign with HITs, a running
tournament, and MTurk / Prolific query strings."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from judging.models import Campaign, Hit
from judging.services import campaign_create, campaign_start, hit_build
from pools.models import Item
from tests.judging.factories import collection_with_grades, graded_pool

PASSWORD = "judge-pass-123"
MTURK_SUBMIT = "https://workersandbox.mturk.com"


def user_with_role(username: str, group: str | None):
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    if group:
        # get_or_create: a transactional test (the browser tests) flushes the groups the migration made
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def crowd_campaign(
    *, name: str = "crowd", provider: str = Campaign.Provider.LOCAL, grades=None, **options
) -> Campaign:
    """A running crowd campaign with its HITs built (one topic, stage 2 on 6 candidates: 15 pairs)."""
    collection = collection_with_grades(grades or {"1_1": graded_pool("a", 6)}, name=f"{name}-collection")
    give_texts(collection)
    campaign = campaign_create(collection=collection, name=name, seed=3, **options)
    Campaign.objects.filter(pk=campaign.pk).update(provider=provider)
    campaign = campaign_start(campaign=campaign)
    hit_build(campaign=campaign)
    campaign.refresh_from_db()
    return campaign


def give_texts(collection) -> None:
    """Readable passages, so that the screenshots show something like real work."""
    items = list(Item.objects.filter(collection=collection))
    for number, item in enumerate(items):
        item.text = f"Passage {item.docid}. " + SAMPLE_SENTENCES[number % len(SAMPLE_SENTENCES)]
    Item.objects.bulk_update(items, ["text"])


SAMPLE_SENTENCES = (
    "Seasons happen because Earth's axis is tilted relative to its orbit.\nThe tilted hemisphere gets more direct sunlight.",
    "Descale a kettle by boiling a mixture of water and vinegar, then rinsing it twice.",
    "Oranges, peppers and broccoli are good sources of vitamin C.",
    "The Great Wall was built over many centuries by several dynasties.",
)


def tournament_campaign(*, name: str = "tournament", grades=None) -> Campaign:
    collection = collection_with_grades(grades or {"2_1": graded_pool("t", 6)}, name=f"{name}-collection")
    give_texts(collection)
    return campaign_start(
        campaign=campaign_create(
            collection=collection, name=name, mode="tournament", k=3, final_stage_size=5, opponents=4, seed=3
        )
    )


def mturk_query(
    hit: Hit, *, worker: str = "AWORKER1", assignment: str = "ASSIGN1", submit: str = MTURK_SUBMIT
) -> dict[str, str]:
    return {
        "assignmentId": assignment,
        "hitId": hit.external_id or "HIT1",
        "workerId": worker,
        "turkSubmitTo": submit,
    }

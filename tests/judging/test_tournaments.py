"""Dedicated-assessor tournaments persisted per topic: the pair asked, idempotent and refused submits,
leases between assessors, resuming from the stored state, and the result."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from judging.engine import PerfectOracle, Tournament, tournament_judgment_bound
from judging.models import CampaignTopic, TournamentJudgment
from judging.selectors import campaign_ranked
from judging.services import (
    TopicLeasedError,
    TournamentPairError,
    campaign_create,
    campaign_start,
    tournament_judgment_submit,
    tournament_next_pair,
)
from judging.services.simulated_crowd import tournament_simulate
from pools.models import Item
from tests.judging.factories import collection_with_grades, graded_pool


def start(grades, **options):
    collection = collection_with_grades(grades)
    return campaign_start(
        campaign=campaign_create(collection=collection, name="t", mode="tournament", seed=4, **options)
    )


def user(name):
    return get_user_model().objects.create(username=name)


def answer(question, values):
    left, right = question.left, question.right
    return (left, right) if values[left.docid] > values[right.docid] else (right, left)


@pytest.mark.django_db
def test_tournament_start_stores_a_resumable_state_per_topic():
    campaign = start({"1_1": graded_pool("a", 7), "1_2": graded_pool("b", 1)})

    states = dict(CampaignTopic.objects.values_list("topic__topic_id", "state"))
    stored = CampaignTopic.objects.get(topic__topic_id="1_1").tournament_state

    assert states == {"1_1": "tournament", "1_2": "nothing_to_judge"}
    assert sorted(stored["order"]) == [f"a-r{i:02d}" for i in range(7)] and stored["judgments"] == []
    assert campaign.status == "running"


@pytest.mark.django_db
def test_tournament_finds_the_true_top_k_within_the_bound():
    values = {f"a-r{i:02d}": (i * 7) % 13 for i in range(13)}
    campaign = start({"1_1": dict.fromkeys(values, 3)})

    judgments = tournament_simulate(campaign=campaign, oracle=PerfectOracle({"1_1": values}))

    top = [item.docid for item in campaign_ranked(campaign=campaign)["1_1"]]
    assert top == sorted(values, key=lambda d: -values[d])[:5]
    assert judgments == TournamentJudgment.objects.count() <= tournament_judgment_bound(13, 5)
    campaign.refresh_from_db()
    assert campaign.status == "done"


@pytest.mark.django_db
def test_submit_twice_returns_the_stored_judgment():
    values = {f"a-r{i:02d}": i for i in range(6)}
    campaign = start({"1_1": dict.fromkeys(values, 3)})
    assessor = user("ann")
    question = tournament_next_pair(campaign=campaign, assessor=assessor)
    winner, loser = answer(question, values)

    first = tournament_judgment_submit(
        campaign_topic=question.campaign_topic, assessor=assessor, winner=winner, loser=loser
    )
    second = tournament_judgment_submit(
        campaign_topic=question.campaign_topic, assessor=assessor, winner=loser, loser=winner
    )

    assert second.pk == first.pk and second.winner_id == winner.pk
    assert len(CampaignTopic.objects.get().tournament_state["judgments"]) == 1


@pytest.mark.django_db
def test_a_pair_the_tournament_does_not_wait_for_is_refused():
    campaign = start({"1_1": graded_pool("a", 6)})
    assessor = user("ann")
    question = tournament_next_pair(campaign=campaign, assessor=assessor)
    others = Item.objects.exclude(pk__in=[question.left.pk, question.right.pk]).filter(
        docid__startswith="a-r"
    )[:2]

    with pytest.raises(TournamentPairError, match="waits for"):
        tournament_judgment_submit(
            campaign_topic=question.campaign_topic, assessor=assessor, winner=others[0], loser=others[1]
        )

    assert (
        TournamentJudgment.objects.count() == 0
        and CampaignTopic.objects.get().tournament_state["judgments"] == []
    )


@pytest.mark.django_db
def test_two_assessors_get_different_topics_and_cannot_judge_each_others():
    campaign = start({"1_1": graded_pool("a", 6), "1_2": graded_pool("b", 6)})
    ann, bob = user("ann"), user("bob")

    for_ann = tournament_next_pair(campaign=campaign, assessor=ann)
    for_bob = tournament_next_pair(campaign=campaign, assessor=bob)
    again_for_ann = tournament_next_pair(campaign=campaign, assessor=ann)

    assert for_ann.campaign_topic.pk != for_bob.campaign_topic.pk
    assert again_for_ann.campaign_topic.pk == for_ann.campaign_topic.pk
    assert (again_for_ann.left.pk, again_for_ann.right.pk) == (for_ann.left.pk, for_ann.right.pk)
    assert tournament_next_pair(campaign=campaign, assessor=user("cy")) is None
    with pytest.raises(TopicLeasedError):
        tournament_judgment_submit(
            campaign_topic=for_ann.campaign_topic, assessor=bob, winner=for_ann.left, loser=for_ann.right
        )


@pytest.mark.django_db
def test_an_expired_lease_lets_another_assessor_take_over():
    campaign = start({"1_1": graded_pool("a", 6)})
    ann, bob = user("ann"), user("bob")
    question = tournament_next_pair(campaign=campaign, assessor=ann)
    CampaignTopic.objects.update(assessor_lease_until=timezone.now() - timedelta(seconds=1))

    taken = tournament_next_pair(campaign=campaign, assessor=bob)

    assert taken.campaign_topic.pk == question.campaign_topic.pk
    assert CampaignTopic.objects.get().assessor_id == bob.pk


@pytest.mark.django_db
def test_the_stored_state_resumes_to_the_engine_result():
    # Given a tournament judged halfway, then resumed from the database as on another day
    values = {f"a-r{i:02d}": (i * 5) % 11 for i in range(11)}
    campaign = start({"1_1": dict.fromkeys(values, 3)}, k=3, final_stage_size=5, opponents=4)
    ann = user("ann")
    for _ in range(5):
        question = tournament_next_pair(campaign=campaign, assessor=ann)
        winner, loser = answer(question, values)
        tournament_judgment_submit(
            campaign_topic=question.campaign_topic, assessor=ann, winner=winner, loser=loser
        )
    state = CampaignTopic.objects.get().tournament_state
    CampaignTopic.objects.update(assessor_lease_until=timezone.now() - timedelta(days=1))  # a day later

    tournament_simulate(campaign=campaign, oracle=PerfectOracle({"1_1": values}), assessor_username="bob")

    reference = Tournament.from_state(state)
    while (pair := reference.next_pair()) is not None:
        a, b = pair
        reference.record(*((a, b) if values[a] > values[b] else (b, a)))
    top = [item.docid for item in campaign_ranked(campaign=campaign)["1_1"]]
    assert top == reference.top_k() and TournamentJudgment.objects.count() == reference.judgment_count

"""Campaign creation (parameter rules, database constraints) and start (thinning, first state per topic)."""

import math
from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from judging.engine import MODEL_ROUNDS
from judging.models import Campaign, CampaignTopic, Candidate, Pair, Round
from judging.selectors.adaptive import adaptive_params
from judging.services import (
    CampaignConfigError,
    CampaignStateError,
    campaign_advance,
    campaign_create,
    campaign_start,
)
from tests.judging.factories import CampaignFactory, collection_with_grades, graded_pool, judge_round
from tests.pools.factories import CollectionFactory


@pytest.mark.django_db
def test_campaign_create_defaults_are_the_papers():
    collection = CollectionFactory()

    campaign = campaign_create(collection=collection, name="cast")

    assert (campaign.k, campaign.final_stage_size, campaign.opponents) == (5, 9, 7)
    assert (campaign.preferences_per_hit, campaign.challenges_per_hit) == (10, 3)
    assert (campaign.pay_per_hit_usd, campaign.fee_per_hit_usd) == (Decimal("2.00"), Decimal("0.40"))
    assert campaign.culling == "half" and campaign.mode == "crowd" and campaign.status == "draft"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("k", "final_stage_size", "opponents", "message"),
    [
        (5, 9, 9, "F > P > k"),
        (5, 9, 5, "F > P > k"),
        (0, 9, 7, "k must be at least 1"),
        (5, 6, 7, "F > P > k"),
    ],
)
def test_campaign_create_refuses_parameters_breaking_f_above_p_above_k(
    k, final_stage_size, opponents, message
):
    collection = CollectionFactory()

    with pytest.raises(CampaignConfigError, match=message):
        campaign_create(
            collection=collection, name="bad", k=k, final_stage_size=final_stage_size, opponents=opponents
        )

    assert Campaign.objects.count() == 0


@pytest.mark.django_db
def test_campaign_create_refuses_negative_pay_and_unknown_culling():
    collection = CollectionFactory()

    with pytest.raises(CampaignConfigError, match="pay per HIT must be a finite, non-negative amount"):
        campaign_create(collection=collection, name="bad-pay", pay_per_hit_usd=Decimal("-1"))
    with pytest.raises(CampaignConfigError, match="culling"):
        campaign_create(collection=collection, name="bad-rule", culling="unanimous")

    assert Campaign.objects.count() == 0


@pytest.mark.django_db
def test_model_rounds_need_a_budget_and_a_count_in_range():
    collection = CollectionFactory()

    with pytest.raises(
        CampaignConfigError, match="model rounds spread a judgment budget: give max_judgments"
    ):
        campaign_create(collection=collection, name="no-budget", mode="adaptive", model_rounds=40)
    with pytest.raises(CampaignConfigError, match="model rounds must be in .1, 1000."):
        campaign_create(
            collection=collection, name="none", mode="adaptive", max_judgments=500, model_rounds=0
        )
    assert Campaign.objects.count() == 0
    # the default count, as a campaign read back through the API carries it, needs no budget
    plain = campaign_create(collection=collection, name="plain", mode="adaptive", model_rounds=MODEL_ROUNDS)
    budgeted = campaign_create(
        collection=collection, name="slow", mode="adaptive", max_judgments=500, model_rounds=40
    )
    assert (plain.model_rounds, budgeted.model_rounds) == (MODEL_ROUNDS, 40)
    assert adaptive_params(budgeted).model_rounds == 40


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("money", "message"),
    [
        (
            {"pay_per_hit_usd": Decimal(0), "fee_per_hit_usd": Decimal(0), "budget_usd": Decimal(10)},
            "costs something",
        ),
        ({"budget_usd": Decimal(0)}, "budget 0 USD allows no HIT"),
        ({"budget_usd": Decimal("2.39")}, "allows no HIT .one HIT costs 2.40 USD"),
        ({"pay_per_hit_usd": Decimal("NaN")}, "finite"),
        ({"budget_usd": Decimal("Infinity")}, "finite"),
    ],
)
def test_campaign_create_refuses_money_that_buys_no_hit(money, message):
    # A zero cost per HIT once crashed the start (a division by zero); a budget below one HIT started a
    # campaign that could never build a HIT.
    collection = CollectionFactory()

    with pytest.raises(CampaignConfigError, match=message):
        campaign_create(collection=collection, name="money", **money)

    assert Campaign.objects.count() == 0


@pytest.mark.django_db
def test_free_hits_without_a_budget_are_allowed():
    collection = CollectionFactory()

    campaign = campaign_create(
        collection=collection, name="volunteers", pay_per_hit_usd=Decimal(0), fee_per_hit_usd=Decimal(0)
    )

    assert campaign.cost_per_hit_usd == 0 and campaign.budget_usd is None


@pytest.mark.django_db
def test_a_start_refused_for_its_budget_changes_nothing():
    # Given a draft whose budget was lowered below one HIT behind the service's back (e.g. in the admin)
    campaign = campaign_create(
        collection=collection_with_grades({"1_1": graded_pool("1_1", 12)}), name="poor"
    )
    Campaign.objects.filter(pk=campaign.pk).update(budget_usd=Decimal("1.00"))

    with pytest.raises(CampaignConfigError, match="budget 1.00 USD allows no HIT"):
        campaign_start(campaign=campaign)

    campaign.refresh_from_db()
    assert campaign.status == "draft" and campaign.started_at is None
    assert CampaignTopic.objects.count() == Round.objects.count() == Pair.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    "fields",
    [{"k": 0}, {"opponents": 5}, {"final_stage_size": 7}, {"preferences_per_hit": 0}, {"budget_usd": -1}],
)
def test_database_constraints_hold_without_the_service(fields):
    with pytest.raises(IntegrityError), transaction.atomic():
        CampaignFactory(**fields)


@pytest.mark.django_db
def test_campaign_start_puts_each_topic_in_its_first_state():
    # Given pools of F+1 (stage 1), F (stage 2), 1 and 0 candidates after thinning at k=5
    collection = collection_with_grades(
        {
            "1_1": graded_pool("a", 10),
            "1_2": graded_pool("b", 9),
            "1_3": graded_pool("c", 1),
            "1_4": graded_pool("d", 0),
        }
    )
    campaign = campaign_create(collection=collection, name="c", seed=1)

    campaign = campaign_start(campaign=campaign)

    states = dict(CampaignTopic.objects.filter(campaign=campaign).values_list("topic__topic_id", "state"))
    assert states == {
        "1_1": "stage_1",
        "1_2": "stage_2",
        "1_3": "nothing_to_judge",
        "1_4": "nothing_to_judge",
    }
    assert campaign.status == "running" and campaign.started_at is not None
    # stage 1 on 10 candidates with P=7: 10*7/2 = 35 pairs; stage 2 on 9: C(9,2) = 36 pairs
    counts = {
        round.campaign_topic.topic.topic_id: round.pairs.count()
        for round in Round.objects.filter(campaign_topic__campaign=campaign).select_related(
            "campaign_topic__topic"
        )
    }
    assert counts == {"1_1": 35, "1_2": 36}
    single = Candidate.objects.get(campaign_topic__topic__topic_id="1_3")
    assert (single.item.docid, single.rank) == ("c-r00", 1)


@pytest.mark.django_db
def test_campaign_start_thins_whole_grades_until_k():
    # Given 2 items of grade 4, 2 of grade 3 and 4 of grade 2: thinning at k=5 keeps grades 4, 3 and 2
    grades = {
        "f4a": 4,
        "f4b": 4,
        "h3a": 3,
        "h3b": 3,
        "m2a": 2,
        "m2b": 2,
        "m2c": 2,
        "m2d": 2,
        "s1": 1,
        "n0": 0,
    }
    collection = collection_with_grades({"1_1": grades})
    campaign = campaign_create(collection=collection, name="c")

    campaign_start(campaign=campaign)

    kept = list(
        Candidate.objects.filter(campaign_topic__campaign=campaign).values_list("item__docid", "position")
    )
    assert kept == [
        ("f4a", 0),
        ("f4b", 1),
        ("h3a", 2),
        ("h3b", 3),
        ("m2a", 4),
        ("m2b", 5),
        ("m2c", 6),
        ("m2d", 7),
    ]


@pytest.mark.django_db
def test_campaign_start_twice_changes_nothing():
    collection = collection_with_grades({"1_1": graded_pool("a", 12), "1_2": graded_pool("b", 4)})
    campaign = campaign_create(collection=collection, name="c")
    campaign_start(campaign=campaign)
    before = sorted(
        Pair.objects.values_list("round__campaign_topic__topic__topic_id", "left__docid", "right__docid")
    )

    campaign_start(campaign=campaign)

    after = sorted(
        Pair.objects.values_list("round__campaign_topic__topic__topic_id", "left__docid", "right__docid")
    )
    assert after == before and Round.objects.count() == 2 and CampaignTopic.objects.count() == 2


@pytest.mark.django_db
def test_campaign_start_without_graded_judgments_is_refused():
    campaign = campaign_create(collection=CollectionFactory(), name="empty")

    with pytest.raises(CampaignStateError, match="no graded judgments"):
        campaign_start(campaign=campaign)

    campaign.refresh_from_db()
    assert campaign.status == "draft" and CampaignTopic.objects.count() == 0


@pytest.mark.django_db
def test_campaign_of_nothing_to_judge_is_done_at_start():
    collection = collection_with_grades({"1_1": graded_pool("a", 1), "1_2": graded_pool("b", 0)})

    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c"))

    assert campaign.status == "done" and campaign.finished_at is not None


@pytest.mark.django_db
def test_campaign_advance_resumes_where_lost_tasks_left_off():
    # Given round 1 fully judged but its close task lost, as after a crash (on-commit tasks never ran here)
    collection = collection_with_grades({"1_1": graded_pool("a", 12), "1_2": graded_pool("b", 6)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c", seed=4))
    judge_round(Round.objects.get(campaign_topic__topic__topic_id="1_1"), lambda a, b: min(a, b))

    counts = campaign_advance(campaign=campaign)

    queued = Pair.objects.filter(winner__isnull=True).count()  # 1_2's stage 2 and 1_1's round 2
    assert counts == {
        "rounds_opened": 0,
        "rounds_closed": 1,
        "hits_expired": 0,
        "hits_built": math.ceil(queued / 10),
    }
    assert Round.objects.filter(campaign_topic__topic__topic_id="1_1").count() == 2
    assert campaign_advance(campaign=campaign) == dict.fromkeys(counts, 0)


@pytest.mark.django_db
def test_a_lost_round_is_regenerated_with_the_same_pairs():
    collection = collection_with_grades({"1_1": graded_pool("a", 12)})
    campaign = campaign_start(campaign=campaign_create(collection=collection, name="c", seed=4))
    pairs = sorted(Pair.objects.values_list("left__docid", "right__docid"))
    topic = CampaignTopic.objects.get()
    Round.objects.all().delete()
    CampaignTopic.objects.update(round_number=0)

    counts = campaign_advance(campaign=campaign)

    assert (
        counts["rounds_opened"] == 1
        and sorted(Pair.objects.values_list("left__docid", "right__docid")) == pairs
    )
    topic.refresh_from_db()
    assert topic.round_number == 1 and topic.state == "stage_1"


def start_statements(topic_count: int, name: str) -> int:
    collection = collection_with_grades(
        {f"{name}_{i}": graded_pool(f"{name}{i}-", 10 + i % 3) for i in range(topic_count)}, name=name
    )
    campaign = campaign_create(collection=collection, name=name, seed=1)
    with CaptureQueriesContext(connection) as statements:
        campaign_start(campaign=campaign)
    assert Round.objects.filter(campaign_topic__campaign=campaign).count() == topic_count
    return len(statements)


@pytest.mark.django_db
def test_a_crowd_campaign_starts_in_a_few_statements_not_a_handful_per_topic():
    # Given campaigns of 2 and 12 topics, each opening a stage-1 round
    small, big = start_statements(2, "small"), start_statements(12, "big")
    # Then ten more topics cost only the extra batches of the bulk inserts (SQLite takes 999 parameters a
    # statement), never statements per topic: a campaign of thousands of topics starts in one short
    # transaction
    assert big - small <= 5

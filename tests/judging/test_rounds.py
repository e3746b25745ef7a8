"""The per-topic state machine: closing stage-1 rounds (culling, reinstatement, round cap), stage 2 (ranking
with ties at k), exactly-once closing, and round generation."""

import itertools

import pytest

from judging.engine import stage1_close
from judging.models import CampaignTopic, Candidate, Round
from judging.selectors import campaign_preferences, campaign_ranked
from judging.services import (
    campaign_create,
    campaign_start,
    round_close_if_complete,
    round_generate,
)
from judging.services.topic_state import campaign_params
from tests.judging.factories import by_value, collection_with_grades, graded_pool, judge_round


def start(grades, **options):
    collection = collection_with_grades(grades)
    return campaign_start(campaign=campaign_create(collection=collection, name="c", seed=5, **options))


def only_round(campaign, number=1):
    return Round.objects.get(campaign_topic__campaign=campaign, number=number)


def active(campaign):
    return list(
        Candidate.objects.filter(campaign_topic__campaign=campaign, is_active=True)
        .order_by("position")
        .values_list("item__docid", flat=True)
    )


@pytest.mark.django_db
def test_round_with_an_unjudged_pair_stays_open():
    campaign = start({"1_1": graded_pool("a", 12)})
    round = only_round(campaign)
    judge_round(round, lambda a, b: min(a, b))
    round.pairs.filter(pk=round.pairs.first().pk).update(winner=None)

    closed = round_close_if_complete(round=round)

    round.refresh_from_db()
    assert closed is False and round.closed_at is None and round.outcome is None
    assert Round.objects.count() == 1 and len(active(campaign)) == 12


@pytest.mark.django_db
@pytest.mark.parametrize("culling", ["half", "strict_majority"])
def test_stage1_close_keeps_what_the_engine_keeps_and_opens_the_next_round(culling):
    # Given 12 candidates (> F = 9) judged by a consistent assessor preferring the smaller docid
    campaign = start({"1_1": graded_pool("a", 12)}, culling=culling)
    round = only_round(campaign)
    judge_round(round, lambda a, b: min(a, b))
    pairs = list(round.pairs.values_list("left__docid", "right__docid"))
    candidates = [f"a-r{i:02d}" for i in range(12)]
    expected = stage1_close(
        candidates, pairs, [(min(p), max(p)) for p in pairs], params=campaign_params(campaign), round_number=1
    )

    closed = round_close_if_complete(round=round)

    assert closed is True
    assert active(campaign) == expected.survivors
    culled = Candidate.objects.filter(campaign_topic__campaign=campaign, is_active=False)
    assert sorted(culled.values_list("item__docid", flat=True)) == sorted(expected.culled)
    assert set(culled.values_list("culled_in_round", flat=True)) <= {1}
    # the culling rule, counted here from the stored pairs
    wins = {c: sum(1 for p in pairs if min(p) == c) for c in candidates}
    opponents = {c: sum(1 for p in pairs if c in p) for c in candidates}
    is_culled = (
        (lambda c: 2 * wins[c] <= opponents[c])
        if culling == "strict_majority"
        else (lambda c: 2 * wins[c] < opponents[c])
    )
    assert sorted(expected.culled) == sorted(
        c for c in candidates if is_culled(c) and c not in expected.reinstated
    )
    next_round = only_round(campaign, 2)
    assert next_round.stage == (1 if len(expected.survivors) > 9 else 2)
    assert CampaignTopic.objects.get().round_number == 2


@pytest.mark.django_db
def test_reinstatement_is_persisted_when_fewer_than_k_survive():
    # Given three candidates that win every match and everyone else sharing the remaining wins evenly,
    # fewer than k = 5 survive the half rule, so the best culled come back by win ratio
    campaign = start({"1_1": graded_pool("a", 10)})
    round = only_round(campaign)
    pairs = list(round.pairs.values_list("left__docid", "right__docid"))
    strong = {"a-r00", "a-r01", "a-r02"}
    wins = dict.fromkeys((c for p in pairs for c in p), 0)
    outcome = {}
    for a, b in pairs:
        if a in strong or b in strong:
            winner = min(a, b) if a in strong and b in strong else (a if a in strong else b)
        else:
            winner = min((a, b), key=lambda c: (wins[c], c))
        wins[winner] += 1
        outcome[a, b] = winner
    judge_round(round, lambda a, b: outcome[a, b])
    expected = stage1_close(
        [f"a-r{i:02d}" for i in range(10)],
        pairs,
        [(w, b if w == a else a) for (a, b), w in outcome.items()],
        params=campaign_params(campaign),
    )
    assert expected.reinstated  # the scenario really needs reinstatement

    round_close_if_complete(round=round)

    round.refresh_from_db()
    assert round.outcome["reinstated"] == expected.reinstated
    assert active(campaign) == expected.survivors and len(expected.survivors) >= 5
    assert not Candidate.objects.filter(item__docid__in=expected.reinstated, is_active=False).exists()


@pytest.mark.django_db
def test_round_cap_sends_the_pool_to_stage_2():
    campaign = start({"1_1": graded_pool("a", 40)}, max_rounds=1)
    round = only_round(campaign)
    judge_round(round, lambda a, b: min(a, b))

    round_close_if_complete(round=round)

    survivors = active(campaign)
    second = only_round(campaign, 2)
    assert len(survivors) > 9  # still above F, stage 2 only because of the cap
    assert second.stage == 2
    assert sorted(second.pairs.values_list("left__docid", "right__docid")) == sorted(
        itertools.combinations(survivors, 2)
    )


@pytest.mark.django_db
def test_stage2_ranks_by_wins_and_keeps_ties_the_31_2_example():
    # the released TREC-CAsT-2019 preference judgments (topic 31_2): stage-2 wins 4, 3, 3, 2, 2, 1 give the combined
    # values 50, 40, 40, 20, 20 and leave the last item out of the top-5.
    beats = {
        "a": {"b", "c", "d", "e"},
        "b": {"d", "e", "f"},
        "c": {"b", "e", "f"},
        "d": {"c", "f"},
        "e": {"d", "f"},
        "f": {"a"},
    }
    grades = dict.fromkeys("abcdef", 4) | {"n": 0}
    campaign = start({"31_2": grades})
    round = only_round(campaign)
    assert round.stage == 2 and round.pairs.count() == 15
    judge_round(round, lambda x, y: x if y in beats[x] else y)

    round_close_if_complete(round=round)

    ranked = [(item.docid, item.rank, item.wins) for item in campaign_ranked(campaign=campaign)["31_2"]]
    assert ranked == [("a", 1, 4), ("b", 2, 3), ("c", 2, 3), ("d", 4, 2), ("e", 4, 2)]
    assert campaign_preferences(campaign=campaign)["31_2"] == {
        "a": 50.0,
        "b": 40.0,
        "c": 40.0,
        "d": 20.0,
        "e": 20.0,
        "f": 4.0,
        "n": 0.0,
    }
    assert campaign_preferences(campaign=campaign, kind="top_k")["31_2"] == {
        "a": 5.0,
        "b": 4.0,
        "c": 4.0,
        "d": 2.0,
        "e": 2.0,
        "f": 0.0,
        "n": 0.0,
    }
    assert campaign_preferences(campaign=campaign, kind="best")["31_2"] == dict.fromkeys("bcdefn", 0.0) | {
        "a": 1.0
    }
    topic = CampaignTopic.objects.get()
    campaign.refresh_from_db()
    assert topic.state == "done" and campaign.status == "done"


@pytest.mark.django_db
def test_tie_at_rank_k_keeps_every_tied_item():
    # Given 6 candidates, k=3: a beats all, b beats c..f, and c, d, e, f form two cycles of equal wins
    beats = {"a": set("bcdef"), "b": set("cdef"), "c": {"d", "e"}, "d": {"e", "f"}, "e": {"f"}, "f": {"c"}}
    campaign = start({"1_1": dict.fromkeys("abcdef", 3)}, k=3, final_stage_size=9, opponents=7)
    judge_round(only_round(campaign), lambda x, y: x if y in beats[x] else y)

    round_close_if_complete(round=only_round(campaign))

    ranked = [(item.docid, item.rank) for item in campaign_ranked(campaign=campaign)["1_1"]]
    assert ranked == [("a", 1), ("b", 2), ("c", 3), ("d", 3)]


@pytest.mark.django_db
def test_closing_twice_advances_once():
    campaign = start({"1_1": graded_pool("a", 12)})
    round = only_round(campaign)
    judge_round(round, lambda a, b: min(a, b))

    first = round_close_if_complete(round=round)
    survivors = active(campaign)
    second = round_close_if_complete(round=round)

    assert (first, second) == (True, False)
    assert Round.objects.count() == 2 and active(campaign) == survivors


@pytest.mark.django_db
def test_round_generate_returns_the_open_round_and_does_nothing_for_finished_topics():
    campaign = start({"1_1": graded_pool("a", 12), "1_2": graded_pool("b", 1)})
    open_round = only_round(campaign)

    again = round_generate(campaign_topic=open_round.campaign_topic)
    finished = round_generate(campaign_topic=CampaignTopic.objects.get(topic__topic_id="1_2"))

    assert again.pk == open_round.pk and finished is None and Round.objects.count() == 1


@pytest.mark.django_db
def test_a_perfect_crowd_finds_the_true_top_k_through_rounds():
    # Given 30 candidates with distinct values, judged consistently round after round
    values = {f"a-r{i:02d}": 100 - i for i in range(30)}
    campaign = start({"1_1": dict.fromkeys(values, 2)})

    while (round := Round.objects.filter(closed_at__isnull=True).first()) is not None:
        judge_round(round, by_value(values))
        round_close_if_complete(round=round)

    top = [item.docid for item in campaign_ranked(campaign=campaign)["1_1"]]
    stages = list(Round.objects.order_by("number").values_list("stage", flat=True))
    assert top[0] == "a-r00" and len(top) == 5 and stages[-1] == 2 and set(stages[:-1]) == {1}

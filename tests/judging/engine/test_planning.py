import random
from math import comb, sqrt

import pytest

from judging.engine import CrowdParams, plan_campaign

TRIALS = 2000


def _within_mc_error(estimate, expected, trials):
    return abs(estimate - expected) < 4 * sqrt(expected * (1 - expected) / trials)


def test_pool_of_ten_loses_the_fifth_best_with_probability_c53_over_c97_without_reinstatement():
    # "Assessing top-k preferences", section 4.3 ("12%"): with |C| = 10 and 7 opponents each, the 5th-best is culled iff its opponents
    # include all of the top 4: C(5,3)/C(9,7) = 0.278; the paper's bare rule never brings it back.
    plan = plan_campaign(
        {"pool": 10}, params=CrowdParams(reinstate=False), trials=TRIALS, rng=random.Random(1)
    )
    expected = comb(5, 3) / comb(9, 7)
    assert _within_mc_error(plan["p_miss"], expected, TRIALS)
    assert plan["p_lost"] == plan["p_miss"]
    assert plan["p_miss_by_rank"] == {"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.0, "5": plan["p_miss"]}
    assert list(plan["kth_culled_in_round1_by_opponents"]) == ["7"]  # 10 * 7 is even: no P+1 vertex
    assert plan["kth_culled_in_round1_by_opponents"]["7"]["rounds"] == TRIALS


def test_reinstatement_saves_the_fifth_best_when_only_the_top_4_survive():
    plan = plan_campaign({"pool": 10}, params=CrowdParams(), trials=TRIALS, rng=random.Random(1))
    by_opponents = plan["kth_culled_in_round1_by_opponents"]["7"]
    # p_miss is the paper's culling risk; p_lost is what the output really misses after reinstatement.
    assert _within_mc_error(plan["p_miss"], comb(5, 3) / comb(9, 7), TRIALS)
    assert by_opponents["p_culled"] == plan["p_miss"]
    assert by_opponents["p_lost"] == plan["p_lost"]
    assert plan["p_lost"] < plan["p_miss"]


@pytest.mark.parametrize(
    ("culling", "p7", "p8"),
    [
        # |C| = 11: the 5th-best beats 6 and loses to 4. With 7 of 10 others it is culled iff it meets all
        # 4 better ones: C(6,3)/C(10,7). With 8 under "half" it always keeps >= 4 wins; under strict
        # majority it is culled iff it meets all 4: C(6,4)/C(10,8).
        ("half", comb(6, 3) / comb(10, 7), 0.0),
        ("strict_majority", comb(6, 3) / comb(10, 7), comb(6, 4) / comb(10, 8)),
    ],
)
def test_odd_pool_reports_per_opponent_count(culling, p7, p8):
    plan = plan_campaign(
        {"pool": 11}, params=CrowdParams(culling=culling), trials=TRIALS, rng=random.Random(2)
    )
    by_opponents = plan["kth_culled_in_round1_by_opponents"]
    assert set(by_opponents) == {"7", "8"}
    assert by_opponents["7"]["rounds"] + by_opponents["8"]["rounds"] == TRIALS
    # the single 8-opponent candidate is any of the 11 with equal chance
    assert _within_mc_error(by_opponents["8"]["rounds"] / TRIALS, 1 / 11, TRIALS)
    assert _within_mc_error(by_opponents["7"]["p_culled"], p7, by_opponents["7"]["rounds"])
    if p8 == 0.0:
        assert by_opponents["8"]["p_culled"] == 0.0
    else:
        assert _within_mc_error(by_opponents["8"]["p_culled"], p8, by_opponents["8"]["rounds"])


def test_pools_up_to_f_cost_exactly_all_pairs():
    # |C| <= F goes straight to stage 2: C(9,2) = 36 judgments in 4 HITs at $2.40, and nothing is missed.
    plan = plan_campaign({"a": 9, "b": 1, "c": 0}, params=CrowdParams(), trials=5, rng=random.Random(0))
    assert (plan["judgments"], plan["hits"], plan["cost_usd"], plan["p_miss"], plan["p_lost"]) == (
        36.0,
        4.0,
        9.6,
        0.0,
        0.0,
    )
    assert plan["judgments_sd"] == 0.0
    assert plan["p_miss_per_topic"] == {"a": 0.0, "b": 0.0}


def test_collection_plan_reports_means_and_bounds():
    plan = plan_campaign({"t": 30, "u": 12, "v": 4}, params=CrowdParams(), trials=20, rng=random.Random(3))
    assert plan["judgments_min"] <= plan["judgments"] <= plan["judgments_max"]
    assert plan["hits"] >= plan["judgments"] / 10
    assert plan["cost_usd"] == pytest.approx(plan["hits"] * 2.40, abs=0.01)
    assert set(plan["p_miss_per_topic"]) == set(plan["p_lost_per_topic"]) == {"t", "u", "v"}
    assert all(plan["p_lost_per_topic"][t] <= plan["p_miss_per_topic"][t] for t in "tuv")
    assert plan["tournament_judgment_bound"] == (30 + 4 * 5) + (12 + 4 * 4) + (4 + 4 * 2)


def test_trials_must_be_positive():
    with pytest.raises(ValueError, match="trials must be at least 1"):
        plan_campaign({"t": 3}, params=CrowdParams(), trials=0, rng=random.Random(0))


def test_both_planners_draw_the_same_worlds_trial_by_trial_whatever_ties_they_leave(monkeypatch):
    # The adaptive plan is read beside the paper's procedure's: with one seed both must judge the same true
    # orders in every trial, even when a budget leaves ties at rank k to break in one of them only.
    from judging.engine import AdaptiveParams, plan_adaptive, planning

    worlds = {"crowd": [], "adaptive": []}
    real = planning._trial_totals
    which = {"mode": "crowd"}

    def recording(result, values, k):
        worlds[which["mode"]].append({topic: dict(topic_values) for topic, topic_values in values.items()})
        return real(result, values, k)

    monkeypatch.setattr(planning, "_trial_totals", recording)
    pools = {"t": 16, "u": 12, "v": 9}
    plan_campaign(pools, params=CrowdParams(), trials=4, rng=random.Random(7), error_rate=0.3)
    which["mode"] = "adaptive"
    adaptive = plan_adaptive(
        pools, params=AdaptiveParams(), trials=4, rng=random.Random(7), error_rate=0.3, max_judgments=12
    )
    assert adaptive["top_k_recall"] < 1.0  # the budget left ties at rank k to break
    assert worlds["crowd"] == worlds["adaptive"] and len(worlds["crowd"]) == 4

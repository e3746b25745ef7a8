"""A long run of the engine: a simulation reports every wave and a plan every trial (a command's progress bar), a
plan runs its trials in processes, and the judge model's fits keep to one BLAS thread."""

import random

import pytest
from threadpoolctl import threadpool_info

from judging.engine import (
    AdaptiveParams,
    CrowdParams,
    NoisyOracle,
    PerfectOracle,
    plan_adaptive,
    plan_campaign,
    simulate_adaptive,
    simulate_crowd,
)
from judging.engine.judges import fit_item_world, fit_judge_model, one_blas_thread
from tests.judging.engine.worlds import shuffled_world


def _recorder():
    waves = []
    return waves, lambda result: waves.append((result.rounds, result.judgments))


def test_a_crowd_simulation_reports_each_wave_once_with_the_judgments_so_far():
    values, pools, nonrelevant = shuffled_world(3, 14, 2)
    waves, on_wave = _recorder()
    result = simulate_crowd(
        pools, PerfectOracle(values), params=CrowdParams(), seed=2, nonrelevant=nonrelevant, on_wave=on_wave
    )
    assert [rounds for rounds, _ in waves] == list(range(1, result.rounds + 1))
    judgments = [judgments for _, judgments in waves]
    assert judgments == sorted(judgments) and judgments[0] > 0 and judgments[-1] == result.judgments


def test_a_budgeted_noisy_simulation_reports_closure_and_model_rounds_alike():
    # a crowd erring on close pairs: the closure waves, then the judge model's rounds, up to the budget
    values, pools, nonrelevant = shuffled_world(12, 14, 3)
    oracle = NoisyOracle(values, rng=random.Random(3), discriminability=0.3)
    waves, on_wave = _recorder()
    result = simulate_adaptive(
        pools,
        oracle,
        params=AdaptiveParams(k=3, model_rounds=8),
        seed=3,
        nonrelevant=nonrelevant,
        max_judgments=1200,
        on_wave=on_wave,
    )
    # the model rounds end by round 8, each wave reported once, the last with the campaign's judgments
    assert result.rounds == 8 and [rounds for rounds, _ in waves] == list(range(1, 9))
    judgments = [judgments for _, judgments in waves]
    assert judgments == sorted(judgments) and judgments[-1] == result.judgments <= 1200


def test_the_same_simulation_with_and_without_a_callback_judges_alike():
    values, pools, nonrelevant = shuffled_world(4, 12, 5)
    runs = []
    for on_wave in (None, lambda _result: None):
        oracle = NoisyOracle(values, rng=random.Random(5), error_rate=0.2)
        result = simulate_adaptive(
            pools, oracle, params=AdaptiveParams(k=3), seed=5, nonrelevant=nonrelevant, on_wave=on_wave
        )
        runs.append((result.judgments, result.rounds, {t: o.ranked for t, o in result.topics.items()}))
    assert runs[0] == runs[1]


def test_both_planners_report_every_trial():
    ticks = []
    plan_campaign(
        {"a": 12, "b": 7},
        params=CrowdParams(),
        trials=9,
        rng=random.Random(1),
        on_trial=lambda: ticks.append("c"),
    )
    plan_adaptive(
        {"a": 12, "b": 7},
        params=AdaptiveParams(),
        trials=4,
        rng=random.Random(1),
        error_rate=0.1,
        on_trial=lambda: ticks.append("a"),
    )
    assert ticks == ["c"] * 9 + ["a"] * 4


def test_a_plan_in_processes_is_the_plan_of_one_process():
    # every trial's world is drawn from the plan's stream in order, whichever process then runs it
    pools = {"a": 14, "b": 9, "c": 4}
    for error_rate in (0.0, 0.15):
        plans = [
            plan_campaign(
                pools, params=CrowdParams(), trials=7, rng=random.Random(3), error_rate=error_rate, jobs=jobs
            )
            for jobs in (1, 3)
        ]
        assert plans[0] == plans[1] and plans[0]["trials"] == 7
        plans = [
            plan_adaptive(
                pools,
                params=AdaptiveParams(k=3),
                trials=3,
                rng=random.Random(3),
                error_rate=error_rate,
                max_judgments=120 if error_rate else None,
                jobs=jobs,
            )
            for jobs in (1, 2)
        ]
        assert plans[0] == plans[1]


def test_a_plan_bounded_in_seconds_runs_in_one_process():
    with pytest.raises(ValueError, match="one after another"):
        plan_campaign({"a": 10}, params=CrowdParams(), trials=4, rng=random.Random(1), max_seconds=5, jobs=2)
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        plan_adaptive({"a": 10}, params=AdaptiveParams(), trials=4, rng=random.Random(1), jobs=0)


def test_the_judge_models_fits_run_on_one_blas_thread_and_give_the_threads_back():
    def blas_threads():
        return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}

    before = blas_threads()
    inside = one_blas_thread(blas_threads)()
    assert inside == {1} and blas_threads() == before
    assert fit_judge_model.__wrapped__ is not None and fit_item_world.__wrapped__ is not None

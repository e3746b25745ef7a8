"""The engine's progress callbacks: a simulation reports every wave and a plan every trial, so that a command can
show how far a long run has got."""

import random

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

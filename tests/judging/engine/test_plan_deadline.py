"""A plan with ``max_seconds`` stops at its deadline, within a trial (the simulated crowd looks at the clock),
and a plan with time to spare is the same as one without a bound."""

import random

import pytest

from judging.engine import CrowdParams, PlanTimeExceededError, plan_adaptive, plan_campaign
from judging.engine.adaptive import AdaptiveParams


def test_a_plan_out_of_time_stops_inside_its_first_trial():
    # one trial of a pool of 2,000 simulates about 28,000 judgments; no time at all is given
    with pytest.raises(PlanTimeExceededError) as raised:
        plan_campaign({"t": 2000}, params=CrowdParams(), trials=3, rng=random.Random(1), max_seconds=0)

    assert (raised.value.trials_done, raised.value.trials) == (0, 3)
    assert "needs more than 0 s" in str(raised.value)


def test_an_adaptive_plan_out_of_time_stops_too():
    with pytest.raises(PlanTimeExceededError):
        plan_adaptive({"t": 500}, params=AdaptiveParams(), trials=2, rng=random.Random(1), max_seconds=0)


def test_a_bounded_plan_with_time_to_spare_equals_the_unbounded_one():
    unbounded = plan_campaign({"t": 30}, params=CrowdParams(), trials=4, rng=random.Random(7))
    bounded = plan_campaign({"t": 30}, params=CrowdParams(), trials=4, rng=random.Random(7), max_seconds=600)

    assert bounded == unbounded

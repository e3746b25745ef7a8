"""The leaderboard's own arithmetic: Holm's correction and ranks with ties (the statistics themselves are
metrics.core.significance's, tested there)."""

import pytest

from metrics.leaderboard import _holm_by_run as holm


def test_holm_multiplies_by_the_remaining_count_and_keeps_the_order():
    # sorted: 0.01 * 3 = 0.03, 0.03 * 2 = 0.06, 0.04 * 1 = 0.04 -> raised to 0.06 (monotone)
    adjusted = holm({"a": 0.04, "b": 0.01, "c": 0.03})
    assert adjusted == pytest.approx({"b": 0.03, "c": 0.06, "a": 0.06})


def test_holm_caps_at_one_and_handles_nothing():
    assert holm({"a": 0.6, "b": 0.7}) == {"a": 1.0, "b": 1.0}
    assert holm({}) == {}

"""Hypothesis is deterministic in the suite (tests/conftest.py): the same examples on every run, in CI
(CI set) and by default, so `make test` never fails by chance."""

from hypothesis import settings


def test_the_loaded_hypothesis_profile_is_derandomized_without_an_example_database():
    assert settings.default.derandomize is True
    assert settings.default.database is None
    assert settings.get_profile("ci").derandomize is True

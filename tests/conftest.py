"""Shared fixtures. The database is the real one: PostgreSQL when DATABASE_URL is set (CI), SQLite otherwise."""

import os
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# Property-based tests must not pass or fail by chance: examples come from a fixed seed derived from each test
# (derandomize) and no example database carries failures from one run to the next. "ci" (CI is set) and
# "dev" (the default) are both deterministic; HYPOTHESIS_PROFILE=explore searches with fresh random examples.
hypothesis_settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
hypothesis_settings.register_profile("dev", derandomize=True, database=None, deadline=None)
hypothesis_settings.register_profile("explore", derandomize=False, deadline=None, max_examples=500)
hypothesis_settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)

REPO_DIR = Path(__file__).resolve().parent.parent
SHARED_DATA_DIR = REPO_DIR.parent / "shared" / "data"
CAST_DIR = SHARED_DATA_DIR / "cast2019"
DEMO_DIR = REPO_DIR / "demo"


@pytest.fixture(scope="session")
def cast_dir() -> Path:
    if not CAST_DIR.is_dir():
        pytest.fail(f"the CAsT 2019 data is expected at {CAST_DIR} (../shared beside the repo)")
    return CAST_DIR

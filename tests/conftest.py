"""Shared fixtures. The database is the real one: PostgreSQL when DATABASE_URL is set (CI), SQLite otherwise."""

from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parent.parent
SHARED_DATA_DIR = REPO_DIR.parent / "shared" / "data"
CAST_DIR = SHARED_DATA_DIR / "cast2019"
DEMO_DIR = REPO_DIR / "demo"


@pytest.fixture(scope="session")
def cast_dir() -> Path:
    if not CAST_DIR.is_dir():
        pytest.fail(f"the CAsT 2019 data is expected at {CAST_DIR} (../shared beside the repo)")
    return CAST_DIR

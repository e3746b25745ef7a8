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


# Tests that touch no database, broker or cache and read no setting that DATABASE_URL or REDIS_URL change: the
# pure cores' tests, and checks of files and of the commands that only read files. They run the same in both of
# CI's passes, so .ci/run's PostgreSQL + Redis pass leaves them out (`-m "not backend_independent"`) and its
# SQLite pass, plain `make test` as on a fresh machine, runs them with every other test (docs/decisions.md,
# "A CI run in well under 20 minutes"). A directory ends with "/"; a file is one module.
BACKEND_INDEPENDENT = (
    "tests/judging/engine/",
    "tests/metrics/core/",
    "tests/trecio/",
    "tests/config/test_docs.py",
    "tests/config/test_readme.py",
    "tests/config/test_import_contracts.py",
    "tests/judging/test_cli_agreement.py",
    "tests/judging/test_cli_judge_model.py",
    "tests/judging/test_cli_plan.py",
    "tests/judging/test_cli_simulate.py",
    "tests/judging/test_cli_simulate_judge_log.py",
    # its commands run in processes of their own on a SQLite file of the test's, REDIS_URL removed
    "tests/judging/crowd/test_llm_killed.py",
    "tests/metrics/test_analysis_cli.py",
    "tests/metrics/test_cli_compat.py",
    "tests/metrics/test_cli_evaluate.py",
    "tests/pools/test_cli_thin.py",
    "tests/pools/test_thinning.py",
    "tests/pools/test_trec.py",
    "tests/benchmarks/test_llm_judges.py",
)
# What a backend-independent test may not use: pytest-django's database and client fixtures (the collection fails
# if one does, so the list cannot go stale silently; reading DATABASE_URL or REDIS_URL is for its reviewer to see).
BACKEND_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
    "django_db_setup",
    "live_server",
    "client",
    "async_client",
    "admin_client",
    "admin_user",
    "django_user_model",
    "django_capture_on_commit_callbacks",
    "django_assert_num_queries",
    "django_assert_max_num_queries",
}


def pytest_collection_modifyitems(config, items):
    missing = [entry for entry in BACKEND_INDEPENDENT if not (REPO_DIR / entry).exists()]
    if missing:
        raise pytest.UsageError(
            f"tests/conftest.py lists as backend-independent what does not exist: {missing}"
        )
    for item in items:
        path = Path(str(item.fspath)).resolve().relative_to(REPO_DIR).as_posix()
        if not any(
            path == entry or (entry.endswith("/") and path.startswith(entry)) for entry in BACKEND_INDEPENDENT
        ):
            continue
        uses = sorted(BACKEND_FIXTURES.intersection(item.fixturenames))
        if uses or item.get_closest_marker("django_db") or item.get_closest_marker("celery_worker"):
            raise pytest.UsageError(
                f"{item.nodeid} is listed as backend-independent (tests/conftest.py) but uses the database "
                f"({', '.join(uses) or 'django_db or celery_worker marker'}): take it off the list"
            )
        item.add_marker(pytest.mark.backend_independent)


@pytest.fixture(scope="session")
def cast_dir() -> Path:
    if not CAST_DIR.is_dir():
        pytest.fail(f"the CAsT 2019 data is expected at {CAST_DIR} (../shared beside the repo)")
    return CAST_DIR

"""Backups and upgrades as docs/how-to/backups-and-upgrades.md tells an operator to do them: pg_dump of a database
with running campaigns, pg_restore, and the current code's migrations over the previous release's data
(.ci/backup-upgrade does it; here it runs in `make test` on PostgreSQL)."""

import os
import shutil
import subprocess

import pytest
from django.db import connection

from tests.conftest import REPO_DIR

pytestmark = [
    pytest.mark.slow,
    # two releases' migrations, the demo and a dump and restore: minutes on a loaded 2-core machine
    pytest.mark.timeout(900),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="pg_dump and pg_restore need PostgreSQL"),
]


def _server_url() -> str:
    settings = connection.settings_dict
    user = settings["USER"] + (f":{settings['PASSWORD']}" if settings["PASSWORD"] else "")
    return f"postgres://{user}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}"


def test_a_dump_of_running_campaigns_restores_and_upgrades_with_nothing_lost():
    if not (shutil.which("pg_dump") and shutil.which("pg_restore") and shutil.which("psql")):
        pytest.skip("needs the PostgreSQL client tools (pg_dump, pg_restore, psql)")
    # databases of their own, named after the test database, so parallel suites do not collide
    prefix = f"{connection.settings_dict['NAME']}_backup"
    done = subprocess.run(
        [str(REPO_DIR / ".ci" / "backup-upgrade"), _server_url()],
        cwd=REPO_DIR,
        env={**os.environ, "BACKUP_UPGRADE_DB_PREFIX": prefix},
        capture_output=True,
        text=True,
        timeout=840,
    )
    if done.returncode == 3:  # the script's own code for it
        pytest.skip("the previous release's commit is not in this clone (a shallow clone)")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for campaign in ("demo-crowd", "demo-tournament", "demo-open-crowd", "demo-open-tournament"):
        assert f"   {campaign}: " in done.stdout and "keys unchanged" in done.stdout
    assert "demo-crowd: preference qrels identical" in done.stdout
    assert "demo-open-crowd: judged to the end after the upgrade" in done.stdout

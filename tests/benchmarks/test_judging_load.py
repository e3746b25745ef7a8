"""benchmarks/judging_load.py end to end, briefly: two judges for a few seconds on the demo collection against
gunicorn, a Celery worker and beat on the script's own redis-server, and PostgreSQL. The script's own measure of
correctness must hold (every acknowledged answer stored, none twice) and it must leave no server running. The
timings it prints are not asserted (timing belongs to the benchmark's table). Skipped unless DATABASE_URL names
PostgreSQL and REDIS_URL is set (the full-stack configuration of CI), or without redis-server."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO_DIR = Path(__file__).resolve().parents[2]
SCRIPT = REPO_DIR / "benchmarks" / "judging_load.py"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.celery_worker,
    pytest.mark.skipif(
        not (os.environ.get("REDIS_URL") and os.environ.get("DATABASE_URL", "").startswith("postgres")),
        reason="needs REDIS_URL and a PostgreSQL DATABASE_URL (the full stack)",
    ),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs the redis-server binary"),
]


def port_is_closed(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except OSError:
        return True


def test_two_judges_for_a_few_seconds_lose_nothing_and_leave_nothing_running(tmp_path):
    # A database of its own beside this worktree's (the script drops and recreates it).
    database = urlsplit(os.environ["DATABASE_URL"]).path.lstrip("/") + "_load_smoke"
    measures = tmp_path / "measures.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--data", "demo", "--judges", "2", "--think", "0.1", "--seconds", "5"]
        + ["--database", database, "--quiet", "--drain", "5", "--json", str(measures)],
        cwd=REPO_DIR,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-2000:]

    line = re.search(r"acknowledged (\d+), stored (\d+), duplicates (\d+), lost (\d+)", result.stdout)
    assert line is not None, result.stdout
    acknowledged, stored, duplicates, lost = map(int, line.groups())
    counts = json.loads(measures.read_text())["counts"]
    assert (acknowledged, stored, duplicates, lost) == (
        counts["acknowledged"],
        counts["stored"],
        counts["duplicates"],
        counts["lost"],
    )
    assert acknowledged >= 1, result.stdout
    assert stored == acknowledged and lost == 0 and duplicates == 0
    # Every judgment in the database is an answer a judge sent: acknowledged, or failed yet stored.
    assert counts["judgments"] + counts["tournament_judgments"] == acknowledged + counts["errors_on_stored"]
    ports = json.loads(measures.read_text())["ports"]
    assert port_is_closed(ports["web"]) and port_is_closed(ports["redis"])

"""gunicorn's timeout is chosen, in one place (config/gunicorn.py) that the image and docker-compose.yml both
run, and a planner bound that could outlive it stops the start."""

import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def _gunicorn_settings(**env: str) -> subprocess.CompletedProcess:
    code = "import config.gunicorn as g; print(g.timeout, g.graceful_timeout, g.workers)"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TOPPREF_", "WEB_CONCURRENCY"))}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=clean | env, capture_output=True, text=True, timeout=60
    )


def test_the_defaults_are_a_30_s_timeout_and_five_workers():
    done = _gunicorn_settings()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["30", "30", "5"]


def test_a_planner_bound_over_half_the_timeout_stops_the_start_naming_both():
    done = _gunicorn_settings(TOPPREF_WEB_TIMEOUT_SECONDS="20", TOPPREF_PLAN_MAX_SECONDS="15")
    assert done.returncode != 0
    assert "TOPPREF_PLAN_MAX_SECONDS=15" in done.stderr and "TOPPREF_WEB_TIMEOUT_SECONDS=20" in done.stderr


def test_the_image_and_compose_run_gunicorn_with_these_settings():
    dockerfile = (REPO / "Dockerfile").read_text()
    web = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["web"]
    assert 'CMD ["gunicorn", "-c", "python:config.gunicorn", "config.wsgi:application"]' in dockerfile
    assert "TOPPREF_WEB_TIMEOUT_SECONDS=30" in dockerfile
    assert web["command"] == ["gunicorn", "-c", "python:config.gunicorn", "config.wsgi:application"]
    assert web["environment"]["TOPPREF_WEB_TIMEOUT_SECONDS"] == "${TOPPREF_WEB_TIMEOUT_SECONDS:-30}"

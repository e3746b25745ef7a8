"""gunicorn's settings for the image and docker-compose.yml (``gunicorn -c python:config.gunicorn``), from the
environment: ``WEB_CONCURRENCY`` sync workers (5: 2 x cores + 1 on the two cores toppref is measured on) and
``TOPPREF_WEB_TIMEOUT_SECONDS`` (30), the longest a worker may spend on one request before gunicorn kills it.

The timeout is a backstop, never a request's plan: every request bounds its own work well inside it (the
planner by ``TOPPREF_PLAN_MAX_SECONDS``, uploads and exports by running in Celery), so a start where the
planner's bound is not under half the timeout is refused with both names (docs/decisions.md, "The planner's
ceiling in seconds")."""

import os


def _seconds(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise SystemExit(f"{name}={raw!r} is not a number of seconds above 0")
    return value


bind = os.environ.get("TOPPREF_WEB_BIND", "0.0.0.0:8000")
workers = int(_seconds("WEB_CONCURRENCY", 5))
timeout = int(_seconds("TOPPREF_WEB_TIMEOUT_SECONDS", 30))
# a worker told to stop (a deploy, a scale-down) finishes the request it is on within the same time
graceful_timeout = timeout
accesslog = "-"

_plan_seconds = _seconds("TOPPREF_PLAN_MAX_SECONDS", 5)
if _plan_seconds * 2 > timeout:
    raise SystemExit(
        f"TOPPREF_PLAN_MAX_SECONDS={_plan_seconds:g} must be at most half of TOPPREF_WEB_TIMEOUT_SECONDS={timeout}:"
        " a plan must answer before gunicorn kills its worker"
    )

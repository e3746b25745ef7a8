"""Services enqueue tasks by their registered name (config.celery): every name a service writes is a registered
task, and a wrong one fails in the service, before anything is committed."""

import ast
import os
import re
import subprocess
import sys

import pytest

from config.celery import enqueue_on_commit, registered_task
from tests.conftest import REPO_DIR

TASK_NAME = re.compile(r"^(judging|metrics|pools)\.tasks\.\w+$")
# Every module of the apps (the services that enqueue) and the wiring (the beat schedule), but the tasks.
SOURCES = [
    path
    for app_dir in ("config", "judging", "metrics", "pools", "dashboard")
    for path in sorted((REPO_DIR / app_dir).rglob("*.py"))
    if path.name != "tasks.py" and "migrations" not in path.parts
]


def _task_names_in_source() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and TASK_NAME.match(node.value):
                found.setdefault(node.value, []).append(str(path.relative_to(REPO_DIR)))
    return found


def test_every_task_name_the_services_enqueue_is_a_registered_task():
    # Given the task names written in the code (the services' enqueues, the beat schedule)
    names = _task_names_in_source()

    # Then they include the follow-up work of judging and metrics, and each one is registered
    assert {"judging.tasks.hit_build_task", "judging.tasks.round_close_if_complete_task"} <= set(names)
    assert "metrics.tasks.run_validate_task" in names
    unknown = {name: where for name, where in names.items() if _missing(name)}
    assert unknown == {}


def _missing(name: str) -> bool:
    try:
        registered_task(name)
    except KeyError:
        return True
    return False


def test_a_wrong_task_name_fails_in_the_service_not_after_commit(django_capture_on_commit_callbacks):
    # When a service would enqueue a task name nobody registered
    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(KeyError):
        enqueue_on_commit("judging.tasks.no_such_task", 1)

    # Then it raises at once and nothing waits for the commit
    assert callbacks == []


def test_a_process_that_never_imported_the_tasks_finds_them_by_name():
    # Given a fresh process with Django set up, as a web worker is: no tasks module imported yet
    code = (
        "import sys, django; django.setup()\n"
        "assert 'judging.tasks' not in sys.modules and 'metrics.tasks' not in sys.modules\n"
        "from config.celery import registered_task\n"
        "print(registered_task('judging.tasks.hit_build_task').name, registered_task('metrics.tasks.run_validate_task').name)\n"
    )
    # When it looks two tasks up by name
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    # Then the apps' tasks modules were imported and both are found
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["judging.tasks.hit_build_task", "metrics.tasks.run_validate_task"]

"""The import-linter contracts hold what STYLE.md promises: each one breaks on a deliberately bad import in a
copy of the tree, and every runtime dependency is either allowed to the pure cores or forbidden to them."""

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO_DIR

PYPROJECT = tomllib.loads((REPO_DIR / "pyproject.toml").read_text())
CONTRACTS = {contract["id"]: contract for contract in PYPROJECT["tool"]["importlinter"]["contracts"]}
# docs/decisions.md "What the pure cores may import".
ALLOWED_TO_PURE_CORES = {"numpy", "scipy", "pandas", "pyarrow", "networkx", "threadpoolctl"}
# Distribution name in pyproject -> the name it is imported by.
IMPORT_NAMES = {
    "Django": "django",
    "djangorestframework": "rest_framework",
    "drf-spectacular": "drf_spectacular",
    "django-filter": "django_filters",
    "django-axes": "axes",
    "django-environ": "environ",
    "psycopg": "psycopg",
    "argon2-cffi": "argon2",
}


def _copy_tree(destination: Path) -> None:
    for package in PYPROJECT["tool"]["importlinter"]["root_packages"]:
        shutil.copytree(
            REPO_DIR / package,
            destination / package,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "migrations", "templates", "static"),
        )
    shutil.copy(REPO_DIR / "pyproject.toml", destination / "pyproject.toml")


def _lint_imports(directory: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=directory,
        env={"PYTHONPATH": str(directory), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("module", "source", "contract"),
    [
        ("judging/engine/bad.py", "from pools.models import Item\n", "pure-judging-engine"),
        ("judging/engine/bad.py", "import django.db\n", "pure-judging-engine"),
        ("judging/engine/bad.py", "from judging.models import Campaign\n", "pure-judging-engine"),
        ("judging/engine/bad.py", "import httpx\n", "pure-judging-engine"),
        # Indirect: judging.apps is not forbidden itself, but it imports Django
        ("judging/engine/bad.py", "import judging.apps\n", "pure-judging-engine"),
        ("metrics/core/bad.py", "import matplotlib.pyplot\n", "pure-metrics-core"),
        ("metrics/core/bad.py", "from judging.engine import pairing_graph\n", "pure-metrics-core"),
        ("pools/bad.py", "from metrics.models import RunScore\n", "app-layers"),
        ("pools/thinning.py", "import django.conf\n", "pure-thinning"),
        # inside each app: reads below services, services below entry points, tasks call services
        (
            "judging/selectors/bad.py",
            "from judging.services import campaign_start\n",
            "judging-reads-below-entry-points",
        ),
        (
            "judging/services/bad.py",
            "from judging.api import PlanApi\n",
            "judging-services-below-entry-points",
        ),
        (
            "judging/tasks.py",
            "from judging.selectors import campaign_progress\n",
            "judging-tasks-call-services",
        ),
        # services enqueue tasks by registered name, never by importing them (tasks call services)
        (
            "judging/services/bad.py",
            "from judging.tasks import hit_build_task\n",
            "judging-services-below-entry-points",
        ),
        (
            "metrics/leaderboard.py",
            "from metrics.tasks import run_validate_task\n",
            "metrics-services-below-tasks",
        ),
        ("metrics/uploads.py", "import metrics.tasks\n", "metrics-services-below-tasks"),
        # entry points call services, which enqueue
        ("dashboard/views.py", "from metrics.tasks import run_validate_task\n", "entry-points-call-services"),
        (
            "judging/management/commands/bad.py",
            "from judging.tasks import hit_build_task\n",
            "entry-points-call-services",
        ),
        ("pools/selectors.py", "from pools.services import collection_create\n", "pools-layers"),
        ("metrics/selectors.py", "from metrics.services import run_scores_compute\n", "metrics-layers"),
        ("metrics/tasks.py", "from metrics.api import CampaignRunListApi\n", "metrics-tasks-call-services"),
        ("config/middleware.py", "from judging.models import Campaign\n", "config-is-wiring"),
    ],
)
def test_a_bad_import_breaks_its_contract(tmp_path, module, source, contract):
    # Given a copy of the tree with one deliberately bad import
    _copy_tree(tmp_path)
    with open(tmp_path / module, "a") as file:
        file.write(source)

    # When import-linter checks it
    result = _lint_imports(tmp_path)

    # Then it fails and names the broken contract
    assert result.returncode == 1, result.stdout + result.stderr
    name = CONTRACTS[contract]["name"]
    broken = re.sub(r"\s+", " ", result.stdout)
    assert f"{name} BROKEN" in broken, result.stdout


def test_the_copied_tree_is_clean(tmp_path):
    _copy_tree(tmp_path)

    result = _lint_imports(tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr


def test_every_runtime_dependency_is_allowed_or_forbidden_to_the_pure_cores():
    names = set()
    for requirement in PYPROJECT["project"]["dependencies"]:
        distribution = re.split(r"[\[<>=!~ ]", requirement, maxsplit=1)[0]
        names.add(IMPORT_NAMES.get(distribution, distribution.replace("-", "_")))
    for contract_id in ("pure-metrics-core", "pure-judging-engine"):
        forbidden = set(CONTRACTS[contract_id]["forbidden_modules"])
        undecided = sorted(names - ALLOWED_TO_PURE_CORES - forbidden)
        assert undecided == [], f"{contract_id}: decide whether the pure cores may import {undecided}"

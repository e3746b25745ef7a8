"""requirements.lock (``make lock``) pins every dependency of pyproject.toml, the test tools included, each
with its hashes, at a version pyproject allows; ``make install`` installs from it with hash checking."""

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
# "name==version[ ; marker] \" then one "--hash=sha256:..." line per file
PINNED = re.compile(
    r"^([A-Za-z0-9_.\-]+)==([^\s;]+)[^\n\\]*((?:\\\s*\n\s*--hash=sha256:[0-9a-f]{64}\s*)*)", re.MULTILINE
)


def _lock(name: str = "requirements.lock") -> dict[str, tuple[str, int]]:
    """{package: (version, number of hashes)}"""
    text = (REPO / name).read_text()
    return {
        canonicalize_name(name): (version, hashes.count("--hash=sha256:"))
        for name, version, hashes in PINNED.findall(text)
    }


def test_every_dependency_and_test_tool_is_pinned_at_an_allowed_version_with_hashes():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(line) for line in project["dependencies"] + project["optional-dependencies"]["dev"]]
    locked = _lock()

    missing = [str(r) for r in wanted if canonicalize_name(r.name) not in locked]
    outside = [
        f"{r.name}=={locked[canonicalize_name(r.name)][0]} (pyproject: {r.specifier})"
        for r in wanted
        if canonicalize_name(r.name) in locked
        and not r.specifier.contains(locked[canonicalize_name(r.name)][0], prereleases=True)
    ]
    assert not missing, f"not in requirements.lock (run make lock): {missing}"
    assert not outside, (
        f"requirements.lock pins versions pyproject.toml does not allow (run make lock): {outside}"
    )
    assert all(hashes >= 1 for _, hashes in locked.values())


def test_make_install_installs_the_lock_with_hash_checking():
    makefile = (REPO / "Makefile").read_text()

    assert "pip install --require-hashes -r $(LOCK)" in makefile
    assert "pip install --no-deps -e ." in makefile
    assert "$(VENV)/.installed: pyproject.toml $(LOCK)" in makefile


def test_the_image_installs_the_same_pins_without_the_test_tools():
    runtime, full = _lock("requirements-runtime.lock"), _lock()
    dockerfile = (REPO / "Dockerfile").read_text()

    assert {name: version for name, (version, _) in runtime.items()} == {
        name: full[name][0] for name in runtime
    }, "requirements-runtime.lock differs from requirements.lock: run make lock"
    assert "pytest" not in runtime and "django" in runtime
    assert "pip install --require-hashes -r requirements-runtime.lock" in dockerfile
    assert "pip install --no-deps ." in dockerfile

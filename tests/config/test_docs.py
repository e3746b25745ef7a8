"""The documentation site builds, and its reference is tied to the code: every flag, environment variable and
contract name the code has is in the docs, and every variable the code reads is declared in one table."""

import argparse
import importlib.util
import os
import re
import subprocess
import sys
from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured

from config import environment
from config.cli import build_parser
from tests.conftest import REPO_DIR

CONTRACTS = REPO_DIR.parent / "shared" / "contracts" / "names.tsv"
CODE_DIRS = ("config", "pools", "judging", "metrics", "dashboard", "trecio")


def _generate():
    spec = importlib.util.spec_from_file_location("docs_generate", REPO_DIR / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generate = _generate()


@pytest.fixture(scope="module")
def pages():
    return generate.pages()


@pytest.fixture(scope="module")
def docs_text(pages):
    """Everything a reader of the docs can read: the README, the hand-written pages, the generated ones."""
    written = [REPO_DIR / "README.md", *sorted((REPO_DIR / "docs").rglob("*.md"))]
    return "\n".join(
        [
            *(path.read_text(encoding="utf-8") for path in written),
            *pages.values(),
            *generate.snippets().values(),
        ]
    )


@pytest.mark.slow
def test_the_site_builds_strict_with_the_generated_reference(tmp_path):
    # --strict: a broken link, a missing page or a bad anchor fails the build, as `make docs` does
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO_DIR,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    site = tmp_path / "site"
    for page in ("index", "reference/cli/toppref-simulate", "reference/cli/manage-campaign_publish",
                 "reference/environment", "reference/measures", "reference/api", "decisions/index"):  # fmt: skip
        assert (site / f"{page}.html").is_file(), page
    # the hand-written page's generated table is filled in
    formats = (site / "reference" / "file-formats.html").read_text(encoding="utf-8")
    assert "generated: export-kinds" not in formats and "judgments_release" in formats


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {
        option
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        and not isinstance(action, argparse._HelpAction)
        and not set(action.option_strings) & generate.DJANGO_COMMON_OPTIONS
        for option in action.option_strings
    }


def test_every_toppref_flag_is_on_its_command_page(pages):
    parser = build_parser()
    for name, sub in generate._subparsers(parser).items():
        if name == "manage":
            continue
        page = pages[f"reference/cli/toppref-{name}.md"]
        parsers = [sub, *generate._subparsers(sub).values()]
        missing = {option for p in parsers for option in _options(p) if f"`{option}" not in page}
        assert missing == set(), f"toppref {name}: {missing}"


def test_every_management_command_of_our_apps_and_its_flags_are_documented(pages):
    from django.core.management import load_command_class

    commands = generate.management_commands()
    assert {"campaign_create", "campaign_publish", "crowd_sync", "runs_score", "topics_import"} <= set(
        commands
    )
    for name, app in commands.items():
        page = pages[f"reference/cli/manage-{name}.md"]
        parser = load_command_class(app, name).create_parser("toppref manage", name)
        missing = {option for option in _options(parser) if f"`{option}" not in page}
        assert missing == set(), f"{name}: {missing}"
        assert f"[`toppref manage {name}`](manage-{name}.md)" in pages["reference/cli/index.md"]


def test_every_measure_and_api_path_is_in_the_reference(pages):
    from metrics.core import MEASURES, PREFERENCE_MEASURES

    measures = pages["reference/measures.md"]
    for name in [*MEASURES, *PREFERENCE_MEASURES]:
        assert f"### `{name}`" in measures
    # the formula comes from the computing function's docstring
    assert "(1 - p) * sum_f r_f * p^(f-1)" in measures
    api = pages["reference/api.md"]
    for path in generate.openapi_schema()["paths"]:
        assert f"## `{path}`" in api


def test_every_variable_in_the_table_is_on_the_environment_page(pages):
    page = pages["reference/environment.md"]
    assert [name for name in environment.BY_NAME if f"| `{name}` |" not in page] == []


ENV_READ = re.compile(
    r"""(?:os\.environ\.get|os\.getenv|os\.environ\[|environ\.get|env\.\w+|\benv|\bread)\(?\s*["']([A-Z][A-Z0-9_]{2,})["']"""
)


def test_every_environment_variable_the_code_reads_is_declared_in_the_table():
    # A variable read anywhere but the table (os.environ, django-environ, docker compose's ${...}) would be missing
    # from the reference: declare it in config/environment.py instead.
    read = {}
    for folder in CODE_DIRS:
        for path in (REPO_DIR / folder).rglob("*.py"):
            for name in ENV_READ.findall(path.read_text(encoding="utf-8")):
                read.setdefault(name, path.relative_to(REPO_DIR))
    for name in re.findall(r"\$\{([A-Z][A-Z0-9_]+)", (REPO_DIR / "docker-compose.yml").read_text()):
        read.setdefault(name, "docker-compose.yml")
    not_ours = {"DJANGO_SETTINGS_MODULE"}
    assert {"TOPPREF_PASSWORD", "PROLIFIC_API_TOKEN", "DJANGO_ENV", "POSTGRES_PASSWORD"} <= set(read)
    undeclared = {name: str(where) for name, where in read.items() if name not in environment.BY_NAME}
    assert {n: w for n, w in undeclared.items() if n not in not_ours} == {}


def test_the_table_reads_values_by_kind_and_refuses_bad_ones_naming_the_variable(monkeypatch):
    monkeypatch.setenv("TOPPREF_MAX_UPLOAD_MB", "1.5")
    monkeypatch.setenv("TOPPREF_FRAME_ANCESTORS", "https://a.example  https://b.example")
    monkeypatch.setenv("TOPPREF_TRUSTED_PROXIES", "10.0.0.0/8, 192.0.2.1")
    monkeypatch.setenv("TOPPREF_PROLIFIC_FEE_RATE", "0.333")
    monkeypatch.setenv("DATABASE_PREPARE_THRESHOLD", "Off")
    monkeypatch.delenv("TOPPREF_IDLE_RELEASE_SECONDS", raising=False)
    assert environment.read("TOPPREF_MAX_UPLOAD_MB") == 1.5
    assert environment.read("TOPPREF_FRAME_ANCESTORS") == ["https://a.example", "https://b.example"]
    assert environment.read("TOPPREF_TRUSTED_PROXIES") == ["10.0.0.0/8", "192.0.2.1"]
    assert environment.read("TOPPREF_PROLIFIC_FEE_RATE") == Decimal("0.333")
    assert environment.read("DATABASE_PREPARE_THRESHOLD") == "off"
    assert environment.read("TOPPREF_IDLE_RELEASE_SECONDS") == 600.0
    for name, value, message in [
        ("TOPPREF_IDLE_RELEASE_SECONDS", "-1", "TOPPREF_IDLE_RELEASE_SECONDS='-1' is not a number from 0 up"),
        (
            "DATABASE_PREPARE_THRESHOLD",
            "2.5",
            "DATABASE_PREPARE_THRESHOLD='2.5' is not a whole number from 0 up",
        ),
        ("TOPPREF_PROLIFIC_FEE_RATE", "lots", "TOPPREF_PROLIFIC_FEE_RATE='lots' is not a decimal number"),
        (
            "DJANGO_ENV",
            "prod",
            "DJANGO_ENV='prod' is not a known environment; use one of development, production, test",
        ),
    ]:
        monkeypatch.setenv(name, value)
        with pytest.raises(ImproperlyConfigured) as refused:
            environment.read(name)
        assert str(refused.value) == message


def test_settings_named_after_their_variable_come_from_the_table(settings):
    # the test settings change only the sweep; every other TOPPREF_* setting is the table's value
    expected = environment.settings()
    assert [
        name
        for name in expected
        if name != "TOPPREF_SWEEP_SECONDS" and getattr(settings, name) != expected[name]
    ] == []


def _code_has(name: str) -> bool:
    if name.endswith(":"):  # a Makefile target
        return re.search(rf"^{re.escape(name)}", (REPO_DIR / "Makefile").read_text(), flags=re.M) is not None
    found = subprocess.run(
        ["git", "grep", "-qF", "--", name, "--", ":!tests", ":!docs", ":!README.md"],
        cwd=REPO_DIR,
        check=False,
    )
    return found.returncode == 0


def test_every_contract_name_the_code_has_is_in_the_docs(docs_text):
    # names.tsv: the names users' scripts depend on, by issue (group). As the before-stop hook does, a group
    # counts once any of its names is in the code; then each of its names the code has must be documented. A
    # Makefile target (`lock:`) is documented as `make lock`.
    if (
        not CONTRACTS.is_file()
        or subprocess.run(["git", "status"], cwd=REPO_DIR, capture_output=True).returncode
    ):
        pytest.skip("needs ../shared/contracts/names.tsv and a git checkout")
    groups: dict[str, list[str]] = {}
    for line in CONTRACTS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            group, name = line.split("\t", 1)
            groups.setdefault(group, []).append(name)
    undocumented, checked = [], 0
    for group, names in groups.items():
        in_code = [name for name in names if _code_has(name)]
        for name in in_code:
            checked += 1
            shown = f"make {name[:-1]}" if name.endswith(":") else name
            if shown not in docs_text:
                undocumented.append(f"{group}: {name}")
    assert checked >= 50
    assert undocumented == []


def test_the_decision_record_splits_into_dated_pages_one_per_section(tmp_path):
    record = (REPO_DIR / "docs" / "decisions.md").read_text(encoding="utf-8")
    appended = tmp_path / "decisions.md"
    appended.write_text(record + "\n## A new topic\n*2026-11-27.* **Choice:** a [link](decisions.md).\n")
    split = generate.decision_pages(appended)
    headings = re.findall(r"^## (.+)$", record, flags=re.M)
    assert len(split) == len(headings) + 2  # one page per section, the new one, and the index
    new = split["decisions/a-new-topic.md"]
    assert new.startswith("# A new topic\n\n*Decided 2026-11-27;") and "**Choice:** a [link]" in new
    index = split["decisions/index.md"]
    assert "| 2026-11-27 | [A new topic](a-new-topic.md) |" in index
    assert all(f"]({generate.slug(h)}.md)" in index for h in headings)

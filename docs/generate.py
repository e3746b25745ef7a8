"""The documentation pages generated from the code, so the reference cannot miss a flag, a variable, a measure
or an endpoint the code has, and the decision record splits into one page per topic.

``pages()`` returns ``{path under docs/: Markdown}``; docs/hooks.py adds them to the MkDocs build (nothing is
written into docs/), and tests/config/test_docs.py reads them to check the reference against the code.

- ``reference/cli/*.md``: the ``toppref`` parsers (config/cli.py, each app's cli) and the Django management
  commands' parsers of our apps;
- ``reference/environment.md``: the table of config/environment.py;
- ``reference/measures.md``: the measure registry (metrics.core ``MEASURES``, ``PREFERENCE_MEASURES``) with
  the docstring of the function that computes each measure (formula and paper);
- ``reference/api.md`` and ``reference/openapi.json``: the OpenAPI schema drf-spectacular serves at
  ``/api/schema/``;
- ``decisions/*.md``: docs/decisions.md, one page per ``##`` section, each with its date.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DECISIONS = REPO / "docs" / "decisions.md"
OUR_APPS = ("pools", "judging", "metrics", "dashboard")
# Options every Django command has: listed once on the index page, not under each command.
DJANGO_COMMON_OPTIONS = {
    "--help", "--version", "--verbosity", "--settings", "--pythonpath", "--traceback", "--no-color",
    "--force-color", "--skip-checks",
}  # fmt: skip


def django_setup() -> None:
    """Django with the development settings whatever the shell says: building the docs reads parsers and the
    API schema, never a database."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from django.conf import settings

    if settings.configured:  # inside a Django process already (the tests): use its settings
        return
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["DJANGO_ENV"] = "development"
    import django

    django.setup()


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _plain(text: str) -> str:
    """Help text of a parser as Markdown shows it verbatim: `2*wins` is no emphasis, `<key>` no HTML tag."""
    return re.sub(r"([*\\`\[\]])", r"\\\1", text).replace("<", "&lt;")


def _default(action: argparse.Action) -> str:
    if action.default is None or action.default is argparse.SUPPRESS or action.required or action.nargs == 0:
        return ""
    if isinstance(action.default, list | tuple):
        return " ".join(map(str, action.default))
    return str(action.default)


def _arguments(parser: argparse.ArgumentParser, *, skip: Iterable[str] = ()) -> list[str]:
    """A table of a parser's arguments: name, default, what it does."""
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        if set(action.option_strings) & set(skip) or "--help" in action.option_strings:
            continue
        if action.option_strings:
            metavar = "" if action.nargs == 0 else " " + formatter._format_args(action, action.dest.upper())
            name = ", ".join(f"`{option}{metavar}`" for option in action.option_strings)
        else:
            name = f"`{formatter._format_args(action, action.dest)}`"
        meaning = _plain(formatter._expand_help(action)) if action.help else ""
        if action.required and action.option_strings:
            meaning = "**required.** " + meaning
        rows.append(f"| {_cell(name)} | {_cell(_plain(_default(action)))} | {_cell(meaning)} |")
    if not rows:
        return ["No arguments.", ""]
    return ["| argument | default | meaning |", "|---|---|---|", *rows, ""]


def _usage(parser: argparse.ArgumentParser) -> list[str]:
    usage = parser.format_usage().removeprefix("usage: ").strip()
    return ["```", re.sub(r"\s+", " ", usage), "```", ""]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _command_section(title: str, parser: argparse.ArgumentParser, level: int = 2) -> list[str]:
    lines = [f"{'#' * level} `{title}`", ""]
    if parser.description:
        lines += [_plain(parser.description), ""]
    lines += _usage(parser) + _arguments(parser, skip=["--traceback"])
    for name, sub in _subparsers(parser).items():
        lines += _command_section(f"{title} {name}", sub, level + 1)
    return lines


def toppref_pages() -> dict[str, str]:
    """One page per ``toppref`` subcommand (``manage`` has the management commands' pages)."""
    from config.cli import COMMANDS, build_parser

    parser = build_parser()
    commands = _subparsers(parser)
    pages = {}
    for name, (_, help_text) in COMMANDS.items():
        if name == "manage":
            continue
        body = _command_section(f"toppref {name}", commands[name], level=1)
        body.insert(2, help_text[0].upper() + help_text[1:] + ".\n")
        pages[f"reference/cli/toppref-{name}.md"] = "\n".join(body)
    return pages


def management_commands() -> dict[str, str]:
    """Our apps' management commands: name -> app."""
    from django.core.management import get_commands

    return {name: app for name, app in sorted(get_commands().items()) if app in OUR_APPS}


def manage_pages() -> dict[str, str]:
    """One page per management command of our apps (``toppref manage NAME`` = ``python manage.py NAME``)."""
    from django.core.management import load_command_class

    pages = {}
    for name, app in management_commands().items():
        command = load_command_class(app, name)
        parser = command.create_parser("toppref manage", name)
        lines = [
            f"# `toppref manage {name}`",
            "",
            f"From the `{app}` app; the same as `python manage.py {name}`.",
            "",
        ]
        if command.help:
            lines += [_plain(inspect.cleandoc(command.help)), ""]
        lines += _usage(parser) + _arguments(parser, skip=DJANGO_COMMON_OPTIONS)
        pages[f"reference/cli/manage-{name}.md"] = "\n".join(lines)
    return pages


def cli_index(toppref: dict[str, str], manage: dict[str, str]) -> str:
    from config.cli import COMMANDS

    lines = [
        "# Command line",
        "",
        "Generated from the argument parsers, so every flag the code accepts is here. `toppref` is installed in "
        "`.venv/bin` by `make install`. The file-only commands need no database; `toppref manage NAME` runs a "
        "Django management command (the same as `python manage.py NAME`) against the database of "
        "`DATABASE_URL` (the SQLite file `db.sqlite3` without it).",
        "",
        "Every command fails with one line on stderr: exit 2 for bad usage, 1 for bad data; `toppref --traceback "
        "...` shows the Python traceback of an unexpected error.",
        "",
        "## File-only commands",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for name, (_, help_text) in COMMANDS.items():
        if name != "manage":
            lines.append(f"| [`toppref {name}`](toppref-{name}.md) | {_cell(_plain(help_text))} |")
    lines += ["", "## Management commands", "", "| command | what it does |", "|---|---|"]
    from django.core.management import load_command_class

    for name, app in management_commands().items():
        first = inspect.cleandoc(load_command_class(app, name).help or "").split("\n")[0]
        lines.append(f"| [`toppref manage {name}`](manage-{name}.md) | {_cell(_plain(first))} |")
    lines += [
        "",
        "Every management command also takes Django's common options: "
        + ", ".join(f"`{option}`" for option in sorted(DJANGO_COMMON_OPTIONS))
        + ".",
        "",
    ]
    return "\n".join(lines)


def environment_page() -> str:
    from config.environment import VARIABLES

    lines = [
        "# Environment variables",
        "",
        "Generated from the one table of `config/environment.py`, which `config/settings.py` reads. With none "
        "set, toppref runs on the SQLite file `db.sqlite3` and runs Celery tasks in-process. A value that does "
        "not parse stops the start with one line naming the variable.",
        "",
    ]
    group = None
    for variable in VARIABLES:
        if variable.group != group:
            group = variable.group
            lines += [f"## {group}", "", "| variable | default | meaning |", "|---|---|---|"]
        meaning = variable.description + (f" Read by {variable.read_by}." if variable.read_by else "")
        lines.append(f"| `{variable.name}` | {_cell(variable.shown_default())} | {_cell(meaning)} |")
        if variable is VARIABLES[-1] or VARIABLES[VARIABLES.index(variable) + 1].group != group:
            lines.append("")
    return "\n".join(lines)


def measures_page() -> str:
    from metrics.core import MEASURES, PREFERENCE_MEASURES

    lines = [
        "# Measures",
        "",
        "Generated from the measure registry of `metrics.core` (`MEASURES`, `PREFERENCE_MEASURES`) and the "
        "docstrings of the functions that compute each measure: the formula, the paper, and the behaviour at "
        "ties and edges. A measure is named `family` or `family@parameter` on the command line (`-m`), in the "
        "API and on the leaderboard.",
        "",
        "Compatibility orders a run as the reference `compatibility.py` does (score descending, ties by docid "
        "ascending, rank column ignored); the trec_eval measures break score ties by docid descending, as "
        "trec_eval does.",
        "",
        "## Measures of one run",
        "",
    ]
    for family in MEASURES.values():
        parameter = {"int": "an integer", "float": "a number"}.get(family.parameter or "", "")
        usage = f"`{family.name}`" + (f", `{family.name}@…` ({parameter})" if parameter else "")
        lines += [
            f"### `{family.name}`",
            "",
            family.description[0].upper() + family.description[1:] + ".",
            "",
        ]
        facts = [f"Written {usage}"]
        if family.default is not None:
            facts.append(f"bare name means `{family.name}@{family.default}`")
        facts.append("higher is better" if family.higher_is_better else "lower is better")
        lines += ["; ".join(facts) + ".", ""]
        lines += _docstring(family.function)
    lines += [
        "## Run-against-run measures (`toppref compare`)",
        "",
        "These compare two runs topic by topic and give a preference, not a score.",
        "",
    ]
    for measure in PREFERENCE_MEASURES.values():
        lines += [
            f"### `{measure.name}`",
            "",
            measure.description[0].upper() + measure.description[1:] + ".",
            "",
        ]
        lines += _docstring(measure.function)
    return "\n".join(lines)


def _docstring(function: object) -> list[str]:
    if function is None:
        return []
    module = getattr(function, "__module__", "")
    doc = inspect.getdoc(function) or ""
    return [f"`{module}.{function.__name__}`:", "", "```text", doc, "```", ""]  # type: ignore[attr-defined]


@cache
def openapi_schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(json.dumps(schema, default=str))


def api_page(schema: dict) -> str:
    lines = [
        "# REST API",
        "",
        "Generated from the OpenAPI schema that the site serves at `/api/schema/` (drf-spectacular); "
        "[`openapi.json`](openapi.json) is the same schema as a file, and a running site shows it as Swagger UI "
        "at `/api/docs/`, served offline.",
        "",
        "Authenticate with `Authorization: Token <key>` (`toppref manage api_token USERNAME` prints it) or a "
        "session; never HTTP Basic. Every list is paginated (`?limit=&offset=`, at most 1000 a page); errors are "
        "JSON naming the field. Researchers and staff only; another researcher's campaign is a 404.",
        "",
        "```",
        "TOKEN=$(toppref manage api_token admin)",
        'curl -H "Authorization: Token $TOKEN" http://127.0.0.1:8000/api/campaigns/',
        "```",
        "",
    ]
    for path, operations in schema["paths"].items():
        lines += [f"## `{path}`", ""]
        for method, operation in operations.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            lines += [f"### {method.upper()} `{path}`", ""]
            if operation.get("description"):
                lines += [operation["description"].strip(), ""]
            parameters = [p for p in operation.get("parameters", []) if p.get("in") in ("query", "path")]
            if parameters:
                lines += ["| parameter | in | meaning |", "|---|---|---|"]
                for parameter in parameters:
                    lines.append(
                        f"| `{parameter['name']}` | {parameter['in']} | {_cell(parameter.get('description', ''))} |"
                    )
                lines.append("")
            body = operation.get("requestBody", {}).get("content", {})
            for content_type, content in body.items():
                lines += [
                    f"Request body ({content_type}): {_schema_fields(schema, content.get('schema', {}))}",
                    "",
                ]
                break
            responses = operation.get("responses", {})
            for status, response in responses.items():
                content = response.get("content", {}).get("application/json", {})
                fields = _schema_fields(schema, content.get("schema", {})) if content else ""
                lines.append(f"- **{status}** {response.get('description', '')} {fields}".rstrip())
            lines.append("")
    return "\n".join(lines)


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _schema_fields(schema: dict, node: dict, depth: int = 0) -> str:
    """The JSON fields of a schema node, nested objects with their own fields (three levels at most)."""
    node = _resolve(schema, node)
    for combined in ("allOf", "oneOf", "anyOf"):
        if node.get(combined) and not node.get("properties"):
            node = _resolve(schema, node[combined][0])
    if node.get("type") == "array":
        return "a list of " + _schema_fields(schema, node.get("items", {}), depth)
    properties = node.get("properties", {})
    if "results" in properties and "count" in properties:  # a page of a list
        return "a page (`count`, `next`, `previous`, `results`) of " + _schema_fields(
            schema, properties["results"].get("items", {}), depth
        )
    if not properties or depth > 2:
        return ""
    fields = []
    for name, value in properties.items():
        inner = _schema_fields(schema, value, depth + 1)
        fields.append(f"`{name}`" + (f" {inner}" if inner.startswith("{") else ""))
    return "{" + ", ".join(fields) + "}"


DATE = re.compile(r"\b(20\d\d-\d\d-\d\d)\b")


def decision_sections(text: str) -> list[tuple[str, str]]:
    """(title, body) of each ``##`` section of the decision record, in order."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return [(parts[i].strip(), parts[i + 1].strip("\n")) for i in range(1, len(parts), 2)]


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:80] or "decision"


def _heading_dates(path: Path) -> dict[int, str]:
    """Line number (1-based) -> the date of the commit that wrote that line (git blame); empty without git."""
    try:
        blame = subprocess.run(
            ["git", "blame", "--line-porcelain", "--", path.name],
            cwd=path.parent,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    dates, line, time = {}, 0, None
    for row in blame.splitlines():
        if re.match(r"^[0-9a-f]{40} ", row):
            line = int(row.split()[2])
        elif row.startswith("committer-time "):
            time = int(row.split()[1])
        elif row.startswith("\t") and time is not None:
            import datetime

            dates[line] = datetime.datetime.fromtimestamp(time, datetime.UTC).date().isoformat()
    return dates


def decision_pages(path: Path = DECISIONS) -> dict[str, str]:
    """docs/decisions.md as one page per section, each with its date: the first date its text gives (a
    section appended with "(2026-11-27)"), else the date of the commit that wrote its heading (git blame),
    else "not yet committed"."""
    text = path.read_text(encoding="utf-8")
    heading_lines = {
        line.removeprefix("## ").strip(): number
        for number, line in enumerate(text.splitlines(), start=1)
        if line.startswith("## ")
    }
    blamed = _heading_dates(path)
    intro = text.split("\n## ", 1)[0].split("\n", 1)[-1].strip()
    pages: dict[str, str] = {}
    index = [
        "# Decisions",
        "",
        intro,
        "",
        "The record is one file, `docs/decisions.md` (code comments point to its sections by title); the site "
        "shows each section as a page, dated.",
        "",
        "| date | decision |",
        "|---|---|",
    ]
    seen: set[str] = set()
    for title, body in decision_sections(text):
        name = slug(title)
        while name in seen:
            name += "-2"
        seen.add(name)
        found = DATE.search(body.split("\n", 1)[0]) or None
        date = found.group(1) if found else blamed.get(heading_lines.get(title, 0), "not yet committed")
        pages[f"decisions/{name}.md"] = (
            f"# {title}\n\n*Decided {date}; from `docs/decisions.md`.*\n\n{body}\n"
        )
        index.append(f"| {date} | [{_cell(title)}]({name}.md) |")
    pages["decisions/index.md"] = "\n".join(index) + "\n"
    return pages


def export_kinds() -> str:
    """The export kinds (judging.models.Export.Kind) and the CSV exports' columns, as the code writes them."""
    from judging.models import Export
    from judging.services.exports import JUDGMENT_LOG_COLUMNS, RELEASE_COLUMNS, WORKER_COLUMNS

    columns = {
        "judgments": JUDGMENT_LOG_COLUMNS,
        "judgments_release": RELEASE_COLUMNS,
        "workers": WORKER_COLUMNS,
    }
    lines = ["| kind | what | columns |", "|---|---|---|"]
    for kind in Export.Kind:
        shown = ", ".join(f"`{column}`" for column in columns.get(kind.value, []))
        if kind.value in ("combined", "top_k", "best"):
            shown = "`topic Q0 docid value`"
        lines.append(
            f"| `{kind.value}` | {_cell(kind.label)} | {shown or 'see the leaderboard in the API'} |"
        )
    return "\n".join(lines)


def snippets() -> dict[str, str]:
    """Generated tables that hand-written pages include with ``<!-- generated: NAME -->``."""
    django_setup()
    return {"export-kinds": export_kinds()}


def pages() -> dict[str, str]:
    """Every generated page, by its path under docs/."""
    django_setup()
    toppref, manage = toppref_pages(), manage_pages()
    generated = {"reference/cli/index.md": cli_index(toppref, manage), **toppref, **manage}
    generated["reference/environment.md"] = environment_page()
    generated["reference/measures.md"] = measures_page()
    schema = openapi_schema()
    generated["reference/api.md"] = api_page(schema)
    generated["reference/openapi.json"] = json.dumps(schema, indent=1, sort_keys=True)
    generated.update(decision_pages())
    return generated


if __name__ == "__main__":  # a look at one page: python docs/generate.py reference/environment.md
    print(pages()[sys.argv[1]])

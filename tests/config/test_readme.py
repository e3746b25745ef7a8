"""The commands of the README and the docs work as written: every `toppref` example (`toppref manage NAME` too,
against the management command's own parser) parses, reads files that exist, and writes only into the
git-ignored scratch folder; the outputs quoted in blocks marked runnable are what their commands print."""

import re
import shlex
import subprocess

import pytest

from config.cli import build_parser
from tests.conftest import REPO_DIR

README = (REPO_DIR / "README.md").read_text(encoding="utf-8")
# The hand-written pages of the documentation site (the generated reference quotes the parsers themselves).
DOCUMENTS = {
    path.relative_to(REPO_DIR).as_posix(): path.read_text(encoding="utf-8")
    for path in [REPO_DIR / "README.md", *sorted((REPO_DIR / "docs").rglob("*.md"))]
}
SETUP_LINES = ('export PATH="$PWD/.venv/bin:$PATH"', "CAST=../shared/data/cast2019", "mkdir -p scratch")
# Shell operators that end a toppref command inside a longer line (a pipe, a redirect, a loop's `;`).
COMMAND_ENDS = {"|", ";", ">", "2>", "&&", "<"}
OUTPUT_OPTIONS = {"-o", "--out", "--output"}


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def _shell_lines(block: str) -> list[str]:
    """Logical lines that run toppref: continuations joined, a leading prompt (`$ `) and variable assignments
    (`TOPPREF_PASSWORD=... toppref ...`) removed."""
    lines = block.replace("\\\n", " ").splitlines()
    commands = [re.sub(r"^(\w+=\S+\s+)+", "", line.removeprefix("$ ").strip()) for line in lines]
    return [line for line in commands if re.match(r"(toppref|for .*; do toppref)\s", line)]


def _toppref_commands(text: str) -> list[tuple[str, list[str], list[str]]]:
    """(line, toppref arguments, the rest of the line's tokens) for every toppref command in a code block."""
    commands = []
    for block in _code_blocks(text):
        for line in _shell_lines(block):
            lexer = shlex.shlex(line, posix=True, punctuation_chars="|;&<>")
            lexer.whitespace_split = True
            tokens = list(lexer)
            for start, token in enumerate(tokens):
                if token != "toppref" or (start and tokens[start - 1] not in ("do", ";")):
                    continue
                end = next(
                    (i for i in range(start + 1, len(tokens)) if tokens[i] in COMMAND_ENDS), len(tokens)
                )
                commands.append((line, tokens[start + 1 : end], tokens[end:]))
    return commands


COMMANDS = [
    (f"{name}: {line}", arguments, rest)
    for name, text in DOCUMENTS.items()
    for line, arguments, rest in _toppref_commands(text)
]


def test_the_readme_says_once_how_to_reach_toppref_and_the_data():
    blocks = _code_blocks(README)
    setup = [block for block in blocks if all(line in block for line in SETUP_LINES)]
    assert len(setup) == 1
    assert len(COMMANDS) >= 60 and len([c for c in COMMANDS if c[0].startswith("README.md")]) >= 10


@pytest.mark.parametrize(("line", "arguments", "rest"), COMMANDS, ids=[" ".join(c[1][:2]) for c in COMMANDS])
def test_every_toppref_example_parses_and_writes_only_into_scratch(line, arguments, rest):
    values = [
        argument.replace("$CAST", "../shared/data/cast2019").replace("$k", "5") for argument in arguments
    ]
    # argparse exits with status 2 (and says why on stderr) when an example does not match the parser
    parsed = build_parser().parse_args(values)
    if parsed.command == "manage":
        _manage_parser(values[1]).parse_args(values[2:])
    outputs = [values[i + 1] for i, value in enumerate(values[:-1]) if value in OUTPUT_OPTIONS]
    outputs += [rest[i + 1] for i, token in enumerate(rest[:-1]) if token == ">"]
    for output in outputs:
        assert output.startswith("scratch/") or output == "/dev/null", (
            f"{line!r} writes {output!r} outside scratch/"
        )


def _manage_parser(name: str):
    from django.core.management import get_commands, load_command_class

    return load_command_class(get_commands()[name], name).create_parser("toppref manage", name)


def test_the_files_the_examples_read_exist(cast_dir):
    named = {
        argument.replace("$CAST", str(cast_dir))
        for _, arguments, _ in COMMANDS
        for argument in arguments
        if argument.startswith(("$CAST/", "demo/")) and "*" not in argument
    }
    assert named and [path for path in sorted(named) if not (REPO_DIR / path).exists()] == []


def test_scratch_outputs_are_git_ignored():
    ignored = subprocess.run(
        ["git", "check-ignore", "scratch/pools.txt", "scratch/fig4.png"],
        cwd=REPO_DIR,
        capture_output=True,
        text=True,
    )
    assert ignored.stdout.split() == ["scratch/pools.txt", "scratch/fig4.png"]


def _readme_figures():
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_figures", REPO_DIR / "docs" / "readme_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_quoted_output_that_differs_from_its_command_is_found_and_rewritten():
    # The mechanism, fast: a region quoting what a command printed once, and what it prints now.
    figures = _readme_figures()
    text = (
        "before\n<!-- run: demo -->\n```\n$ printf 'a\\nb\\n'\nstale\n$ echo '{\"x\": 0.123456, \"n\": 3}' \\\n"
        "    | cat\n```\n<!-- /run -->\nafter\n"
    )
    new, changed = figures.regenerate(text)
    assert changed == ["demo"]
    assert "$ printf 'a\\nb\\n'\na\nb\n$ echo" in new and "stale" not in new and new.endswith("after\n")
    assert figures.regenerate(new) == (new, [])
    # quoting chosen keys of a JSON output, rounded
    keyed = '<!-- run: demo keys=x,n -->\n```\n$ echo \'{"x": 0.123456, "n": 3}\'\nold\n```\n<!-- /run -->'
    assert '  "x": 0.1235, "n": 3\n```' in figures.regenerate(keyed)[0]
    # a block run with the environment its page has the reader export
    with_env = (
        "<!-- run: demo env=GREETING=hello,WHO=docs -->\n```\n$ echo $GREETING $WHO\n```\n<!-- /run -->"
    )
    assert "$ echo $GREETING $WHO\nhello docs\n```" in figures.regenerate(with_env)[0]


@pytest.mark.slow
@pytest.mark.timeout(900)  # every runnable block of the README and the docs: minutes on a loaded machine
def test_every_quoted_output_and_figure_is_what_the_commands_print_now():
    # `make readme` regenerates them; this fails when one went stale (about two minutes on the CAsT data).
    figures = _readme_figures()
    stale = {name: figures.regenerate(text)[1] for name, text in DOCUMENTS.items()}
    assert {name: changed for name, changed in stale.items() if changed} == {}, "run make readme"
    assert sum(text.count("<!-- run: ") for text in DOCUMENTS.values()) >= 15

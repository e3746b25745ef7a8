"""The `toppref` entry point: every app's subcommands are reachable, and `manage` runs Django commands."""

import subprocess
import sys
from pathlib import Path

import pytest

from config.cli import build_parser, main

REPO_DIR = Path(__file__).resolve().parents[2]


def test_every_documented_subcommand_is_registered():
    subcommands = build_parser()._subparsers._group_actions[0].choices
    assert {"thin", "import", "simulate", "plan", "compat", "evaluate", "compare", "plot", "manage"} <= set(
        subcommands
    )


def test_unknown_subcommand_is_a_usage_error(capsys):
    assert main(["no-such-command"]) == 2
    assert "invalid choice: 'no-such-command'" in capsys.readouterr().err


@pytest.mark.django_db
def test_manage_runs_a_django_management_command(capsys):
    assert main(["manage", "check"]) == 0
    assert "System check identified no issues" in capsys.readouterr().out


# --- start-up: each command imports what it uses (docs/decisions.md, "A command line that starts at once") ---

FILE_ONLY = {
    "thin": ["thin", "-k", "1", "{qrels}"],
    "compat": ["compat", "{qrels}", "{run}"],
    "evaluate": ["evaluate", "{qrels}", "{run}", "-m", "compat@0.95", "ndcg@10"],
    "compare": ["compare", "{qrels}", "{run}", "-m", "rr", "--resamples", "10"],
    "plot": ["plot", "ci", "{qrels}", "{run}", "-m", "rr", "--resamples", "10", "-o", "{png}"],
    "simulate": ["simulate", "--qrels", "{qrels}", "--oracle", "{qrels}", "-k", "1"],
    "plan": ["plan", "--pool-size", "12", "--trials", "2"],
}
HEAVY = ("django", "celery", "kombu", "rest_framework")


def _modules_after(argv: list[str]) -> set[str]:
    """Top-level packages imported by running ``toppref ARGV`` in a fresh interpreter."""
    script = (
        "import sys, contextlib, io\n"
        "from config.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    status = main({argv!r})\n"
        "print(status, ' '.join(sorted({name.split('.')[0] for name in sys.modules})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO_DIR
    )
    status, modules = result.stdout.split(" ", 1)
    assert status == "0", result.stdout
    return set(modules.split())


def test_help_imports_no_app_and_no_numerical_library():
    modules = _modules_after(["--help"])
    assert not modules & {"pools", "judging", "metrics", "numpy", "pandas", "pyarrow", *HEAVY}


@pytest.mark.parametrize("command", sorted(FILE_ONLY))
def test_file_only_commands_import_neither_django_nor_celery(command, tmp_path):
    (tmp_path / "q.txt").write_text("t Q0 a 2\nt Q0 b 1\nt Q0 c 1\n")
    (tmp_path / "r.txt").write_text("t Q0 a 1 3 r\nt Q0 b 2 2 r\n")
    files = {"qrels": tmp_path / "q.txt", "run": tmp_path / "r.txt", "png": tmp_path / "x.png"}
    modules = _modules_after([word.format(**files) for word in FILE_ONLY[command]])
    assert not modules & set(HEAVY)
    # and a command of one app does not load another app's command modules
    assert ("judging" in modules) == (command in ("simulate", "plan"))


def test_unexpected_errors_are_one_line_unless_traceback_is_asked(monkeypatch, tmp_path, capsys):
    import metrics.cli.evaluate

    def broken(args):
        raise RuntimeError("something unforeseen")

    monkeypatch.setattr(metrics.cli.evaluate, "evaluate_command", broken)
    argv = ["evaluate", str(tmp_path / "q"), str(tmp_path / "r"), "-m", "rr"]
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        "toppref evaluate: error: RuntimeError: something unforeseen (run again with --traceback for details)\n"
    )
    with pytest.raises(RuntimeError, match="something unforeseen"):
        main(["--traceback", *argv])
    with pytest.raises(RuntimeError, match="something unforeseen"):
        main([*argv, "--traceback"])


def test_usage_errors_are_one_line(capsys):
    assert main(["evaluate", "q", "r", "-m", "rr", "--threshold", "inf"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "toppref evaluate: error: argument -l/--threshold: 'inf' is not a finite number "
        "(see 'toppref evaluate --help')\n"
    )

"""The `toppref` entry point: every app's subcommands are reachable, and `manage` runs Django commands."""

import pytest

from config.cli import build_parser, main


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

"""``toppref simulate`` and ``toppref plan`` show how far they have got on a terminal, and nothing elsewhere."""

import io
import json
import sys

import pytest

import config.cli
from config.cli import main


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def small_track(tmp_path):
    # three topics of twelve graded passages, the preference values in the grades' order
    graded, preference = tmp_path / "graded.txt", tmp_path / "preference.txt"
    with graded.open("w") as grades, preference.open("w") as values:
        for topic in ("1", "2", "3"):
            for i in range(12):
                grades.write(f"{topic} Q0 d{i:02d} {min(3, 1 + i // 3)}\n")
                values.write(f"{topic} Q0 d{i:02d} {i + 1}\n")
            grades.write(f"{topic} Q0 zz 0\n")
    return graded, preference


def _run_on(stream, monkeypatch, arguments):
    monkeypatch.setattr(config.cli, "PROGRESS_DELAY_SECONDS", 0.0)
    monkeypatch.setattr(sys, "stderr", stream)
    status = main(arguments)
    monkeypatch.undo()
    return status, stream.getvalue()


def _simulate(small_track, *extra):
    graded, preference = small_track
    return ["simulate", "--qrels", str(graded), "--oracle", str(preference), "--seed", "1", *extra]


def test_a_budgeted_simulation_counts_its_judgments_to_the_budget_on_a_terminal(
    small_track, monkeypatch, capsys
):
    arguments = _simulate(small_track, "--mode", "adaptive", "--error-rate", "0.2", "--max-judgments", "150")
    status, shown = _run_on(_Terminal(), monkeypatch, arguments)
    summary = json.loads(capsys.readouterr().out)
    assert status == 0
    last = shown.split("\r")[-1]
    assert last.startswith("simulate: ") and f"{summary['judgments']}/150" in last
    assert f"wave {summary['rounds']}" in last


def test_a_simulation_off_a_terminal_writes_no_bar_and_the_same_summary(small_track, monkeypatch, capsys):
    arguments = _simulate(small_track, "--mode", "crowd")
    status, quiet = _run_on(io.StringIO(), monkeypatch, arguments)
    off_terminal = capsys.readouterr().out
    _, shown = _run_on(_Terminal(), monkeypatch, arguments)
    assert status == 0 and quiet == "" and off_terminal == capsys.readouterr().out
    # without a budget the bar counts judgments and waves, with no total
    summary = json.loads(off_terminal)
    last = shown.split("\r")[-1]
    assert f"{summary['judgments']}judgment" in last.replace(" ", "") and f"wave {summary['rounds']}" in last


def test_the_confidence_fit_is_named_while_it_runs(small_track, monkeypatch, capsys, tmp_path):
    arguments = _simulate(
        small_track,
        "--mode",
        "adaptive",
        "--error-rate",
        "0.2",
        "--confidence-out",
        str(tmp_path / "confidence.tsv"),
    )
    status, shown = _run_on(_Terminal(), monkeypatch, arguments)
    assert status == 0 and "fitting the judge model" in shown.split("\r")[-1]


def test_a_plan_counts_both_planners_trials_on_a_terminal(small_track, monkeypatch, capsys):
    graded, _ = small_track
    arguments = ["plan", "--qrels", str(graded), "--mode", "adaptive", "--error-rate", "0.1", "--trials", "3"]
    status, shown = _run_on(_Terminal(), monkeypatch, arguments)
    plan = json.loads(capsys.readouterr().out)
    assert status == 0 and plan["trials"] == 3
    bar = [line for line in shown.split("\r") if line.startswith("plan: ")][-1]
    assert "100%" in bar and "6/6" in bar
    # the summary in words follows the bar, as off a terminal
    assert "plan (adaptive)" in shown

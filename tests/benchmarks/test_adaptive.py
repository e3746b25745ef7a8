"""benchmarks/adaptive.py's calibration: how a run's ``--confidence-out`` is scored against its ``--truth-out``
(an item tied with the k-th counts as in, except against the strict order an ``--error-rate`` judge answers by),
and the reliability diagram drawn from rows kept by ``--json``."""

import pytest

from tests.benchmarks.scripts import benchmark_script


@pytest.fixture(scope="module")
def adaptive():
    with benchmark_script("adaptive") as module:
        yield module


@pytest.fixture
def run_files(tmp_path):
    # One topic: d1 > d2 = d3 > d4 in truth; at k = 2 the tie-aware top-2 is {d1, d2, d3}, the strict one
    # (value, then docid) {d1, d2}.
    truth = tmp_path / "truth.txt"
    truth.write_text("t1 Q0 d1 3\nt1 Q0 d2 2\nt1 Q0 d3 2\nt1 Q0 d4 1\n")
    confidence = tmp_path / "confidence.tsv"
    confidence.write_text("t1\td1\t0.95\t0.9\nt1\td2\t0.55\t0.05\nt1\td3\t0.52\t0.05\nt1\td4\t0.05\t0.0\n")
    return confidence, truth


def test_tie_aware_calibration_counts_an_item_tied_with_the_kth_as_in(adaptive, run_files):
    bins = adaptive._calibration(*run_files, strict=False, k=2)
    assert bins[9] == pytest.approx([1, 0.95, 1])
    assert bins[5] == pytest.approx([2, 1.07, 2])
    assert bins[0] == pytest.approx([1, 0.05, 0])
    assert sum(b[0] for b in bins) == 4


def test_strict_calibration_scores_the_order_the_judge_answers_by(adaptive, run_files):
    bins = adaptive._calibration(*run_files, strict=True, k=2)
    # d3 loses its tie with d2 on docid, so one of the two items in the 0.5-0.6 bin is out.
    assert bins[5] == pytest.approx([2, 1.07, 1])


def test_the_reliability_diagram_is_drawn_from_kept_rows(adaptive, run_files, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    figure = tmp_path / "docs" / "judge-model-calibration.png"
    monkeypatch.setattr(adaptive, "REPO_DIR", tmp_path)
    monkeypatch.setattr(adaptive, "CALIBRATION_FIGURE", figure)
    bins = adaptive._calibration(*run_files, strict=False, k=2)
    rows = [
        {"judge": "oracle", "mode": "crowd", "seeds": 1, "calibration": bins},
        {"judge": "disc-2", "mode": "crowd", "seeds": 1, "calibration": [[n * 60 for n in b] for b in bins]},
    ]
    adaptive.plot_calibration(rows)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_noisy_judge_draws_no_diagram(adaptive, tmp_path, monkeypatch):
    figure = tmp_path / "judge-model-calibration.png"
    monkeypatch.setattr(adaptive, "CALIBRATION_FIGURE", figure)
    adaptive.plot_calibration(
        [{"judge": "oracle", "mode": "crowd", "seeds": 1, "calibration": [[0, 0, 0]] * 10}]
    )
    assert not figure.exists()


def _row(mode, judge, recall, best):
    per_seed = {
        "seed": [0.0, 1.0, 2.0],
        "oracle_top_k_recall_tie_aware": recall,
        "oracle_same_best_tie_aware": best,
        "oracle_top_k_recall_tie_aware_at_k": recall,
    }
    means = {column: sum(values) / len(values) for column, values in per_seed.items() if column != "seed"}
    return {
        "mode": mode,
        "judge": judge,
        "seeds": 3,
        "judgments": 14000.0,
        "rounds": 15.0,
        "max_votes_per_pair": 5,
        "repeat_pairs_same_worker": 0,
        "calibration": [[0, 0, 0]] * 10,
        "per_seed": per_seed,
        **means,
    }


def test_a_goal_against_the_paper_says_how_far_the_difference_moves_between_seeds(adaptive, capsys):
    # Seed by seed the adaptive mode trails by 0.01, 0.00, 0.02: mean -0.01, standard error 0.01 / sqrt(3).
    paper = _row("crowd", "crowd-log-items", [0.80, 0.78, 0.79], [60.0, 65.0, 64.0])
    mine = _row("budget-paper", "crowd-log-items", [0.79, 0.78, 0.77], [90.0, 85.0, 91.0])
    adaptive.print_goals([paper, mine])
    line = next(x for x in capsys.readouterr().out.splitlines() if "items, at the paper's count" in x)
    assert line.startswith("NOT met")
    assert f"0.780 vs 0.790 (s.e. {0.01 / 3**0.5:.3g})" in line
    # best first: +30, +20, +27, mean +25.67, standard deviation 5.13
    assert "88.7 vs 63.0 (s.e. 2.96)" in line


def test_rows_kept_without_their_seeds_print_no_spread(adaptive, capsys):
    row = _row("budget-14000", "crowd-log", [0.91, 0.92, 0.92], [150.0, 146.0, 149.0])
    del row["per_seed"]
    adaptive.print_goals([row])
    line = next(x for x in capsys.readouterr().out.splitlines() if "crowd log, gap" in x)
    assert "s.e." not in line
    assert line.startswith("met")


def test_the_item_worlds_goal_is_judged_for_each_paper_budget_mode_apart(adaptive, capsys):
    # Given the paper's procedure and the adaptive mode at its count over the default rounds and over 40
    paper = _row("crowd", "crowd-log-items", [0.80, 0.78, 0.79], [60.0, 65.0, 64.0])
    default = _row("budget-paper", "crowd-log-items", [0.79, 0.78, 0.77], [90.0, 85.0, 91.0])
    longer = _row("budget-paper-40r", "crowd-log-items", [0.81, 0.79, 0.79], [90.0, 85.0, 91.0])
    adaptive.print_goals([paper, default, longer])
    lines = [x for x in capsys.readouterr().out.splitlines() if "items, at the paper's count" in x]
    # Then each gets its own line, named by its mode, met or not on its own figures
    assert [line.split("(")[1].split(")")[0] for line in lines] == ["budget-paper", "budget-paper-40r"]
    assert lines[0].startswith("NOT met") and lines[1].startswith("met")

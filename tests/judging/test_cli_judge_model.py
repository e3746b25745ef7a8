"""``toppref simulate`` with the judge model: --confidence-out, --noise-model items, --truth-out, --max-judgments."""

import json
import random

import pytest

from config.cli import main
from pools.thinning import thin_qrels
from pools.trec import read_qrels


def _simulate(capsys, *arguments):
    status = main(["simulate", *arguments])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _small_world(tmp_path):
    """Two topics of 16 graded passages and a non-relevant one each, and a noisy log of judgments on them."""
    qrels = tmp_path / "graded.txt"
    lines, log = [], []
    rng = random.Random(4)
    for topic in ("t1", "t2"):
        docids = [f"d{i:02d}" for i in range(16)]
        lines += [f"{topic} Q0 {d} {1 + i % 3}\n" for i, d in enumerate(docids)]
        lines.append(f"{topic} Q0 z 0\n")
        for _ in range(300):
            a, b = rng.sample(docids, 2)
            better = a if (int(a[1:]) % 3, a) > (int(b[1:]) % 3, b) else b
            winner = better if rng.random() < 0.75 else (b if better == a else a)
            log.append(f"{topic} {a} {b} {winner}\n")
    qrels.write_text("".join(lines))
    log_path = tmp_path / "log.txt"
    log_path.write_text("".join(log))
    return qrels, log_path


def _read_confidence(path):
    rows = [line.split("\t") for line in path.read_text().splitlines()]
    return [(topic, docid, float(p_top_k), float(p_best)) for topic, docid, p_top_k, p_best in rows]


@pytest.mark.parametrize("mode", ["crowd", "adaptive", "tournament"])
def test_confidence_out_lists_every_candidate_with_probabilities(tmp_path, capsys, mode):
    # given a perfect judge on two small topics
    qrels, _ = _small_world(tmp_path)
    out = tmp_path / "confidence.tsv"
    status, stdout, _ = _simulate(
        capsys, "--qrels", str(qrels), "--oracle", str(qrels), "--mode", mode, "-k", "3",
        "--confidence-out", str(out),
    )  # fmt: skip
    # then every candidate of every topic has a line, and the probabilities add up per topic
    assert status == 0 and json.loads(stdout)["confidence_out"] == str(out)
    rows = _read_confidence(out)
    pools = thin_qrels(read_qrels(qrels), 3)
    assert sorted((t, d) for t, d, _, _ in rows) == sorted((t, d) for t in pools for d in pools[t])
    for topic in ("t1", "t2"):
        mine = [r for r in rows if r[0] == topic]
        assert sum(r[2] for r in mine) == pytest.approx(3.0)
        assert sum(r[3] for r in mine) == pytest.approx(1.0)
    # and a perfect judge's top-3 is near certain: the three most likely are the oracle's top 3
    top = sorted((r for r in rows if r[0] == "t1"), key=lambda r: -r[2])[:3]
    assert {r[1] for r in top} == {"d02", "d05", "d08"} and all(r[2] > 0.5 for r in top)


def test_items_world_judges_from_the_fitted_scores_and_scores_against_them(tmp_path, capsys):
    qrels, log = _small_world(tmp_path)
    truth = tmp_path / "truth.txt"
    common = [
        "--qrels",
        str(qrels),
        "--oracle",
        str(qrels),
        "--noise-from",
        str(log),
        "-k",
        "3",
        "--seed",
        "2",
    ]
    status, stdout, stderr = _simulate(capsys, *common, "--noise-model", "items", "--truth-out", str(truth))
    summary = json.loads(stdout)
    assert status == 0 and summary["noise_model"] == "items" and 0 < summary["world_reliability"] <= 1
    assert "no judgment of" not in stderr
    # the truth is one real-valued score per candidate, fitted to the log: the log's favourites come first
    written = read_qrels(truth)
    pools = thin_qrels(read_qrels(qrels), 3)
    assert set(written) == {"t1", "t2"} and set(pools["t1"]) <= set(written["t1"])
    assert len(set(written["t1"].values())) == len(written["t1"])
    assert max(written["t1"], key=written["t1"].get) in {"d14", "d11", "d08", "d05", "d02"}
    # and the oracle_* keys are computed against that truth, not against --oracle
    _, gap, _ = _simulate(capsys, *common, "--noise-model", "gap")
    assert "noise_fit" in json.loads(gap) and "noise_model" not in json.loads(gap)
    perfect_on_truth = tmp_path / "perfect.txt"
    status, _, _ = _simulate(
        capsys, "--qrels", str(qrels), "--oracle", str(truth), "-k", "3", "--seed", "2", "--out",
        str(perfect_on_truth),
    )  # fmt: skip
    assert status == 0


def test_truth_out_in_the_gap_world_is_the_oracle(tmp_path, capsys):
    qrels, _ = _small_world(tmp_path)
    truth = tmp_path / "truth.txt"
    status, _, _ = _simulate(capsys, "--qrels", str(qrels), "--oracle", str(qrels), "--truth-out", str(truth))
    assert status == 0
    assert read_qrels(truth) == read_qrels(qrels)


def test_max_judgments_caps_a_noisy_adaptive_campaign(tmp_path, capsys):
    # given a crowd erring 30% of the time and a budget well under what it would spend
    qrels, _ = _small_world(tmp_path)
    status, stdout, _ = _simulate(
        capsys, "--qrels", str(qrels), "--oracle", str(qrels), "--mode", "adaptive", "-k", "3",
        "--error-rate", "0.3", "--max-judgments", "20", "--max-votes", "3", "--seed", "3",
    )  # fmt: skip
    summary = json.loads(stdout)
    # then it stops at the budget, every topic has a top-3, no pair past the cap, no worker twice on a pair
    assert status == 0
    assert summary["judgments"] == 20
    assert summary["max_votes_per_pair"] <= 3 and summary["repeat_pairs_same_worker"] == 0
    assert summary["oracle_top_k_recall"] is not None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--noise-model", "items"], "--noise-model items needs --noise-from LOG"),
        (["--max-judgments", "100"], "--max-judgments needs --mode adaptive"),
        (["--max-judgments", "0", "--mode", "adaptive"], "argument --max-judgments: 0 is out of range"),
        (["--noise-model", "trees"], "argument --noise-model: invalid choice"),
        (["--model-rounds", "30", "--mode", "adaptive"], "--model-rounds needs --max-judgments"),
        (
            ["--model-rounds", "0", "--mode", "adaptive", "--max-judgments", "9"],
            "--model-rounds: 0 is out of range",
        ),
    ],
)
def test_bad_judge_model_parameters_exit_2_writing_nothing(tmp_path, capsys, arguments, message):
    qrels, _ = _small_world(tmp_path)
    confidence = tmp_path / "c.tsv"
    status, stdout, stderr = _simulate(
        capsys, "--qrels", str(qrels), "--oracle", str(qrels), "--confidence-out", str(confidence), *arguments
    )
    assert (status, stdout) == (2, "") and message in stderr
    assert not confidence.exists()


def test_plan_prices_quality_at_a_budget_beside_the_papers_procedure(capsys):
    status = main(
        ["plan", "--pool-size", "30", "--mode", "adaptive", "--max-judgments", "120", "--error-rate", "0.2",
         "--trials", "2", "-k", "3", "-F", "6", "-P", "4"]
    )  # fmt: skip
    captured = capsys.readouterr()
    plan = json.loads(captured.out)
    assert status == 0 and plan["max_judgments"] == 120
    assert plan["judgments_max"] <= 120
    assert 0 <= plan["top_k_recall"] <= 1 and 0 <= plan["best_first"] <= 1
    assert 0 <= plan["crowd"]["top_k_recall"] <= 1 and "best_first" in plan["crowd"]
    assert "Within 120 judgments: expected top-3 recall" in captured.err


def test_plan_at_a_budget_says_over_how_many_model_rounds(capsys):
    status = main(
        ["plan", "--pool-size", "30", "--mode", "adaptive", "--max-judgments", "120", "--model-rounds", "25",
         "--trials", "1", "-k", "3", "-F", "6", "-P", "4"]
    )  # fmt: skip
    plan = json.loads(capsys.readouterr().out)
    assert status == 0 and (plan["max_judgments"], plan["model_rounds"]) == (120, 25)


def test_plan_max_judgments_needs_the_adaptive_mode(capsys):
    status = main(["plan", "--pool-size", "30", "--max-judgments", "120"])
    assert status == 2 and "--max-judgments needs --mode adaptive" in capsys.readouterr().err


def test_items_world_warns_of_topics_the_log_never_judged(tmp_path, capsys):
    qrels, log = _small_world(tmp_path)
    only_t1 = tmp_path / "t1.txt"
    only_t1.write_text(
        "".join(line for line in log.read_text().splitlines(keepends=True) if line.startswith("t1 "))
    )
    status, stdout, stderr = _simulate(
        capsys, "--qrels", str(qrels), "--oracle", str(qrels), "--noise-from", str(only_t1),
        "--noise-model", "items", "-k", "3",
    )  # fmt: skip
    assert status == 0 and json.loads(stdout)["noise_model"] == "items"
    assert stderr.splitlines() == [
        f"toppref simulate: warning: {only_t1}: no judgment of 1 topic(s) of {qrels} (t2); their candidates' "
        "truth in the item world is the grades' prior, which no vote informs"
    ]

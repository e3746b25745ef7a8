"""``toppref simulate --judge-log``: asks answered from a real log while the pair has an unused vote, the rest
by the model; ``replayed`` and ``modelled`` count them; the same seed gives the same campaign."""

import json
import random

from config.cli import main
from judging.engine import NoisyOracle, PerfectOracle, ReplayOracle
from judging.engine.judgment_log import JudgmentRecord

GRADED = "t Q0 a 3\nt Q0 b 2\nt Q0 c 1\nt Q0 z 0\n"


def _simulate(capsys, *arguments):
    status = main(["simulate", *map(str, arguments)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_each_logged_vote_answers_once_in_either_order_then_the_model_answers():
    # Given one logged vote b > a (against the values), the first ask of the pair, in the other order, gets
    # the logged answer; the second ask finds the vote used and gets the model's (the values': a).
    judge = ReplayOracle(
        [JudgmentRecord("t", "b", "a")], fallback=PerfectOracle({"t": {"a": 2, "b": 1}}), reuse_last=False
    )
    assert [judge.prefer("t", "a", "b"), judge.prefer("t", "b", "a")] == ["b", "a"]
    assert (judge.replayed, judge.fallen_back) == (1, 1)
    # --replay keeps repeating the last logged vote instead
    replay = ReplayOracle([JudgmentRecord("t", "b", "a")], fallback=PerfectOracle({"t": {"a": 2, "b": 1}}))
    assert [replay.prefer("t", "a", "b"), replay.prefer("t", "b", "a")] == ["b", "b"]


def test_toy_campaign_counts_replayed_and_modelled_answers(tmp_path, capsys):
    # Given a pool a, b, c (k=3: straight to stage 2, all three pairs once) and a challenge per HIT, and a
    # log that judged (a, b) twice against the grades: the one ask of (a, b) is replayed, the two other pairs
    # and the challenge are modelled, and the log's answer puts b first.
    qrels = tmp_path / "q.txt"
    qrels.write_text(GRADED)
    log = tmp_path / "log.txt"
    log.write_text("t b a b\nt a b b\n")
    status, out, _ = _simulate(capsys, "--qrels", qrels, "--oracle", qrels, "--judge-log", log, "-k", "3")
    summary = json.loads(out)
    assert status == 0
    assert (summary["judgments"], summary["challenges"]) == (3, 1)
    assert (summary["replayed"], summary["modelled"]) == (1, 3)
    assert summary["oracle_same_best"] == 0


def test_a_tie_in_the_log_is_no_answer_so_the_model_answers(tmp_path, capsys):
    qrels = tmp_path / "q.txt"
    qrels.write_text(GRADED)
    log = tmp_path / "model.txt"
    log.write_text("t b a =\nt c a ?\nt b c !\n")
    status, out, _ = _simulate(capsys, "--qrels", qrels, "--oracle", qrels, "--judge-log", log, "-k", "3")
    summary = json.loads(out)
    assert status == 0 and (summary["replayed"], summary["modelled"]) == (1, 3)


def test_cast_crowd_log_replayed_with_the_fitted_noise_model_is_deterministic(cast_dir, capsys):
    arguments = [
        "--qrels",
        cast_dir / "qrels.graded.txt",
        "--oracle",
        cast_dir / "qrels.preference.txt",
        "--judge-log",
        cast_dir / "judgments.crowd.txt",
        "--noise-from",
        cast_dir / "judgments.crowd.txt",
        "--seed",
        "4",
    ]
    status, first, _ = _simulate(capsys, *arguments)
    _, second, _ = _simulate(capsys, *arguments)
    summary = json.loads(first)
    assert status == 0 and first == second
    assert summary["replayed"] > 0 and summary["modelled"] > 0
    # every answer, the challenges' too, is either replayed or modelled
    assert summary["replayed"] + summary["modelled"] == summary["judgments"] + summary["challenges"]
    assert summary["replayed"] <= 14573


def test_the_model_draws_only_for_the_asks_the_log_cannot_answer():
    # Given the same seed, a judge whose log answers some asks draws the model's noise only for the others: the
    # modelled answers are those of a bare model asked the same unlogged pairs.
    values = {"t": {"a": 3, "b": 2, "c": 1}}
    asks = [("a", "b"), ("a", "c"), ("b", "c"), ("a", "c"), ("a", "b")]
    judge = ReplayOracle(
        [JudgmentRecord("t", "b", "a")],
        fallback=NoisyOracle(values, rng=random.Random(7), error_rate=0.4),
        reuse_last=False,
    )
    bare = NoisyOracle(values, rng=random.Random(7), error_rate=0.4)
    answers = [judge.prefer("t", a, b) for a, b in asks]
    assert answers[0] == "b"
    assert answers[1:] == [bare.prefer("t", a, b) for a, b in asks[1:]]


def test_replay_and_judge_log_together_are_a_usage_error(tmp_path, capsys):
    qrels = tmp_path / "q.txt"
    qrels.write_text(GRADED)
    log = tmp_path / "log.txt"
    log.write_text("t b a b\n")
    status, out, err = _simulate(
        capsys, "--qrels", qrels, "--oracle", qrels, "--judge-log", log, "--replay", log
    )
    assert (status, out) == (2, "")
    assert err == "toppref simulate: error: give --replay or --judge-log, not both\n"


def test_a_malformed_judge_log_is_one_line_naming_file_and_line(tmp_path, capsys):
    qrels = tmp_path / "q.txt"
    qrels.write_text(GRADED)
    log = tmp_path / "log.txt"
    log.write_text("t b a b\nt b a x\n")
    status, out, err = _simulate(capsys, "--qrels", qrels, "--oracle", qrels, "--judge-log", log)
    assert (status, out) == (1, "")
    assert err == f"toppref simulate: error: {log}:2: winner x is neither b nor a nor one of ! = ?\n"

"""compatibility equals the reference compatibility.py (as re-implemented literally in compat_oracle) to 1e-9:
on the real CAsT 2019 runs and on adversarial files (metric-anchors.md section 1 lists the rules)."""

import numpy as np
import pytest

from metrics.core.evaluate import EvaluationOptions, evaluate_run, parse_measure
from metrics.core.readers import read_qrels, read_run
from tests.metrics.core import compat_oracle

TOLERANCE = 1e-9


def ours(qrels_path, run_path, p=0.95, normalize=True, depth=1000):
    (scores,) = evaluate_run(
        read_qrels(qrels_path),
        read_run(run_path),
        [parse_measure(f"compat@{p}")],
        EvaluationOptions(depth=depth, normalize=normalize),
    )
    rows = [(scores.runid, t, float(v)) for t, v in zip(scores.topics, scores.values, strict=True)]
    return rows + [(scores.runid, "average", scores.mean)]


def assert_same_rows(actual, expected):
    assert [row[:2] for row in actual] == [row[:2] for row in expected]
    worst = max(abs(a[2] - e[2]) for a, e in zip(actual, expected, strict=True))
    assert worst <= TOLERANCE


@pytest.mark.slow
@pytest.mark.parametrize("qrels_name", ["qrels.preference.txt", "qrels.graded.txt"])
def test_all_cast_runs_match_the_reference(cast_dir, qrels_name):
    qrels_path = cast_dir / qrels_name
    run_paths = sorted((cast_dir / "runs").glob("*.run"))
    assert len(run_paths) == 23
    for run_path in run_paths:
        assert_same_rows(ours(qrels_path, run_path), compat_oracle.compatibility_rows(qrels_path, run_path))


@pytest.mark.parametrize(("p", "normalize"), [(0.8, True), (0.9, False)])
def test_cast_negative_score_run_matches_the_reference_at_other_settings(cast_dir, p, normalize):
    qrels_path = cast_dir / "qrels.preference.txt"
    run_path = cast_dir / "runs" / "thunlp_bert_base_run_cv.run"
    assert_same_rows(
        ours(qrels_path, run_path, p=p, normalize=normalize),
        compat_oracle.compatibility_rows(qrels_path, run_path, p=p, normalize=normalize),
    )


# ---- adversarial files ------------------------------------------------------------------------------------


def adversarial_files(tmp_path, case, seed=7):
    """Write one adversarial (qrels, run) pair; every case also has topics missing on either side."""
    rng = np.random.default_rng(seed)
    topics = [f"{t}_{s}" for t in (31, 32, 40) for s in range(1, 5)]
    docs = [f"MARCO_{i}" for i in rng.choice(100_000, 3000, replace=False)]
    depth = 1500 if case == "deep" else 120
    qrels_lines = []
    for topic in topics[2:]:  # topics[:2] are in the run only
        judged = rng.choice(docs[:400], 60, replace=False)
        for doc in judged:
            value = float(rng.choice([0, 0, 1, 2, 3, 10, 20, 30, 40, 50]))
            if case == "qrels":
                value = float(rng.choice([0.0, 0.25, 1.5, 2.75, 1e-3, -1.0, 50.0]))
            qrels_lines.append(f"{topic} Q0 {doc} {value}")
        if case == "qrels":  # repeat some pairs with other values (max must win), tab separated
            for doc in judged[:15]:
                qrels_lines.append(f"{topic}\tQ0\t{doc}\t{float(rng.choice([0.0, 0.5, 7.0, 60.0]))}")
    qrels_lines += [f"{topics[-1]} Q0 {doc} 0" for doc in docs[:5]]  # a topic with zero values only
    run_lines = []
    for topic in topics[:-3]:  # the last judged topics are missing from the run
        ranked = list(rng.choice(docs[: 300 if case != "deep" else 3000], depth, replace=False))
        if case == "deep":  # judged docs far beyond depth 1000 and at its edge
            ranked = ranked[:995] + list(docs[:5]) + ranked[995:]
        if case == "duplicates":
            ranked += ranked[:10] + ranked[50:55]
        scores = {
            "negative": -np.sort(rng.exponential(3.0, len(ranked))),
            "ties": rng.choice([0.0, 1.0, 2.0], len(ranked)),
            "rank_column": np.sort(rng.random(len(ranked))),
            "duplicates": rng.choice([0.5, 1.0, 1.5, 2.0], len(ranked)),
            "deep": -rng.random(len(ranked)),
            "qrels": rng.random(len(ranked)),
        }[case]
        for i, (doc, score) in enumerate(zip(ranked, scores, strict=True)):
            rank = i + 1 if case == "rank_column" else rng.integers(0, 5)
            run_lines.append(f"{topic} Q0 {doc} {rank} {float(score)!r} run-{case}")
    run_lines[-1] = run_lines[-1].replace(f"run-{case}", "lastid")  # the runid comes from the last line
    qrels_path, run_path = tmp_path / f"{case}.qrels", tmp_path / f"{case}.run"
    qrels_path.write_text("\n".join(qrels_lines) + "\n")
    run_path.write_text("\n".join(run_lines) + "\n")
    return qrels_path, run_path


@pytest.mark.parametrize("case", ["negative", "ties", "rank_column", "duplicates", "deep", "qrels"])
@pytest.mark.parametrize("p", [0.8, 0.95])
def test_adversarial_files_match_the_reference(tmp_path, case, p):
    qrels_path, run_path = adversarial_files(tmp_path, case)
    expected = compat_oracle.compatibility_rows(qrels_path, run_path, p=p)
    # the case really exercises the rule: topics are dropped on both sides and several topics score
    assert 3 <= len(expected) - 1 < 9 and expected[0][0] == "lastid"
    assert_same_rows(ours(qrels_path, run_path, p=p), expected)


def test_equal_scores_follow_docid_not_qrels_order(tmp_path):
    # anchors: 2 judged docs of one level with equal run scores, qrels order != docid order, 1000-deep run:
    # the reference gives 1.0 (ir_measures 0.812)
    qrels_path = tmp_path / "q"
    qrels_path.write_text("t Q0 b 1\nt Q0 a 1\n")
    run_path = tmp_path / "r"
    run_path.write_text(
        "t Q0 b 1 5.0 r\nt Q0 a 2 5.0 r\n"
        + "".join(f"t Q0 x{i:04d} {i} {4 - i / 1000} r\n" for i in range(998))
    )
    assert ours(qrels_path, run_path) == [("r", "t", 1.0), ("r", "average", 1.0)]
    assert compat_oracle.compatibility_rows(qrels_path, run_path) == [("r", "t", 1.0), ("r", "average", 1.0)]


def test_duplicate_qrels_keep_the_maximum(tmp_path):
    # anchors: b judged 3 then 1, run [b, a, ...]: with the maximum, b is above a in the ideal, so 1.0
    qrels_path = tmp_path / "q"
    qrels_path.write_text("t Q0 a 2\nt Q0 b 3\nt Q0 b 1\n")
    run_path = tmp_path / "r"
    run_path.write_text(
        "t Q0 b 1 9 r\nt Q0 a 2 8 r\n" + "".join(f"t Q0 x{i:04d} {i} {7 - i / 1000} r\n" for i in range(998))
    )
    assert ours(qrels_path, run_path) == [("r", "t", 1.0), ("r", "average", 1.0)]


def test_no_common_topic_averages_to_zero(tmp_path):
    qrels_path = tmp_path / "q"
    qrels_path.write_text("t1 Q0 a 1\nt2 Q0 a 0\n")
    run_path = tmp_path / "r"
    run_path.write_text("t2 Q0 a 1 1 r\nt3 Q0 a 1 1 r\n")
    assert ours(qrels_path, run_path) == [("r", "average", 0.0)]
    assert compat_oracle.compatibility_rows(qrels_path, run_path) == [("r", "average", 0.0)]

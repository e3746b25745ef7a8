"""``toppref evaluate`` (metrics/cli/evaluate.py)."""

import csv
import io
import json

import pytest

from config.cli import main
from metrics.core.evaluate import evaluate_run, parse_measure
from metrics.core.readers import read_qrels, read_run

# DECAF README (SIGIR 2023 Table 4): trec_eval MRR, NDCG@3, NDCG@10 (x100, 1 decimal) of runs 1..16
DECAF_PUBLISHED = {
    1: (32.0, 14.2, 14.4),
    2: (51.5, 25.9, 25.4),
    3: (64.0, 33.9, 32.1),
    4: (41.0, 19.1, 18.4),
    5: (65.6, 34.4, 32.5),
    6: (48.0, 28.4, 24.9),
    7: (79.3, 50.4, 45.2),
    8: (51.7, 30.9, 27.5),
    9: (79.4, 50.3, 46.0),
    10: (52.3, 30.4, 33.1),
    11: (44.8, 27.5, 26.7),
    12: (79.9, 52.3, 50.1),
    13: (66.7, 35.4, 34.5),
    14: (82.5, 54.4, 48.2),
    15: (54.3, 32.8, 35.5),
    16: (84.3, 56.6, 53.5),
}


def run_evaluate(capsys, *argv):
    status = main(["evaluate", *map(str, argv)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def tsv_rows(out):
    return [tuple(line.split("\t")) for line in out.splitlines()]


def test_decaf_runs_reproduce_their_published_trec_eval_scores(cast_dir, capsys):
    runs = [cast_dir / "runs" / f"decaf{n:02d}.run" for n in DECAF_PUBLISHED]
    status, out, err = run_evaluate(
        capsys, cast_dir / "qrels.graded.txt", *runs, "-m", "rr", "ndcg@3", "ndcg@10"
    )
    assert status == 0 and err == ""
    rows = tsv_rows(out)
    assert len(rows) == 16 * 3 and {row[2] for row in rows} == {"all"}
    by_run = {}
    for runid, measure, _, value in rows:
        by_run.setdefault(runid, {})[measure] = float(value)
    # runids are exp1..exp16 in the DECAF files
    for n, published in DECAF_PUBLISHED.items():
        ours = by_run[f"exp{n}"]
        # published = trec_eval's 4 decimals, x100, rounded to 1 decimal (twice rounded: 0.40949 -> 41.0)
        for measure, value in zip(("rr", "ndcg@3", "ndcg@10"), published, strict=True):
            assert abs(100 * ours[measure] - value) <= 0.05 + 0.005, (n, measure)


def test_per_topic_lines_then_all_equal_the_library(cast_dir, capsys):
    qrels_path, run_path = (
        cast_dir / "qrels.preference.txt",
        cast_dir / "runs" / "thunlp_bert_base_run_cv.run",
    )
    status, out, _ = run_evaluate(capsys, qrels_path, run_path, "-m", "compat@0.8", "p@5", "--per-topic")
    expected = evaluate_run(
        read_qrels(qrels_path), read_run(run_path), [parse_measure("compat@0.8"), parse_measure("p@5")]
    )
    rows = tsv_rows(out)
    assert status == 0
    lines = []
    for scores in expected:
        lines += [
            (scores.runid, scores.measure, t, repr(float(v)))
            for t, v in zip(scores.topics, scores.values, strict=True)
        ]
        lines.append((scores.runid, scores.measure, "all", repr(scores.mean)))
    assert rows == lines


def test_csv_and_json_formats(tmp_path, capsys):
    (tmp_path / "q").write_text("t Q0 a 1\nt Q0 b 2\n")
    (tmp_path / "r").write_text("t Q0 a 1 2 r\nt Q0 b 2 1 r\n")
    status, out, _ = run_evaluate(capsys, tmp_path / "q", tmp_path / "r", "-m", "rr", "-q", "--format", "csv")
    assert status == 0
    assert list(csv.reader(io.StringIO(out))) == [
        ["runid", "measure", "topic", "value"],
        ["r", "rr", "t", "1.0"],
        ["r", "rr", "all", "1.0"],
    ]
    status, out, _ = run_evaluate(
        capsys, tmp_path / "q", tmp_path / "r", "-m", "p@2", "ap", "--format", "json", "-q"
    )
    assert status == 0
    assert json.loads(out) == [
        {"runid": "r", "measure": "p@2", "mean": 1.0, "topic_count": 1, "topics": {"t": 1.0}},
        {"runid": "r", "measure": "ap", "mean": 1.0, "topic_count": 1, "topics": {"t": 1.0}},
    ]


def test_levels_threshold_and_gains(tmp_path, capsys):
    # preference values 50 > 3 > 1: levels 3, 2, 1; the run puts the best item last
    (tmp_path / "q").write_text("t Q0 a 50\nt Q0 b 3\nt Q0 c 1\n")
    (tmp_path / "r").write_text("t Q0 c 1 3 r\nt Q0 b 2 2 r\nt Q0 a 3 1 r\n")
    q, r = tmp_path / "q", tmp_path / "r"
    # rr with only the top level relevant: 1/3
    assert tsv_rows(run_evaluate(capsys, q, r, "-m", "rr", "--levels", "-l", "3")[1]) == [
        ("r", "rr", "all", repr(1 / 3))
    ]
    # without --levels, -l 3 keeps a (50) and b (3): b at rank 2
    assert tsv_rows(run_evaluate(capsys, q, r, "-m", "rr", "-l", "3")[1]) == [("r", "rr", "all", "0.5")]
    # gains through a level map: only a gains (1), at rank 3: DCG 1/log2(4) = 0.5, IDCG 1
    out = run_evaluate(capsys, q, r, "-m", "ndcg", "--levels", "--gains", "1:0,2:0,3:1")[1]
    assert tsv_rows(out) == [("r", "ndcg", "all", "0.5")]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-m", "nope"], "toppref evaluate: error: unknown measure 'nope'"),
        (["-m", "p@0"], "toppref evaluate: error: measure 'p': the cutoff must be at least 1, got 0"),
        (["-m", "rr", "--gains", "1=2"], "toppref evaluate: error: --gains: '1=2' is not VALUE:GAIN"),
        (["-m", "rr", "--depth", "0"], "toppref evaluate: error: argument --depth: 0 is out of range"),
        (["-m", "rr", "-j", "0"], "toppref evaluate: error: argument -j/--jobs: 0 is out of range"),
        (
            ["-m", "rr", "-l", "nan"],
            "toppref evaluate: error: argument -l/--threshold: 'nan' is not a finite",
        ),
        (["-m", "rr", "--gains", "1:inf"], "toppref evaluate: error: --gains: '1:inf' is not VALUE:GAIN"),
    ],
)
def test_bad_options_exit_2(tmp_path, capsys, argv, message):
    (tmp_path / "q").write_text("t Q0 a 1\n")
    (tmp_path / "r").write_text("t Q0 a 1 1 r\n")
    status, out, err = run_evaluate(capsys, tmp_path / "q", tmp_path / "r", *argv)
    assert status == 2 and out == "" and err.startswith(message)


def test_bad_run_file_exits_1_before_printing_any_run(tmp_path, capsys):
    (tmp_path / "q").write_text("t Q0 a 1\n")
    (tmp_path / "good").write_text("t Q0 a 1 1 g\n")
    (tmp_path / "bad").write_text("t Q0 a 1 one b\n")
    status, out, err = run_evaluate(capsys, tmp_path / "q", tmp_path / "good", tmp_path / "bad", "-m", "rr")
    assert status == 1
    assert out == ""
    assert err == f"toppref evaluate: error: {tmp_path / 'bad'}:1: score 'one' is not a number\n"


def test_parallel_jobs_keep_the_order_of_the_run_arguments(cast_dir, capsys):
    runs = sorted((cast_dir / "runs").glob("decaf0*.run"))
    qrels = cast_dir / "qrels.graded.txt"
    serial = run_evaluate(capsys, qrels, *runs, "-m", "ap", "-j", "1")
    parallel = run_evaluate(capsys, qrels, *runs, "-m", "ap", "-j", "3")
    assert serial == parallel
    assert [row[0] for row in tsv_rows(serial[1])] == [f"exp{n}" for n in range(1, 10)]


THUNLP = [
    "thunlp_bert_base_rule_based",
    "thunlp_bert_base_run_cv",
    "thunlp_bert_base_run_oracle",
    "thunlp_bert_base_run_raw",
    "thunlp_bert_base_run_rule_based_cv",
    "thunlp_bert_base_run_self_learn",
    "thunlp_bert_base_run_self_learn_cv",
]
RENAME_NOTE = "7 runs share runid 'BERT-base': named after their files: " + ", ".join(THUNLP)


def test_runs_sharing_a_runid_are_named_by_file_and_reported_once(cast_dir, capsys):
    # given the seven thunlp CAsT runs, which all say BERT-base, and one decaf run
    runs = [cast_dir / "runs" / f"{name}.run" for name in THUNLP] + [cast_dir / "runs" / "decaf01.run"]
    status, out, err = run_evaluate(capsys, cast_dir / "qrels.graded.txt", *runs, "-m", "ndcg@3")
    # then every row has its own name, and stderr says why in one line
    assert status == 0
    assert [row[0] for row in tsv_rows(out)] == [*THUNLP, "exp1"]
    assert err == f"toppref evaluate: note: {RENAME_NOTE}\n"


def test_the_rename_rule_is_the_same_in_compat_compare_and_plot(cast_dir, tmp_path, capsys):
    runs = [str(cast_dir / "runs" / f"{name}.run") for name in THUNLP]
    qrels = str(cast_dir / "qrels.graded.txt")
    assert main(["compare", qrels, *runs, "-m", "ndcg@3", "--format", "json", "--resamples", "10"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["runs"] == THUNLP
    assert captured.err == f"toppref compare: note: {RENAME_NOTE}\n"
    png = tmp_path / "x.png"
    assert main(["plot", "scatter", qrels, *runs, "-m", "ndcg@3", "ap", "-o", str(png)]) == 0
    assert capsys.readouterr().err == f"toppref plot: note: {RENAME_NOTE}\n"
    # compat scores one run: its runid is kept, nothing to report
    assert main(["compat", qrels, runs[0]]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[1].startswith("BERT-base,") and captured.err == ""


def test_empty_qrels_fail_and_empty_runs_warn(tmp_path, capsys):
    (tmp_path / "q").write_text("t Q0 a 1\n")
    (tmp_path / "empty").write_text("")
    (tmp_path / "r").write_text("t Q0 a 1 1 r\n")
    status, out, err = run_evaluate(capsys, tmp_path / "empty", tmp_path / "r", "-m", "rr")
    assert (status, out) == (1, "")
    assert (
        err
        == f"toppref evaluate: error: {tmp_path / 'empty'}: holds no judgments, so nothing can be scored\n"
    )
    status, out, err = run_evaluate(capsys, tmp_path / "q", tmp_path / "r", tmp_path / "empty", "-m", "rr")
    assert status == 0 and len(tsv_rows(out)) == 2
    assert (
        err == f"toppref evaluate: warning: {tmp_path / 'empty'}: holds no lines: the run retrieves nothing\n"
    )


def test_a_directory_or_a_missing_run_fails_before_anything_is_printed(tmp_path, capsys):
    (tmp_path / "q").write_text("t Q0 a 1\n")
    (tmp_path / "r").write_text("t Q0 a 1 1 r\n")
    status, out, err = run_evaluate(capsys, tmp_path / "q", tmp_path / "r", tmp_path, "-m", "rr")
    assert (status, out, err) == (1, "", f"toppref evaluate: error: {tmp_path}: is a directory, not a file\n")
    status, out, err = run_evaluate(capsys, tmp_path / "q", tmp_path / "r", tmp_path / "nope", "-m", "rr")
    assert (status, out, err) == (1, "", f"toppref evaluate: error: {tmp_path / 'nope'}: no such file\n")


def test_a_run_with_no_judged_topic_is_scored_zero_with_a_warning(tmp_path, capsys):
    (tmp_path / "q").write_text("t Q0 a 1\n")
    (tmp_path / "r").write_text("other Q0 a 1 1 r\n")
    status, out, err = run_evaluate(capsys, tmp_path / "q", tmp_path / "r", "-m", "rr")
    assert (status, tsv_rows(out)) == (0, [("r", "rr", "all", "0.0")])
    assert err == (
        f"toppref evaluate: warning: {tmp_path / 'r'}: no topic scored (none judged with a relevant item in "
        f"{tmp_path / 'q'}): 0.0\n"
    )

"""``toppref compare`` and ``toppref plot`` on the three-system example of measures.md section 6.7."""

import csv
import io
import json

import numpy as np
import pytest
from scipy import stats

from config.cli import main

# measures.md 6.7: relevant items q1 {a,b,c}, q2 {d,e}, q3 {f}; x, y, z judged non-relevant.
QRELS = "".join(
    f"{topic} Q0 {docid} {grade}\n"
    for topic, grades in {
        "q1": {"a": 1, "b": 1, "c": 1, "x": 0, "y": 0, "z": 0},
        "q2": {"d": 1, "e": 1, "x": 0, "y": 0},
        "q3": {"f": 1, "x": 0, "y": 0},
    }.items()
    for docid, grade in grades.items()
)
RANKINGS = {
    "S1": {"q1": "axbyc", "q2": "xde", "q3": "f"},
    "S2": {"q1": "xabc", "q2": "dxye", "q3": "xf"},
    "S3": {"q1": "abxyz", "q2": "de", "q3": "xyf"},
}


@pytest.fixture
def files(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(QRELS)
    runs = []
    for runid, topics in RANKINGS.items():
        path = tmp_path / f"{runid}.run"
        path.write_text(
            "".join(
                f"{topic} Q0 {docid} {rank} {10 - rank} {runid}\n"
                for topic, ranking in topics.items()
                for rank, docid in enumerate(ranking, start=1)
            )
        )
        runs.append(str(path))
    return str(qrels), runs


def _lines(output, kind):
    return [line.split("\t")[1:] for line in output.splitlines() if line.startswith(kind + "\t")]


def test_compare_tsv_gives_the_worked_example(files, capsys):
    qrels, runs = files
    # when
    status = main(["compare", qrels, *runs, "-m", "rr", "rpp_binary", "sgnlp"])
    output = capsys.readouterr().out
    # then the mean pairwise RPP of measures.md 6.7, and its per-topic t-test from scipy
    assert status == 0
    pairs = {(m, a, b): (value, p) for m, a, b, value, p in _lines(output, "pair")}
    assert [pairs["rpp_binary", "S1", s][0] for s in ("S2", "S3")] == ["0.3333", "0.0000"]
    assert pairs["rpp_binary", "S2", "S3"][0] == "0.0556"
    assert float(pairs["rpp_binary", "S1", "S2"][1]) == pytest.approx(
        stats.ttest_1samp([0, 0, 1], 0).pvalue, rel=1e-5
    )
    # sgnLP of S1 over S2 is +1, -1, +1 on q1, q2, q3 (first differing recall level); sign test p = 1
    assert pairs["sgnlp", "S1", "S2"] == ("0.3333", "1")
    # RR means: S1 (1 + 1/2 + 1)/3, S2 (1/2 + 1 + 1/2)/3, S3 (1 + 1 + 1/3)/3
    means = {(m, run): (float(mean), int(rank)) for m, run, mean, _, _, rank in _lines(output, "run")}
    assert [means["rr", r] for r in ("S1", "S2", "S3")] == [(0.8333, 1), (0.6667, 3), (0.7778, 2)]
    assert _lines(output, "sensitivity")[0] == ["rr", "t", "3", "3", "0", "0.0000"]
    assert {tuple(line[:2]) for line in _lines(output, "tau")} == {
        ("rr", "rpp_binary"),
        ("rr", "sgnlp"),
        ("rpp_binary", "sgnlp"),
    }


def test_compare_json(files, capsys):
    qrels, runs = files
    assert main(["compare", qrels, *runs, "-m", "rr", "p@1", "--format", "json", "--resamples", "200"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runs"] == ["S1", "S2", "S3"]
    assert report["kendall_tau"]["rr"]["rr"] == pytest.approx(1.0)
    # P@1: S1 1,0,1; S2 0,1,0; S3 1,1,0
    assert [run["mean"] for run in report["measures"]["p@1"]["runs"]] == pytest.approx([2 / 3, 1 / 3, 2 / 3])
    interval = report["measures"]["p@1"]["runs"][1]
    assert interval["ci_low"] <= interval["mean"] <= interval["ci_high"]
    assert len(report["measures"]["rr"]["pairs"]) == 3


def test_compare_errors(files, tmp_path, capsys):
    qrels, runs = files
    assert main(["compare", qrels, *runs, "-m", "nope"]) == 2
    assert "unknown measure 'nope'" in capsys.readouterr().err
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 a 1 1.0 bad\nq1 Q0 b 2\n")
    assert main(["compare", qrels, runs[0], str(bad), "-m", "rr"]) == 1
    assert f"{bad}:2:" in capsys.readouterr().err


def test_runs_sharing_a_runid_are_named_by_file(files, tmp_path, capsys):
    qrels, runs = files
    copy = tmp_path / "copy-of-s1.run"
    copy.write_text(open(runs[0]).read())
    assert main(["compare", qrels, runs[0], str(copy), "-m", "rr", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["runs"] == ["S1", "copy-of-s1"]
    assert (
        captured.err
        == "toppref compare: note: 2 runs share runid 'S1': named after their files: S1, copy-of-s1\n"
    )


def test_compare_help_documents_the_output(capsys):
    assert main(["compare", "--help"]) == 0
    text = capsys.readouterr().out
    assert "sensitivity MEASURE TEST TOPICS PAIRS DISTINGUISHED SHARE" in text and "sgnlp" in text


@pytest.mark.parametrize(("kind", "measures"), [("scatter", ["rr", "p@1"]), ("ci", ["rpp"])])
def test_plot_writes_a_png(files, tmp_path, capsys, kind, measures):
    qrels, runs = files
    output = tmp_path / f"{kind}.png"
    assert main(["plot", kind, qrels, *runs, "-m", *measures, "-o", str(output), "--resamples", "100"]) == 0
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_needs_the_right_number_of_measures(files, tmp_path, capsys):
    qrels, runs = files
    assert main(["plot", "scatter", qrels, *runs, "-m", "rr", "-o", str(tmp_path / "x.png")]) == 2
    assert "exactly 2 measure" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_compare_simulates_assessor_error(files, capsys):
    qrels, runs = files
    # given a perfect judge: every perturbed qrels equals the original, so nothing can change
    assert (
        main(
            [
                "compare",
                qrels,
                *runs,
                "-m",
                "rr",
                "rpp",
                "--judges",
                "random",
                "rank_biased",
                "--tpr",
                "1",
                "--fpr",
                "0",
                "--sets",
                "3",
                "--resamples",
                "50",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    rows = _lines(captured.out, "stability")
    assert [row[:8] for row in rows] == [
        ["rr", "random", "1.0000", "0.0000", "3", "1.0000", "0.0000", "0"],
        ["rr", "rank_biased", "1.0000", "0.0000", "3", "1.0000", "0.0000", "0"],
    ]
    assert "no assessor-error simulation for rpp" in captured.err


def test_compare_rejects_bad_judge_rates(files, capsys):
    qrels, runs = files
    assert main(["compare", qrels, *runs, "-m", "rr", "--judges", "random", "--fpr", "1.5"]) == 2
    assert "--fpr must lie in [0, 1]" in capsys.readouterr().err


def test_compare_orders_run_versus_run_measures_by_mc4(files, capsys):
    # measures.md 6.7: mean pairwise RPP orders S1, S3, S2 but MC4 orders S3, S1, S2; RR orders S1, S3, S2
    qrels, runs = files
    taus = {}
    for ordering in ("win-rate", "mc4"):
        assert (
            main(
                [
                    "compare",
                    qrels,
                    *runs,
                    "-m",
                    "rr",
                    "rpp_binary",
                    "--ordering",
                    ordering,
                    "--format",
                    "json",
                    "--resamples",
                    "50",
                ]
            )
            == 0
        )
        taus[ordering] = json.loads(capsys.readouterr().out)["kendall_tau"]["rr"]["rpp_binary"]
    assert taus["win-rate"] == pytest.approx(1.0)
    assert taus["mc4"] == pytest.approx(stats.kendalltau([3, 1, 2], [2, 1, 3]).statistic)


def test_compare_one_run_reports_undefined_values_as_null(files, capsys):
    qrels, runs = files
    assert (
        main(["compare", qrels, runs[0], "-m", "rr", "sgnlp", "--format", "json", "--resamples", "50"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["measures"]["rr"]["sensitivity"] is None and report["measures"]["rr"]["pairs"] == []
    assert report["kendall_tau"]["rr"]["sgnlp"] is None
    assert main(["compare", qrels, runs[0], "-m", "rr", "--resamples", "50"]) == 0
    assert _lines(capsys.readouterr().out, "sensitivity") == [["rr", "t", "3", "0", "0", "nan"]]


def test_compare_with_randomized_hsd(files, capsys):
    qrels, runs = files
    assert (
        main(
            [
                "compare",
                qrels,
                *runs,
                "-m",
                "rr",
                "rpp_binary",
                "--hsd",
                "--resamples",
                "200",
                "--correction",
                "bonferroni",
                "--format",
                "json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["correction"] == "none"
    for name in ("rr", "rpp_binary"):
        measure = report["measures"][name]
        assert measure["test"] == "hsd"
        # a permutation p-value counts resamples: a multiple of 1/200
        assert all(0 <= pair["p_value"] <= 1 for pair in measure["pairs"])
        assert all(
            abs(pair["p_value"] * 200 - round(pair["p_value"] * 200)) < 1e-9 for pair in measure["pairs"]
        )


@pytest.mark.parametrize("alpha", ["0", "1", "-0.1"])
def test_compare_rejects_an_alpha_outside_0_1(files, capsys, alpha):
    qrels, runs = files
    assert main(["compare", qrels, *runs, "-m", "rr", "--alpha", alpha]) == 2
    captured = capsys.readouterr()
    assert (
        captured.out == ""
        and captured.err == f"toppref compare: error: --alpha must be in (0, 1), got {float(alpha)}\n"
    )


def test_plot_ci_without_a_common_topic_is_an_error_and_writes_nothing(files, tmp_path, capsys):
    # given two runs that share no judged topic, so no topic is scored for every run
    qrels, _ = files
    only_q1, only_q2 = tmp_path / "a.run", tmp_path / "b.run"
    only_q1.write_text("q1 Q0 a 1 1 A\n")
    only_q2.write_text("q2 Q0 d 1 1 B\n")
    output = tmp_path / "ci.png"
    assert main(["plot", "ci", qrels, str(only_q1), str(only_q2), "-m", "rr", "-o", str(output)]) == 1
    assert capsys.readouterr().err == "toppref plot: error: no topic is scored for every run under rr\n"
    assert not output.exists()


@pytest.mark.parametrize(("format", "delimiter"), [("tsv", "\t"), ("csv", ",")])
def test_compare_tables_name_their_columns(files, capsys, format, delimiter):
    qrels, runs = files
    assert main(["compare", qrels, *runs, "-m", "rr", "p@1", "--format", format, "--resamples", "50"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out), delimiter=delimiter))
    headers = {row[0][1:]: row[1:] for row in rows if row[0].startswith("#")}
    assert headers == {
        "sensitivity": ["measure", "test", "topics", "pairs", "distinguished", "share"],
        "tau": ["measure_a", "measure_b", "tau"],
        "pair": ["measure", "run_a", "run_b", "value", "p_value"],
        "run": ["measure", "runid", "mean", "ci_low", "ci_high", "rank"],
    }
    # each header comes right before the first line of its type, and every line has its header's width
    for index, row in enumerate(rows):
        if row[0].startswith("#"):
            assert rows[index + 1][0] == row[0][1:]
        else:
            assert len(row) == len(headers[row[0]]) + 1
    runs_rows = {(r[1], r[2]): r[3:] for r in rows if r[0] == "run"}
    assert runs_rows["rr", "S1"][0] == "0.8333" and runs_rows["rr", "S1"][3] == "1"


def test_plot_checks_its_output_before_reading_anything(tmp_path, capsys):
    png = tmp_path / "missing" / "x.png"
    status = main(
        ["plot", "ci", str(tmp_path / "no-qrels"), str(tmp_path / "no-run"), "-m", "rr", "-o", str(png)]
    )
    assert status == 2
    assert capsys.readouterr().err == f"toppref plot: error: {png}: directory '{png.parent}' does not exist\n"


def test_compare_and_plot_refuse_a_negative_seed(files, tmp_path, capsys):
    qrels, runs = files
    assert main(["compare", qrels, *runs, "-m", "rr", "--seed", "-1"]) == 2
    assert capsys.readouterr().err.startswith("toppref compare: error: argument --seed: -1 is out of range")
    assert main(["plot", "ci", qrels, *runs, "-m", "rr", "--seed", "-1", "-o", str(tmp_path / "x.png")]) == 2
    assert capsys.readouterr().err.startswith("toppref plot: error: argument --seed: -1 is out of range")


def test_scatter_labels_do_not_overlap_with_many_close_runs():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    from metrics.plot_labels import label_points as _label_points

    # given 23 runs crowded along a line, as the CAsT runs are under two correlated measures
    rng = np.random.default_rng(3)
    xs = np.sort(rng.uniform(0.2, 0.3, 23))
    ys = xs + rng.normal(0, 0.002, 23)
    names = [f"run_{index:02d}_name" for index in range(23)]
    figure, axes = pyplot.subplots(figsize=(7.5, 6.0))
    axes.scatter(xs, ys)
    _label_points(figure, axes, xs, ys, names)
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    labels = [text for text in axes.texts if text.get_text()]
    boxes = [text.get_window_extent(renderer) for text in labels]
    pyplot.close(figure)
    # then every point has its label and no two labels overlap
    assert [text.get_text() for text in labels] == names
    overlapping = [(a, b) for a in range(23) for b in range(a + 1, 23) if boxes[a].overlaps(boxes[b])]
    assert overlapping == []

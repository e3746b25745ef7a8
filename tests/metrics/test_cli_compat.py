"""``toppref compat``: a drop-in replacement for the reference compatibility.py (metrics/cli/compat.py)."""

import pytest

from config.cli import main
from tests.metrics.core import compat_oracle


def run_compat(capsys, *argv):
    status = main(["compat", *map(str, argv)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def parse_csv(out):
    lines = out.splitlines()
    assert lines[0] == "runid,topic,compatibility"
    rows = [line.split(",") for line in lines[1:]]
    # every value is printed as Python's full float repr
    assert all(repr(float(value)) == value for _, _, value in rows)
    return [(runid, topic, float(value)) for runid, topic, value in rows]


@pytest.mark.parametrize("run_name", ["decaf07.run", "thunlp_bert_base_run_raw.run"])
@pytest.mark.parametrize("p", [None, 0.8])
def test_compat_prints_the_reference_csv(cast_dir, capsys, run_name, p):
    qrels_path, run_path = cast_dir / "qrels.preference.txt", cast_dir / "runs" / run_name
    # when run like the reference script
    args = ([] if p is None else ["-p", p]) + [qrels_path, run_path]
    status, out, err = run_compat(capsys, *args)
    # then the CSV has the reference's rows, in its order, to 1e-9
    expected = compat_oracle.compatibility_rows(qrels_path, run_path, p=0.95 if p is None else p)
    rows = parse_csv(out)
    assert (status, err) == (0, "")
    assert [row[:2] for row in rows] == [row[:2] for row in expected]
    assert rows[-1][1] == "average"
    assert max(abs(a[2] - e[2]) for a, e in zip(rows, expected, strict=True)) <= 1e-9


@pytest.mark.parametrize("p", ["0.0099", "0.995", "1", "-0.5"])
def test_p_outside_the_reference_range_exits_2(cast_dir, capsys, p):
    status, out, err = run_compat(
        capsys, "-p", p, cast_dir / "qrels.graded.txt", cast_dir / "runs" / "decaf01.run"
    )
    assert status == 2 and out == ""
    assert err == f"toppref compat: error: -p must be in [0.01, 0.99], got {float(p)}\n"


@pytest.mark.parametrize("p", ["0.01", "0.99"])
def test_p_at_the_range_ends_is_accepted(tmp_path, capsys, p):
    (tmp_path / "q").write_text("t Q0 a 1\n")
    (tmp_path / "r").write_text("t Q0 a 1 1 r\n")
    status, out, _ = run_compat(capsys, "-p", p, tmp_path / "q", tmp_path / "r")
    assert status == 0 and out == "runid,topic,compatibility\nr,t,1.0\nr,average,1.0\n"


def test_bad_run_line_exits_1_with_file_and_line(tmp_path, capsys):
    (tmp_path / "q").write_text("t Q0 a 1\n")
    (tmp_path / "r").write_text("t Q0 a 1 1 r\nt Q0 b 2 r\n")
    status, out, err = run_compat(capsys, tmp_path / "q", tmp_path / "r")
    assert status == 1 and out == ""
    assert err == (
        f"toppref compat: error: {tmp_path / 'r'}:2: expected 6 fields (topic q0 docid rank score runid) "
        "in a run line, found 5\n"
    )


def test_missing_qrels_file_exits_1(tmp_path, capsys):
    (tmp_path / "r").write_text("t Q0 a 1 1 r\n")
    status, out, err = run_compat(capsys, tmp_path / "absent", tmp_path / "r")
    assert (
        status == 1 and out == "" and err == f"toppref compat: error: {tmp_path / 'absent'}: no such file\n"
    )


def test_no_common_topic_prints_average_zero(tmp_path, capsys):
    (tmp_path / "q").write_text("t1 Q0 a 1\n")
    (tmp_path / "r").write_text("t2 Q0 a 1 1 myrun\n")
    status, out, _ = run_compat(capsys, tmp_path / "q", tmp_path / "r")
    assert status == 0 and out == "runid,topic,compatibility\nmyrun,average,0.0\n"


def test_options_depth_normalisation_and_missing_topics(tmp_path, capsys):
    # given a topic with one relevant item at rank 2, and a judged topic the run lacks
    (tmp_path / "q").write_text("t Q0 s 1\nu Q0 s 1\n")
    (tmp_path / "r").write_text("t Q0 x 1 2 r\nt Q0 s 2 1 r\n")
    # depth 1 sees nothing; plain RBO at p=0.5, depth 2: (0.5 * 1/2) / (1 + 0.5)
    assert run_compat(capsys, "--depth", "1", tmp_path / "q", tmp_path / "r")[1].splitlines()[1] == "r,t,0.0"
    plain = run_compat(capsys, "-p", "0.5", "--depth", "2", "--no-normalize", tmp_path / "q", tmp_path / "r")[
        1
    ]
    assert parse_csv(plain)[0][2] == pytest.approx(0.25 / 1.5, abs=1e-15)
    # the zero policy adds u with 0 and averages over both topics
    zero = parse_csv(run_compat(capsys, "--missing-topics", "zero", tmp_path / "q", tmp_path / "r")[1])
    assert [row[1] for row in zero] == ["t", "u", "average"]
    assert zero[1][2] == 0.0 and zero[2][2] == pytest.approx(zero[0][2] / 2, abs=1e-15)

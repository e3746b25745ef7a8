"""`toppref thin`: the contract users' scripts rely on (stdout qrels lines, stderr summary, exit status)."""

from collections import Counter

from config.cli import main


def test_thin_cast_k5_prints_the_papers_candidate_pool(cast_dir, capsys):
    status = main(["thin", "-k", "5", str(cast_dir / "qrels.graded.txt")])
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert status == 0
    assert len(lines) == 2673
    per_topic = Counter(line.split()[0] for line in lines)
    assert len(per_topic) == 173
    assert per_topic["67_8"] == 112
    # paper 000 section 4.1: 8,120 of the 29,350 judged passages have a positive grade
    assert (
        err
        == "thin -k 5: 173 topics, 2673 candidates, largest pool 112 (topic 67_8); 8120 of 29350 judgments positive\n"
    )


def test_thin_output_is_sorted_and_keeps_integral_grades_integral(tmp_path, capsys):
    # given topics whose plain string order differs from natural order, and a float grade
    qrels = tmp_path / "q.txt"
    qrels.write_text(
        "31_2 Q0 b 3\n31_10 Q0 z 1\n31_2 Q0 a 3\n31_2 Q0 c 4\n31_10 Q0 y 2.5\n31_2 Q0 d 0\n9 Q0 x 0\n"
    )
    status = main(["thin", "-k", "2", str(qrels)])
    out, err = capsys.readouterr()
    assert status == 0
    assert out == "31_10 Q0 y 2.5\n31_10 Q0 z 1\n31_2 Q0 c 4\n31_2 Q0 a 3\n31_2 Q0 b 3\n"
    assert (
        err == "thin -k 2: 2 topics, 5 candidates, largest pool 3 (topic 31_2); 5 of 7 judgments positive; "
        "1 topic without a positive grade left out\n"
    )


def test_thin_abc_scheme(tmp_path, capsys):
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 Q0 a 4\n1 Q0 b 2\n1 Q0 c 1\n")
    assert main(["thin", "-k", "1", "--scheme", "abc", str(qrels)]) == 0
    assert capsys.readouterr().out == "1 Q0 a 4\n1 Q0 b 2\n"
    assert main(["thin", "-k", "1", "--scheme", "abc", "--answer-grade", "3", str(qrels)]) == 0
    assert capsys.readouterr().out == "1 Q0 a 4\n"


def test_thin_malformed_qrels_exits_nonzero_with_file_line_problem(tmp_path, capsys):
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 Q0 a 4\n1 Q0 b\n")
    status = main(["thin", "-k", "5", str(qrels)])
    out, err = capsys.readouterr()
    assert status == 1
    assert out == ""
    assert err == f"toppref thin: error: {qrels}:2: expected 4 columns 'topic Q0 docid grade', found 3\n"


def test_thin_missing_file_and_bad_k(tmp_path, capsys):
    assert main(["thin", "-k", "5", str(tmp_path / "absent.txt")]) == 1
    assert capsys.readouterr().err == f"toppref thin: error: {tmp_path / 'absent.txt'}: no such file\n"
    assert main(["thin", "-k", "5", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"toppref thin: error: {tmp_path}: is a directory, not a file\n"
    assert main(["thin", "-k", "0", str(tmp_path / "absent.txt")]) == 2
    assert capsys.readouterr().err.startswith(
        "toppref thin: error: argument -k: 0 is out of range: must be at least 1"
    )

"""``toppref agreement``: two judgment logs in any of the three forms, agreement and Cohen's kappa computed by
hand on toy logs, repeated votes and ties, grade gaps, the shipped DL 2021 and CAsT logs, and bad input."""

import json
import math

import pytest

from config.cli import main
from judging.engine.judge_agreement import FIRST, SECOND, TIE, log_agreement, vote_agreement
from judging.engine.judgment_log import Vote, read_votes
from tests.config.test_cli import _modules_after
from tests.conftest import SHARED_DATA_DIR

DL21 = SHARED_DATA_DIR / "trecdl" / "dl21"

# Log A ("topic a b winner"): the pair (b, c) twice, with different winners; (d, e) only in A.
LOG_A = "t a b a\nt a c c\nt b c b\nt b c c\nt d e d\nt x y x\n"
# Log B ("topic a b !|=|?"): (b, a) written the other way round; (a, c) a tie; (d, e) no answer; (p, q) only in B.
LOG_B = "t b a !\nt a c =\n\nt b c !\nt d e ?\nt x y !\nt p q !\n"
GRADES = "t Q0 a 2\nt Q0 b 1\nt Q0 c 1\nt Q0 d 0\n"


def _agreement(capsys, *arguments):
    status = main(["agreement", *map(str, arguments)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_toy_logs_agreement_and_kappa_by_hand(tmp_path, capsys):
    # Given the toy logs, the shared pairs are (a,b), (a,c), (b,c), (x,y) (labels: first = smaller docid wins):
    #   (a,b): A first, B second            -> table[F][S] += 1
    #   (a,c): A second, B tie               -> table[S][T] += 1
    #   (b,c): A [first, second], B [first]  -> table[F][F] += 1/2, table[S][F] += 1/2
    #   (x,y): A first, B first              -> table[F][F] += 1
    # p_o = 1.5/4 = 0.375; A's shares F 0.625, S 0.375; B's F 0.5, S 0.25, T 0.25;
    # p_e = 0.625*0.5 + 0.375*0.25 = 0.40625; kappa = (0.375 - 0.40625) / 0.59375 = -1/19.
    # Both decisive: weight 3 (all but the tie), agreeing 1.5 -> 0.5.
    status, out, err = _agreement(capsys, _write(tmp_path, "a.txt", LOG_A), _write(tmp_path, "b.txt", LOG_B))
    assert status == 0 and err == ""
    report = json.loads(out)
    assert (report["form_a"], report["form_b"], report["skipped_a"], report["skipped_b"]) == (
        "winner",
        "outcome",
        0,
        1,
    )
    assert (report["pairs"], report["votes_a"], report["votes_b"]) == (4, 5, 4)
    assert (report["ties_a"], report["ties_b"]) == (0, 1)
    assert report["agreement"] == 0.375 and report["agreement_decisive"] == 0.5
    assert report["kappa"] == round(-1 / 19, 6)
    assert "by_grade_gap" not in report


def test_by_grade_gap_splits_the_shared_pairs(tmp_path, capsys):
    # Given grades a 2, b 1, c 1 (x, y ungraded): gap 0 holds (b,c), gap 1 (a,b) and (a,c), unjudged (x,y).
    # Gap 1: table[F][S] 1, table[S][T] 1 -> p_o 0; A's shares F .5, S .5; B's S .5, T .5 -> p_e .25,
    # kappa -1/3. The higher grade is a (first) in both pairs: A follows it once of two, B's one decisive vote
    # (on (a,b)) does not; B's tie on (a,c) is no decisive vote.
    a, b = _write(tmp_path, "a.txt", LOG_A), _write(tmp_path, "b.txt", LOG_B)
    status, out, _ = _agreement(capsys, a, b, "--qrels", _write(tmp_path, "q.txt", GRADES))
    assert status == 0
    gaps = json.loads(out)["by_grade_gap"]
    assert list(gaps) == ["0", "1", "unjudged"]
    assert gaps["0"] == {
        "pairs": 1,
        "votes_a": 2,
        "votes_b": 1,
        "agreement": 0.5,
        "agreement_decisive": 0.5,
        "kappa": 0.0,
        "ties_a": 0,
        "ties_b": 0,
    }
    assert gaps["1"]["pairs"] == 2 and gaps["1"]["agreement"] == 0.0
    assert gaps["1"]["kappa"] == round(-1 / 3, 6)
    assert (gaps["1"]["a_follows_grades"], gaps["1"]["b_follows_grades"]) == (0.5, 0.0)
    assert gaps["unjudged"]["pairs"] == 1 and gaps["unjudged"]["agreement"] == 1.0


def test_kappa_of_a_textbook_table():
    # Given ten pairs with one vote each in the table (rows A, columns B: first, second, tie)
    #   4 1 0 / 0 3 1 / 0 0 1, then p_o = 0.8, p_e = .5*.4 + .4*.4 + .1*.2 = .38, kappa = .42/.62.
    cells = [(FIRST, FIRST)] * 4 + [(FIRST, SECOND), (SECOND, TIE), (TIE, TIE)] + [(SECOND, SECOND)] * 3
    labels_a = {("t", f"d{i}", f"e{i}"): [a] for i, (a, _) in enumerate(cells)}
    labels_b = {("t", f"d{i}", f"e{i}"): [b] for i, (_, b) in enumerate(cells)}
    result = vote_agreement(labels_a, labels_b)
    assert result.pairs == 10 and result.agreement == pytest.approx(0.8)
    assert result.kappa == pytest.approx(0.42 / 0.62)
    assert (result.ties_a, result.ties_b) == (1, 2)


def test_repeating_one_answer_on_every_line_weighs_as_writing_it_once():
    once = [Vote("t", "a", "b", "a"), Vote("t", "c", "d", None)]
    repeated = once * 3
    people = [Vote("t", "a", "b", "a"), Vote("t", "a", "b", "b"), Vote("t", "d", "c", "c")]
    first, second = log_agreement(once, people), log_agreement(repeated, people)
    assert first["agreement"] == second["agreement"] == 0.25
    assert first["kappa"] == second["kappa"]
    assert (first["votes_a"], second["votes_a"]) == (2, 6)


def test_kappa_is_undefined_when_both_logs_give_one_label_only():
    votes = [Vote("t", "a", "b", "a"), Vote("t", "a", "c", "a")]
    report = log_agreement(votes, votes)
    assert report["agreement"] == 1.0 and report["kappa"] is None


def test_no_shared_pair_is_a_warning_and_null_figures(tmp_path, capsys):
    a = _write(tmp_path, "a.txt", "t a b a\n")
    b = _write(tmp_path, "b.txt", "t a c c\n")
    status, out, err = _agreement(capsys, a, b)
    assert status == 0
    report = json.loads(out)
    assert (report["pairs"], report["agreement"], report["kappa"]) == (0, None, None)
    assert err == f"toppref agreement: warning: no pair of {a} is in {b}: nothing to compare\n"


def test_the_judgments_export_counts_only_the_counted_answers(tmp_path):
    # Given toppref's judgments export with a challenge and a voided answer (is_counted 0) and a docid the
    # export quoted for spreadsheets, then only the counted answers are votes and the docid reads back.
    header = "topic,left,right,winner,winner_side,round,stage,hit,worker,is_challenge,is_counted,milliseconds"
    rows = [
        "t,a,b,b,right,1,1,1,w1,0,1,900",
        "t,'-z,a,'-z,left,1,1,1,w1,1,0,800",
        "t,c,a,a,right,1,1,2,w2,0,0,700",
        "t,b,c,b,left,1,1,2,w2,0,1,600",
    ]
    log = read_votes(_write(tmp_path, "j.csv", "\n".join([header, *rows]) + "\n"))
    assert log.form == "export" and log.skipped == 2
    assert log.votes == [Vote("t", "a", "b", "b"), Vote("t", "b", "c", "b")]
    quoted = read_votes(_write(tmp_path, "k.csv", f"{header}\n{rows[1].replace(',1,0,', ',0,1,')}\n"))
    assert quoted.votes == [Vote("t", "-z", "a", "-z")]


def test_the_export_against_the_paper_log_form(tmp_path, capsys):
    # a blank line before the header, as an editor may leave
    export = _write(tmp_path, "j.csv", "\ntopic,left,right,winner,is_counted\nt,a,b,b,1\nt,c,a,c,1\n")
    paper = _write(tmp_path, "p.txt", "t b a b\nt a c a\n")
    status, out, _ = _agreement(capsys, export, paper)
    report = json.loads(out)
    assert status == 0 and report["form_a"] == "export"
    assert (report["pairs"], report["agreement"]) == (2, 0.5)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("t a b a\nt a b z\n", "2: winner z is neither a nor b nor one of ! = ?"),
        (
            "t a b a\nt a b\n",
            "2: expected 4 fields 'topic docidA docidB winner' or 'topic docidA docidB !|=|?', got 3",
        ),
        ("\nt a a a\n", "2: item a is paired with itself"),
        ("topic,left,winner\nt,a,a\n", "1: the header lacks the column 'right'"),
        ("topic,left,right,winner\nt,a,b,c\n", "2: winner 'c' is neither a nor b"),
        ("topic,left,right,winner,is_counted\nt,a,b,a,1\nt,a,b,a\n", "3: expected 5 cells, got 4"),
        ("topic,left,right,winner,is_counted\nt,a,b,a,yes\n", "2: is_counted 'yes' is neither 0 nor 1"),
    ],
)
def test_a_malformed_log_is_one_line_naming_file_and_line(tmp_path, capsys, text, problem):
    good = _write(tmp_path, "good.txt", "t a b a\n")
    bad = _write(tmp_path, "bad.txt", text)
    status, out, err = _agreement(capsys, good, bad)
    assert (status, out) == (1, "")
    assert err == f"toppref agreement: error: {bad}:{problem}\n"


def test_missing_log_and_malformed_qrels_are_one_line(tmp_path, capsys):
    good = _write(tmp_path, "good.txt", "t a b a\n")
    status, out, err = _agreement(capsys, good, tmp_path / "none.txt")
    assert (status, out, err) == (1, "", f"toppref agreement: error: {tmp_path / 'none.txt'}: no such file\n")
    qrels = _write(tmp_path, "q.txt", "t Q0 a\n")
    status, out, err = _agreement(capsys, good, good, "--qrels", qrels)
    assert (status, out) == (1, "")
    assert err.startswith(f"toppref agreement: error: {qrels}:1: ") and err.count("\n") == 1


def test_dl21_people_against_gpt4o_on_their_pairs(capsys):
    # Given the DL 2021 human votes and GPT-4o's position-swapped answers on the same pairs, then the shared
    # pairs are the 6,742 where GPT-4o had both passages (the 2,265 '?' lines are no vote), 93% of them of one
    # NIST grade, and GPT-4o's decisive answers agree with a human vote more often than chance (kappa > 0).
    status, out, _ = _agreement(
        capsys,
        DL21 / "judgments.human.txt",
        DL21 / "judgments.gpt4o-on-human-pairs.txt",
        "--qrels",
        DL21 / "qrels.graded.txt",
    )
    report = json.loads(out)
    assert status == 0
    assert (report["pairs"], report["skipped_b"], report["ties_a"]) == (6742, 2265, 0)
    assert report["by_grade_gap"]["0"]["pairs"] / report["pairs"] == pytest.approx(0.944, abs=0.001)
    assert 0.6 < report["agreement_decisive"] < 0.65 and 0 < report["kappa"] < 0.3
    # The model prefers the higher-graded passage more often than a human vote does.
    gap1 = report["by_grade_gap"]["1"]
    assert gap1["b_follows_grades"] > gap1["a_follows_grades"] > 0.5


def test_a_log_agrees_with_itself_only_as_far_as_its_repeated_votes_do(capsys):
    # The CAsT crowd log against itself: pairs judged once agree fully; a pair with split votes does not.
    crowd = SHARED_DATA_DIR / "cast2019" / "judgments.crowd.txt"
    status, out, _ = _agreement(capsys, crowd, crowd)
    report = json.loads(out)
    assert status == 0 and report["votes_a"] == 14573
    assert 0.5 < report["agreement"] < 1.0 and not math.isnan(report["kappa"])


def test_agreement_imports_neither_django_nor_the_metrics_app(tmp_path):
    log = _write(tmp_path, "a.txt", "t a b a\n")
    modules = _modules_after(["agreement", str(log), str(log)])
    assert not modules & {"django", "celery", "kombu", "rest_framework", "metrics"}


def test_a_byte_order_mark_is_read_past_in_both_forms(tmp_path):
    export = tmp_path / "j.csv"
    export.write_bytes(b"\xef\xbb\xbftopic,left,right,winner\nt,a,b,a\n")
    lines = tmp_path / "j.txt"
    lines.write_bytes(b"\xef\xbb\xbft a b a\n")
    assert read_votes(export).votes == read_votes(lines).votes == [Vote("t", "a", "b", "a")]

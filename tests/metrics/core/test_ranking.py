"""Run ordering and alignment with the qrels (metrics/core/ranking.py)."""

import numpy as np

from metrics.core.ranking import DOCID_ASCENDING, DOCID_DESCENDING, NOT_RETRIEVED, align, rank_run
from metrics.core.readers import Qrels, Run


def test_reference_order_is_score_descending_then_docid_ascending():
    run = Run.from_records([("t", "b", 1.0), ("t", "c", 2.0), ("t", "a", 1.0), ("t", "B", 1.0)])
    ranked = rank_run(run, ties=DOCID_ASCENDING, duplicates="keep")
    # code-point order puts "B" before "a"
    assert ranked.ranking("t") == ["c", "B", "a", "b"]


def test_trec_eval_order_is_score_descending_then_docid_descending():
    run = Run.from_records([("t", "b", 1.0), ("t", "c", 2.0), ("t", "a", 1.0)])
    ranked = rank_run(run, ties=DOCID_DESCENDING, duplicates="collapse")
    assert ranked.ranking("t") == ["c", "b", "a"]


def test_negative_scores_rank_below_positive_and_zero():
    run = Run.from_records([("t", "neg", -0.5), ("t", "zero", 0.0), ("t", "pos", 3.0), ("t", "low", -7.0)])
    assert rank_run(run, ties=DOCID_ASCENDING, duplicates="keep").ranking("t") == ["pos", "zero", "neg", "low"]


def test_duplicate_docid_keeps_both_lines_with_the_last_score():
    # given d1 at score 9 and later again at score 1 (the reference's score dict keeps 1 for both lines)
    run = Run.from_records([("t", "d1", 9.0), ("t", "d2", 5.0), ("t", "d1", 1.0)])
    # when ordered by the reference rule
    ranked = rank_run(run, ties=DOCID_ASCENDING, duplicates="keep")
    # then both copies sort together at score 1
    assert ranked.ranking("t") == ["d2", "d1", "d1"]


def test_duplicate_docid_collapses_to_the_last_score_for_trec_eval():
    run = Run.from_records([("t", "d1", 9.0), ("t", "d2", 5.0), ("t", "d1", 1.0)])
    assert rank_run(run, ties=DOCID_DESCENDING, duplicates="collapse").ranking("t") == ["d2", "d1"]


def test_topics_keep_order_of_first_appearance():
    run = Run.from_records([("t2", "a", 1), ("t1", "a", 1), ("t2", "b", 2)])
    ranked = rank_run(run, ties=DOCID_ASCENDING, duplicates="keep")
    assert list(ranked.topics) == ["t2", "t1"]
    assert ranked.offsets.tolist() == [0, 2, 3]
    assert ranked.ranking("t2") == ["b", "a"] and ranked.ranking("absent") == []


def test_align_gives_first_positions_and_missing_topics_last():
    # given qrels for t1 (run has it), t3 (run lacks it), and a run with an unjudged topic t2
    qrels = Qrels.from_records([("t3", "x", 1), ("t1", "a", 2), ("t1", "z", 1), ("t1", "b", 0)])
    run = Run.from_records([("t2", "q", 1), ("t1", "b", 3), ("t1", "a", 2), ("t1", "b", 3)])
    # when aligned with the reference ordering (duplicates kept)
    alignment = align(qrels, rank_run(run, ties=DOCID_ASCENDING, duplicates="keep"))
    # then judged topics in the run come first, then judged topics missing from it
    assert alignment.topics == ["t1", "t3"]
    assert alignment.is_in_run.tolist() == [True, False]
    assert alignment.run_length.tolist() == [3, 0]
    # rows grouped by topic, qrels order inside; b's first copy is at position 0, a after both b's
    assert alignment.judged_topic.tolist() == [0, 0, 0, 1]
    assert alignment.value.tolist() == [2.0, 1.0, 0.0, 1.0]
    assert alignment.position.tolist() == [2, NOT_RETRIEVED, 0, NOT_RETRIEVED]


def test_align_empty_run():
    qrels = Qrels.from_records([("t", "a", 1)])
    alignment = align(qrels, rank_run(Run.from_records([]), ties=DOCID_ASCENDING, duplicates="keep"))
    assert alignment.topics == ["t"] and alignment.position.tolist() == [NOT_RETRIEVED]
    assert np.array_equal(alignment.run_length, [0])

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
    assert rank_run(run, ties=DOCID_ASCENDING, duplicates="keep").ranking("t") == [
        "pos",
        "zero",
        "neg",
        "low",
    ]


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


def test_duplicates_are_found_whatever_their_neighbours():
    # given copies of docids of different lengths, an empty docid, and the same docid in another topic
    run = Run.from_records(
        [
            ("t", "ab", 1.0),
            ("t", "", 2.0),
            ("u", "ab", 3.0),
            ("t", "abc", 4.0),
            ("t", "ab", 5.0),
            ("t", "", 0.0),
        ]
    )
    # when collapsed (last score wins)
    ranked = rank_run(run, ties=DOCID_ASCENDING, duplicates="collapse")
    # then each (topic, docid) appears once, at its last line's score
    assert ranked.ranking("t") == ["ab", "abc", ""]
    assert ranked.ranking("u") == ["ab"]


def test_many_lines_without_duplicates_or_ties_keep_score_order():
    scores = np.random.default_rng(3).permutation(5000).astype(float)
    run = Run.from_records([("t", f"doc{i}", s) for i, s in enumerate(scores)])
    ranked = rank_run(run, ties=DOCID_DESCENDING, duplicates="keep")
    assert ranked.ranking("t") == [f"doc{i}" for i in np.argsort(-scores)]


def test_file_already_in_rank_order_with_ties_still_breaks_ties_by_docid():
    run = Run.from_records([("t", "b", 3.0), ("t", "c", 2.0), ("t", "a", 2.0), ("t", "d", 1.0)])
    assert rank_run(run, ties=DOCID_ASCENDING, duplicates="keep").ranking("t") == ["b", "a", "c", "d"]
    assert rank_run(run, ties=DOCID_DESCENDING, duplicates="keep").ranking("t") == ["b", "c", "a", "d"]


def test_a_topic_that_comes_back_later_is_gathered():
    # scores descend line by line, but t1 reappears after t2: not in rank order, so the run is sorted
    run = Run.from_records([("t1", "a", 9.0), ("t2", "b", 8.0), ("t1", "c", 7.0), ("t2", "d", 9.5)])
    ranked = rank_run(run, ties=DOCID_ASCENDING, duplicates="keep")
    assert list(ranked.topics) == ["t1", "t2"]
    assert ranked.ranking("t1") == ["a", "c"] and ranked.ranking("t2") == ["d", "b"]


def test_docid_repeated_across_topics_is_not_a_duplicate():
    run = Run.from_records([("t1", "a", 2.0), ("t1", "b", 1.0), ("t2", "b", 2.0), ("t2", "a", 1.0)])
    ranked = rank_run(run, ties=DOCID_ASCENDING, duplicates="collapse")
    assert ranked.ranking("t1") == ["a", "b"] and ranked.ranking("t2") == ["b", "a"]


def test_duplicates_are_found_in_long_docids_and_told_apart_past_the_eighth_byte():
    # given docids that share their first 8 or 16 bytes, one repeated, and some longer than the fingerprint reads
    long_docid = "x" * 100
    run = Run.from_records(
        [
            ("t", "clueweb12-0000tw-00-00001", 4.0),
            ("t", "clueweb12-0000tw-00-00002", 3.0),
            ("t", "clueweb12-0000tw-00-00001", 1.0),
            ("u", long_docid, 2.0),
            ("u", long_docid + "y", 1.5),
            ("u", long_docid, 1.0),
        ]
    )
    ranked = rank_run(run, ties=DOCID_ASCENDING, duplicates="collapse")
    # then the repeated docids collapse to their last line's score, the near-identical ones stay
    assert ranked.ranking("t") == ["clueweb12-0000tw-00-00002", "clueweb12-0000tw-00-00001"]
    assert ranked.ranking("u") == [long_docid + "y", long_docid]


def test_fingerprints_are_equal_exactly_for_equal_strings_of_a_sliced_array():
    import pyarrow as pa

    from metrics.core.ranking import _string_fingerprints, _string_tail_keys, _StringBytes

    strings = pa.array(["skip", "a", "ab", "abcdefgh", "abcdefghi", "a", "abcdefghi", "é"]).slice(1)
    fingerprints = list(_string_fingerprints(_StringBytes.of(strings)))
    assert fingerprints[0] == fingerprints[4] and fingerprints[3] == fingerprints[5]
    assert len(set(fingerprints)) == 5
    tail_keys = list(_string_tail_keys(_StringBytes.of(strings)))
    assert tail_keys[0] == tail_keys[4] and tail_keys[3] == tail_keys[5]
    assert len(set(tail_keys)) == 5


def test_docids_that_share_their_last_eight_bytes_are_told_apart():
    # given distinct docids of one length and one ending (their tail keys are equal), and a true repeat
    run = Run.from_records(
        [
            ("t", "aaaa-12345678", 3.0),
            ("t", "bbbb-12345678", 2.0),
            ("t", "cccc-12345678", 1.0),
            ("u", "aaaa-12345678", 3.0),
            ("u", "bbbb-12345678", 2.0),
            ("u", "aaaa-12345678", 1.0),
        ]
    )
    # when ranked, trec_eval style (a repeat collapses to its last line)
    ranked = rank_run(run, ties=DOCID_ASCENDING, duplicates="collapse")
    # then the distinct ones all stay and only the true repeat collapses
    assert ranked.ranking("t") == ["aaaa-12345678", "bbbb-12345678", "cccc-12345678"]
    assert ranked.ranking("u") == ["bbbb-12345678", "aaaa-12345678"]

"""metrics.core.comparison: the one function the CLI, the leaderboard and the API share."""

import math

import numpy as np
import pytest
from scipy import stats

from metrics.core.comparison import (
    RunRename,
    describe_renames,
    distinct_run_names,
    holm,
    leaderboard,
    leaderboard_tau,
    ranks,
)
from metrics.core.readers import Qrels, Run

# The three-system example of the compare tests: relevant q1 {a,b,c}, q2 {d,e}, q3 {f}.
QRELS = Qrels.from_records(
    [
        (topic, docid, 1.0)
        for topic, docids in {"q1": "abc", "q2": "de", "q3": "f"}.items()
        for docid in docids
    ]
    + [(topic, "x", 0.0) for topic in ("q1", "q2", "q3")]
)
RANKINGS = {
    "S1": {"q1": "axbyc", "q2": "xde", "q3": "f"},
    "S2": {"q1": "xabc", "q2": "dxye", "q3": "xf"},
    "S3": {"q1": "abxyz", "q2": "de", "q3": "xyf"},
}


def _runs():
    return [
        Run.from_records(
            [
                (topic, docid, 10.0 - rank)
                for topic, ranking in topics.items()
                for rank, docid in enumerate(ranking)
            ],
            runid=runid,
        )
        for runid, topics in RANKINGS.items()
    ]


def test_holm_steps_down_and_keeps_the_order_monotone():
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005, 3*0.01, max(., 2*0.03), max(., 1*0.04)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]).tolist() == [1.0, 1.0]
    adjusted = holm([0.02, math.nan, 0.01])
    assert (
        adjusted[0] == pytest.approx(0.02) and math.isnan(adjusted[1]) and adjusted[2] == pytest.approx(0.02)
    )


def test_ranks_share_the_better_rank_on_ties():
    assert ranks(np.array([0.5, 0.7, 0.5, 0.1])) == [2, 1, 2, 4]
    assert ranks(np.array([3.0, 1.0, 2.0]), higher_is_better=False) == [3, 1, 2]


def test_distinct_run_names_renames_every_run_of_a_repeated_runid_after_its_file():
    names, renames = distinct_run_names(
        ["BERT-base", "exp1", "BERT-base", "x", "x"],
        ["runs/a.run", "runs/b.run", "runs/c.run.gz", "one/same.run", "two/same.run"],
    )
    assert names == ["a", "exp1", "c", "same", "two/same.run"]
    assert renames[0] == RunRename(path="runs/a.run", runid="BERT-base", name="a")
    assert describe_renames(renames) == (
        "2 runs share runid 'BERT-base': named after their files: a, c; "
        "2 runs share runid 'x': named after their files: same, two/same.run"
    )
    # the same file twice
    assert distinct_run_names(["r", "r"], ["f.run", "f.run"])[0] == ["f", "f.run"]
    assert distinct_run_names(["r", "r", "r"], ["f.run"] * 3)[0] == ["f", "f.run", "f.run#2"]


def test_leaderboard_means_ranks_intervals_and_holm_corrected_tests_against_a_baseline():
    rows = leaderboard(QRELS, _runs(), ["rr"], baseline="S2", resamples=500)
    by_run = {row.run: row for row in rows}
    # RR: S1 (1 + 1/2 + 1)/3, S2 (1/2 + 1 + 1/2)/3, S3 (1 + 1 + 1/3)/3
    assert [row.run for row in rows] == ["S1", "S2", "S3"]
    assert [by_run[r].mean for r in ("S1", "S2", "S3")] == pytest.approx([5 / 6, 2 / 3, 7 / 9])
    assert [by_run[r].rank for r in ("S1", "S2", "S3")] == [1, 3, 2]
    assert all(row.ci_low <= row.mean <= row.ci_high and row.topics == 3 for row in rows)
    # paired t-tests of S1 - S2 and S3 - S2 per topic, Holm over the two
    p_s1 = stats.ttest_1samp([0.5, -0.5, 0.5], 0).pvalue
    p_s3 = stats.ttest_1samp([0.5, 0.0, 1 / 3 - 1 / 2], 0).pvalue
    assert [by_run["S1"].t_p, by_run["S3"].t_p] == pytest.approx(list(holm([p_s1, p_s3])))
    # sign test: S1 wins 2 of 3 (p = 1), S3 wins 1 of 2 non-zero (p = 1)
    assert (by_run["S1"].sign_p, by_run["S3"].sign_p) == (1.0, 1.0)
    assert (by_run["S2"].t_p, by_run["S2"].sign_p) == (None, None)


def test_leaderboard_of_two_qrels_and_their_tau():
    graded = leaderboard(QRELS, _runs(), ["rr", "p@1"], resamples=100)
    again = leaderboard(QRELS, _runs(), ["rr", "p@1"], resamples=100)
    assert graded == again  # seeded: the same input gives the same rows
    assert leaderboard_tau(graded, again, "rr") == pytest.approx(1.0)
    # P@1: S1 1,0,1; S2 0,1,0; S3 1,1,0 -> S1 and S3 tie for rank 1
    assert [row.rank for row in graded if row.measure == "p@1"] == [1, 3, 1]


def test_leaderboard_refuses_repeated_runids_without_paths_and_an_unknown_baseline():
    runs = _runs()
    twice = [runs[0], runs[0]]
    with pytest.raises(ValueError, match="runids repeat"):
        leaderboard(QRELS, twice, ["rr"])
    rows = leaderboard(QRELS, twice, ["rr"], paths=["a.run", "b.run"], resamples=10)
    assert [row.run for row in rows] == ["a", "b"]
    with pytest.raises(ValueError, match="baseline 'nope'"):
        leaderboard(QRELS, runs, ["rr"], baseline="nope")

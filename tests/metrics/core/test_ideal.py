"""Levels and the maximum-similarity ideal ranking (metrics/core/ideal.py)."""

import itertools

import pytest

from metrics.core.ideal import (
    NOT_IDEAL,
    combined_levels,
    ideal_positions,
    ideal_ranking,
    levels_from_values,
    map_gains,
)
from metrics.core.ranking import DOCID_ASCENDING, align, rank_run
from metrics.core.rbo import compatibility_of_ranking
from metrics.core.readers import Qrels, Run

WORKED_VALUES = {"d1": 3, "d2": 2, "d3": 2, "d4": 1, "d5": 0}
WORKED_RUN = ["d3", "d9", "d1", "d4", "d2"]


def test_ideal_ranking_of_the_worked_example():
    # pipeline.md 1.3: values {d1:3, d2:2, d3:2, d4:1, d5:0}, run [d3, d9, d1, d4, d2] -> [d1, d3, d2, d4]
    assert ideal_ranking(WORKED_VALUES, WORKED_RUN) == ["d1", "d3", "d2", "d4"]


def test_ideal_ranking_puts_unretrieved_last_in_their_level_in_qrels_order():
    values = {"u2": 1, "r": 1, "u1": 1, "top": 5}
    assert ideal_ranking(values, ["x", "r"]) == ["top", "r", "u2", "u1"]


def test_ideal_positions_match_ideal_ranking_per_topic():
    qrels = Qrels.from_records(
        [("t", d, v) for d, v in WORKED_VALUES.items()] + [("s", "a", 1), ("s", "b", 4), ("s", "c", -2)]
    )
    run = Run.from_records([("t", d, 10 - i) for i, d in enumerate(WORKED_RUN)] + [("s", "a", 1)])
    alignment = align(qrels, rank_run(run, ties=DOCID_ASCENDING, duplicates="keep"))
    positions = ideal_positions(alignment)
    # t rows in qrels order d1..d5; s rows a, b, c
    assert positions.tolist() == [0, 2, 1, 3, NOT_IDEAL, 1, 0, NOT_IDEAL]


@pytest.mark.parametrize("p", [0.5, 0.8, 0.95])
def test_ideal_ranking_is_the_most_similar_of_all_ideal_rankings(p):
    # brute force over every ideal ranking consistent with the levels (pipeline.md 1.2 property)
    values = {"a": 2, "b": 2, "c": 2, "d": 1, "e": 1, "f": 0}
    run = ["x", "e", "c", "f", "a", "d"]
    levels = sorted({v for v in values.values() if v > 0}, reverse=True)
    groups = [[d for d, v in values.items() if v == level] for level in levels]
    best = 0.0
    for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
        ideal = [d for order in orders for d in order]
        best = max(best, _plain_rbo(run, ideal, p))
    assert compatibility_of_ranking(run, values, p=p, normalize=False) == pytest.approx(best, abs=1e-12)


def _plain_rbo(run, ideal, p, depth=1000):
    total = sum(p ** (d - 1) * len(set(run[:d]) & set(ideal[:d])) / d for d in range(1, depth + 1))
    return total / sum(p ** (d - 1) for d in range(1, depth + 1))


def test_levels_from_values_are_dense_ranks_of_positive_values_per_topic():
    qrels = Qrels.from_records(
        [
            ("t", "a", 50.0),
            ("t", "b", 3.0),
            ("t", "c", 50.0),
            ("t", "d", 0.0),
            ("t", "e", 10.0),
            ("s", "x", 0.5),
            ("s", "y", -1),
        ]
    )
    assert levels_from_values(qrels).value.tolist() == [3.0, 1.0, 3.0, 0.0, 2.0, 1.0, 0.0]


def test_map_gains_changes_only_mapped_values():
    qrels = Qrels.from_records([("t", "a", 1), ("t", "b", 2), ("t", "c", 3)])
    assert map_gains(qrels, {1: 1, 3: 7}).value.tolist() == [1.0, 2.0, 7.0]


def test_combined_levels_put_top_five_on_levels_nine_to_five():
    # pipeline.md 1.1: with CAsT grades (max 4) and k = 5, top ranks 1..5 fill L9..L5
    grades = {"a": 4, "b": 3, "c": 0, "d": 2, "e": 1, "f": 4}
    combined = combined_levels(grades, {"f": 1, "a": 2, "b": 3, "d": 4, "e": 5}, k=5)
    assert combined == {"a": 8.0, "b": 7.0, "c": 0.0, "d": 6.0, "e": 5.0, "f": 9.0}


def test_combined_levels_ties_share_a_level():
    combined = combined_levels({"a": 1, "b": 1, "c": 1}, {"a": 1, "b": 1, "c": 3}, k=3)
    assert combined == {"a": 4.0, "b": 4.0, "c": 2.0}


def test_combined_levels_rejects_rank_outside_k():
    with pytest.raises(ValueError, match="rank 6 of 'a' is outside 1..5"):
        combined_levels({"a": 1}, {"a": 6}, k=5)

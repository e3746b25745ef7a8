import json
import math

import pytest

from config.cli import main
from judging.engine import PerfectOracle, best_first_ceiling, majority_error, top_k_agreement
from judging.engine.elimination import RankedItem


def test_a_majority_of_answers_is_wrong_when_most_of_them_are_reversed():
    # 5 answers reversed 10% of the time: the majority is wrong when 3, 4 or 5 are reversed.
    assert majority_error(0.1, 5) == pytest.approx(10 * 0.1**3 * 0.9**2 + 5 * 0.1**4 * 0.9 + 0.1**5)
    assert majority_error(0.1, 5) == pytest.approx(0.00856, abs=1e-5)
    # one answer is wrong as often as it is reversed; an even split is wrong half the time
    assert majority_error(0.3, 1) == pytest.approx(0.3)
    assert majority_error(0.1, 2) == pytest.approx(0.1**2 + 0.2 * 0.9 / 2)
    assert majority_error(0.0, 5) == 0.0


def test_the_ceiling_counts_only_topics_whose_best_is_unique():
    values = {"unique": {"a": 3, "b": 2, "c": 1}, "tied": {"a": 3, "b": 3, "c": 1}, "single": {"a": 2}}
    pools = {topic: sorted(items) for topic, items in values.items()}
    oracle = PerfectOracle(values)
    asked = []

    def reversal(topic, a, b):
        asked.append((topic, a, b))
        return 0.1

    ceiling = best_first_ceiling(pools, oracle, reversal, max_votes=5)
    # a tied best is right whichever of the two comes first; a lone candidate cannot be misplaced
    assert ceiling == pytest.approx(3 - majority_error(0.1, 5))
    assert asked == [("unique", "a", "b")]
    assert best_first_ceiling(pools, oracle, lambda *_: 0.0, max_votes=5) == 3


def _ranked(*groups):
    """A competition ranking from groups of tied docids, best group first."""
    items, rank = [], 1
    for group in groups:
        items += [RankedItem(docid=d, rank=rank, wins=0) for d in group]
        rank += len(group)
    return items


def test_a_top_k_with_ties_at_rank_k_is_scored_as_k_items():
    values = {"t": {f"d{i}": float(10 - i) for i in range(10)}}
    pools = {"t": sorted(values["t"])}
    oracle = PerfectOracle(values)
    k = 3
    # a topic left unjudged: every candidate tied at rank 1 holds every true item, but only 3 of 10 can stay
    everything = top_k_agreement({"t": _ranked(sorted(values["t"]))}, pools, oracle, k=k)
    assert everything.recall == 1.0
    assert everything.recall_at_k == pytest.approx(3 / 10)
    assert everything.recall_tie_aware_at_k == pytest.approx(3 / 10)
    # the first item sure, then two of {d1, d2, d7} kept at random: d0 for sure, each of d1, d2 2/3 of the time
    ties_at_k = top_k_agreement({"t": _ranked(["d0"], ["d1", "d2", "d7"])}, pools, oracle, k=k)
    assert ties_at_k.recall == 1.0
    assert ties_at_k.recall_at_k == pytest.approx((1 + 2 * 2 / 3) / 3)
    # no ties beyond k: the two forms agree
    exact = top_k_agreement({"t": _ranked(["d0"], ["d1"], ["d7"])}, pools, oracle, k=k)
    assert exact.recall == exact.recall_at_k == pytest.approx(2 / 3)


def test_tie_aware_at_k_counts_an_item_of_the_right_value_as_right():
    # the oracle ties b and c; its top-2 is a (3) and one item of value 2. The campaign's top-2 is a, then b, c
    # and x tied at rank 2: one of the three is kept, of value 2 two times in three.
    values = {"t": {"a": 3.0, "b": 2.0, "c": 2.0, "x": 0.0}}
    pools = {"t": ["a", "b", "c", "x"]}
    agreement = top_k_agreement({"t": _ranked(["a"], ["b", "c", "x"])}, pools, PerfectOracle(values), k=2)
    assert agreement.recall_tie_aware == 1.0
    assert agreement.recall_tie_aware_at_k == pytest.approx((1 + 2 / 3) / 2)
    assert agreement.recall_at_k == pytest.approx((1 + 1 / 3) / 2)


def _simulate(capsys, *arguments):
    assert main(["simulate", *arguments]) == 0
    return json.loads(capsys.readouterr().out)


def test_simulate_reports_the_ceiling_its_best_first_is_read_against(tmp_path, capsys):
    # Given 60 topics of two candidates with different grades (so each best is unique), when the adaptive
    # mode is simulated, then the summary's ceiling is the topics less the wrong majorities the vote cap
    # allows: all of them with a perfect judge, 60 * (1 - 0.3) with 30% reversals and one vote a pair.
    qrels = tmp_path / "graded.txt"
    qrels.write_text("".join(f"t{t} Q0 best{t} 2\nt{t} Q0 next{t} 1\nt{t} Q0 junk{t} 0\n" for t in range(60)))
    common = ["--qrels", str(qrels), "--oracle", str(qrels), "--mode", "adaptive", "-k", "2", "--seed", "3"]
    assert _simulate(capsys, *common)["oracle_same_best_ceiling"] == 60
    noisy = _simulate(capsys, *common, "--error-rate", "0.3", "--max-votes", "1")
    assert noisy["oracle_same_best_ceiling"] == pytest.approx(42)
    assert noisy["max_votes_per_pair"] == 1
    # the measured figure stays within the binomial spread of the ceiling (sd = sqrt(60 * 0.3 * 0.7) = 3.5)
    assert abs(noisy["oracle_same_best_tie_aware"] - 42) <= 3 * math.sqrt(60 * 0.3 * 0.7)
    five = _simulate(capsys, *common, "--error-rate", "0.1")
    assert five["oracle_same_best_ceiling"] == pytest.approx(60 * (1 - majority_error(0.1, 5)), abs=0.01)
    # where reversals depend on the items' levels, other pairs carry evidence: no ceiling is claimed
    assert "oracle_same_best_ceiling" not in _simulate(capsys, *common, "--discriminability", "2")

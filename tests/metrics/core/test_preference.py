"""ppref and wpref (Carterette et al. 2008 section 4): hand-checked toys, a slow double loop over pairs,
and properties."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from metrics.core.preference import ppref, wpref

TOY_VALUES = {"a": 2.0, "b": 1.0, "c": 0.0}


def test_ppref_hand_checked():
    # given a > b > c, ranking [b, a, d] with d unjudged and c unranked
    # then a>b wrong (both ranked, b first), a>c right (only a ranked), b>c right: 2 of 3
    assert ppref(["b", "a", "d"], TOY_VALUES) == 2 / 3


def test_wpref_hand_checked():
    # same pairs; c takes rank L+1 = 4; weights 1/log2(deeper rank + 1)
    right = 1 / math.log2(5) + 1 / math.log2(5)
    total = 1 / math.log2(3) + right
    assert wpref(["b", "a", "d"], TOY_VALUES) == pytest.approx(right / total, abs=1e-15)


def test_pair_with_only_the_less_preferred_item_ranked_is_wrong():
    assert ppref(["c"], TOY_VALUES) == 0.0
    assert ppref(["b"], TOY_VALUES) == 0.5  # a>b wrong, b>c right, a>c ignored


def test_depth_cuts_the_ranking():
    assert ppref(["b", "a", "c"], TOY_VALUES, depth=1) == ppref(["b"], TOY_VALUES)


def test_values_at_or_below_zero_share_level_zero():
    # b (-1) and c (0) are both level 0: only a>b and a>c remain, both right
    assert ppref(["a", "c", "b"], {"a": 1.0, "b": -1.0, "c": 0.0}) == 1.0
    assert ppref(["c", "a"], {"a": 1.0, "b": -1.0, "c": 0.0}) == 0.5


def test_edge_cases():
    # one level only: no preference, undefined; preferences exist but nothing judged is ranked: 0
    assert math.isnan(ppref(["a"], {"a": 1.0, "b": 1.0}))
    assert math.isnan(wpref(["a"], {"a": 1.0, "b": 1.0}))
    assert ppref(["x", "y"], TOY_VALUES) == 0.0
    assert wpref(["x", "y"], TOY_VALUES) == 0.0
    with pytest.raises(ValueError, match="depth"):
        ppref(["a"], TOY_VALUES, depth=0)


def slow_pref(ranking, values, weighted):
    """Every ordered pair, one at a time, straight from the definition."""
    rank = {}
    for position, docid in enumerate(ranking, start=1):
        rank.setdefault(docid, position)
    right = total = 0.0
    for i, value_i in values.items():
        for j, value_j in values.items():
            if max(value_i, 0) <= max(value_j, 0) or (i not in rank and j not in rank):
                continue
            ri, rj = rank.get(i, len(ranking) + 1), rank.get(j, len(ranking) + 1)
            weight = 1 / math.log2(max(ri, rj) + 1) if weighted else 1.0
            total += weight
            right += weight if ri < rj else 0.0
    return right / total if total else 0.0


docs = "abcdefghij"
values_strategy = st.dictionaries(
    st.sampled_from(docs), st.sampled_from([-1.0, 0.0, 1.0, 2.0, 50.0]), min_size=2
)
rankings = st.lists(st.sampled_from(docs + "xyz"), max_size=13, unique=True)


@given(rankings, values_strategy)
def test_fast_equals_slow(ranking, values):
    has_pairs = len({max(v, 0) for v in values.values()}) > 1
    for measure, weighted in ((ppref, False), (wpref, True)):
        score = measure(ranking, values)
        if has_pairs:
            assert score == pytest.approx(slow_pref(ranking, values, weighted), abs=1e-12)
            assert 0.0 <= score <= 1.0
        else:
            assert math.isnan(score)


@given(values_strategy, st.permutations(docs))
def test_ideal_ranking_scores_one_and_relabelling_changes_nothing(values, relabelled):
    if len({max(v, 0) for v in values.values()}) < 2:
        return
    ideal = sorted(values, key=lambda d: -max(values[d], 0))
    assert ppref(ideal, values) == 1.0 and wpref(ideal, values) == 1.0
    mapping = dict(zip(docs, relabelled, strict=True))
    shuffled = list(reversed(ideal))
    renamed = {mapping[d]: v for d, v in values.items()}
    assert ppref([mapping[d] for d in shuffled], renamed) == ppref(shuffled, values)
    assert wpref([mapping[d] for d in shuffled], renamed) == wpref(shuffled, values)


def test_per_topic_on_cast_equals_the_ranking_function(cast_dir):
    # given a real run and the preference qrels / when scored from the alignment and from each ranking
    from metrics.core.evaluate import evaluate_run, parse_measure
    from metrics.core.preference import ppref_per_topic, wpref_per_topic
    from metrics.core.ranking import DOCID_DESCENDING, align, rank_run
    from metrics.core.readers import read_qrels, read_run

    qrels = read_qrels(cast_dir / "qrels.preference.txt")
    ranked = rank_run(
        read_run(cast_dir / "runs" / "decaf03.run"), ties=DOCID_DESCENDING, duplicates="collapse"
    )
    alignment = align(qrels, ranked)
    per_topic_p, per_topic_w = ppref_per_topic(alignment, 20), wpref_per_topic(alignment, 20)
    for index, topic in enumerate(alignment.topics[:40]):
        values = {d: v for t, d, v in zip(qrels.topic, qrels.docid, qrels.value, strict=True) if t == topic}
        ranking = ranked.ranking(topic)
        assert per_topic_p[index] == ppref(ranking, values, depth=20)
        assert per_topic_w[index] == pytest.approx(wpref(ranking, values, depth=20), abs=1e-12)
    # then the registry reaches the same numbers by name
    ppref_scores, wpref_scores = evaluate_run(
        qrels,
        read_run(cast_dir / "runs" / "decaf03.run"),
        [parse_measure("ppref@20"), parse_measure("wpref@20")],
    )
    assert ppref_scores.measure == "ppref@20"
    assert np.array_equal(ppref_scores.values, per_topic_p[: len(ppref_scores.values)])
    assert wpref_scores.measure == "wpref@20"
    assert np.array_equal(wpref_scores.values, per_topic_w[: len(wpref_scores.values)])

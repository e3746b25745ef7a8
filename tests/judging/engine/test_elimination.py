import itertools
import random

import pytest

from judging.engine import (
    CrowdParams,
    RankedItem,
    crowd_round_plan,
    preference_values,
    stage1_close,
    stage2_rank,
)

PARAMS = CrowdParams(k=5, F=9, P=7)


def _consistent(pairs, order):
    """Outcomes of a consistent assessor: the item earlier in ``order`` wins."""
    position = {item: i for i, item in enumerate(order)}
    return [(a, b) if position[a] < position[b] else (b, a) for a, b in pairs]


def _star_round(center_wins, center_opponents):
    """A round where candidate 'c' plays ``center_opponents`` others and wins ``center_wins``;
    the others play nobody else."""
    others = [f"o{i}" for i in range(center_opponents)]
    pairs = [("c", o) for o in others]
    outcomes = [("c", o) if i < center_wins else (o, "c") for i, o in enumerate(others)]
    return ["c", *others], pairs, outcomes


# --- planning rounds -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "stage", "pairs"), [(0, 2, 0), (1, 2, 0), (2, 2, 1), (5, 2, 10), (9, 2, 36)]
)
def test_pools_up_to_f_go_to_stage_two_with_all_pairs(size, stage, pairs):
    plan = crowd_round_plan([f"d{i}" for i in range(size)], params=PARAMS, rng=random.Random(0))
    assert (plan.stage, len(plan.pairs)) == (stage, pairs)
    assert {frozenset(p) for p in plan.pairs} == {
        frozenset(p) for p in itertools.combinations([f"d{i}" for i in range(size)], 2)
    }


def test_pool_of_f_plus_one_gets_a_stage_one_graph():
    plan = crowd_round_plan([f"d{i}" for i in range(10)], params=PARAMS, rng=random.Random(0))
    assert plan.stage == 1 and len(plan.pairs) == 35  # 10 * 7 / 2


def test_forced_stage_two_and_impossible_stage_one():
    candidates = [f"d{i}" for i in range(12)]
    assert len(crowd_round_plan(candidates, params=PARAMS, rng=random.Random(0), stage=2).pairs) == 66
    with pytest.raises(ValueError, match="more than F=9"):
        crowd_round_plan(candidates[:9], params=PARAMS, rng=random.Random(0), stage=1)


# --- culling -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wins", "opponents", "half_culls", "strict_culls"),
    [(3, 7, True, True), (4, 7, False, False), (4, 8, False, True), (3, 8, True, True), (5, 8, False, False)],
)
def test_culling_rules(wins, opponents, half_culls, strict_culls):
    # half: cull iff 2*wins < n (4 of 8 survives, as 31_1 round 2 of the released data shows);
    # strict majority: cull iff 2*wins <= n.
    candidates, pairs, outcomes = _star_round(wins, opponents)
    for culling, culls in (("half", half_culls), ("strict_majority", strict_culls)):
        result = stage1_close(candidates, pairs, outcomes, params=CrowdParams(k=1, F=3, P=2, culling=culling))
        assert ("c" in result.culled) is culls
        assert (result.wins["c"], result.opponents["c"]) == (wins, opponents)


def test_consistent_round_on_23_candidates_keeps_every_candidate_with_a_winning_record():
    candidates = [f"d{i:02d}" for i in range(23)]
    plan = crowd_round_plan(candidates, params=PARAMS, rng=random.Random(3))
    outcomes = _consistent(plan.pairs, candidates)
    result = stage1_close(candidates, plan.pairs, outcomes, params=PARAMS)
    for c in candidates:
        assert (c in result.survivors) is (2 * result.wins[c] >= result.opponents[c])
    assert set(result.survivors) | set(result.culled) == set(candidates)
    assert result.reinstated == [] and result.survivors[:4] == candidates[:4]


def test_reinstatement_brings_back_best_win_ratios_including_ties():
    # Given k=3 and a round leaving a (4/4) and e (2/4, exactly half) while b (1/4), c (1/3) and d (1/3)
    # are culled, when closed, then the best ratio comes back as a whole tie group: c and d together,
    # giving 4 survivors although 3 would reach k.
    params = CrowdParams(k=3, F=4, P=3)
    candidates = ["a", "b", "c", "d", "e"]
    pairs = [
        ("a", "b"),
        ("a", "c"),
        ("a", "d"),
        ("b", "c"),
        ("b", "d"),
        ("b", "e"),
        ("c", "e"),
        ("d", "e"),
        ("a", "e"),
    ]
    outcomes = [
        ("a", "b"),
        ("a", "c"),
        ("a", "d"),
        ("c", "b"),
        ("d", "b"),
        ("b", "e"),
        ("e", "c"),
        ("e", "d"),
        ("a", "e"),
    ]
    result = stage1_close(candidates, pairs, outcomes, params=params)
    assert result.wins == {"a": 4, "b": 1, "c": 1, "d": 1, "e": 2}
    assert result.opponents == {"a": 4, "b": 4, "c": 3, "d": 3, "e": 4}
    assert result.reinstated == ["c", "d"]
    assert result.survivors == ["a", "c", "d", "e"]
    assert result.culled == ["b"]
    assert result.next_stage == 2


def test_without_reinstatement_a_round_may_leave_fewer_than_k():
    params = CrowdParams(k=3, F=4, P=3, reinstate=False)
    candidates, pairs, outcomes = _star_round(4, 4)
    result = stage1_close(candidates, pairs, outcomes, params=params)
    assert result.survivors == ["c"] and result.reinstated == []


def test_balanced_round_under_strict_majority_culls_everyone_unless_reinstated():
    # Given a 6-cycle where everyone wins 1 of 2, strict majority culls all; reinstatement brings the
    # whole tie group back (no progress -> stage 2), the bare rule leaves nobody.
    candidates = [f"d{i}" for i in range(6)]
    pairs = [(candidates[i], candidates[(i + 1) % 6]) for i in range(6)]
    bare = stage1_close(
        candidates,
        pairs,
        pairs,
        params=CrowdParams(k=1, F=3, P=2, culling="strict_majority", reinstate=False),
    )
    assert (bare.survivors, bare.next_stage) == ([], 2)
    kept = stage1_close(
        candidates, pairs, pairs, params=CrowdParams(k=1, F=3, P=2, culling="strict_majority")
    )
    assert (kept.survivors, kept.reinstated, kept.culled, kept.next_stage) == (candidates, candidates, [], 2)


def test_round_cap_and_no_progress_send_the_pool_to_stage_two():
    params = CrowdParams(k=2, F=3, P=2, max_rounds=2)
    candidates = [f"d{i}" for i in range(8)]
    # a cycle: everyone 1 win of 2, nobody culled -> no progress -> stage 2
    pairs = [(candidates[i], candidates[(i + 1) % 8]) for i in range(8)]
    result = stage1_close(candidates, pairs, pairs, params=params)
    assert (result.culled, result.next_stage) == ([], 2)
    # progress but round 2 of at most 2 -> stage 2; round 1 -> another stage-1 round
    outcomes = _consistent(pairs, candidates)
    assert stage1_close(candidates, pairs, outcomes, params=params, round_number=1).next_stage == 1
    assert stage1_close(candidates, pairs, outcomes, params=params, round_number=2).next_stage == 2


def test_incomplete_or_foreign_outcomes_are_rejected():
    candidates, pairs, outcomes = _star_round(2, 4)
    with pytest.raises(ValueError, match="1 pairs of the round have no outcome"):
        stage1_close(candidates, pairs, outcomes[:-1], params=CrowdParams(k=1, F=3, P=2))
    with pytest.raises(ValueError, match="more than one outcome"):
        stage1_close(candidates, pairs, [*outcomes, outcomes[0]], params=CrowdParams(k=1, F=3, P=2))
    with pytest.raises(ValueError, match="not a pair of this round"):
        stage1_close(candidates, pairs, [*outcomes[:-1], ("o1", "o2")], params=CrowdParams(k=1, F=3, P=2))


# --- stage 2 -------------------------------------------------------------------------------------


def test_stage2_consistent_pool_ranks_by_wins():
    candidates = ["e", "b", "a", "d", "c", "f"]
    order = ["a", "b", "c", "d", "e", "f"]
    ranked = stage2_rank(candidates, _consistent(itertools.combinations(candidates, 2), order), k=5)
    assert ranked == [RankedItem(d, r, 6 - r) for r, d in enumerate(order[:5], start=1)]


def test_stage2_ties_at_rank_k_are_all_kept():
    # a beats everyone; b, c, d form a cycle and each beats e: wins a 4, b/c/d 2, e 0.
    outcomes = [("a", x) for x in "bcde"] + [("b", "c"), ("c", "d"), ("d", "b")] + [(x, "e") for x in "bcd"]
    ranked = stage2_rank(list("abcde"), outcomes, k=2)
    assert [(i.docid, i.rank, i.wins) for i in ranked] == [("a", 1, 4), ("b", 2, 2), ("c", 2, 2), ("d", 2, 2)]


def test_stage2_tie_above_k_cuts_at_k():
    # wins 3, 3, 2, 2, 0 (31_1 of the released data): k=3 keeps ranks 1, 1, 3, 3.
    outcomes = [
        ("a", "b"),
        ("a", "c"),
        ("d", "a"),
        ("a", "e"),
        ("b", "c"),
        ("b", "d"),
        ("b", "e"),
        ("c", "d"),
        ("c", "e"),
        ("d", "e"),
    ]
    ranked = stage2_rank(list("abcde"), outcomes, k=3)
    assert [(i.docid, i.rank, i.wins) for i in ranked] == [("a", 1, 3), ("b", 1, 3), ("c", 3, 2), ("d", 3, 2)]
    assert [i.rank for i in stage2_rank(list("abcde"), outcomes, k=1)] == [1, 1]


@pytest.mark.parametrize("size", [0, 1])
def test_stage2_of_empty_and_single_pools(size):
    candidates = ["only"][:size]
    assert stage2_rank(candidates, [], k=5) == [RankedItem("only", 1, 0) for _ in range(size)]


def test_stage2_needs_every_pair():
    with pytest.raises(ValueError, match="have no outcome"):
        stage2_rank(list("abc"), [("a", "b"), ("b", "c")], k=2)


# --- preference values ---------------------------------------------------------------------------


def test_combined_values_match_the_released_31_1_coding():
    # 31_1 of the released TREC-CAsT-2019 preference judgments: stage-2 wins 3, 3, 2, 2, 0 -> released values 50, 50, 30, 30, 10.
    graded = {"a": 4, "b": 4, "c": 3, "d": 4, "e": 3, "f": 2, "g": 0}
    ranked = [
        RankedItem("a", 1, 3),
        RankedItem("b", 1, 3),
        RankedItem("c", 3, 2),
        RankedItem("d", 3, 2),
        RankedItem("e", 5, 0),
    ]
    values = preference_values(graded, ranked, k=5)
    assert values == {"a": 50.0, "b": 50.0, "c": 30.0, "d": 30.0, "e": 10.0, "f": 2.0, "g": 0.0}


def test_combined_values_match_the_released_31_2_coding():
    # 31_2 of the released judgments: stage-2 wins 4, 3, 3, 2, 2, 1 -> 50, 40, 40, 20, 20; the sixth keeps its grade.
    outcomes = [("a", "b"), ("a", "c"), ("a", "d"), ("a", "e"), ("f", "a")]
    outcomes += [("c", "b"), ("b", "d"), ("b", "e"), ("b", "f")]
    outcomes += [("d", "c"), ("c", "e"), ("c", "f")]
    outcomes += [("e", "d"), ("d", "f")]
    outcomes += [("e", "f")]
    ranked = stage2_rank(list("abcdef"), outcomes, k=5)
    assert [(i.docid, i.rank, i.wins) for i in ranked] == [
        ("a", 1, 4),
        ("b", 2, 3),
        ("c", 2, 3),
        ("d", 4, 2),
        ("e", 4, 2),
    ]
    values = preference_values({d: 4 for d in "abcdef"}, ranked, k=5)
    assert values == {"a": 50.0, "b": 40.0, "c": 40.0, "d": 20.0, "e": 20.0, "f": 4.0}


def test_top_k_only_and_best_only():
    graded = {"a": 4, "b": 3, "c": 1, "z": 0}
    ranked = [RankedItem("b", 1, 2), RankedItem("a", 2, 1), RankedItem("c", 2, 1)]
    assert preference_values(graded, ranked, k=2, kind="top_k") == {"a": 1.0, "b": 2.0, "c": 1.0, "z": 0.0}
    assert preference_values(graded, ranked, k=2, kind="best") == {"a": 0.0, "b": 1.0, "c": 0.0, "z": 0.0}


def test_combined_values_stay_above_large_grades():
    values = preference_values({"a": 12, "b": 30}, [RankedItem("a", 1, 1)], k=2)
    assert values == {"a": 32.0, "b": 30.0}


def test_unknown_kind_is_rejected():
    with pytest.raises(ValueError, match="kind must be"):
        preference_values({}, [], k=5, kind="graded")

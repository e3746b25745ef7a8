from decimal import Decimal

import pytest

from judging.engine import CrowdParams, HitShape, Pricing


def test_paper_parameters_are_the_defaults_and_valid():
    params = CrowdParams()
    params.validate(pool_size=112)
    assert (params.k, params.F, params.P, params.culling, params.reinstate) == (5, 9, 7, "half", True)


@pytest.mark.parametrize(
    ("k", "F", "P", "fragment"),
    [
        (0, 9, 7, "k must be at least 1"),
        (5, 9, 5, "F > P > k"),
        (5, 7, 7, "F > P > k"),
        (5, 6, 7, "F > P > k"),
    ],
)
def test_validate_rejects_parameters_breaking_f_p_k(k, F, P, fragment):
    with pytest.raises(ValueError, match=fragment):
        CrowdParams(k=k, F=F, P=P).validate()


def test_validate_rejects_unknown_culling_rule_and_negative_pool():
    with pytest.raises(ValueError, match="culling must be one of half, strict_majority"):
        CrowdParams(culling="most").validate()
    with pytest.raises(ValueError, match="pool size must be non-negative"):
        CrowdParams().validate(pool_size=-1)
    with pytest.raises(ValueError, match="max_rounds"):
        CrowdParams(max_rounds=0).validate()


def test_every_pool_size_from_zero_is_acceptable():
    for size in range(0, 30):
        CrowdParams().validate(pool_size=size)


def test_hit_shape_and_pricing_follow_the_paper():
    # "Assessing top-k preferences", section 4.3: 10 preferences + 3 challenges per HIT, $2.00 to the worker + $0.40 fee.
    assert (HitShape().preferences, HitShape().challenges) == (10, 3)
    assert Pricing().cost(1616) == Decimal("3878.40")
    with pytest.raises(ValueError, match="at least one preference"):
        HitShape(preferences=0).validate()

"""Parameters of a crowd campaign: k, F, P, the culling rule, the HIT shape and the price of a HIT.

These dataclasses are the one source of the defaults: the ``Campaign`` model fields, the
``campaign_create`` service and command, and ``toppref simulate``/``plan`` all read them from here
(``DEFAULT_PARAMS``, ``DEFAULT_HIT_SHAPE``, ``DEFAULT_PRICING``). Money is ``Decimal`` (US dollars).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")

CULLING_RULES = ("half", "strict_majority")


@dataclass(frozen=True)
class CrowdParams:
    """The crowdsourced two-stage elimination of Clarke, Vtyurina and Smucker, "Assessing top-k
    preferences", section 4.3.

    ``k``: depth of the top-k; ``F``: stage 1 runs while a pool has more than F candidates, then stage 2
    judges all pairs (at most F(F-1)/2); ``P``: opponents per candidate per stage-1 round (P or P+1).
    ``culling``: ``"half"`` culls a candidate iff 2*wins < opponents (it lost more than it won; the
    released CAsT judgments support this, docs/decisions.md "Culling rule"), ``"strict_majority"``
    culls iff 2*wins <= opponents. ``max_rounds``: after this many stage-1 rounds the pool goes to stage 2
    whatever its size. ``reinstate``: when a round would leave fewer than k candidates, bring back the
    best culled ones by win ratio (docs/decisions.md "Reinstatement and round cap"; the paper is silent, so ``False``
    gives the paper's bare rule, under which a pool can end with fewer than k items). The paper's values are k=5, F=9, P=7.
    """

    k: int = 5
    F: int = 9
    P: int = 7
    culling: str = "half"
    max_rounds: int = 10
    reinstate: bool = True

    def validate(self, pool_size: int | None = None) -> None:
        """Raise ``ValueError`` naming the violated rule: k >= 1, F > P > k, culling in CULLING_RULES,
        max_rounds >= 1 and, when given, pool_size >= 0. Any pool size is acceptable: pools of at most
        F candidates go straight to stage 2 and pools above F are large enough for stage 1
        (|C| >= F+1 >= P+2)."""
        if self.k < 1:
            raise ValueError(f"k must be at least 1 (got k={self.k})")
        if not self.F > self.P > self.k:
            raise ValueError(f"parameters must satisfy F > P > k (got F={self.F}, P={self.P}, k={self.k})")
        if self.culling not in CULLING_RULES:
            raise ValueError(f"culling must be one of {', '.join(CULLING_RULES)} (got {self.culling!r})")
        if self.max_rounds < 1:
            raise ValueError(f"max_rounds must be at least 1 (got {self.max_rounds})")
        if pool_size is not None and pool_size < 0:
            raise ValueError(f"pool size must be non-negative (got {pool_size})")


@dataclass(frozen=True)
class HitShape:
    """One HIT: ``preferences`` pairs to judge plus ``challenges`` quality-control questions
    ("Assessing top-k preferences", section 4.3: 10 + 3)."""

    preferences: int = 10
    challenges: int = 3

    def validate(self) -> None:
        """Raise ``ValueError`` unless preferences >= 1 and challenges >= 0."""
        if self.preferences < 1:
            raise ValueError(f"a HIT needs at least one preference (got {self.preferences})")
        if self.challenges < 0:
            raise ValueError(f"challenges per HIT must be non-negative (got {self.challenges})")


@dataclass(frozen=True)
class Pricing:
    """What one HIT costs, in US dollars: ``pay_per_hit`` to the worker plus ``fee`` to the platform
    ("Assessing top-k preferences", section 4.3: $2.00 + $0.40)."""

    pay_per_hit: Decimal = Decimal("2.00")
    fee: Decimal = Decimal("0.40")

    @property
    def cost_per_hit(self) -> Decimal:
        return Decimal(self.pay_per_hit) + Decimal(self.fee)

    def validate(self, budget: Decimal | None = None) -> None:
        """Raise ``ValueError`` unless pay and fee are finite and non-negative and, when a ``budget`` is
        given, it is finite and pays for at least one HIT (so a HIT must cost more than 0: a budget
        cannot bound free HITs)."""
        for name, value in (("pay per HIT", self.pay_per_hit), ("fee", self.fee)):
            if not Decimal(value).is_finite() or Decimal(value) < 0:
                raise ValueError(f"{name} must be a finite, non-negative amount (got {value})")
        if budget is None:
            return
        if not Decimal(budget).is_finite() or Decimal(budget) < 0:
            raise ValueError(f"budget must be a finite, non-negative amount (got {budget})")
        if self.cost_per_hit <= 0:
            raise ValueError("a budget needs a HIT that costs something (pay per HIT plus fee is 0)")
        if self.hits_affordable(Decimal(budget)) < 1:
            raise ValueError(
                f"budget {budget} USD allows no HIT (one HIT costs {self.cost_per_hit} USD: pay plus fee)"
            )

    def cost(self, hits: int) -> Decimal:
        """hits * (pay_per_hit + fee), rounded to cents."""
        return (hits * self.cost_per_hit).quantize(CENT, rounding=ROUND_HALF_UP)

    def hits_affordable(self, budget: Decimal) -> int:
        """How many whole HITs ``budget`` pays for; ``ValueError`` when a HIT costs nothing."""
        if self.cost_per_hit <= 0:
            raise ValueError("HITs that cost nothing are not bounded by a budget")
        return int(Decimal(budget) // self.cost_per_hit)


# --- Bounds of a plan (``toppref plan`` and ``POST /api/plan/`` share them) -------------------------------
# They keep a mistyped or hostile value from running for minutes (a CAsT 2019 pool holds at most 112
# candidates; the paper's values are k=5, F=9, P=7, 10+3 per HIT).
MAX_POOL_SIZE = 10_000
MAX_TRIALS = 100_000
MAX_PER_HIT = 100
MAX_ROUNDS = 1000
# Stage 1 draws a random P-regular pairing graph per round; its cost grows steeply as P nears the pool size
# (a 48-regular graph on 50 candidates takes tens of seconds), so P is bounded well above the paper's 7.
MAX_OPPONENTS = 16
# Stage 2 judges all F(F-1)/2 pairs of a pool of at most F candidates.
MAX_STAGE2_POOL = 100
# Monte-Carlo work: trials x the simulated judgments of one trial (estimated by plan_work below). 10 million
# is about 30 s of one core; the CAsT 2019 qrels at the default 100 trials estimate 4.9 million.
MAX_PLAN_WORK = 10_000_000


def plan_work(pool_sizes: dict[str, int] | list[int], *, params: CrowdParams, trials: int) -> int:
    """An upper estimate of the judgments ``plan_campaign`` simulates: per topic, stage-1 rounds that at least
    halve the pool (P opponents each, so at most 2 x |C| x P judgments in all) and the F(F-1)/2 pairs of
    stage 2; times ``trials``."""
    sizes = pool_sizes.values() if isinstance(pool_sizes, dict) else pool_sizes
    per_trial = sum(2 * size * params.P + min(size, params.F) ** 2 for size in sizes)
    return trials * max(per_trial, 1)


def plan_bounds_check(
    pool_sizes: dict[str, int] | list[int], *, params: CrowdParams, hit_shape: HitShape, trials: int
) -> None:
    """Raise ``ValueError`` naming the first parameter of a plan beyond its bound (see the constants above);
    ``params.validate()`` and ``hit_shape.validate()`` check the rest."""
    sizes = list(pool_sizes.values() if isinstance(pool_sizes, dict) else pool_sizes)
    checks = (
        ("trials", trials, 1, MAX_TRIALS),
        ("P", params.P, 1, MAX_OPPONENTS),
        ("F", params.F, 1, MAX_STAGE2_POOL),
        ("max_rounds", params.max_rounds, 1, MAX_ROUNDS),
        ("preferences_per_hit", hit_shape.preferences, 1, MAX_PER_HIT),
        ("challenges_per_hit", hit_shape.challenges, 0, MAX_PER_HIT),
    )
    for name, value, low, high in checks:
        if not low <= value <= high:
            raise ValueError(f"{name} must be between {low} and {high} (got {value})")
    for size in sizes:
        if not 0 <= size <= MAX_POOL_SIZE:
            raise ValueError(f"pool size must be between 0 and {MAX_POOL_SIZE} (got {size})")
    work = plan_work(sizes, params=params, trials=trials)
    if work > MAX_PLAN_WORK:
        raise ValueError(
            f"this plan would simulate about {work:,} judgments (at most {MAX_PLAN_WORK:,}): use fewer trials,"
            " smaller pools or a smaller P"
        )


# Frozen, so one shared instance is a safe default argument.
DEFAULT_PARAMS = CrowdParams()
DEFAULT_HIT_SHAPE = HitShape()
DEFAULT_PRICING = Pricing()

"""``toppref`` subcommands of the judging app (see config/cli.py): ``simulate`` and ``plan``, which run the
pure judging engine over TREC files without a database."""

from __future__ import annotations

import argparse
import json
import random
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path

from judging.engine import (
    CULLING_RULES,
    DEFAULT_HIT_SHAPE,
    DEFAULT_PARAMS,
    DEFAULT_PRICING,
    CrowdParams,
    HitShape,
    JudgmentLogError,
    NoisyOracle,
    PerfectOracle,
    Pricing,
    ReplayOracle,
    challenge_nonrelevant,
    plan_campaign,
    read_judgment_log,
    simulate_crowd,
    simulate_tournament,
)
from pools.thinning import thin_qrels
from pools.trec import TrecFormatError, read_qrels

EXIT_BAD_INPUT = 1
EXIT_BAD_PARAMETERS = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this app's subcommands."""
    simulate = subparsers.add_parser(
        "simulate",
        help="run a crowd campaign or a dedicated tournament with simulated assessors",
        description=(
            "Thin the graded qrels to candidate pools (paper section 4.1), judge them with a simulated assessor "
            "that follows --oracle (a preference qrels file: higher value wins, equal values: smaller docid "
            "wins), write the preference qrels to --out and print a JSON summary on stdout."
        ),
    )
    simulate.add_argument("--qrels", required=True, type=Path, help="graded qrels (topic Q0 docid grade)")
    simulate.add_argument(
        "--oracle", required=True, type=Path, help="preference qrels the simulated assessor follows"
    )
    _add_crowd_arguments(simulate)
    simulate.add_argument("--mode", choices=("crowd", "tournament"), default="crowd", help="default: crowd")
    simulate.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    simulate.add_argument(
        "--out", type=Path, help="write the preference qrels here (TREC: topic Q0 docid value)"
    )
    simulate.add_argument(
        "--kind",
        choices=("combined", "top_k", "best"),
        default="combined",
        help="which preference qrels to write (default: combined, top-k coded 10*(k+1-rank) above the grades)",
    )
    noise = simulate.add_mutually_exclusive_group()
    noise.add_argument("--error-rate", type=float, help="reverse each judgment with this probability")
    noise.add_argument(
        "--discriminability",
        type=float,
        help="reverse a judgment with probability Phi(-d*gap/sqrt(2)), gap = level difference of the pair",
    )
    simulate.add_argument(
        "--replay",
        type=Path,
        help="answer from this judgment log (topic docidA docidB winner); the oracle answers the rest",
    )
    simulate.set_defaults(handler=simulate_command, needs_django=False)

    plan = subparsers.add_parser(
        "plan",
        help="estimate judgments, HITs, cost and the risk of losing a top-k item for a crowd campaign",
        description=(
            "Monte-Carlo plan of the crowd pipeline with a consistent crowd, over the pools of the thinned "
            "--qrels or over one pool of --pool-size candidates. Prints JSON on stdout."
        ),
    )
    plan.add_argument(
        "--qrels", type=Path, help="graded qrels (topic Q0 docid grade); pools are thinned at k"
    )
    plan.add_argument("--pool-size", type=int, help="plan for a single pool of this many candidates instead")
    _add_crowd_arguments(plan)
    plan.add_argument("--trials", type=int, default=100, help="Monte-Carlo trials (default 100)")
    plan.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    plan.set_defaults(handler=plan_command, needs_django=False)


def _money(text: str) -> Decimal:
    """An amount of US dollars: a finite decimal number (``2``, ``0.40``)."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"not an amount: {text!r}") from None
    if not value.is_finite():
        raise argparse.ArgumentTypeError(f"not a finite amount: {text!r}")
    return value


def _add_crowd_arguments(parser: argparse.ArgumentParser) -> None:
    params, shape, pricing = DEFAULT_PARAMS, DEFAULT_HIT_SHAPE, DEFAULT_PRICING
    parser.add_argument("-k", type=int, default=params.k, help=f"depth of the top-k (default {params.k})")
    parser.add_argument(
        "-F", type=int, default=params.F, help=f"stage 2 starts at F candidates or fewer (default {params.F})"
    )
    parser.add_argument(
        "-P",
        type=int,
        default=params.P,
        help=f"opponents per candidate per stage-1 round (default {params.P})",
    )
    parser.add_argument(
        "--culling",
        choices=CULLING_RULES,
        default=params.culling,
        help="half: cull iff 2*wins < opponents; strict_majority: iff 2*wins <= opponents "
        f"(default {params.culling})",
    )
    parser.add_argument(
        "--max-rounds",
        type=int,
        default=params.max_rounds,
        help=f"stage-1 rounds before stage 2 is forced (default {params.max_rounds})",
    )
    parser.add_argument(
        "--no-reinstatement",
        dest="reinstate",
        action="store_false",
        help="never bring culled candidates back when fewer than k survive a round (the paper's bare rule)",
    )
    parser.add_argument(
        "--preferences-per-hit", type=int, default=shape.preferences, help=f"default {shape.preferences}"
    )
    parser.add_argument(
        "--challenges-per-hit", type=int, default=shape.challenges, help=f"default {shape.challenges}"
    )
    parser.add_argument(
        "--pay-per-hit",
        type=_money,
        default=pricing.pay_per_hit,
        help=f"USD to the worker per HIT (default {pricing.pay_per_hit})",
    )
    parser.add_argument(
        "--fee", type=_money, default=pricing.fee, help=f"USD platform fee per HIT (default {pricing.fee})"
    )


def _crowd_settings(args: argparse.Namespace) -> tuple[CrowdParams, HitShape, Pricing]:
    params = CrowdParams(
        k=args.k,
        F=args.F,
        P=args.P,
        culling=args.culling,
        max_rounds=args.max_rounds,
        reinstate=args.reinstate,
    )
    hit_shape = HitShape(preferences=args.preferences_per_hit, challenges=args.challenges_per_hit)
    params.validate()
    hit_shape.validate()
    if args.pay_per_hit < 0 or args.fee < 0:
        raise ValueError("--pay-per-hit and --fee must be non-negative")
    pricing = Pricing(pay_per_hit=args.pay_per_hit, fee=args.fee)
    pricing.validate()
    return params, hit_shape, pricing


def _fail(command: str, message: str, status: int) -> int:
    print(f"toppref {command}: error: {message}", file=sys.stderr)
    return status


def simulate_command(args: argparse.Namespace) -> int:
    """``toppref simulate``: 0 on success, 1 on an unreadable or malformed file, 2 on bad parameters."""
    try:
        if args.mode == "crowd":
            params, hit_shape, pricing = _crowd_settings(args)
        elif args.k < 1:
            raise ValueError(f"k must be at least 1 (got k={args.k})")
        if args.error_rate is not None and not 0 <= args.error_rate <= 1:
            raise ValueError(f"--error-rate must be in [0, 1] (got {args.error_rate})")
        if args.discriminability is not None and args.discriminability <= 0:
            raise ValueError(f"--discriminability must be positive (got {args.discriminability})")
    except ValueError as error:
        return _fail("simulate", str(error), EXIT_BAD_PARAMETERS)
    try:
        graded = read_qrels(args.qrels)
        values = read_qrels(args.oracle)
        log = read_judgment_log(args.replay) if args.replay is not None else None
    except (TrecFormatError, JudgmentLogError) as error:
        return _fail("simulate", str(error), EXIT_BAD_INPUT)
    except OSError as error:
        return _fail("simulate", f"cannot read {error.filename}: {error.strerror}", EXIT_BAD_INPUT)

    # The assessor's own noise gets its own stream, so switching noise on does not change the pairings.
    oracle_rng = random.Random(f"{args.seed}:assessor")
    if args.error_rate is not None or args.discriminability is not None:
        oracle = NoisyOracle(
            values, rng=oracle_rng, error_rate=args.error_rate, discriminability=args.discriminability
        )
    else:
        oracle = PerfectOracle(values)
    if log is not None:
        oracle = ReplayOracle(log, fallback=oracle)
    pools = {topic: sorted(pool) for topic, pool in thin_qrels(graded, args.k).items()}
    if args.mode == "crowd":
        nonrelevant = {topic: challenge_nonrelevant(topic, graded) for topic in pools}
        result = simulate_crowd(
            pools,
            oracle,
            params=params,
            seed=args.seed,
            hit_shape=hit_shape,
            pricing=pricing,
            nonrelevant=nonrelevant,
        )
    else:
        result = simulate_tournament(pools, oracle, k=args.k, seed=args.seed)

    summary = result.summary()
    summary["seed"] = args.seed
    summary.update(_agreement_with_oracle(result, PerfectOracle(values), pools, args.k))
    if isinstance(oracle, ReplayOracle):
        summary["replayed_judgments"] = oracle.replayed
        summary["fallback_judgments"] = oracle.fallen_back
    if args.out is not None:
        try:
            _write_qrels(args.out, result.preferences(graded, kind=args.kind))
        except OSError as error:
            return _fail("simulate", f"cannot write {args.out}: {error.strerror}", EXIT_BAD_INPUT)
        summary["out"] = str(args.out)
    print(json.dumps(summary, indent=2))
    return 0


def _agreement_with_oracle(
    result, oracle: PerfectOracle, pools: dict[str, list[str]], k: int
) -> dict[str, object]:
    """How close the campaign came to the oracle's own top-k: topics with the same best item and the
    fraction of the oracle's top-k (per topic, at most k) found in the campaign's top-k."""
    same_best = found = wanted = 0
    for topic, pool in pools.items():
        truth = oracle.ranking(topic, pool)[:k]
        ranked = result.topics[topic].ranked
        same_best += bool(ranked) and ranked[0].docid == truth[0]
        found += len(set(truth) & {item.docid for item in ranked})
        wanted += len(truth)
    return {
        "oracle_same_best": same_best,
        "oracle_top_k_recall": round(found / wanted, 6) if wanted else None,
    }


def _write_qrels(path: Path, preferences: dict[str, dict[str, float]]) -> None:
    from trecio import write_qrels

    with open(path, "w", encoding="utf-8") as out:
        write_qrels(
            out,
            (
                (topic, docid, preferences[topic][docid])
                for topic in sorted(preferences)
                for docid in sorted(preferences[topic])
            ),
        )


def plan_command(args: argparse.Namespace) -> int:
    """``toppref plan``: 0 on success, 1 on an unreadable or malformed file, 2 on bad parameters."""
    try:
        params, hit_shape, pricing = _crowd_settings(args)
        if args.trials < 1:
            raise ValueError(f"--trials must be at least 1 (got {args.trials})")
        if args.pool_size is None and args.qrels is None:
            raise ValueError("give --qrels or --pool-size")
        if args.pool_size is not None and args.pool_size < 0:
            raise ValueError(f"--pool-size must be non-negative (got {args.pool_size})")
    except ValueError as error:
        return _fail("plan", str(error), EXIT_BAD_PARAMETERS)
    if args.pool_size is not None:
        pool_sizes = {"pool": args.pool_size}
    else:
        try:
            graded = read_qrels(args.qrels)
        except TrecFormatError as error:
            return _fail("plan", str(error), EXIT_BAD_INPUT)
        except OSError as error:
            return _fail("plan", f"cannot read {error.filename}: {error.strerror}", EXIT_BAD_INPUT)
        pool_sizes = {topic: len(pool) for topic, pool in thin_qrels(graded, args.k).items()}
    plan = plan_campaign(
        pool_sizes,
        params=params,
        trials=args.trials,
        rng=random.Random(args.seed),
        hit_shape=hit_shape,
        pricing=pricing,
    )
    plan["seed"] = args.seed
    if args.pool_size is not None:
        plan["pool_size"] = args.pool_size
    print(json.dumps(plan, indent=2))
    return 0

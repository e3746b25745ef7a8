"""``toppref`` subcommands of the judging app (see config/cli.py): ``simulate`` and ``plan``, which run the
pure judging engine over TREC files without a database."""

from __future__ import annotations

import argparse
import json
import random
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from config.cli import (
    DataError,
    bounded_int,
    finite_float,
    input_file,
    output_files,
    progress_bar,
    seed,
    warn,
)
from judging.engine import (
    CULLING_RULES,
    DEFAULT_ADAPTIVE_PARAMS,
    DEFAULT_HIT_SHAPE,
    DEFAULT_PARAMS,
    DEFAULT_PRICING,
    MAX_MODEL_ROUNDS,
    MAX_PER_HIT,
    MAX_POOL_SIZE,
    MAX_ROUNDS,
    MAX_TRIALS,
    MODEL_ROUNDS,
    AdaptiveParams,
    CrowdParams,
    HitShape,
    ItemScoreOracle,
    JudgeModel,
    JudgmentRecord,
    NoisyOracle,
    PerfectOracle,
    Pricing,
    ReplayOracle,
    SimulationResult,
    best_first_ceiling,
    challenge_nonrelevant,
    decisive_records,
    fit_item_world,
    fit_reversal_by_gap,
    plan_adaptive,
    plan_bounds_check,
    plan_campaign,
    read_judgment_log,
    simulate_adaptive,
    simulate_crowd,
    simulate_tournament,
    top_k_agreement,
)
from pools.thinning import thin_qrels
from pools.trec import TrecFormatError, read_qrels

EXIT_BAD_INPUT = 1
EXIT_BAD_PARAMETERS = 2


# The bounds that keep a mistyped value from running for minutes are the engine's (judging/engine/params.py),
# shared with POST /api/plan/.


def register(subparsers: argparse._SubParsersAction, only: str | None = None) -> None:
    """Add this app's subcommands (only the one named ``only`` when given; see config/cli.py)."""
    if only in (None, "simulate"):
        _register_simulate(subparsers)
    if only in (None, "plan"):
        _register_plan(subparsers)


def _register_simulate(subparsers: argparse._SubParsersAction) -> None:
    simulate = subparsers.add_parser(
        "simulate",
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
    simulate.add_argument(
        "--mode", choices=("crowd", "tournament", "adaptive"), default="crowd", help="default: crowd"
    )
    _add_adaptive_arguments(simulate)
    simulate.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
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
    noise.add_argument("--error-rate", type=finite_float, help="reverse each judgment with this probability")
    noise.add_argument(
        "--discriminability",
        type=finite_float,
        help="reverse a judgment with probability Phi(-d*gap/sqrt(2)), gap = level difference of the pair",
    )
    noise.add_argument(
        "--noise-from",
        type=Path,
        metavar="LOG",
        help="reverse a judgment with the probability measured, by the pair's difference of preference level, "
        "on this judgment log (topic docidA docidB winner) against --oracle",
    )
    simulate.add_argument(
        "--noise-model",
        choices=("gap", "items"),
        default="gap",
        help="with --noise-from: gap (default) reverses judgments by level gap against --oracle; items fits "
        "per-topic Bradley-Terry scores to the log (NIST grades as prior) and judges from them, and every "
        "oracle_* key is then scored against that world's truth (docs/judge-model.md)",
    )
    simulate.add_argument(
        "--truth-out",
        type=Path,
        help="write the truth the oracle_* keys are scored against as qrels (topic Q0 docid value)",
    )
    simulate.add_argument(
        "--confidence-out",
        type=Path,
        help="write topic<TAB>docid<TAB>p_top_k<TAB>p_best for every candidate of every topic, from the judge "
        "model fitted to the campaign's judgments (docs/judge-model.md)",
    )
    simulate.add_argument(
        "--replay",
        type=Path,
        help="answer from this judgment log (topic docidA docidB winner); the oracle answers the rest",
    )
    simulate.add_argument(
        "--judge-log",
        type=Path,
        metavar="LOG",
        help="answer each ask from this real log while the pair has a vote not yet used (either order; any "
        "form `toppref agreement` reads; ties are no answer), else from the --noise-from model or the "
        "configured judge; the summary counts `replayed` and `modelled` answers",
    )
    simulate.set_defaults(handler=simulate_command, needs_django=False)


def _register_plan(subparsers: argparse._SubParsersAction) -> None:
    plan = subparsers.add_parser(
        "plan",
        description=(
            "Monte-Carlo plan of the crowd pipeline with a consistent crowd, over the pools of the thinned "
            "--qrels or over one pool of --pool-size candidates. Prints JSON on stdout for scripts and a short "
            "summary in words on stderr."
        ),
    )
    plan.add_argument(
        "--qrels", type=Path, help="graded qrels (topic Q0 docid grade); pools are thinned at k"
    )
    plan.add_argument(
        "--pool-size",
        type=bounded_int(0, MAX_POOL_SIZE),
        help=f"plan for a single pool of this many candidates instead (at most {MAX_POOL_SIZE:,})",
    )
    _add_crowd_arguments(plan)
    plan.add_argument("--mode", choices=("crowd", "adaptive"), default="crowd", help="default: crowd")
    _add_adaptive_arguments(plan)
    plan.add_argument(
        "--error-rate",
        type=finite_float,
        default=0.0,
        help="adaptive mode: plan for a crowd that reverses each judgment with this probability (default 0)",
    )
    plan.add_argument(
        "--trials", type=bounded_int(1, MAX_TRIALS), default=100, help="Monte-Carlo trials (default 100)"
    )
    plan.add_argument(
        "-j",
        "--jobs",
        type=bounded_int(1, 64),
        default=1,
        help="trials run at once, in processes (default 1); the plan is the same whatever the count",
    )
    plan.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    plan.set_defaults(handler=plan_command, needs_django=False)


def _money(text: str) -> Decimal:
    """An amount of US dollars: a finite decimal number (``2``, ``0.40``)."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"not an amount: {text!r}") from None
    if not value.is_finite():
        raise argparse.ArgumentTypeError(f"not a finite amount: {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"a negative amount: {text!r}")
    return value


def _add_crowd_arguments(parser: argparse.ArgumentParser) -> None:
    params, shape, pricing = DEFAULT_PARAMS, DEFAULT_HIT_SHAPE, DEFAULT_PRICING
    parser.add_argument(
        "-k",
        type=bounded_int(1, MAX_POOL_SIZE),
        default=params.k,
        help=f"depth of the top-k (default {params.k})",
    )
    parser.add_argument(
        "-F",
        type=bounded_int(1, MAX_POOL_SIZE),
        default=None,
        help=f"stage 2 starts at F candidates or fewer (default {params.F}; adaptive mode "
        f"{DEFAULT_ADAPTIVE_PARAMS.F})",
    )
    parser.add_argument(
        "-P",
        type=bounded_int(1, MAX_POOL_SIZE),
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
        type=bounded_int(1, MAX_ROUNDS),
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
        "--preferences-per-hit",
        type=bounded_int(1, MAX_PER_HIT),
        default=shape.preferences,
        help=f"default {shape.preferences}",
    )
    parser.add_argument(
        "--challenges-per-hit",
        type=bounded_int(0, MAX_PER_HIT),
        default=shape.challenges,
        help=f"default {shape.challenges}",
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


def _add_adaptive_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = DEFAULT_ADAPTIVE_PARAMS
    parser.add_argument(
        "--max-votes",
        type=bounded_int(1, MAX_PER_HIT),
        default=defaults.max_votes,
        help=f"adaptive mode: votes a pair may get before it is a tie (default {defaults.max_votes})",
    )
    parser.add_argument(
        "--confidence",
        type=finite_float,
        default=defaults.confidence,
        help="adaptive mode: the probability that a confirmed pair's order is right "
        f"(default {defaults.confidence}); with --max-judgments, the probability every topic's top-k is right "
        "at which judging stops",
    )
    parser.add_argument(
        "--max-judgments",
        type=bounded_int(1, 10_000_000),
        default=None,
        help="adaptive mode: the budget; once a noisy crowd is seen, rounds are chosen by the judge model "
        "(docs/judge-model.md) and judging stops at this many judgments",
    )
    parser.add_argument(
        "--model-rounds",
        type=bounded_int(1, MAX_MODEL_ROUNDS),
        default=None,
        help="with --max-judgments: the judge model's rounds end by this round, the budget spread over them "
        f"(default {MODEL_ROUNDS}); more rounds buy quality with time, not judgments",
    )


def _adaptive_settings(args: argparse.Namespace) -> AdaptiveParams:
    params = AdaptiveParams(
        k=args.k,
        F=args.F if args.F is not None else DEFAULT_ADAPTIVE_PARAMS.F,
        max_votes=args.max_votes,
        confidence=args.confidence,
        model_rounds=MODEL_ROUNDS if args.model_rounds is None else args.model_rounds,
    )
    params.validate()
    if args.model_rounds is not None and args.max_judgments is None:
        raise ValueError("--model-rounds needs --max-judgments (the model rounds spread a budget)")
    return params


def _crowd_settings(args: argparse.Namespace) -> tuple[CrowdParams, HitShape, Pricing]:
    params = CrowdParams(
        k=args.k,
        F=args.F if args.F is not None else DEFAULT_PARAMS.F,
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
        elif args.mode == "adaptive":
            _, hit_shape, pricing = _crowd_settings(args)
            adaptive = _adaptive_settings(args)
        elif args.k < 1:
            raise ValueError(f"k must be at least 1 (got k={args.k})")
        if args.error_rate is not None and not 0 <= args.error_rate <= 1:
            raise ValueError(f"--error-rate must be in [0, 1] (got {args.error_rate})")
        if args.discriminability is not None and args.discriminability <= 0:
            raise ValueError(f"--discriminability must be positive (got {args.discriminability})")
        if args.replay is not None and args.judge_log is not None:
            raise ValueError("give --replay or --judge-log, not both")
        if args.noise_model == "items" and args.noise_from is None:
            raise ValueError("--noise-model items needs --noise-from LOG")
        if args.max_judgments is not None and args.mode != "adaptive":
            raise ValueError("--max-judgments needs --mode adaptive")
    except ValueError as error:
        return _fail("simulate", str(error), EXIT_BAD_PARAMETERS)
    inputs = (args.qrels, args.oracle, args.replay, args.noise_from, args.judge_log)
    output_files((args.out, args.truth_out, args.confidence_out), inputs=inputs)
    for path in inputs:
        if path is not None:
            input_file(path)
    graded = _read_qrels(args.qrels, "simulate")
    values = _read_qrels(args.oracle, "simulate")
    log = _read_log(args.replay) if args.replay is not None else None
    noise_log = _read_log(args.noise_from) if args.noise_from is not None else None

    # The assessor's own noise gets its own stream, so switching noise on does not change the pairings.
    oracle_rng = random.Random(f"{args.seed}:assessor")
    pools = {topic: sorted(pool) for topic, pool in thin_qrels(graded, args.k).items()}
    world = None
    if noise_log is not None and args.noise_model == "items":
        world = fit_item_world(
            [(r.topic, r.winner, r.loser) for r in noise_log if r.topic in pools],
            candidates=pools,
            grades=graded,
        )
        judged = {r.topic for r in noise_log}
        if not any(world.scores.get(topic) for topic in judged):
            raise DataError(f"{args.noise_from}: no judgment of a topic of {args.qrels}")
        unjudged = sorted(topic for topic, pool in pools.items() if len(pool) > 1 and topic not in judged)
        if unjudged:
            shown = ", ".join(unjudged[:5]) + (", ..." if len(unjudged) > 5 else "")
            warn(
                "simulate",
                f"{args.noise_from}: no judgment of {len(unjudged)} topic(s) of {args.qrels} ({shown}); "
                "their candidates' truth in the item world is the grades' prior, which no vote informs",
            )
        # The world's truth replaces --oracle: the judges answer from it and every oracle_* key is scored
        # against it.
        values = {topic: dict(scores) for topic, scores in world.scores.items()}
        noise_log = None
    reversal_fit = fit_reversal_by_gap(noise_log, values) if noise_log is not None else None
    if reversal_fit is not None and not reversal_fit:
        raise DataError(f"{args.noise_from}: no judgment of a topic of {args.oracle}")
    if world is not None:
        oracle = ItemScoreOracle(world.scores, rng=oracle_rng, reliability=world.crowd_eta)
    elif args.error_rate is not None or args.discriminability is not None or reversal_fit is not None:
        oracle = NoisyOracle(
            values,
            rng=oracle_rng,
            error_rate=args.error_rate,
            discriminability=args.discriminability,
            reversal_by_gap={gap: fit["p"] for gap, fit in reversal_fit.items()} if reversal_fit else None,
        )
    else:
        oracle = PerfectOracle(values)
    if log is not None:
        oracle = ReplayOracle(log, fallback=oracle)
    elif args.judge_log is not None:
        oracle = ReplayOracle(_judge_log(args.judge_log), fallback=oracle, reuse_last=False)
    # The challenges' passages as a campaign's HITs draw them (``challenge_nonrelevant``): a passage that ordinary
    # pairs show too, where the topic has one.
    shown = {docid for pool in pools.values() for docid in pool}
    nonrelevant = {topic: challenge_nonrelevant(topic, graded, shown=shown) for topic in pools}
    with progress_bar(
        total=args.max_judgments if args.mode == "adaptive" else None,
        description="simulate",
        unit=" judgments",
    ) as bar:

        def on_wave(progress: SimulationResult) -> None:
            bar.set_postfix_str(f"wave {progress.rounds}", refresh=False)
            bar.update(progress.judgments - bar.n)

        if args.mode == "crowd":
            result = simulate_crowd(
                pools,
                oracle,
                params=params,
                seed=args.seed,
                hit_shape=hit_shape,
                pricing=pricing,
                nonrelevant=nonrelevant,
                on_wave=on_wave,
            )
        elif args.mode == "adaptive":
            result = simulate_adaptive(
                pools,
                oracle,
                params=adaptive,
                seed=args.seed,
                hit_shape=hit_shape,
                pricing=pricing,
                nonrelevant=nonrelevant,
                max_judgments=args.max_judgments,
                grades=graded,
                on_wave=on_wave,
            )
        else:
            result = simulate_tournament(pools, oracle, k=args.k, seed=args.seed)
        # The judge model's fit for --confidence-out takes seconds to tens of seconds on a TREC track.
        model = None
        if args.confidence_out is not None:
            bar.set_postfix_str("fitting the judge model")
            model = result.confidence(pools, graded, seed=args.seed)

    summary = result.summary()
    if args.mode == "crowd":
        # The same names as `toppref plan` and the campaign's fields (F, P, culling rule).
        summary.update({"F": params.F, "P": params.P, "culling": params.culling})
    elif args.mode == "adaptive":
        summary.update({"F": adaptive.F, "max_votes": adaptive.max_votes, "confidence": adaptive.confidence})
    if world is not None:
        summary["noise_model"] = "items"
        summary["world_reliability"] = round(world.crowd_eta, 6)
    if reversal_fit is not None:
        summary["noise_fit"] = {str(gap): round(fit["p"], 6) for gap, fit in reversal_fit.items()}
    summary["seed"] = args.seed
    summary.update(_agreement_with_oracle(result, PerfectOracle(values), pools, args.k))
    if (
        args.mode == "adaptive"
        and args.discriminability is None
        and reversal_fit is None
        and log is None
        and world is None
    ):
        # What no method can beat with at most --max-votes answers per pair when reversals do not depend on
        # the items (``best_first_ceiling``): the figure to read oracle_same_best_tie_aware against.
        error_rate = args.error_rate or 0.0
        summary["oracle_same_best_ceiling"] = round(
            best_first_ceiling(
                pools, PerfectOracle(values), lambda *_pair: error_rate, max_votes=adaptive.max_votes
            ),
            2,
        )
    if isinstance(oracle, ReplayOracle):
        summary["replayed_judgments"] = oracle.replayed
        summary["fallback_judgments"] = oracle.fallen_back
        summary.update(replayed=oracle.replayed, modelled=oracle.fallen_back)
    if args.out is not None:
        try:
            _write_qrels(args.out, result.preferences(graded, kind=args.kind))
        except OSError as error:
            return _fail("simulate", f"cannot write {args.out}: {error.strerror}", EXIT_BAD_INPUT)
        summary["out"] = str(args.out)
    try:
        if args.truth_out is not None:
            _write_qrels(args.truth_out, {topic: dict(values.get(topic, {})) for topic in pools})
            summary["truth_out"] = str(args.truth_out)
        if model is not None:
            _write_confidence(args.confidence_out, model)
            summary["confidence_out"] = str(args.confidence_out)
            summary["judge_reliability"] = round(model.crowd_eta, 6)
    except OSError as error:
        return _fail("simulate", f"cannot write {error.filename}: {error.strerror}", EXIT_BAD_INPUT)
    print(json.dumps(summary, indent=2))
    return 0


def _read_log(path: Path) -> list:
    from judging.agreement_cli import read_log_file

    return read_log_file(path, read_judgment_log)


def _judge_log(path: Path) -> list[JudgmentRecord]:
    """The decisive votes of a real judgment log, in log order, for ``--judge-log``: a tie answers no forced
    choice, so the asks of a pair the log tied go to the model (docs/agreement.md)."""
    from judging.agreement_cli import read_vote_log

    return decisive_records(read_vote_log(path).votes)


def _agreement_with_oracle(
    result, oracle: PerfectOracle, pools: dict[str, list[str]], k: int
) -> dict[str, object]:
    """How close the campaign came to the oracle's own top-k (``judging.engine.top_k_agreement``): topics with
    the same best item and the fraction of the oracle's top-k (per topic, at most k) found in the campaign's,
    plain and tie-aware (an item counts as right when it shares the right item's oracle value)."""
    agreement = top_k_agreement(
        {topic: outcome.ranked for topic, outcome in result.topics.items()}, pools, oracle, k=k
    )

    def rounded(value: float | None) -> float | None:
        return None if value is None else round(value, 6)

    return {
        "oracle_same_best": agreement.same_best,
        "oracle_top_k_recall": rounded(agreement.recall),
        "oracle_same_best_tie_aware": agreement.same_best_tie_aware,
        "oracle_top_k_recall_tie_aware": rounded(agreement.recall_tie_aware),
        "oracle_top_k_recall_at_k": rounded(agreement.recall_at_k),
        "oracle_top_k_recall_tie_aware_at_k": rounded(agreement.recall_tie_aware_at_k),
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


def _write_confidence(path: Path, model: JudgeModel) -> None:
    """``topic<TAB>docid<TAB>p_top_k<TAB>p_best`` for every candidate, topics in order, best score first."""
    with open(path, "w", encoding="utf-8") as out:
        for topic in sorted(model.topics):
            for item in model.topics[topic].items:
                out.write(f"{topic}\t{item.docid}\t{item.p_top_k:.4f}\t{item.p_best:.4f}\n")


def _read_qrels(path: Path, command: str) -> dict[str, dict[str, float]]:
    """The qrels at ``path``, or :class:`DataError` with the reader's ``file:line: problem``; an empty file is
    a warning (every topic then has an empty pool)."""
    try:
        qrels = read_qrels(path)
    except TrecFormatError as error:
        raise DataError(str(error)) from None
    except UnicodeDecodeError as error:
        raise DataError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise DataError(f"cannot read {error.filename}: {error.strerror}") from None
    if not qrels:
        warn(command, f"{path} holds no judgments")
    return qrels


def plan_command(args: argparse.Namespace) -> int:
    """``toppref plan``: 0 on success, 1 on an unreadable or malformed file, 2 on bad parameters."""
    try:
        params, hit_shape, pricing = _crowd_settings(args)
        adaptive = _adaptive_settings(args) if args.mode == "adaptive" else None
        if not 0 <= args.error_rate < 0.5:
            raise ValueError(f"--error-rate must be in [0, 0.5) (got {args.error_rate})")
        if args.trials < 1:
            raise ValueError(f"--trials must be at least 1 (got {args.trials})")
        if args.pool_size is None and args.qrels is None:
            raise ValueError("give --qrels or --pool-size")
        if args.max_judgments is not None and adaptive is None:
            raise ValueError("--max-judgments needs --mode adaptive")
        if args.pool_size is not None and args.pool_size < 0:
            raise ValueError(f"--pool-size must be non-negative (got {args.pool_size})")
    except ValueError as error:
        return _fail("plan", str(error), EXIT_BAD_PARAMETERS)
    if args.pool_size is not None:
        pool_sizes = {"pool": args.pool_size}
    else:
        input_file(args.qrels)
        graded = _read_qrels(args.qrels, "plan")
        pool_sizes = {topic: len(pool) for topic, pool in thin_qrels(graded, args.k).items()}
    try:
        plan_bounds_check(pool_sizes, params=params, hit_shape=hit_shape, trials=args.trials)
    except ValueError as error:
        return _fail("plan", str(error), EXIT_BAD_PARAMETERS)
    # An adaptive plan of a TREC track at a budget takes tens of seconds a trial: the bar gives its end time.
    with progress_bar(
        total=args.trials * (2 if adaptive is not None else 1), description="plan", unit="trial"
    ) as bar:
        crowd_plan = plan_campaign(
            pool_sizes,
            params=params,
            trials=args.trials,
            rng=random.Random(args.seed),
            hit_shape=hit_shape,
            pricing=pricing,
            error_rate=args.error_rate,
            on_trial=bar.update,
            jobs=args.jobs,
        )
        plan: dict[str, Any] | None = None
        if adaptive is not None:
            plan = plan_adaptive(
                pool_sizes,
                params=adaptive,
                trials=args.trials,
                rng=random.Random(args.seed),
                hit_shape=hit_shape,
                pricing=pricing,
                error_rate=args.error_rate,
                max_judgments=args.max_judgments,
                on_trial=bar.update,
                jobs=args.jobs,
            )
    if plan is not None:
        # The paper's procedure on the same pools and crowd, to choose the mode by: under a crowd that errs
        # often the adaptive mode calls most pairs ties and spends more for less (docs/decisions.md
        # "Adaptive mode").
        plan["crowd"] = {
            name: crowd_plan[name]
            for name in (
                "judgments",
                "hits",
                "cost_usd",
                "rounds",
                "p_lost",
                "p_lost_se",
                "top_k_recall",
                "best_first",
            )
        }
    else:
        plan = crowd_plan
    plan["seed"] = args.seed
    if args.pool_size is not None:
        plan["pool_size"] = args.pool_size
    print(json.dumps(plan, indent=2, allow_nan=False))
    summary = adaptive_plan_summary(plan) if adaptive is not None else plan_summary(plan, k=args.k)
    print(summary, file=sys.stderr)
    return 0


def adaptive_plan_summary(plan: dict) -> str:
    """The adaptive plan in words: expected judgments, HITs, cost and rounds, ties, and the miss risk."""
    topics = plan["topics"]
    noise = (
        f"a crowd erring {plan['error_rate']:.0%} of the time" if plan["error_rate"] else "a consistent crowd"
    )
    return "\n".join(
        [
            f"plan (adaptive): {topics} {'topic' if topics == 1 else 'topics'}, {plan['candidates']:,} candidates, "
            f"k={plan['k']} F={plan['F']} max votes {plan['max_votes']} confidence {plan['confidence']}, "
            f"{noise}, {plan['trials']} trials: about {plan['judgments']:,.0f} judgments "
            f"(sd {plan['judgments_sd']:,.0f}) in {plan['hits']:,.0f} HITs over {plan['rounds']:,.0f} rounds, "
            f"costing about ${plan['cost_usd']:,.2f}; about {plan['pairs_tied']:,.0f} pairs end as ties.",
            f"Risk: about {_article(_percent(plan['p_lost']))} {_percent(plan['p_lost'])} chance per topic that "
            f"the output misses a true top-{plan['k']} passage.",
            *_quality_comparison(plan),
            *_crowd_comparison(plan),
        ]
    )


def _quality_comparison(plan: dict) -> list[str]:
    """With a budget (--max-judgments): the quality it buys, expected top-k recall and best-first, beside the
    paper's procedure's at the same crowd."""
    if plan.get("max_judgments") is None:
        return []
    crowd = plan.get("crowd", {})
    return [
        f"Within {plan['max_judgments']:,} judgments: expected top-{plan['k']} recall {plan['top_k_recall']:.3f} "
        f"and the true best first in {plan['best_first']:,.1f} of {plan['topics']} topics (the paper's "
        f"procedure: {crowd.get('top_k_recall', float('nan')):.3f} and {crowd.get('best_first', float('nan')):,.1f})."
    ]


def _crowd_comparison(plan: dict) -> list[str]:
    """The sentence that sets the adaptive plan beside the paper's procedure on the same pools and crowd, and
    says which to choose when one is both cheaper and no riskier."""
    crowd = plan.get("crowd")
    if not crowd:
        return []
    line = (
        f"The paper's procedure (--mode crowd) on the same pools and crowd: about {crowd['judgments']:,.0f} "
        f"judgments, costing about ${crowd['cost_usd']:,.2f}, with {_article(_percent(crowd['p_lost']))} "
        f"{_percent(crowd['p_lost'])} chance per topic of missing a true top-{plan['k']} passage"
    )
    if crowd["cost_usd"] <= plan["cost_usd"] and crowd["p_lost"] <= plan["p_lost"]:
        line += ": the better buy for this crowd."
    elif plan["cost_usd"] <= crowd["cost_usd"] and plan["p_lost"] <= crowd["p_lost"]:
        line += ": the adaptive mode is the better buy."
    else:
        line += "."
    return [line]


def plan_summary(plan: dict, *, k: int) -> str:
    """The plan in words for people (stdout keeps the JSON for scripts): expected judgments, HITs and cost,
    then ``p_miss`` and ``p_lost`` as chances (paper "Assessing top-k preferences", section 4.3: a true top-k
    item that fails to win a majority of its pairings is culled; reinstatement is docs/decisions.md's)."""
    topics = plan["topics"]
    lines = [
        f"plan: {topics} {'topic' if topics == 1 else 'topics'}, {plan['candidates']:,} candidates, "
        f"k={plan['k']} F={plan['F']} P={plan['P']} culling={plan['culling']}, {plan['trials']} trials: "
        f"about {plan['judgments']:,.0f} judgments (sd {plan['judgments_sd']:,.0f}) in {plan['hits']:,.0f} HITs, "
        f"costing about ${plan['cost_usd']:,.2f}."
    ]
    p_miss, p_lost = plan.get("p_miss"), plan.get("p_lost")
    if p_miss is None:
        lines.append(
            f"No pool has more than F={plan['F']} candidates: stage 1 never culls, nothing can be lost."
        )
    else:
        per = "per topic, " if topics > 1 else ""
        lines.append(
            f"Risk: {per}about {_article(_percent(p_miss))} {_percent(p_miss)} chance that stage 1 culls a true top-{k} passage; "
            f"after reinstatement about {_percent(p_lost)} that one is missing from the output."
        )
    return "\n".join(lines)


def _percent(probability: float | None) -> str:
    if probability is None:
        return "n/a"
    if 0 < probability < 0.01:
        return "<1%"
    return f"{probability:.0%}"


def _article(number: str) -> str:
    """'an' before numbers read with a vowel sound (8%, 11%, 18%, 80-89%), else 'a'."""
    digits = number.lstrip("<").rstrip("%")
    return "an" if digits.startswith("8") or digits in ("11", "18") else "a"

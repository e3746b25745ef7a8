"""The whole CAsT-sized crowd campaign through the Django models, the services and Celery, with simulated
workers answering from the released preference qrels (a consistent crowd).

    .venv/bin/python benchmarks/pipeline.py                       # sqlite-eager, then the others if reachable
    .venv/bin/python benchmarks/pipeline.py --modes sqlite-eager --topics 20

Modes (each in a fresh database, in its own process, since Django is configured once per process):
- ``sqlite-eager``: SQLite file, Celery tasks run in-process on commit.
- ``postgres-eager``: PostgreSQL (``--postgres``, database ``toppref_bench`` recreated), tasks in-process.
- ``postgres-worker``: PostgreSQL + Redis (``--redis``, database 14): a real ``celery worker`` process closes
  rounds and builds HITs while this process plays the crowd.

Prints one row per mode: wall time, judgments counted (pairs with a valid judgment), answers (including
challenges), HITs, SQL queries per counted judgment (counted with a connection execute wrapper in this
process, ``BEGIN`` included; in worker mode the worker's own queries are not included), the top-k agreement
with the oracle, and the wall time against ``toppref simulate`` (the pure engine) on the same topics, seed and
oracle, timed in the same run as a command (``simulate_s``, its start included). The goals (at most
``GOAL_RATIO`` times ``toppref simulate`` and ``GOAL_QUERIES_PER_JUDGMENT`` queries per counted judgment on
SQLite eager) are printed with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
CAST_DIR = REPO_DIR.parent / "shared" / "data" / "cast2019"
MODES = ("sqlite-eager", "postgres-eager", "postgres-worker")
BENCH_DATABASE = "toppref_bench"
GOAL_RATIO = 15.0
GOAL_QUERIES_PER_JUDGMENT = 2.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--topics", type=int, default=None, help="only the first N topics (default: all 173)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--postgres", default="postgres://postgres@127.0.0.1:5432", help="server URL, no database"
    )
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    parser.add_argument(
        "--database",
        default=BENCH_DATABASE,
        help=f"PostgreSQL database, dropped and recreated (default {BENCH_DATABASE})",
    )
    parser.add_argument("--run", choices=MODES, help=argparse.SUPPRESS)  # internal: one mode in this process
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run_mode(args)))
        return 0
    simulate_s = time_toppref_simulate(args)
    rows = []
    for mode in args.modes:
        row = run_in_subprocess(mode, args)
        if "wall_s" in row:
            row["simulate_s"] = round(simulate_s, 2)
            row["ratio"] = round(row["wall_s"] / simulate_s, 1)
        rows.append(row)
        print_table(rows, args)
    print_goals(rows)
    return 0


def time_toppref_simulate(args: argparse.Namespace) -> float:
    """Wall seconds of ``toppref simulate`` (crowd mode, the same seed and oracle) on the campaign's topics,
    run as a command as a user would (the best of three, so one busy moment of the machine does not count)."""
    workdir = Path(tempfile.mkdtemp(prefix="toppref-bench-simulate-"))
    graded, oracle = CAST_DIR / "qrels.graded.txt", CAST_DIR / "qrels.preference.txt"
    if args.topics:
        topics = sorted({line.split()[0] for line in graded.read_text().splitlines() if line.strip()})
        keep = set(topics[: args.topics])
        for source, target in ((graded, workdir / "graded.txt"), (oracle, workdir / "oracle.txt")):
            lines = source.read_text().splitlines(keepends=True)
            target.write_text("".join(line for line in lines if line.split() and line.split()[0] in keep))
        graded, oracle = workdir / "graded.txt", workdir / "oracle.txt"
    toppref = Path(sys.executable).with_name("toppref")
    command = [str(toppref), "simulate", "--qrels", str(graded), "--oracle", str(oracle)]
    command += ["--seed", str(args.seed), "--out", str(workdir / "preferences.txt")]
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(command, cwd=REPO_DIR, check=True, capture_output=True)
        timings.append(time.perf_counter() - started)
    return min(timings)


def run_in_subprocess(mode: str, args: argparse.Namespace) -> dict:
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_LOG_LEVEL": "WARNING"}
    env.pop("REDIS_URL", None)
    workdir = Path(tempfile.mkdtemp(prefix="toppref-bench-"))
    if mode == "sqlite-eager":
        env["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    else:
        env["DATABASE_URL"] = f"{args.postgres}/{args.database}"
    if mode == "postgres-worker":
        env["REDIS_URL"] = args.redis
    command = [sys.executable, __file__, "--run", mode, "--seed", str(args.seed)]
    command += ["--postgres", args.postgres, "--redis", args.redis, "--database", args.database]
    if args.topics:
        command += ["--topics", str(args.topics)]
    result = subprocess.run(command, env=env, cwd=REPO_DIR, capture_output=True, text=True)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        return {"mode": mode, "error": " | ".join(tail)}
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_mode(args: argparse.Namespace) -> dict:
    """One mode, in this process: fresh database, import, campaign, simulated crowd, measurements."""
    if args.run != "sqlite-eager":
        recreate_postgres_database(args.postgres, args.database)
    sys.path.insert(0, str(REPO_DIR))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from judging.engine import PerfectOracle, top_k_agreement
    from judging.models import Campaign
    from judging.selectors import campaign_candidate_pools, campaign_progress, campaign_ranked
    from judging.services import campaign_create, campaign_start
    from judging.services.simulated_crowd import campaign_simulate
    from pools.models import Topic
    from pools.services import collection_create, qrels_import
    from pools.trec import read_qrels

    call_command("migrate", verbosity=0)
    collection = collection_create(name="cast2019", is_strict=False)
    qrels_import(collection=collection, path=CAST_DIR / "qrels.graded.txt")
    values = read_qrels(CAST_DIR / "qrels.preference.txt")
    oracle = PerfectOracle(values)
    topic_ids = sorted(Topic.objects.filter(collection=collection).values_list("topic_id", flat=True))[
        : args.topics
    ]
    campaign = campaign_create(collection=collection, name="bench", seed=args.seed)

    worker = start_worker() if args.run == "postgres-worker" else None
    queries = [0]

    def count(execute, sql, params, many, context):
        queries[0] += 1
        return execute(sql, params, many, context)

    started = time.perf_counter()
    try:
        with connection.execute_wrapper(count):
            campaign = campaign_start(campaign=campaign, topic_ids=topic_ids)
            report = campaign_simulate(
                campaign=campaign, oracle=oracle, drive=worker is None, timeout_seconds=300
            )
    finally:
        if worker is not None:
            stop_worker(worker)
    wall = time.perf_counter() - started

    campaign.refresh_from_db()
    progress = campaign_progress(campaign=campaign)
    judgments = progress.judgments
    ranked = campaign_ranked(campaign=campaign)
    # the one scoring function of `toppref simulate` and the tests: the oracle's top-k within each pool
    agreement = top_k_agreement(ranked, campaign_candidate_pools(campaign=campaign), oracle, k=campaign.k)
    return {
        "mode": args.run,
        "status": campaign.status,
        "topics": len(topic_ids),
        "judgments": judgments,
        "answers": progress.answers["preferences"] + progress.answers["challenges"],
        "hits": report.hits,
        "cost_usd": str(progress.spend_usd),
        "wall_s": round(wall, 1),
        "queries": queries[0],
        "queries_per_judgment": round(queries[0] / max(judgments, 1), 2),
        "same_best": f"{agreement.same_best}/{agreement.topics}",
        "top5_recall": round(agreement.recall or 0.0, 4),
        "campaigns": Campaign.objects.count(),
    }


def recreate_postgres_database(server_url: str, database: str) -> None:
    import psycopg

    with psycopg.connect(f"{server_url}/postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        connection.execute(f"CREATE DATABASE {database}")


def start_worker() -> subprocess.Popen:
    from config.celery import app

    app.control.purge()
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--concurrency=2",
            "--loglevel=WARNING",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=REPO_DIR,
        env=os.environ | {"DATABASE_CONN_MAX_AGE": "60"},
        start_new_session=True,  # its own process group, so the prefork children can be killed with it
    )


def stop_worker(worker: subprocess.Popen) -> None:
    """Warm shutdown (finish running tasks), then kill the process group if it lingers."""
    worker.terminate()
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()


def print_table(rows: list[dict], args: argparse.Namespace) -> None:
    columns = [
        ("mode", 16),
        ("status", 6),
        ("topics", 6),
        ("judgments", 9),
        ("answers", 7),
        ("hits", 5),
        ("cost_usd", 8),
        ("wall_s", 7),
        ("queries", 8),
        ("queries_per_judgment", 20),
        ("same_best", 9),
        ("top5_recall", 11),
        ("simulate_s", 10),
        ("ratio", 6),
    ]
    print(
        f"\nCAsT 2019 crowd campaign through Django (k=5, F=9, P=7, seed {args.seed}; oracle qrels.preference.txt)"
    )
    print(" ".join(f"{name:>{width}}" for name, width in columns))
    for row in rows:
        if "error" in row:
            print(f"{row['mode']:>16} failed: {row['error']}")
            continue
        print(" ".join(f"{row.get(name, ''):>{width}}" for name, width in columns))
    sys.stdout.flush()


def print_goals(rows: list[dict]) -> None:
    """Each mode against the goals: wall at most GOAL_RATIO x ``toppref simulate``, at most
    GOAL_QUERIES_PER_JUDGMENT queries per counted judgment (the goals are set for SQLite eager)."""
    print(
        f"\ngoals (sqlite-eager): wall <= {GOAL_RATIO:g} x toppref simulate, "
        f"<= {GOAL_QUERIES_PER_JUDGMENT:g} queries per counted judgment"
    )
    for row in rows:
        if "ratio" not in row:
            continue
        ratio_ok = "met" if row["ratio"] <= GOAL_RATIO else "missed"
        queries_ok = "met" if row["queries_per_judgment"] <= GOAL_QUERIES_PER_JUDGMENT else "missed"
        print(
            f"{row['mode']:>16}: {row['wall_s']} s = {row['ratio']}x toppref simulate ({row['simulate_s']} s): "
            f"{ratio_ok}; {row['queries_per_judgment']} queries per counted judgment: {queries_ok}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())

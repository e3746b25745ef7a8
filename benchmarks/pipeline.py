"""The whole CAsT-sized crowd campaign through the Django models, the services and Celery, with simulated
workers answering from the released preference qrels (a consistent crowd).

    .venv/bin/python benchmarks/pipeline.py                       # sqlite-eager, then the others if reachable
    .venv/bin/python benchmarks/pipeline.py --modes sqlite-eager --topics 20

Modes (each in a fresh database, in its own process, since Django is configured once per process):
- ``sqlite-eager``: SQLite file, Celery tasks run in-process on commit.
- ``postgres-eager``: PostgreSQL (``--postgres``, database ``toppref_bench`` recreated), tasks in-process.
- ``postgres-worker``: PostgreSQL + Redis (``--redis``, database 14): a real ``celery worker`` process closes
  rounds and builds HITs while this process plays the crowd.

Prints one row per mode: wall and CPU seconds (of this process: in worker mode the worker's are not in it, nor
PostgreSQL's), judgments counted (pairs with a valid judgment), answers (including challenges), HITs, SQL
queries per counted judgment (counted with a connection execute wrapper in this process, ``BEGIN`` included;
in worker mode the worker's own queries are not included), the top-k agreement with the oracle, and the wall
and CPU time against ``toppref simulate`` (the pure engine) on the same topics, seed and oracle, timed in the
same run as a command (``simulate_s``, its start included; the best of three). ``--stages`` adds a table of
each stage's calls, wall and CPU seconds and queries, each exclusive of the stages nested in it. The goals
(at most ``GOAL_RATIO`` times ``toppref simulate`` on SQLite, ``GOAL_RATIO_POSTGRES`` on PostgreSQL, and
``GOAL_QUERIES_PER_JUDGMENT`` queries per counted judgment) are printed with the table. DEBUG is off, as in
production.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
GOAL_RATIO = 15.0  # SQLite
GOAL_RATIO_POSTGRES = 25.0
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
    parser.add_argument(
        "--stages",
        action="store_true",
        help="also print each stage's calls, wall and CPU seconds and queries (exclusive of nested stages)",
    )
    parser.add_argument(
        "--profile", metavar="FILE", help="write a cProfile of each mode's campaign to FILE.MODE"
    )
    parser.add_argument("--run", choices=MODES, help=argparse.SUPPRESS)  # internal: one mode in this process
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run_mode(args)))
        return 0
    simulate_s, simulate_cpu_s = time_toppref_simulate(args)
    rows = []
    for mode in args.modes:
        row = run_in_subprocess(mode, args)
        if "wall_s" in row:
            row["simulate_s"] = round(simulate_s, 2)
            row["ratio"] = round(row["wall_s"] / simulate_s, 1)
            row["simulate_cpu_s"] = round(simulate_cpu_s, 2)
            row["cpu_ratio"] = round(row["cpu_s"] / simulate_cpu_s, 1)
        rows.append(row)
        print_table(rows, args)
    print_goals(rows)
    return 0


def time_toppref_simulate(args: argparse.Namespace) -> tuple[float, float]:
    """Wall and CPU seconds of ``toppref simulate`` (crowd mode, the same seed and oracle) on the campaign's
    topics, run as a command as a user would (the best of three, so one busy moment of the machine does not
    count)."""
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
    timings, cpu_timings = [], []
    for _ in range(3):
        started, cpu_started = time.perf_counter(), children_cpu()
        subprocess.run(command, cwd=REPO_DIR, check=True, capture_output=True)
        timings.append(time.perf_counter() - started)
        cpu_timings.append(children_cpu() - cpu_started)
    return min(timings), min(cpu_timings)


def children_cpu() -> float:
    """User and system CPU seconds of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_in_subprocess(mode: str, args: argparse.Namespace) -> dict:
    # DEBUG off, as in production: DEBUG logs every query (on SQLite with one more query per statement to
    # quote its parameters), a cost no deployment pays.
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_LOG_LEVEL": "WARNING",
        "DJANGO_DEBUG": "false",
    }
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
    if args.stages:
        command += ["--stages"]
    if args.profile:
        command += ["--profile", args.profile]
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

    # The tasks modules load before the clock starts, as a Celery worker loads them at its start and as
    # django.setup() is outside the clock: the campaign is measured, not the process's start.
    from config.celery import app

    app.loader.import_default_modules()
    worker = start_worker() if args.run == "postgres-worker" else None
    stages = StageMeter(enabled=args.stages)
    campaign_start = stages.wrap("campaign_start", campaign_start)
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()

    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        with connection.execute_wrapper(stages.count):
            if profiler is not None:
                profiler.enable()
            campaign = campaign_start(campaign=campaign, topic_ids=topic_ids)
            report = campaign_simulate(
                campaign=campaign, oracle=oracle, drive=worker is None, timeout_seconds=300
            )
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(f"{args.profile}.{args.run}")
        if worker is not None:
            stop_worker(worker)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started

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
        "cpu_s": round(cpu, 1),
        "queries": stages.queries,
        "queries_per_judgment": round(stages.queries / max(judgments, 1), 2),
        "same_best": f"{agreement.same_best}/{agreement.topics}",
        "top5_recall": round(agreement.recall or 0.0, 4),
        "campaigns": Campaign.objects.count(),
        "stages": stages.table(),
    }


class StageMeter:
    """Calls, wall and CPU seconds and SQL queries per stage of the campaign path, each exclusive of the
    stages nested in it (an eager task runs inside the commit of the service that queued it). With
    ``enabled=False`` only the total of queries is kept."""

    def __init__(self, *, enabled: bool):
        self.enabled = enabled
        self.queries = 0
        self.stack: list[str] = ["other"]
        self.totals: dict[str, list[float]] = {}  # name -> [calls, wall, cpu, queries]
        self.marks: list[tuple[float, float]] = []
        if enabled:
            self._install()

    def count(self, execute, sql, params, many, context):
        self.queries += 1
        if self.enabled:
            self._row(self.stack[-1])[3] += 1
        return execute(sql, params, many, context)

    def _row(self, name: str) -> list[float]:
        return self.totals.setdefault(name, [0, 0.0, 0.0, 0])

    def _charge(self) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        if self.marks:
            row = self._row(self.stack[-1])
            row[1] += wall - self.marks[-1][0]
            row[2] += cpu - self.marks[-1][1]
            self.marks[-1] = (wall, cpu)
        else:
            self.marks.append((wall, cpu))

    def wrap(self, name: str, function):
        if not self.enabled:
            return function

        def measured(*args, **kwargs):
            self._charge()
            self.stack.append(name)
            self._row(name)[0] += 1
            try:
                return function(*args, **kwargs)
            finally:
                self._charge()
                self.stack.pop()

        return measured

    def _install(self) -> None:
        """Wrap the services where the campaign path looks them up (module globals, read at call time)."""
        from judging.services import campaigns, hits, judgments, rounds, simulated_crowd

        simulated_crowd.hit_assign_next = self.wrap("hit_assign_next", simulated_crowd.hit_assign_next)
        simulated_crowd.assignment_submit = self.wrap("assignment_submit", simulated_crowd.assignment_submit)
        simulated_crowd._open_hit_slots = self.wrap("simulate: read slots", simulated_crowd._open_hit_slots)
        simulated_crowd.campaign_advance = self.wrap("campaign_advance", simulated_crowd.campaign_advance)
        judgments._rounds_close_complete = self.wrap("rounds complete?", judgments._rounds_close_complete)
        rounds.round_close_if_complete = self.wrap("round_close", rounds.round_close_if_complete)
        campaigns.round_close_if_complete = rounds.round_close_if_complete
        hits.hit_build = self.wrap("hit_build", hits.hit_build)
        campaigns.hit_build = hits.hit_build

    def table(self) -> list[list]:
        if not self.enabled:
            return []
        self._charge()
        return [
            [name, int(calls), round(wall, 2), round(cpu, 2), int(queries)]
            for name, (calls, wall, cpu, queries) in self.totals.items()
        ]


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
        ("cpu_s", 6),
        ("queries", 8),
        ("queries_per_judgment", 20),
        ("same_best", 9),
        ("top5_recall", 11),
        ("simulate_s", 10),
        ("ratio", 6),
        ("simulate_cpu_s", 14),
        ("cpu_ratio", 9),
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
    for row in rows:
        if row.get("stages"):
            print(f"\n{row['mode']}: stages (exclusive of nested stages)")
            print(f"{'stage':>22} {'calls':>6} {'wall_s':>7} {'cpu_s':>6} {'queries':>8} {'q/call':>7}")
            for name, calls, wall, cpu, queries in row["stages"]:
                per_call = f"{queries / calls:.1f}" if calls else ""
                print(f"{name:>22} {calls:>6} {wall:>7} {cpu:>6} {queries:>8} {per_call:>7}")
    sys.stdout.flush()


def print_goals(rows: list[dict]) -> None:
    """Each mode against the goals: wall at most GOAL_RATIO x ``toppref simulate`` on SQLite and
    GOAL_RATIO_POSTGRES x on PostgreSQL, at most GOAL_QUERIES_PER_JUDGMENT queries per counted judgment. The
    CPU ratio beside it is this process's CPU against the command's (on PostgreSQL the server's CPU is not in
    it): the wall ratio only measures the code on a quiet machine."""
    print(
        f"\ngoals: wall <= {GOAL_RATIO:g} x toppref simulate on SQLite, {GOAL_RATIO_POSTGRES:g} x on PostgreSQL; "
        f"<= {GOAL_QUERIES_PER_JUDGMENT:g} queries per counted judgment"
    )
    for row in rows:
        if "ratio" not in row:
            continue
        goal = GOAL_RATIO if row["mode"].startswith("sqlite") else GOAL_RATIO_POSTGRES
        ratio_ok = "met" if row["ratio"] <= goal else "missed"
        queries_ok = "met" if row["queries_per_judgment"] <= GOAL_QUERIES_PER_JUDGMENT else "missed"
        print(
            f"{row['mode']:>16}: {row['wall_s']} s = {row['ratio']}x toppref simulate ({row['simulate_s']} s): "
            f"{ratio_ok}; CPU {row['cpu_s']} s = {row['cpu_ratio']}x ({row['simulate_cpu_s']} s); "
            f"{row['queries_per_judgment']} queries per counted judgment: {queries_ok}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())

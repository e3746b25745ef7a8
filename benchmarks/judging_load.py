"""Judging under load on the full stack: gunicorn on PostgreSQL, a real Celery worker and celery beat on Redis,
and N judges logging in and answering over HTTP from a second process on 127.0.0.1. Prints requests/s,
answers/s, p50/p95/p99 latency of each request kind, errors by status and, from the database, the line
``acknowledged N, stored N, duplicates 0, lost 0``; ``--fault`` injects a fault mid-run and adds the time until
every complete round is closed again. The goals of issue 16 are printed beside the measures.

    .venv/bin/python benchmarks/judging_load.py                                # 50 judges, 3 s think, 60 s, CAsT
    .venv/bin/python benchmarks/judging_load.py --judges 200 --think 0
    .venv/bin/python benchmarks/judging_load.py --judges 50 --fault broker-restart
    .venv/bin/python benchmarks/judging_load.py --data demo --judges 2 --seconds 5   # a quick look
    .venv/bin/python benchmarks/judging_load.py --no-js                        # form POST, 303, GET

What it starts, all bound to 127.0.0.1 on free ports, and stops again at the end (also on Ctrl-C or an error):
its own ``redis-server`` (the broker; never the machine's shared Redis, which ``broker-restart`` would restart),
gunicorn (``--web-workers`` sync workers, DEBUG off), ``celery worker`` and ``celery beat``, and the judges'
process. The database (``--database``, default ``toppref_load``, on the PostgreSQL server of ``--postgres`` or of
``DATABASE_URL``) is dropped and created afresh, migrated, and given the collection (TREC CAsT 2019 graded qrels
and questions from ../shared/data/cast2019, every passage a 1,200-character text as in
benchmarks/judging_pages.py; or ``--data demo``), an open crowd campaign, an open tournament campaign on every
topic, and the judge accounts; it is kept after the run for inspection.

The judges: every ``--assessor-every``-th one is a dedicated assessor (tournament pairs), the others are local
crowd workers (HITs). On arrival (spread over ``--ramp`` seconds) each logs in through /accounts/login/ (CSRF) and
reads the instructions; once all have arrived (or after ``--arrival-timeout``) the judging clock starts and every
judge loops for ``--seconds``, starting after one think time of its own (not all in the same millisecond): the pair page (GET /judge/next/), think, answer. Logins and instructions are
reported per second of arrival (a login storm: password hashing), pair pages and answers per second of judging. By default the answer is the pair page script's request (POST with
``X-Toppref-Next: 1``): a server that honours it answers 200 with the next page and ``X-Toppref-Location``, one
request per answer; one that does not answers 303, and the judge follows it with a GET (counted, and reported
as "303 fallbacks"). ``--no-js`` is the plain form: POST, 303, GET. Think time is exponential with mean
``--think`` seconds (``--fixed-think`` for a constant). Crowd judges pass every challenge, as careful judges do:
the judges' process reads each HIT's expected answers from the database once per HIT, outside the timed
requests; other pairs are answered left or right at random. A judge whose request failed waits a second and
asks for the pair page again, as a person would press "continue". An answer that gets no response at all (a
connection reset by a killed web worker) is sent once more as the plain form, as pair.js does (it submits the
form natively when its request fails); counted as "resent", and an error for the judge only if that fails too.

Latencies are as the judges see them (client side, so they include the wait in gunicorn's listen queue); the
"server" columns are gunicorn's own time per request, from its access log. On a shared machine both include
the other processes' CPU use: the load average is printed with the table.

Counted from the database after the run: acknowledged = answers that got a success response (200 or 303),
identified by (judge, assignment, position) or (assessor, topic, left, right); stored = those of them in the
database; lost = acknowledged but not stored; duplicates = a (worker, pair) or tournament pair judged twice.
"Errors on stored answers" are failed answer requests whose answer was stored anyway (a judge saw an error for
work that was kept). A monitor polls the database every half second for complete rounds (every pair has its
winner) that are still open; with ``--fault`` it reports how long after the service's return the last round
complete at that moment was closed, and the longest a complete round stayed open.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

SCRIPT = Path(__file__).resolve()
REPO_DIR = SCRIPT.parent.parent
CAST_DIR = REPO_DIR.parent / "shared" / "data" / "cast2019"
PASSAGE = (
    "The passage text stands in for a CAsT paragraph: several sentences on the topic, with names, numbers and "
    "a few clauses, as a Wikipedia or MS MARCO paragraph would have. "
) * 8
PASSWORD = "load-password-1"
CROWD_CAMPAIGN, TOURNAMENT_CAMPAIGN = "load-crowd", "load-tournament"
FAULTS = ("worker-kill", "broker-restart", "db-drop", "web-kill")
KINDS = ("login", "instructions", "next", "answer")
KIND_LABELS = {
    "login": "login (GET + POST)",
    "instructions": "instructions (GET + POST)",
    "next": "next GET /judge/next/",
    "answer": "answer POST",
}
SUCCESS = {200, 302, 303}
# Connections the fault db-drop must spare: the benchmark's own observers are not the service under test.
OBSERVER_APPS = ("toppref-load-monitor", "toppref-load-judges")
# Issue 16, "Goals".
GOAL_ANSWERS_PER_SECOND = 150
GOAL_ANSWER_P99_MS = 150
GOAL_ROUNDS_CLOSED_SECONDS = 90


# ---------------------------------------------------------------------------------------------------------------
# The orchestrator


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judges", type=int, default=50, help="judges answering at once (default 50)")
    parser.add_argument(
        "--think", type=float, default=3.0, help="mean think time per pair, seconds (default 3; 0: none)"
    )
    parser.add_argument(
        "--fixed-think", action="store_true", help="think exactly --think s (default exponential)"
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the judges judge (default 60)")
    parser.add_argument("--fault", choices=FAULTS, help="inject this fault mid-run")
    parser.add_argument(
        "--fault-at",
        type=float,
        help="seconds into the judging (default: when a HIT is first accepted, at the latest 2/3 of the way)",
    )
    parser.add_argument(
        "--down",
        type=float,
        default=5.0,
        help="worker-kill, broker-restart: seconds down before the restart (5)",
    )
    parser.add_argument(
        "--drain",
        type=float,
        default=None,
        help="after the judges stop, wait up to this long for complete rounds to close (default 100 with --fault, else 15)",
    )
    parser.add_argument("--no-js", action="store_true", help="plain form: POST, 303, GET (no X-Toppref-Next)")
    parser.add_argument(
        "--data", choices=("cast", "demo"), default="cast", help="CAsT 2019 (default) or the demo"
    )
    parser.add_argument("--cast-dir", type=Path, default=CAST_DIR)
    parser.add_argument(
        "--assessor-every", type=int, default=5, help="every n-th judge is an assessor (5; 0: none)"
    )
    parser.add_argument(
        "--web-workers", type=int, default=5, help="gunicorn sync workers (default 5, as docker-compose.yml)"
    )
    parser.add_argument(
        "--celery-concurrency", type=int, default=2, help="celery worker processes (default 2)"
    )
    parser.add_argument(
        "--ramp", type=float, default=2.0, help="judges arrive spread over this many seconds (2)"
    )
    parser.add_argument(
        "--arrival-timeout",
        type=float,
        default=300.0,
        help="judging starts when every judge has logged in, or after this many seconds (300)",
    )
    parser.add_argument(
        "--postgres", help="PostgreSQL server URL without a database (default: DATABASE_URL's)"
    )
    parser.add_argument(
        "--database", default="toppref_load", help="the benchmark's database (dropped and recreated)"
    )
    parser.add_argument(
        "--redis-db", type=int, default=1, help="database number on the benchmark's own redis-server"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--account-hasher",
        default="default",
        help="the hasher of the judges' stored passwords (default: the app's first, Argon2id; pbkdf2_sha256:"
        " accounts made before Argon2, whose first login also rehashes them)",
    )
    parser.add_argument(
        "--app-dir",
        type=Path,
        default=REPO_DIR,
        help="the toppref checkout whose server is measured (default: this script's); its migrations, settings, code",
    )
    parser.add_argument("--json", type=Path, help="also write the measures to this JSON file")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)  # internal: the Django side
    parser.add_argument("--drive", type=Path, help=argparse.SUPPRESS)  # internal: the judges' process
    args = parser.parse_args()
    if args.drive:
        return drive(args.drive)
    if args.prepare:
        return prepare(args)
    problem = check_args(args)
    if problem:
        parser.error(problem)
    run = LoadRun(args)
    try:
        return run.run()
    except KeyboardInterrupt:
        print("\ninterrupted: stopping every process the benchmark started", file=sys.stderr)
        return 130
    finally:
        run.cleanup()


def check_args(args) -> str | None:
    if not 1 <= args.judges <= 5000:
        return f"--judges must be from 1 to 5000 (got {args.judges})"
    if not 0 <= args.think <= 600:
        return f"--think must be from 0 to 600 seconds (got {args.think})"
    if not 1 <= args.seconds <= 3600:
        return f"--seconds must be from 1 to 3600 (got {args.seconds})"
    if args.fault_at is not None and not 0 <= args.fault_at < args.seconds:
        return f"--fault-at must be within the run (0 to {args.seconds:g} s)"
    if args.web_workers < 1 or args.celery_concurrency < 1:
        return "--web-workers and --celery-concurrency must be at least 1"
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,40}", args.database):
        return f"--database must be a plain lower-case PostgreSQL name (got {args.database!r})"
    if not (args.app_dir / "manage.py").is_file():
        return f"--app-dir {args.app_dir} is not a toppref checkout (no manage.py)"
    if args.data == "cast" and not (args.cast_dir / "qrels.graded.txt").is_file():
        return f"no CAsT 2019 data at {args.cast_dir} (qrels.graded.txt): pass --cast-dir or --data demo"
    for binary in ("redis-server",):
        if shutil.which(binary) is None:
            return f"{binary} not found on PATH (the benchmark starts its own broker)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def postgres_server(args) -> str:
    """The server part (no database) of --postgres, else of DATABASE_URL, else the local default."""
    url = args.postgres or os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        url = "postgres://postgres@127.0.0.1:5432"
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def percentile(ordered: list[float], share: float) -> float:
    """Nearest-rank percentile of an ascending list (nan for none)."""
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, int(round(share * len(ordered) + 0.5)) - 1))]


class LoadRun:
    def __init__(self, args):
        self.args = args
        self.workdir = Path(tempfile.mkdtemp(prefix="toppref-load-"))
        self.server = postgres_server(args)
        self.database_url = f"{self.server}/{args.database}"
        self.redis_port = free_port()
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/{args.redis_db}"
        self.web_port = free_port()
        self.processes: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, Path] = {}
        self.monitor: RoundMonitor | None = None
        self.fault_events: list[tuple[str, float]] = []
        self.cpu_start: dict[str, dict[int, float]] | None = None
        self.cpu_end: dict[str, dict[int, float]] | None = None
        self._cleaned = False
        signal.signal(signal.SIGTERM, self._terminate)
        # Also when started in the background of a shell, which would have SIGINT ignored.
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def _terminate(self, *_):
        raise KeyboardInterrupt

    # --- processes ---------------------------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        env = os.environ | {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_ENV": "development",
            "DJANGO_DEBUG": "false",
            "DJANGO_LOG_LEVEL": "WARNING",
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis_url,
            "TOPPREF_MEDIA_ROOT": str(self.workdir / "media"),
            "PYTHONUNBUFFERED": "1",
            # The measured checkout comes first on the path (before this virtual environment's editable install).
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(self.args.app_dir), os.environ.get("PYTHONPATH")])
            ),
        }
        return env

    def start(self, name: str, command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        log = self.workdir / f"{name}.log"
        self.logs[name] = log
        process = subprocess.Popen(
            command,
            cwd=self.args.app_dir,
            env=env or self.env(),
            stdout=log.open("a"),
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: Ctrl-C reaches us only, we stop it in cleanup
        )
        self.processes[name] = process
        return process

    def stop(self, name: str, *, sig: int = signal.SIGTERM, wait: float = 10.0) -> None:
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=10)

    def cleanup(self) -> None:
        if self._cleaned:
            return
        self._cleaned = True
        if self.monitor is not None:
            self.monitor.stop()
        for name in ("judges", "web", "beat", "worker", "redis"):
            self.stop(name, wait=10.0)
        for name in list(self.processes):
            self.stop(name)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def start_redis(self) -> None:
        self.start(
            "redis",
            [
                "redis-server",
                "--port",
                str(self.redis_port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
        )
        self.wait_for(lambda: self.redis_ping(), "redis-server", timeout=20)

    def redis_ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.redis_port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def redis_flushdb(self) -> None:
        """Empty the benchmark's Redis database (only that one, on the benchmark's own server)."""
        with socket.create_connection(("127.0.0.1", self.redis_port), timeout=5) as sock:
            db = str(self.args.redis_db).encode()
            sock.sendall(b"*2\r\n$6\r\nSELECT\r\n$%d\r\n%s\r\n*1\r\n$7\r\nFLUSHDB\r\n" % (len(db), db))
            time.sleep(0.1)
            sock.recv(64)

    def start_worker(self) -> None:
        self.start(
            "worker",
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--loglevel",
                "WARNING",
                "--concurrency",
                str(self.args.celery_concurrency),
                "--hostname",
                f"load-{self.redis_port}@%h",
                "--without-gossip",
                "--without-mingle",
            ],
        )

    def start_beat(self) -> None:
        self.start(
            "beat",
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "beat",
                "--loglevel",
                "WARNING",
                "--schedule",
                str(self.workdir / "beat-schedule"),
                "--pidfile",
                "",
            ],
        )

    def start_web(self) -> None:
        self.start(
            "web",
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.web_port}",
                "--workers",
                str(self.args.web_workers),
                "--timeout",
                "60",
                "--graceful-timeout",
                "5",
                "--log-level",
                "warning",
                # The server's own time per request (microseconds), apart from the wait in its listen queue.
                "--access-logfile",
                str(self.workdir / "access.log"),
                "--access-logformat",
                "%(m)s %(U)s %(s)s %(D)s",
            ],
        )
        self.wait_for(self.web_answers, "gunicorn", timeout=90)

    def web_answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.web_port), timeout=2) as sock:
                sock.sendall(b"GET /accounts/login/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                return sock.recv(16).startswith(b"HTTP/1.")
        except OSError:
            return False

    def wait_for(self, check, what: str, *, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with {process.returncode}: {self.log_tail(name)}")
            time.sleep(0.2)
        raise RuntimeError(f"{what} did not start within {timeout:g} s: {self.log_tail(what)}")

    def log_tail(self, name: str, lines: int = 15) -> str:
        path = self.logs.get(name)
        if path is None or not path.exists():
            return "(no log)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def server_times(self) -> dict[str, list[float]]:
        """Milliseconds gunicorn's workers spent on each judging request, from the access log."""
        times: dict[str, list[float]] = {"next": [], "answer": []}
        path = self.workdir / "access.log"
        if not path.exists():
            return times
        for line in path.read_text(errors="replace").splitlines():
            parts = line.split()
            if len(parts) != 4 or not parts[3].isdigit():
                continue
            method, url, status, micros = parts
            # A 302 from /judge/next/ is a new judge sent to the instructions (arrival, not judging).
            if method == "GET" and url == "/judge/next/" and status != "302":
                times["next"].append(int(micros) / 1000)
            elif method == "POST" and url == "/judge/answer/":
                times["answer"].append(int(micros) / 1000)
        return times

    def web_worker_pids(self) -> list[int]:
        return child_pids(self.processes["web"].pid)

    def cpu_snapshot(self) -> dict[str, dict[int, float]]:
        """CPU seconds so far of each process of each part: gunicorn's workers, the benchmark database's
        PostgreSQL backends (but the benchmark's observers), the Celery worker and its pool, the judges."""
        groups: dict[str, list[int]] = {"web": [], "postgres": [], "celery": [], "judges": []}
        if "web" in self.processes:
            groups["web"] = self.web_worker_pids()
        if "worker" in self.processes:
            worker = self.processes["worker"].pid
            groups["celery"] = [worker, *child_pids(worker)]
        if "judges" in self.processes:
            groups["judges"] = [self.processes["judges"].pid]
        try:
            import psycopg

            with psycopg.connect(self.database_url, application_name=OBSERVER_APPS[0]) as connection:
                groups["postgres"] = [
                    pid
                    for (pid,) in connection.execute(
                        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND application_name <> ALL(%s)"
                        " AND pid <> pg_backend_pid()",
                        (self.args.database, list(OBSERVER_APPS)),
                    )
                ]
        except Exception:  # noqa: BLE001 - a snapshot without PostgreSQL's part is still worth printing
            pass
        snapshot: dict[str, dict[int, float]] = {}
        for group, pids in groups.items():
            snapshot[group] = {pid: cpu for pid in pids if (cpu := process_cpu_seconds(pid)) is not None}
        return snapshot

    def cpu_per_answer(self, answers: int) -> dict[str, float] | None:
        """CPU milliseconds per answer of each part over the judging phase (processes born meanwhile count
        from zero; a process that died meanwhile is missed)."""
        if self.cpu_start is None or self.cpu_end is None or not answers:
            return None
        return {
            group: 1000
            * sum(cpu - self.cpu_start.get(group, {}).get(pid, 0.0) for pid, cpu in pids.items())
            / answers
            for group, pids in self.cpu_end.items()
        }

    # --- the run -----------------------------------------------------------------------------------------------

    def run(self) -> int:
        args = self.args
        started = time.monotonic()
        self.say(f"preparing database {args.database} ({'CAsT 2019' if args.data == 'cast' else 'demo'})...")
        self.create_database()
        prepare_env = self.env()
        prepare_env.pop(
            "REDIS_URL"
        )  # tasks run eagerly while preparing: the first HITs exist before the start
        result = subprocess.run(
            [sys.executable, str(SCRIPT), "--prepare", "--judges", str(args.judges), "--data", args.data]
            + ["--cast-dir", str(args.cast_dir), "--assessor-every", str(args.assessor_every)]
            + [
                "--seed",
                str(args.seed),
                "--app-dir",
                str(args.app_dir),
                "--account-hasher",
                args.account_hasher,
            ],
            cwd=args.app_dir,
            env=prepare_env,
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"preparing the database failed:\n{result.stderr[-3000:] or result.stdout[-3000:]}"
            )
        prepared = json.loads(result.stdout.strip().splitlines()[-1])
        self.say(
            f"  {prepared['topics']} topics, {prepared['open_hits']} open HITs, "
            f"{prepared['assessors']} assessors and {prepared['crowd']} crowd judges in {time.monotonic() - started:.0f} s"
        )
        self.say("starting redis-server, celery worker and beat, gunicorn...")
        self.start_redis()
        self.redis_flushdb()
        self.start_worker()
        self.start_beat()
        self.start_web()
        self.monitor = RoundMonitor(self.database_url)
        self.monitor.start()

        spec = {
            "url": f"http://127.0.0.1:{self.web_port}",
            "judges": prepared["judges"],
            "password": PASSWORD,
            "think": args.think,
            "fixed_think": args.fixed_think,
            "seconds": args.seconds,
            "ramp": args.ramp,
            "arrival_timeout": args.arrival_timeout,
            "no_js": args.no_js,
            "seed": args.seed,
            "database_url": self.database_url,
            "out": str(self.workdir / "judges.json"),
        }
        spec_path = self.workdir / "spec.json"
        spec_path.write_text(json.dumps(spec))
        self.say(f"{args.judges} judges log in on http://127.0.0.1:{self.web_port}/ ...")
        arrival_started = time.monotonic()
        judges = self.start(
            "judges", [sys.executable, str(SCRIPT), "--drive", str(spec_path)], env=os.environ.copy()
        )
        marker = Path(spec["out"]).with_suffix(".started")
        while not marker.exists():
            if judges.poll() is not None:
                raise RuntimeError(
                    f"the judges' process failed ({judges.returncode}): {self.log_tail('judges', 30)}"
                )
            if time.monotonic() - arrival_started > args.arrival_timeout + 60:
                raise RuntimeError("the judges did not start judging")
            time.sleep(0.1)
        judging_started = float(marker.read_text())
        self.cpu_start = self.cpu_snapshot()
        self.monitor.started = judging_started
        self.say(f"  arrived in {judging_started - arrival_started:.0f} s; judging for {args.seconds:g} s")
        fault_thread = None
        if args.fault:
            fault_thread = threading.Thread(target=self.inject, args=(judging_started,), daemon=True)
            fault_thread.start()
        self.progress(judges, judging_started)
        judges.wait()
        self.processes.pop("judges", None)
        if judges.returncode != 0:
            raise RuntimeError(
                f"the judges' process failed ({judges.returncode}): {self.log_tail('judges', 30)}"
            )
        if fault_thread is not None:
            fault_thread.join(timeout=args.down + 60)
        drain = args.drain if args.drain is not None else (100.0 if args.fault else 15.0)
        drained = self.monitor.wait_until_no_complete_open(drain)
        self.monitor.stop()
        report = json.loads(Path(spec["out"]).read_text())
        counts = database_counts(self.database_url, report)
        measures = self.print_tables(report, counts, drained, drain)
        if args.json:
            args.json.write_text(json.dumps(measures, indent=2, default=str))
        for name in ("web", "worker", "beat"):
            tracebacks = self.log_tail(name, 400).count("Traceback")
            if tracebacks:
                print(
                    f"note: the {name} log shows {tracebacks} traceback(s); last lines:\n{self.log_tail(name, 12)}"
                )
        return 0

    def say(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def create_database(self) -> None:
        import psycopg

        with psycopg.connect(f"{self.server}/postgres", autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {self.args.database} WITH (FORCE)")
            connection.execute(f"CREATE DATABASE {self.args.database}")

    def progress(self, judges: subprocess.Popen, started: float) -> None:
        total = self.args.seconds
        bar = None
        if not self.args.quiet:
            from tqdm import tqdm

            bar = tqdm(total=int(total), unit="s", desc="judging", leave=False, file=sys.stderr)
        try:
            while judges.poll() is None:
                time.sleep(min(1.0, max(0.05, started + total - time.monotonic())))
                if self.cpu_end is None and time.monotonic() >= started + total:
                    self.cpu_end = self.cpu_snapshot()
                elapsed = min(total, time.monotonic() - started)
                if bar is not None:
                    bar.n = int(elapsed)
                    bar.set_postfix(judgments=self.monitor.judgments, refresh=False)
                    bar.refresh()
                if time.monotonic() - started > total + 120:
                    raise RuntimeError("the judges' process did not stop 120 s after the end of the run")
        finally:
            if bar is not None:
                bar.close()

    # --- faults ------------------------------------------------------------------------------------------------

    def inject(self, judging_started: float) -> None:
        """The fault at ``--fault-at`` seconds of judging or, by default, when a HIT is first accepted during the
        judging (HITs are accepted in bursts: the fault then meets answers that count, close rounds and queue
        tasks), at the latest two thirds of the way through."""
        if self.args.fault_at is not None:
            time.sleep(max(0.0, judging_started + self.args.fault_at - time.monotonic()))
        else:
            accepted = self.monitor.hits_accepted
            latest = judging_started + self.args.seconds * 2 / 3
            while time.monotonic() < latest and self.monitor.hits_accepted <= accepted:
                time.sleep(0.1)
        fault = self.args.fault
        try:
            if fault == "worker-kill":
                self.mark("fault")
                worker = self.processes["worker"]
                os.killpg(
                    worker.pid, signal.SIGKILL
                )  # the main process and its pool children, no warm shutdown
                worker.wait()
                time.sleep(self.args.down)
                self.start_worker()
                self.mark("back")
            elif fault == "broker-restart":
                self.mark("fault")
                redis = self.processes["redis"]
                os.killpg(redis.pid, signal.SIGKILL)  # no persistence: the queued messages are lost with it
                redis.wait()
                time.sleep(self.args.down)
                self.start_redis()
                self.mark("back")
            elif fault == "db-drop":
                import psycopg

                with psycopg.connect(f"{self.server}/postgres", autocommit=True) as connection:
                    self.mark("fault")
                    rows = connection.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s"
                        " AND pid <> pg_backend_pid() AND application_name <> ALL(%s)",
                        (self.args.database, list(OBSERVER_APPS)),
                    ).fetchall()
                self.terminated = len(rows)
                self.mark("back")
            elif fault == "web-kill":
                pids = self.web_worker_pids()
                self.mark("fault")
                if pids:
                    os.kill(pids[0], signal.SIGKILL)
                self.mark("back")
        except Exception as error:  # reported, never a hung run
            self.fault_error = repr(error)

    def mark(self, event: str) -> None:
        now = time.monotonic()
        self.fault_events.append((event, now))
        if self.monitor is not None:
            self.monitor.mark(event, now)

    # --- report ------------------------------------------------------------------------------------------------

    def print_tables(self, report: dict, counts: dict, drained: bool, drain: float) -> dict:
        args = self.args
        duration = report["duration"]
        requests = report["requests"]
        by_kind: dict[str, list[float]] = {kind: [] for kind in KINDS}
        errors_by_kind: dict[str, int] = dict.fromkeys(KINDS, 0)
        statuses: dict[str, int] = {}
        for kind, status, milliseconds, _ in requests:
            by_kind[kind].append(milliseconds)
            if status not in SUCCESS:
                errors_by_kind[kind] += 1
                label = str(status) if status else "no response"
                statuses[label] = statuses.get(label, 0) + 1
        answers = len(report["acknowledged"])
        mode = "form POST + 303 + GET (--no-js)" if args.no_js else "POST with X-Toppref-Next: 1"
        think = (
            "no think time"
            if args.think == 0
            else f"think {args.think:g} s {'fixed' if args.fixed_think else 'exponential (mean)'}"
        )
        crowd = sum(1 for judge in report["judges"] if judge[1] == "crowd")
        print()
        print(
            f"Judging load: {args.judges} judges ({crowd} crowd, {args.judges - crowd} assessors), {think}, "
            f"{args.seconds:g} s, {mode}"
        )
        print(
            f"  {'CAsT 2019' if args.data == 'cast' else 'demo'} on PostgreSQL, gunicorn {args.web_workers} sync "
            f"workers, Celery worker ({args.celery_concurrency}) + beat on redis-server; judges in a second "
            f"process; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )
        server = self.server_times()
        header = (
            f"{'request':<28} {'count':>7} {'per s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}"
            f"   {'server p50':>10} {'p99 ms':>7}"
        )
        print()
        print(header)
        print("-" * len(header))
        table = {}
        arrival = report["arrival"]
        for kind in KINDS:
            ordered = sorted(by_kind[kind])
            # Logins and instructions happen on arrival, before the judging clock starts: their rate is per
            # second of arrival; pair pages and answers per second of judging.
            row = {
                "count": len(ordered),
                "per_s": len(ordered) / (arrival if kind in ("login", "instructions") else duration),
                "p50": percentile(ordered, 0.50),
                "p95": percentile(ordered, 0.95),
                "p99": percentile(ordered, 0.99),
                "errors": errors_by_kind[kind],
            }
            table[kind] = row
            server_text = ""
            if kind in server:
                ordered_server = sorted(server[kind])
                row["server_p50"] = percentile(ordered_server, 0.50)
                row["server_p99"] = percentile(ordered_server, 0.99)
                server_text = f"   {row['server_p50']:>10.0f} {row['server_p99']:>7.0f}"
            print(
                f"{KIND_LABELS[kind]:<28} {row['count']:>7,} {row['per_s']:>7.1f} {row['p50']:>8.0f} "
                f"{row['p95']:>8.0f} {row['p99']:>8.0f} {row['errors']:>7}{server_text}"
            )
        all_ms = sorted(milliseconds for kind, _, milliseconds, _ in requests if kind in ("next", "answer"))
        print(
            f"{'judging (next + answer)':<28} {len(all_ms):>7,} {len(all_ms) / duration:>7.1f} "
            f"{percentile(all_ms, 0.5):>8.0f} {percentile(all_ms, 0.95):>8.0f} {percentile(all_ms, 0.99):>8.0f} "
            f"{errors_by_kind['next'] + errors_by_kind['answer']:>7}"
        )
        print()
        ready = len(report["judges"]) - len(report["not_ready"])
        print(
            f"arrival: {ready} of {len(report['judges'])} judges logged in and read the instructions in "
            f"{arrival:.1f} s (logins and instructions per s of arrival)"
        )
        print(
            f"judging: requests/s {len(all_ms) / duration:.1f}   answers/s {answers / duration:.1f}   "
            f"requests per answer {len(all_ms) / answers if answers else float('nan'):.2f}   over {duration:.0f} s"
        )
        errors_text = ", ".join(f"{label}: {count}" for label, count in sorted(statuses.items())) or "none"
        print(f"errors by status: {errors_text}")
        if not args.no_js:
            print(
                f"303 fallbacks (server did not honour X-Toppref-Next): {report['fallbacks']} of "
                f"{table['answer']['count']} answers"
            )
            print(f"resent as the plain form after no response (as pair.js does): {report['resent']}")
        print(f'"Nothing left to judge" pages: {report["nothing_left"]}')
        print(
            f"acknowledged {counts['acknowledged']}, stored {counts['stored']}, duplicates {counts['duplicates']}, "
            f"lost {counts['lost']}"
        )
        print(
            f"  (in the database: {counts['judgments']} crowd judgments, {counts['tournament_judgments']} "
            f"tournament judgments, {counts['rounds_closed']} rounds closed, {counts['hits_accepted']} HITs accepted; "
            f"failed answers that were stored: {counts['errors_on_stored']} of {counts['failed_answers']}, "
            f"{counts['errors_on_stored_no_response']} of them without any response)"
        )
        cpu = self.cpu_per_answer(answers)
        if cpu is not None:
            server_ms = cpu["web"] + cpu["postgres"] + cpu["celery"]
            print(
                f"CPU per answer while judging: web {cpu['web']:.1f} ms, PostgreSQL {cpu['postgres']:.1f} ms, "
                f"Celery {cpu['celery']:.1f} ms (server {server_ms:.1f} ms), judges' client {cpu['judges']:.1f} ms"
            )
            print(
                f"  {os.cpu_count()} CPUs / server CPU per answer = {os.cpu_count() * 1000 / server_ms:.0f} answers/s "
                f"at most on this machine were it idle ({os.cpu_count() * 1000 / (server_ms + cpu['judges']):.0f} "
                "with the judges' client on it too)"
            )
        fault = self.fault_summary(drained, drain)
        for line in fault["lines"]:
            print(line)
        print()
        answers_per_second = answers / duration
        answer_p99 = table["answer"]["p99"]
        # None: the goal is not what this run measures (shown, but neither met nor missed).
        goals = [
            (
                f"capacity >= {GOAL_ANSWERS_PER_SECOND} answers/s (--think 0)",
                f"{answers_per_second:.1f} answers/s",
                answers_per_second >= GOAL_ANSWERS_PER_SECOND if args.think == 0 else None,
            ),
            (
                f"answer p99 < {GOAL_ANSWER_P99_MS} ms (200 judges, --think 3)",
                f"{answer_p99:.0f} ms",
                answer_p99 < GOAL_ANSWER_P99_MS if (args.judges, args.think) == (200, 3.0) else None,
            ),
            (
                "acknowledged = stored, no duplicates",
                f"{counts['acknowledged']} = {counts['stored']}, {counts['duplicates']} duplicates",
                counts["lost"] == 0 and counts["duplicates"] == 0,
            ),
            (
                "no error seen for a stored answer",
                f"{counts['errors_on_stored']} errors on stored answers "
                f"({counts['errors_on_stored_no_response']} without a response)",
                counts["errors_on_stored"] == 0,
            ),
            (
                f"every complete round closed within {GOAL_ROUNDS_CLOSED_SECONDS} s",
                fault["goal_text"],
                fault["goal_met"],
            ),
        ]
        print(f"{'goal (issue 16)':<48} {'measured':<58} met")
        for name, measured, met in goals:
            verdict = "n/a (not this run's shape)" if met is None else ("yes" if met else "NO")
            print(f"{name:<48} {measured:<58} {verdict}")
        return {
            "args": {key: str(value) for key, value in vars(args).items()},
            "ports": {"web": self.web_port, "redis": self.redis_port},
            "duration": duration,
            "arrival": arrival,
            "requests_per_second": len(all_ms) / duration,
            "answers_per_second": answers_per_second,
            "kinds": table,
            "errors_by_status": statuses,
            "fallbacks": report["fallbacks"],
            "resent": report["resent"],
            "nothing_left": report["nothing_left"],
            "counts": counts,
            "cpu_ms_per_answer": cpu,
            "fault": {key: value for key, value in fault.items() if key != "lines"},
        }

    def fault_summary(self, drained: bool, drain: float) -> dict:
        monitor = self.monitor
        lines = []
        longest = monitor.longest_open()
        still_open = len(monitor.open_since)
        summary = {"longest_open": longest, "still_open": still_open, "drained": drained}
        if not self.args.fault:
            lines.append(
                f"complete rounds: longest open {longest:.1f} s (polled every {monitor.interval} s); "
                f"{still_open} complete but open {drain:g} s after the end"
                if not drained
                else f"complete rounds: longest open {longest:.1f} s (polled every {monitor.interval} s); all closed at the end"
            )
            summary["goal_met"] = drained and longest <= GOAL_ROUNDS_CLOSED_SECONDS
            summary["goal_text"] = f"longest {longest:.1f} s" + (
                "" if drained else f", {still_open} still open"
            )
            summary["lines"] = lines
            return summary
        events = dict(self.fault_events)
        error = getattr(self, "fault_error", None)
        if error or "back" not in events:
            lines.append(f"fault {self.args.fault}: NOT injected ({error or 'the run ended first'})")
            summary.update(goal_met=False, goal_text="fault not injected", lines=lines)
            return summary
        back = events["back"]
        recovery = monitor.recovery_after(back)
        extra = ""
        if self.args.fault == "db-drop":
            extra = f", {getattr(self, 'terminated', 0)} connections terminated"
        lines.append(
            f"fault {self.args.fault} at {events['fault'] - monitor.started:.1f} s of the run, service back "
            f"{back - events['fault']:.1f} s later{extra}"
        )
        if recovery is None:
            lines.append(
                f"  complete rounds NOT all closed: {still_open} still complete but open {drain:g} s after the "
                f"judges stopped (longest open {longest:.1f} s)"
            )
            summary.update(goal_met=False, goal_text=f"{still_open} rounds still open after the drain")
        else:
            waited, count = recovery
            lines.append(
                f"  every round complete at the service's return ({count}) closed {waited:.1f} s after it; "
                f"longest a complete round stayed open: {longest:.1f} s"
                + ("" if drained else f"; {still_open} complete but open at the end")
            )
            met = waited <= GOAL_ROUNDS_CLOSED_SECONDS and drained
            summary.update(
                recovery_seconds=waited,
                rounds_at_return=count,
                goal_met=met,
                goal_text=f"closed {waited:.1f} s after the return, longest open {longest:.1f} s",
            )
        summary["lines"] = lines
        return summary


def child_pids(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a live process (Linux /proc), None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RoundMonitor:
    """Polls the database every ``interval`` seconds for rounds that are complete (every pair has its winner)
    but still open, remembering when each was first and last seen so; and counts judgments for the progress bar.
    Its own connection, spared by the fault db-drop (it observes, it is not the service)."""

    QUERY = """
        SELECT r.id FROM judging_round r
        WHERE r.closed_at IS NULL
          AND EXISTS (SELECT 1 FROM judging_pair p WHERE p.round_id = r.id)
          AND NOT EXISTS (SELECT 1 FROM judging_pair p WHERE p.round_id = r.id AND p.winner_id IS NULL)
    """

    def __init__(self, database_url: str, interval: float = 0.5):
        self.database_url = database_url
        self.interval = interval
        self.open_since: dict[int, float] = {}
        self.closed: dict[int, tuple[float, float]] = {}  # round -> (first seen complete, seen closed)
        self.judgments = 0
        self.hits_accepted = 0
        self.events: dict[str, float] = {}
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._lock = threading.Lock()
        self.polls = 0

    def start(self) -> None:
        self.started = time.monotonic()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def mark(self, event: str, when: float) -> None:
        self.events[event] = when

    def _loop(self) -> None:
        import psycopg

        connection = None
        while not self._stop.is_set():
            try:
                if connection is None or connection.closed:
                    connection = psycopg.connect(
                        self.database_url, autocommit=True, application_name=OBSERVER_APPS[0]
                    )
                now = time.monotonic()
                ids = {row[0] for row in connection.execute(self.QUERY).fetchall()}
                self.judgments, self.hits_accepted = connection.execute(
                    "SELECT (SELECT count(*) FROM judging_judgment) + (SELECT count(*) FROM judging_tournamentjudgment),"
                    " (SELECT count(*) FROM judging_hit WHERE status = 'accepted')"
                ).fetchone()
                with self._lock:
                    for round_id in ids:
                        self.open_since.setdefault(round_id, now)
                    for round_id in list(self.open_since):
                        if round_id not in ids:
                            self.closed[round_id] = (self.open_since.pop(round_id), now)
                    self.polls += 1
            except psycopg.Error:
                connection = None
            self._stop.wait(self.interval)
        if connection is not None:
            connection.close()

    def wait_until_no_complete_open(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        polls = self.polls
        while time.monotonic() < deadline:
            with self._lock:
                if self.polls > polls + 1 and not self.open_since:
                    return True
            time.sleep(self.interval)
        with self._lock:
            return not self.open_since

    def longest_open(self) -> float:
        now = time.monotonic()
        with self._lock:
            waits = [closed - first for first, closed in self.closed.values()]
            waits += [now - first for first in self.open_since.values()]
        return max(waits, default=0.0)

    def recovery_after(self, back: float) -> tuple[float, int] | None:
        """(seconds from ``back`` until the last round complete at ``back`` was closed, how many there were),
        or None if one of them is still open."""
        with self._lock:
            if any(first <= back for first in self.open_since.values()):
                return None
            closed = [closed for first, closed in self.closed.values() if first <= back < closed]
        return (max(closed) - back if closed else 0.0, len(closed))


def database_counts(database_url: str, report: dict) -> dict:
    """Acknowledged, stored, duplicates and lost from the database, and which failed answers were stored."""
    import psycopg

    with psycopg.connect(database_url, application_name=OBSERVER_APPS[0]) as connection:
        crowd = {
            (username, assignment, position)
            for username, assignment, position in connection.execute(
                """
                SELECT u.username, j.assignment_id, s.position FROM judging_judgment j
                JOIN judging_assignment a ON a.id = j.assignment_id
                JOIN judging_worker w ON w.id = a.worker_id
                JOIN auth_user u ON u.id = w.user_id
                JOIN judging_hitslot s ON s.id = j.slot_id
                """
            )
        }
        tournament = set()
        for username, topic, left, right in connection.execute(
            """
            SELECT u.username, t.campaign_topic_id, t.left_id, t.right_id FROM judging_tournamentjudgment t
            JOIN auth_user u ON u.id = t.assessor_id
            """
        ):
            tournament.add((username, topic, left, right))
            tournament.add((username, topic, right, left))
        duplicates = connection.execute(
            """
            SELECT (SELECT count(*) FROM (
                SELECT a.worker_id, s.pair_id FROM judging_judgment j
                JOIN judging_assignment a ON a.id = j.assignment_id
                JOIN judging_hitslot s ON s.id = j.slot_id
                WHERE s.pair_id IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1) d)
            + (SELECT count(*) FROM (
                SELECT campaign_topic_id, least(left_id, right_id), greatest(left_id, right_id)
                FROM judging_tournamentjudgment GROUP BY 1, 2, 3 HAVING count(*) > 1) t)
            """
        ).fetchone()[0]
        judgments, tournament_judgments, rounds_closed, hits_accepted = connection.execute(
            """
            SELECT (SELECT count(*) FROM judging_judgment), (SELECT count(*) FROM judging_tournamentjudgment),
                   (SELECT count(*) FROM judging_round WHERE closed_at IS NOT NULL),
                   (SELECT count(*) FROM judging_hit WHERE status = 'accepted')
            """
        ).fetchone()

    def stored(identity: list) -> bool:
        username, kind, *key = identity
        return (username, *key) in (crowd if kind == "hit" else tournament)

    acknowledged = report["acknowledged"]
    stored_count = sum(1 for identity in acknowledged if stored(identity))
    failed = report["failed_answers"]
    return {
        "acknowledged": len(acknowledged),
        "stored": stored_count,
        "duplicates": duplicates,
        "lost": len(acknowledged) - stored_count,
        "judgments": judgments,
        "tournament_judgments": tournament_judgments,
        "rounds_closed": rounds_closed,
        "hits_accepted": hits_accepted,
        "failed_answers": len(failed),
        "errors_on_stored": sum(1 for identity, _ in failed if stored(identity)),
        # Of those, the ones with no HTTP response at all (a connection reset by a killed process): only a
        # client retry can hide these; an HTTP error status for a stored answer is the server's doing.
        "errors_on_stored_no_response": sum(
            1 for identity, status in failed if not status and stored(identity)
        ),
    }


# ---------------------------------------------------------------------------------------------------------------
# The Django side: the database's content (run in a subprocess, tasks eager)


def prepare(args) -> int:
    sys.path.insert(0, str(args.app_dir))
    import django

    django.setup()
    import logging

    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import Group
    from django.core.management import call_command

    from judging.models import Campaign, Hit
    from judging.services import campaign_create, campaign_start
    from pools.models import Item
    from pools.services import collection_create, qrels_import, topics_import

    logging.getLogger("celery.app.trace").setLevel(logging.WARNING)
    call_command("migrate", verbosity=0)
    if args.data == "cast":
        collection = collection_create(name="cast2019", is_strict=False)
        topics_import(collection=collection, path=args.cast_dir / "questions.resolved.tsv")
        qrels_import(collection=collection, path=args.cast_dir / "qrels.graded.txt")
        Item.objects.filter(collection=collection).update(text=PASSAGE)
    else:
        from pools.services.demo import demo_load

        collection = demo_load(directory=args.app_dir / "demo").collection
    crowd = campaign_start(
        campaign=campaign_create(collection=collection, name=CROWD_CAMPAIGN, seed=args.seed)
    )
    tournament = campaign_create(
        collection=collection, name=TOURNAMENT_CAMPAIGN, mode="tournament", seed=args.seed
    )
    campaign_start(campaign=tournament)
    groups = {name: Group.objects.get_or_create(name=name)[0] for name in ("assessors", "crowd")}
    # hashed once: the accounts share it (hashing 200 would take a while)
    password = make_password(PASSWORD, hasher=args.account_hasher)
    judges = []
    for number in range(1, args.judges + 1):
        role = "assessors" if args.assessor_every and number % args.assessor_every == 0 else "crowd"
        judges.append((f"load-judge-{number:04d}", role))
    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=username, password=password) for username, _ in judges]
    )
    Membership = get_user_model().groups.through
    Membership.objects.bulk_create(
        [
            Membership(user_id=user.pk, group_id=groups[role].pk)
            for user, (_, role) in zip(users, judges, strict=True)
        ]
    )
    print(
        json.dumps(
            {
                "judges": judges,
                "topics": crowd.campaign_topics.count(),
                "open_hits": Hit.objects.filter(campaign=crowd, status=Hit.Status.OPEN).count(),
                "assessors": sum(1 for _, role in judges if role == "assessors"),
                "crowd": sum(1 for _, role in judges if role == "crowd"),
                "campaigns": list(Campaign.objects.values_list("name", flat=True)),
            }
        )
    )
    return 0


# ---------------------------------------------------------------------------------------------------------------
# The judges' process: asyncio, one client (cookie jar) per judge


class JudgeResponse:
    __slots__ = ("status_code", "headers", "content")

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes):
        self.status_code, self.headers, self.content = status_code, headers, content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


class JudgeClient:
    """A judge's browser, as cheap as it can be: one HTTP/1.1 request per connection on asyncio streams (the
    server's sync workers close every connection anyway), a cookie jar of name=value pairs, no redirects
    followed. It runs on the same two cores as the server it measures, where httpx cost about 2 ms of CPU per
    answer; this costs a fraction of that. Enough HTTP for these pages: Content-Length or chunked bodies,
    Set-Cookie with Max-Age=0 deleting a cookie."""

    def __init__(self, base_url: str, timeout: float = 60.0):
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.netloc, self.timeout = parts.netloc, timeout
        self.cookies: dict[str, str] = {}

    async def request(self, method: str, url: str, data: dict | None = None, headers: dict | None = None):
        return await asyncio.wait_for(self._request(method, url, data, headers or {}), self.timeout)

    async def _request(self, method: str, url: str, data: dict | None, headers: dict) -> JudgeResponse:
        from urllib.parse import urlencode

        body = urlencode(data).encode() if data is not None else b""
        lines = [f"{method} {url} HTTP/1.1", f"Host: {self.netloc}", "Connection: close"]
        if data is not None:
            lines += ["Content-Type: application/x-www-form-urlencoded", f"Content-Length: {len(body)}"]
        if self.cookies:
            lines.append("Cookie: " + "; ".join(f"{name}={value}" for name, value in self.cookies.items()))
        lines += [f"{name}: {value}" for name, value in headers.items()]
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
            raw = await reader.read(-1)
        finally:
            writer.close()
        head, _, content = raw.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        response_headers: dict[str, str] = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "set-cookie":
                self._set_cookie(value)
            response_headers[name] = value
        if response_headers.get("transfer-encoding", "").lower() == "chunked":
            content = _unchunk(content)
        return JudgeResponse(status, response_headers, content)

    def _set_cookie(self, header: str) -> None:
        pair, *attributes = header.split(";")
        name, _, value = pair.strip().partition("=")
        if any(a.strip().lower() in ("max-age=0", "max-age=-1") for a in attributes) or (
            any(a.strip().lower().startswith("expires=thu, 01 jan 1970") for a in attributes)
        ):
            self.cookies.pop(name, None)
        else:
            self.cookies[name] = value


def _unchunk(body: bytes) -> bytes:
    out, rest = bytearray(), body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += rest[:size]
        rest = rest[size + 2 :]
    return bytes(out)


HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class Judges:
    def __init__(self, spec: dict):
        self.spec = spec
        self.requests: list[tuple[str, int, float, float]] = []  # kind, status (0: none), ms, sent at
        self.acknowledged: list[list] = []
        self.failed_answers: list[tuple[list, int]] = []
        self.fallbacks = 0
        self.resent = 0  # answers pair.js resent as the plain form after getting no response
        self.nothing_left = 0
        self.expected: dict[int, dict[int, str]] = {}  # assignment -> position -> side a careful judge picks
        self.connection = None
        self.deadline = 0.0
        self.ready = 0
        self.not_ready: list[str] = []
        self.all_ready = asyncio.Event()
        self.judging = asyncio.Event()

    async def request(self, client, kind: str, method: str, url: str, **kwargs):
        started, sent = time.perf_counter(), time.monotonic()
        try:
            response = await client.request(method, url, **kwargs)
        except Exception:  # noqa: BLE001 - a refused or reset connection is a measured error, status 0
            self.requests.append((kind, 0, (time.perf_counter() - started) * 1000, sent))
            return None
        self.requests.append((kind, response.status_code, (time.perf_counter() - started) * 1000, sent))
        return response

    async def careful_side(self, assignment: int, position: int, rng: random.Random) -> str:
        """The side a careful judge picks: a challenge's expected winner, any side for a pair."""
        if assignment not in self.expected:
            import psycopg

            for attempt in range(3):
                try:
                    if self.connection is None or self.connection.closed:
                        self.connection = await psycopg.AsyncConnection.connect(
                            self.spec["database_url"], autocommit=True, application_name=OBSERVER_APPS[1]
                        )
                    cursor = await self.connection.execute(
                        "SELECT s.position, s.is_challenge, s.expected_winner_id = s.right_id"
                        " FROM judging_hitslot s JOIN judging_assignment a ON a.hit_id = s.hit_id WHERE a.id = %s",
                        (assignment,),
                    )
                    rows = await cursor.fetchall()
                    self.expected[assignment] = {
                        row_position: ("right" if right else "left") if challenge else ""
                        for row_position, challenge, right in rows
                    }
                    break
                except psycopg.Error:
                    self.connection = None
                    await asyncio.sleep(0.5 * (attempt + 1))
        return self.expected.get(assignment, {}).get(position) or rng.choice(("left", "right"))

    async def think(self, rng: random.Random) -> None:
        mean = self.spec["think"]
        if mean <= 0:
            return
        pause = mean if self.spec["fixed_think"] else rng.expovariate(1.0 / mean)
        await asyncio.sleep(min(pause, max(0.0, self.deadline - time.monotonic())))

    async def judge(self, number: int, username: str, role: str, start_at: float) -> None:
        rng = random.Random(f"{self.spec['seed']}-{username}")
        await asyncio.sleep(max(0.0, start_at - time.monotonic()))
        client = JudgeClient(self.spec["url"])
        # Arrival: log in and read the instructions (the first /judge/next/ sends a new judge there).
        ready = await self.login(client, username) and await self.arrive(client)
        if not ready or self.judging.is_set():
            self.not_ready.append(username)  # could not log in, or not before the judging began
            return
        self.ready += 1
        if self.ready + len(self.not_ready) == len(self.spec["judges"]):
            self.all_ready.set()
        await self.judging.wait()
        # A judge starts when they have finished reading, as every later pair follows its own think time: the
        # 200 judges asking for their first pair in the same millisecond is a herd no real arrival makes (they
        # come over minutes) and it would time that herd, not the steady load.
        await self.think(rng)
        page = None
        while time.monotonic() < self.deadline:
            if page is None:
                response = await self.request(client, "next", "GET", "/judge/next/")
                if response is None or response.status_code != 200:
                    await asyncio.sleep(1.0)
                    continue
                page = response.text
            if 'id="pair-form"' not in page:
                self.nothing_left += 1
                page = None
                await asyncio.sleep(max(1.0, self.spec["think"]))
                continue
            fields = dict(HIDDEN.findall(page))
            await self.think(rng)
            if time.monotonic() >= self.deadline:
                break
            if fields.get("kind") == "hit":
                identity = [username, "hit", int(fields["assignment"]), int(fields["position"])]
                side = await self.careful_side(identity[2], identity[3], rng)
            else:
                identity = [
                    username,
                    "tournament",
                    int(fields["topic"]),
                    int(fields["left"]),
                    int(fields["right"]),
                ]
                side = rng.choice(("left", "right"))
            data = {**fields, "side": side, "ms": str(rng.randint(800, 9000))}
            headers = {} if self.spec["no_js"] else {"X-Toppref-Next": "1"}
            response = await self.request(
                client, "answer", "POST", "/judge/answer/", data=data, headers=headers
            )
            resent = response is None and not self.spec["no_js"]
            if resent:
                # What pair.js does when its request gets no response at all (a connection reset by a killed
                # worker): it submits the same form natively, a plain POST the server answers idempotently
                # with its 303. The judge sees an error only if that fails too.
                self.resent += 1
                response = await self.request(client, "answer", "POST", "/judge/answer/", data=data)
            page = None
            if response is None or response.status_code not in SUCCESS:
                self.failed_answers.append((identity, response.status_code if response is not None else 0))
                await asyncio.sleep(1.0)  # the judge reads the error, then asks for the pair page again
                continue
            self.acknowledged.append(identity)
            if response.status_code == 200 and not self.spec["no_js"]:
                page = response.text
                continue
            if not self.spec["no_js"] and not resent:
                self.fallbacks += 1
            location = response.headers.get("location", "/judge/next/")
            follow = await self.request(client, "next", "GET", location)
            if follow is not None and follow.status_code == 200:
                page = follow.text

    async def arrive(self, client) -> bool:
        """The first pair page of a new judge redirects to the instructions; read them and confirm."""
        for _ in range(5):
            response = await self.request(client, "instructions", "GET", "/judge/next/")
            if response is not None and response.status_code == 200:
                return True  # already past the instructions
            if response is not None and response.status_code in (302, 303):
                if "instructions" not in response.headers.get("location", ""):
                    return True
                if await self.instructions(client):
                    return True
            await asyncio.sleep(1.0)
        return False

    async def login(self, client, username: str) -> bool:
        for _ in range(5):
            if self.judging.is_set():
                return False
            form = await self.request(client, "login", "GET", "/accounts/login/")
            token = CSRF.search(form.text) if form is not None and form.status_code == 200 else None
            if token is not None:
                response = await self.request(
                    client,
                    "login",
                    "POST",
                    "/accounts/login/",
                    data={
                        "csrfmiddlewaretoken": token.group(1),
                        "username": username,
                        "password": self.spec["password"],
                        "next": "/judge/next/",
                    },
                    headers={"Referer": f"{self.spec['url']}/accounts/login/"},
                )
                if response is not None and response.status_code == 302:
                    return True
            await asyncio.sleep(1.0)
        return False

    async def instructions(self, client) -> bool:
        page = await self.request(client, "instructions", "GET", "/judge/instructions/?first=1")
        token = CSRF.search(page.text) if page is not None and page.status_code == 200 else None
        if token is None:
            token_value = client.cookies.get("csrftoken")
            if token_value is None:
                return False
        else:
            token_value = token.group(1)
        response = await self.request(
            client,
            "instructions",
            "POST",
            "/judge/instructions/",
            data={"csrfmiddlewaretoken": token_value},
            headers={"Referer": f"{self.spec['url']}/judge/instructions/"},
        )
        return response is not None and response.status_code in SUCCESS

    async def run(self) -> dict:
        spec = self.spec
        started = time.monotonic()
        judges = spec["judges"]
        tasks = [
            asyncio.create_task(
                self.judge(number, username, role, started + spec["ramp"] * number / max(1, len(judges)))
            )
            for number, (username, role) in enumerate(judges)
        ]
        # Arrival (logins and instructions) first, bounded; then everyone judges for the same `--seconds`, so the
        # rates are those of judging, not of a login storm (whose latencies are reported on their own).
        try:
            await asyncio.wait_for(self.all_ready.wait(), timeout=spec["arrival_timeout"])
        except TimeoutError:
            pass
        judging_started = time.monotonic()
        self.deadline = judging_started + spec["seconds"]
        Path(spec["out"]).with_suffix(".started").write_text(repr(judging_started))
        self.judging.set()
        # Bounded: a request in flight at the deadline may finish (the client's timeout bounds it), nothing more.
        done, pending = await asyncio.wait(tasks, timeout=spec["seconds"] + 90)
        for task in pending:
            task.cancel()
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()
        if self.connection is not None:
            await self.connection.close()
        return {
            "arrival": judging_started - started,
            "judging_started": judging_started,
            "duration": spec["seconds"],
            "requests": self.requests,
            "acknowledged": self.acknowledged,
            "failed_answers": self.failed_answers,
            "fallbacks": self.fallbacks,
            "resent": self.resent,
            "nothing_left": self.nothing_left,
            "not_ready": self.not_ready,
            "judges": judges,
        }


def drive(spec_path: Path) -> int:
    spec = json.loads(spec_path.read_text())
    report = asyncio.run(Judges(spec).run())
    Path(spec["out"]).write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Server time and query count of the researchers' pages on a CAsT-sized campaign, and the time of each export.

    .venv/bin/python benchmarks/dashboard.py                      # SQLite file in a temporary folder
    .venv/bin/python benchmarks/dashboard.py --database postgres://postgres@127.0.0.1:5432/toppref_dashboard_bench
    .venv/bin/python benchmarks/dashboard.py --topics 40 --workers 100   # smaller

Builds the campaign once (all judged CAsT 2019 topics, the 23 runs, simulated workers answering from the
released preference qrels), scores the runs, then requests each page through Django's test client as the
owner: the first request of a booted web worker (config.wsgi imported), a cold one (caches empty: leaderboard statistics,
plots) with its CPU time, the database's time and its query count, and the median of warm ones. The forecast is
planned first, as the background sweep does (timed apart: no page plans). Goals (issue 18): campaign page cold
under 300 ms, leaderboard cold under 1 s. Prints one table of pages and one of exports (ms, bytes). ``--keep FILE`` keeps the SQLite database and reuses it on the next run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
CAST_DIR = REPO_DIR.parent / "shared" / "data" / "cast2019"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="DATABASE_URL (default: a fresh SQLite file); it is recreated")
    parser.add_argument("--topics", type=int, default=None, help="only the first N judged topics")
    parser.add_argument("--workers", type=int, default=500, help="simulated crowd workers (default 500)")
    parser.add_argument("--repeat", type=int, default=5, help="warm requests per page (default 5)")
    parser.add_argument(
        "--keep",
        metavar="FILE",
        help="SQLite file to build into and keep; when it exists, reuse it (no build)",
    )
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="toppref-dashboard-bench-"))
    reuse = bool(args.keep and Path(args.keep).exists())
    if args.keep:
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(args.keep).resolve()}"
    elif args.database:
        recreate_postgres_database(args.database)
        os.environ["DATABASE_URL"] = args.database
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ.pop("REDIS_URL", None)
    os.environ["TOPPREF_MEDIA_ROOT"] = str(workdir / "media")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DJANGO_LOG_LEVEL"] = "WARNING"
    # The pages as production serves them: DEBUG (on by default in development) logs every query and keeps
    # template debug data.
    os.environ["DJANGO_DEBUG"] = "false"
    sys.path.insert(0, str(REPO_DIR))
    import django

    django.setup()
    from django.conf import settings

    settings.ALLOWED_HOSTS = ["*"]
    build_started = time.perf_counter()
    if reuse:
        campaign, owner, counts = reuse_campaign()
    else:
        campaign, owner, counts = build_campaign(args)
    # The dashboard's forecast is planned in the background (the sweep), never by the page: plan it here as
    # the sweep would, and time it apart.
    from judging.services.planning import campaign_forecast_refresh

    started = time.perf_counter()
    campaign_forecast_refresh(campaign=campaign)
    print(
        f"forecast planned in the background (the sweep's work, not a request): {time.perf_counter() - started:.1f} s"
    )
    print(
        f"campaign: {counts['topics']} topics, {counts['judgments']} judgments, {counts['workers']} workers, "
        f"{counts['hits']} HITs, 23 runs; built in {time.perf_counter() - build_started:.0f} s "
        f"({django.db.connection.vendor})\n"
    )
    measure_pages(campaign, owner, args)
    print()
    measure_exports(campaign)
    return 0


def reuse_campaign():
    from django.contrib.auth.models import User

    from judging.models import Assignment, Campaign, Hit, Judgment

    campaign = Campaign.objects.get(name="cast")
    counts = {
        "topics": campaign.campaign_topics.count(),
        "judgments": Judgment.objects.filter(assignment__campaign=campaign).count(),
        "workers": Assignment.objects.filter(campaign=campaign).values("worker").distinct().count(),
        "hits": Hit.objects.filter(campaign=campaign).count(),
    }
    return campaign, User.objects.get(username="researcher"), counts


def recreate_postgres_database(url: str) -> None:
    import psycopg

    server, _, name = url.rpartition("/")
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        connection.execute(f"CREATE DATABASE {name}")


def build_campaign(args):
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connection

    from judging.engine import PerfectOracle
    from judging.models import Assignment, Hit, Judgment
    from judging.services import campaign_create, campaign_start
    from judging.services.simulated_crowd import campaign_simulate
    from metrics.leaderboard import campaign_runs_score
    from pools.models import GradedJudgment
    from pools.services import collection_create, qrels_import, run_import
    from pools.trec import read_qrels

    call_command("migrate", verbosity=0)
    owner = User.objects.create_user(username="researcher", password="unused")
    Group.objects.get_or_create(name="researchers")[0].user_set.add(owner)
    collection = collection_create(name="cast2019", is_strict=False)
    qrels_import(collection=collection, path=CAST_DIR / "qrels.graded.txt")
    for path in sorted((CAST_DIR / "runs").glob("*.run")):
        run_import(collection=collection, path=path)
    judged = GradedJudgment.objects.filter(topic__collection=collection).values_list(
        "topic__topic_id", flat=True
    )
    topic_ids = sorted(set(judged))[: args.topics]
    campaign = campaign_create(collection=collection, name="cast", seed=1, owner=owner)
    campaign = campaign_start(campaign=campaign, topic_ids=topic_ids)
    campaign_simulate(
        campaign=campaign,
        oracle=PerfectOracle(read_qrels(CAST_DIR / "qrels.preference.txt")),
        worker_count=args.workers,
    )
    campaign.refresh_from_db()
    started = time.perf_counter()
    campaign_runs_score(campaign=campaign)
    print(f"scoring 23 runs x 9 measures x 2 qrels: {time.perf_counter() - started:.1f} s")
    if connection.vendor == "postgresql":
        # The planner's statistics, as autovacuum keeps them on a live server: a freshly filled database
        # without them plans the progress queries for one row per table.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    counts = {
        "topics": len(topic_ids),
        "judgments": Judgment.objects.filter(assignment__campaign=campaign).count(),
        "workers": Assignment.objects.filter(campaign=campaign).values("worker").distinct().count(),
        "hits": Hit.objects.filter(campaign=campaign).count(),
    }
    return campaign, owner, counts


PAGES = [
    ("campaign page", "/dashboard/campaigns/cast/"),
    ("progress.json", "/dashboard/campaigns/cast/progress.json"),
    ("workers table", "/dashboard/campaigns/cast/workers/"),
    ("leaderboard", "/dashboard/campaigns/cast/leaderboard/"),
    ("figure 4 (SVG)", "/dashboard/campaigns/cast/plots/scatter.svg"),
    ("figure 9 (SVG)", "/dashboard/campaigns/cast/plots/intervals.svg"),
    ("figure 4 (PNG)", "/dashboard/campaigns/cast/plots/scatter.png"),
    ("figure 9 (PNG)", "/dashboard/campaigns/cast/plots/intervals.png"),
    ("leaderboard.csv", "/dashboard/campaigns/cast/leaderboard.csv"),
    ("API campaign", "/api/campaigns/cast/"),
    ("API topics", "/api/campaigns/cast/topics/"),
    ("API workers", "/api/campaigns/cast/workers/"),
    ("API leaderboard", "/api/campaigns/cast/leaderboard/"),
    ("API judgments", "/api/campaigns/cast/judgments/"),
]


def measure_pages(campaign, owner, args) -> None:
    from django.core.cache import cache
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    # A web worker as gunicorn boots it: config.wsgi loads the URLconf and the pages' libraries (warm_up).
    started, cpu_started = time.perf_counter(), time.process_time()
    import config.wsgi  # noqa: F401

    print(
        f"worker boot (config.wsgi, its warm-up included): {(time.perf_counter() - started) * 1000:.0f} ms, "
        f"{(time.process_time() - cpu_started) * 1000:.0f} ms CPU"
    )
    client = Client()
    client.force_login(owner)

    def timed(url):
        """Wall ms, CPU ms of this process, ms the database reported for the queries, the queries, the response."""
        reset_queries()  # the log holds 9,000 queries: a full one would count none
        with CaptureQueriesContext(connection) as queries:
            started, cpu_started = time.perf_counter(), time.process_time()
            response = client.get(url)
            wall = (time.perf_counter() - started) * 1000
            cpu = (time.process_time() - cpu_started) * 1000
        assert response.status_code == 200, (url, response.status_code)
        sql = sum(float(query["time"]) for query in queries.captured_queries) * 1000
        return wall, cpu, sql, len(queries), response

    # "Cold" is a running server whose caches are empty, not a process importing its modules: one pass over the
    # pages first (what the warm-up leaves: templates, first queries; shown as "first"), then the caches are cleared. CPU is this
    # process's (SQLite runs in it); on a loaded machine the wall time also holds the wait for a core.
    first = {url: timed(url) for _, url in PAGES}
    cache.clear()
    print(f"load average {os.getloadavg()[0]:.1f} at the start of the requests")
    print(
        f"{'page':<18} {'first ms':>9} {'cold ms':>8} {'cpu':>6} {'sql':>6} {'queries':>7} "
        f"{'warm ms':>8} {'cpu':>6} {'queries':>7} {'bytes':>9}"
    )
    for label, url in PAGES:
        cold_wall, cold_cpu, cold_sql, cold_queries, response = timed(url)
        warm = [timed(url) for _ in range(args.repeat)]
        warm_wall = statistics.median(timing[0] for timing in warm)
        warm_cpu = statistics.median(timing[1] for timing in warm)
        print(
            f"{label:<18} {first[url][0]:>9.0f} {cold_wall:>8.0f} {cold_cpu:>6.0f} {cold_sql:>6.0f} "
            f"{cold_queries:>7} {warm_wall:>8.0f} {warm_cpu:>6.0f} {warm[-1][3]:>7} {len(warm[-1][4].content):>9}"
        )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def measure_exports(campaign) -> None:
    from judging.models import Export
    from judging.services.exports import export_build, export_request
    from metrics.leaderboard import leaderboard_export_build

    print(f"{'export':<18} {'ms':>9} {'bytes':>10}  sha256")
    for kind in Export.Kind.values:
        export = export_request(campaign=campaign, kind=kind, enqueue=False)
        started = time.perf_counter()
        export = (
            leaderboard_export_build(export=export) if kind == "leaderboard" else export_build(export=export)
        )
        elapsed = (time.perf_counter() - started) * 1000
        print(f"{kind:<18} {elapsed:>9.0f} {export.size_bytes or 0:>10}  {export.sha256[:16]}")


if __name__ == "__main__":
    sys.exit(main())

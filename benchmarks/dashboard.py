"""Server time and query count of the researchers' pages on a CAsT-sized campaign, and the time of each export.

    .venv/bin/python benchmarks/dashboard.py                      # SQLite file in a temporary folder
    .venv/bin/python benchmarks/dashboard.py --database postgres://postgres@127.0.0.1:5432/toppref_dashboard_bench
    .venv/bin/python benchmarks/dashboard.py --topics 40 --workers 100   # smaller

Builds the campaign once (all judged CAsT 2019 topics, the 23 runs, simulated workers answering from the
released preference qrels), scores the runs, then requests each page through Django's test client as the
owner: a cold request (caches empty: leaderboard statistics, plots) and the median of warm ones, each with its
query count. The forecast is planned first, as the background sweep does (timed apart: no page plans). Goals
(issue 18): campaign page cold under 300 ms, leaderboard cold under 1 s. Prints one table of pages and one of
exports (ms, bytes). ``--keep FILE`` keeps the SQLite database and reuses it on the next run.
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
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(owner)
    # "Cold" is a running server whose caches are empty, not a process importing its modules: one pass over the
    # pages first (imports, URL resolver, templates), then the caches are cleared.
    for _, url in PAGES:
        client.get(url)
    cache.clear()
    print(f"{'page':<18} {'cold ms':>9} {'queries':>8} {'warm ms':>9} {'queries':>8} {'bytes':>10}")
    for label, url in PAGES:
        with CaptureQueriesContext(connection) as cold_queries:
            started = time.perf_counter()
            response = client.get(url)
            cold = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, (url, response.status_code)
        warm = []
        for _ in range(args.repeat):
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                response = client.get(url)
                warm.append((time.perf_counter() - started) * 1000)
        print(
            f"{label:<18} {cold:>9.0f} {len(cold_queries):>8} {statistics.median(warm):>9.0f} {len(queries):>8} "
            f"{len(response.content):>10}"
        )


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

"""The judging pages on a CAsT-sized campaign (TREC CAsT 2019 graded qrels, 173 topics): the weight of the pair
page (HTML + CSS + JS, uncompressed) and the server time of ``GET /judge/next/`` and of an answer POST, for a
dedicated assessor (tournament) and a local crowd worker (HIT). Goal: under 50 KB and under 30 ms.

    .venv/bin/python benchmarks/judging_pages.py                  # SQLite file in a temporary folder
    .venv/bin/python benchmarks/judging_pages.py --postgres postgres://postgres@127.0.0.1:5432
    .venv/bin/python benchmarks/judging_pages.py --requests 100

The last two rows are the page script's one request per answer (``X-Toppref-Next: 1``: the answer POST
answers with the next pair); ``queries`` is the median number of SQL statements of a request.

Server time is measured around Django's test client (whole middleware stack, sessions, CSRF, template
rendering and database; no network), in wall time and in this process's CPU time. CAsT ships no passage texts, so every passage is given a 1,200-character
text (a typical CAsT passage) for the weight.
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
BENCH_DATABASE = "toppref_bench_pages"
PASSAGE = (
    "The passage text stands in for a CAsT paragraph: several sentences on the topic, with names, numbers and "
    "a few clauses, as a Wikipedia or MS MARCO paragraph would have. "
) * 8


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", help="PostgreSQL server URL without a database (default: SQLite)")
    parser.add_argument(
        "--database",
        default=BENCH_DATABASE,
        help=f"the PostgreSQL database it drops and recreates (default {BENCH_DATABASE})",
    )
    parser.add_argument(
        "--requests", type=int, default=60, help="pairs answered per kind of judge (default 60)"
    )
    args = parser.parse_args()
    if args.postgres:
        import psycopg

        with psycopg.connect(f"{args.postgres}/postgres", autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {args.database} WITH (FORCE)")
            connection.execute(f"CREATE DATABASE {args.database}")
        os.environ["DATABASE_URL"] = f"{args.postgres}/{args.database}"
        database = "PostgreSQL"
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='toppref-bench-')}/bench.sqlite3"
        database = "SQLite"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DJANGO_LOG_LEVEL"] = "WARNING"
    sys.path.insert(0, str(REPO_DIR))
    import django

    django.setup()
    rows, weight, setup_seconds = measure(args.requests)
    print(
        f"Judging pages on CAsT 2019 ({database}; setup {setup_seconds:.0f} s; {args.requests} answers per judge)\n"
    )
    print(f"{'pair page weight (uncompressed)':<40} {'bytes':>9}")
    for name, size in weight.items():
        print(f"  {name:<38} {size:>9,}")
    print(f"  {'total':<38} {sum(weight.values()):>9,}   goal < 51,200\n")
    header = f"{'request':<48} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'cpu ms':>7} {'queries':>8}"
    print(header)
    print("-" * len(header))
    for name, samples, cpu, queries in rows:
        ordered = sorted(samples)
        p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
        print(
            f"{name:<48} {statistics.median(ordered):>10.1f} {p95:>8.1f} {ordered[-1]:>8.1f}"
            f" {statistics.median(cpu):>7.1f} {statistics.median(queries):>8.0f}"
        )
    print("\ngoal: median server time < 30 ms. cpu ms: median CPU time of this process (Python + driver),")
    print(f"which a loaded machine inflates less than wall time (load average now {os.getloadavg()[0]:.1f}).")
    return 0


def measure(requests: int):
    import re

    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from judging.models import HitSlot
    from judging.services import campaign_create, campaign_start
    from judging.views.judge import INSTRUCTIONS_SEEN
    from pools.models import Item
    from pools.services import collection_create, qrels_import

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    collection = collection_create(name="cast2019", is_strict=False)
    qrels_import(collection=collection, path=CAST_DIR / "qrels.graded.txt")
    Item.objects.filter(collection=collection).update(text=PASSAGE)
    crowd = campaign_create(collection=collection, name="bench-crowd", seed=1)
    campaign_start(campaign=crowd)
    tournament = campaign_create(collection=collection, name="bench-tournament", mode="tournament", seed=1)
    campaign_start(campaign=tournament)
    setup_seconds = time.perf_counter() - started

    def judge(username: str, group: str) -> Client:
        user = get_user_model().objects.create_user(username=username, password="bench-password-1")
        user.groups.add(Group.objects.get_or_create(name=group)[0])
        client = Client()
        client.force_login(user)
        session = client.session
        session[INSTRUCTIONS_SEEN] = True
        session.save()
        return client

    def hidden(html: str, name: str) -> str:
        return re.search(rf'name="{name}" value="([^"]*)"', html).group(1)

    rows = []
    weight: dict[str, int] = {}
    for kind, client, fields, one_request in (
        ("assessor", judge("bench-assessor", "assessors"), ("kind", "topic", "left", "right"), False),
        ("crowd", judge("bench-crowd", "crowd"), ("kind", "assignment", "position"), False),
        ("assessor", judge("bench-assessor-2", "assessors"), ("kind", "topic", "left", "right"), True),
        ("crowd", judge("bench-crowd-2", "crowd"), ("kind", "assignment", "position"), True),
    ):
        gets, posts, get_cpu, post_cpu, get_queries, post_queries = [], [], [], [], [], []
        html = ""
        for number in range(requests):
            if not one_request or number == 0:
                begin, cpu = time.perf_counter(), time.process_time()
                with CaptureQueriesContext(connection) as queries:
                    response = client.get("/judge/next/")
                gets.append((time.perf_counter() - begin) * 1000)
                get_cpu.append((time.process_time() - cpu) * 1000)
                get_queries.append(len(queries))
                html = response.content.decode()
            if 'id="pair-form"' not in html:
                break
            if number == 0 and kind == "crowd":
                weight["HTML (/judge/next/, crowd HIT)"] = len(response.content)
            data = {name: hidden(html, name) for name in (*fields, "csrfmiddlewaretoken")}
            side = "left"
            if kind == "crowd":  # the benchmark's worker passes the challenges, as a careful worker does
                slot = HitSlot.objects.get(hit__assignments=data["assignment"], position=data["position"])
                if slot.is_challenge and slot.expected_winner_id == slot.right_id:
                    side = "right"
            headers = {"HTTP_X_TOPPREF_NEXT": "1"} if one_request else {}
            begin, cpu = time.perf_counter(), time.process_time()
            with CaptureQueriesContext(connection) as queries:
                answer = client.post("/judge/answer/", {**data, "side": side, "ms": "1500"}, **headers)
            posts.append((time.perf_counter() - begin) * 1000)
            post_cpu.append((time.process_time() - cpu) * 1000)
            post_queries.append(len(queries))
            assert answer.status_code == (200 if one_request else 303), answer.status_code
            html = answer.content.decode()
        if one_request:
            rows.append((f"POST /judge/answer/ + next page ({kind})", posts, post_cpu, post_queries))
        else:
            rows.append((f"GET /judge/next/ ({kind})", gets, get_cpu, get_queries))
            rows.append((f"POST /judge/answer/ ({kind})", posts, post_cpu, post_queries))
    for name in ("judge.css", "pair.js"):
        weight[f"static/judging/{name}"] = (REPO_DIR / "static" / "judging" / name).stat().st_size
    return rows, weight, setup_seconds


if __name__ == "__main__":
    sys.exit(main())

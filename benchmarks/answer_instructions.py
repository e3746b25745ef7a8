"""The instructions one answer costs the web process: an answer POST with its next page (``X-Toppref-Next: 1``,
the pair page script's one request per answer) through Django's test client in process (whole middleware
stack, CSRF enforced, sessions through Redis when ``REDIS_URL`` is set, CAsT 2019 on PostgreSQL), counted by
callgrind, which a shared machine does not disturb as it does CPU time. The count includes the test client's
own work (building the request, reading the response). Also prints the SQL statements of each answer.

    .venv/bin/python benchmarks/answer_instructions.py --postgres postgres://postgres@127.0.0.1:5432 setup
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/answer.%p \\
        .venv/bin/python benchmarks/answer_instructions.py --postgres postgres://postgres@127.0.0.1:5432 \\
        measure --kind crowd --callgrind

``setup`` drops and creates the database (``--database``) with the collection and an open crowd and tournament
campaign. ``measure`` makes a new judge of ``--kind``, answers ``--warm`` pairs (the process's first answers
load code and compile statements), then turns callgrind's instrumentation on (``callgrind_control -i on``),
answers ``--answers`` pairs and turns it off again: the callgrind file's total divided by ``--answers`` is the
instructions of one answer. Without valgrind it prints the statements only.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

# The same stand-in passage as the pages benchmark (this script's folder is first on the path when run).
from judging_pages import PASSAGE

REPO_DIR = Path(__file__).resolve().parent.parent
CAST_DIR = REPO_DIR.parent / "shared" / "data" / "cast2019"
# The body the pair page's script and benchmarks/judging_load.py's judges send.
FORM = "application/x-www-form-urlencoded"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", required=True, help="PostgreSQL server URL without a database")
    parser.add_argument("--database", default="toppref_bench_answer", help="the database it uses")
    parser.add_argument("action", choices=("setup", "measure"))
    parser.add_argument("--kind", choices=("crowd", "assessor"), default="crowd")
    parser.add_argument("--warm", type=int, default=4, help="answers before counting (default 4)")
    parser.add_argument("--answers", type=int, default=5, help="answers counted (default 5)")
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="running under callgrind: instrument the counted answers only",
    )
    parser.add_argument("--profile", help="write cProfile's statistics of the counted answers to this file")
    args = parser.parse_args()
    if args.action == "setup":
        import psycopg

        with psycopg.connect(f"{args.postgres}/postgres", autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {args.database} WITH (FORCE)")
            connection.execute(f"CREATE DATABASE {args.database}")
        os.environ.pop(
            "REDIS_URL", None
        )  # tasks run eagerly while preparing: the HITs exist before measuring
    os.environ["DATABASE_URL"] = f"{args.postgres}/{args.database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DJANGO_LOG_LEVEL"] = "WARNING"
    os.environ["DJANGO_DEBUG"] = "false"  # as gunicorn runs it: no SQL logging cursor
    sys.path.insert(0, str(REPO_DIR))
    import django

    django.setup()
    if args.action == "setup":
        setup()
    else:
        measure(args.kind, args.warm, args.answers, callgrind=args.callgrind, profile=args.profile)
    return 0


def setup() -> None:
    from django.core.management import call_command

    from judging.services import campaign_create, campaign_start
    from pools.models import Item
    from pools.services import collection_create, qrels_import

    call_command("migrate", verbosity=0)
    collection = collection_create(name="cast2019", is_strict=False)
    qrels_import(collection=collection, path=CAST_DIR / "qrels.graded.txt")
    Item.objects.filter(collection=collection).update(text=PASSAGE)
    campaign_start(campaign=campaign_create(collection=collection, name="bench-crowd", seed=1))
    campaign_start(
        campaign=campaign_create(collection=collection, name="bench-tournament", mode="tournament", seed=1)
    )


def measure(kind: str, warm: int, answers: int, *, callgrind: bool, profile: str | None) -> None:
    import cProfile

    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection
    from django.test import Client

    from judging.models import HitSlot
    from judging.views.judge import INSTRUCTIONS_SEEN

    user = get_user_model().objects.create_user(username=f"bench-{kind}-{time.time_ns()}", password="x-1")
    user.groups.add(Group.objects.get_or_create(name="crowd" if kind == "crowd" else "assessors")[0])
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    session = client.session
    session[INSTRUCTIONS_SEEN] = True
    session.save()
    fields = ("kind", "assignment", "position") if kind == "crowd" else ("kind", "topic", "left", "right")
    html = client.get("/judge/next/").content.decode()

    def answer() -> int:
        nonlocal html
        data = {name: re.search(rf'name="{name}" value="([^"]*)"', html).group(1) for name in fields}
        data["csrfmiddlewaretoken"] = re.search(r'name="csrfmiddlewaretoken" value="([^"]*)"', html).group(1)
        side = "left"
        if kind == "crowd":  # a careful worker: pass every challenge
            slot = HitSlot.objects.get(hit__assignments=data["assignment"], position=data["position"])
            if slot.is_challenge and slot.expected_winner_id == slot.right_id:
                side = "right"
        statements = []
        with connection.execute_wrapper(
            lambda execute, sql, *rest: statements.append(sql) or execute(sql, *rest)
        ):
            instrument("on")
            response = client.post(
                "/judge/answer/",
                urlencode({**data, "side": side, "ms": "1500"}),
                FORM,
                HTTP_X_TOPPREF_NEXT="1",
            )
            instrument("off")
        assert response.status_code == 200, response.status_code
        html = response.content.decode()
        return len(statements)

    instrumenting = False
    profiler = cProfile.Profile(time.process_time)

    def instrument(state: str) -> None:
        if instrumenting and callgrind:
            subprocess.run(
                ["callgrind_control", "-i", state, str(os.getpid())], check=True, capture_output=True
            )
        if instrumenting and profile:
            profiler.enable() if state == "on" else profiler.disable()

    for _ in range(warm):
        answer()
    instrumenting = True
    counts = [answer() for _ in range(answers)]
    if profile:
        profiler.dump_stats(profile)
    print(
        f"{kind}: {answers} answers counted; statements per answer (BEGIN and COMMIT left out) {counts} (median {statistics.median(counts)})"
    )
    for query in queries_of_one(client, kind, fields, html):
        print("   ", query[:160])


def queries_of_one(client, kind, fields, html):
    """The statements of one more answer, BEGIN and COMMIT included (not counted by callgrind)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from judging.models import HitSlot

    data = {name: re.search(rf'name="{name}" value="([^"]*)"', html).group(1) for name in fields}
    data["csrfmiddlewaretoken"] = re.search(r'name="csrfmiddlewaretoken" value="([^"]*)"', html).group(1)
    side = "left"
    if kind == "crowd":
        slot = HitSlot.objects.get(hit__assignments=data["assignment"], position=data["position"])
        if slot.is_challenge and slot.expected_winner_id == slot.right_id:
            side = "right"
    with CaptureQueriesContext(connection) as queries:
        client.post(
            "/judge/answer/", urlencode({**data, "side": side, "ms": "1500"}), FORM, HTTP_X_TOPPREF_NEXT="1"
        )
    return [query["sql"] for query in queries]


if __name__ == "__main__":
    sys.exit(main())

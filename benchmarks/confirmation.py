"""Handing out HITs while claims wait for the provider's confirmation: milliseconds per ``hit_assign_next``
for a local crowd user and per ``hit_assign_next_external`` for a Prolific participant, with no claim yet
and with every open HIT already claimed by an invented participant id (the flood of issue 15). Prints a
table; asserts nothing.

    .venv/bin/python benchmarks/confirmation.py              # the demo collection, 1 pair per HIT
    .venv/bin/python benchmarks/confirmation.py --calls 50

Runs in a fresh process against a throw-away SQLite database (pass --database-url for PostgreSQL).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30, help="workers served per row")
    parser.add_argument("--database-url", default="", help="default: a throw-away SQLite file")
    parser.add_argument("--run", action="store_true", help=argparse.SUPPRESS)  # internal
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run_rows(args.calls)))
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="toppref-bench-confirm-"))
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_LOG_LEVEL": "WARNING",
        "DATABASE_URL": args.database_url or f"sqlite:///{workdir / 'bench.sqlite3'}",
        "TOPPREF_MEDIA_ROOT": str(workdir / "media"),
    }
    env.pop("REDIS_URL", None)
    result = subprocess.run(
        [sys.executable, __file__, "--run", "--calls", str(args.calls)],
        env=env,
        cwd=REPO_DIR,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        print((result.stderr or result.stdout).strip().splitlines()[-1])
        return 1
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"{'worker':<10} {'open HITs':>9} {'claimed':>8} {'calls':>6} {'ms/call':>8} {'shared':>7}")
    for row in rows:
        print(
            f"{row['worker']:<10} {row['open_hits']:>9} {row['claimed']:>8} {row['calls']:>6} "
            f"{row['ms_per_call']:>8.2f} {row['shared']:>7}"
        )
    return 0


def run_rows(calls: int) -> list[dict]:
    sys.path.insert(0, str(REPO_DIR))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import transaction

    from judging.models import Assignment, Hit
    from judging.services import (
        campaign_advance,
        campaign_create,
        campaign_start,
        hit_assign_next,
        hit_assign_next_external,
        worker_get_or_create,
    )
    from pools.models import Collection
    from pools.services import demo_load

    call_command("migrate", verbosity=0)
    demo_load(directory=REPO_DIR / "demo")
    rows = []
    for claimed in (False, True):
        for kind in ("local", "prolific"):
            name = f"bench-{kind}-{int(claimed)}"
            campaign = campaign_create(
                collection=Collection.objects.current().get(name="demo"),
                name=name,
                seed=1,
                provider="prolific",
                preferences_per_hit=1,
                challenges_per_hit=0,
            )
            campaign = campaign_start(campaign=campaign)
            campaign_advance(campaign=campaign)
            open_hits = Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN).count()
            if claimed:
                for index in range(open_hits):
                    forger = worker_get_or_create(provider="prolific", external_id=f"{index:024x}")
                    hit_assign_next_external(campaign=campaign, worker=forger, session_id=f"FAKE{index}")
            started = time.perf_counter()
            for index in range(calls):
                if kind == "local":
                    worker = worker_get_or_create(provider="local", external_id=f"{name}-{index}")
                    hit_assign_next(campaign=campaign, worker=worker)
                else:
                    worker = worker_get_or_create(provider="prolific", external_id=f"{index + 10**6:024x}")
                    hit_assign_next_external(campaign=campaign, worker=worker, session_id=f"REAL{index}")
            elapsed = time.perf_counter() - started
            with transaction.atomic():
                taken = Assignment.objects.filter(campaign=campaign).exclude(external_id__startswith="FAKE")
                shared = (
                    taken.filter(hit__assignments__external_id__startswith="FAKE")
                    .values("hit")
                    .distinct()
                    .count()
                )
            rows.append(
                {
                    "worker": kind,
                    "open_hits": open_hits,
                    "claimed": open_hits if claimed else 0,
                    "calls": calls,
                    "ms_per_call": 1000 * elapsed / calls,
                    "shared": shared,
                }
            )
    return rows


if __name__ == "__main__":
    sys.exit(main())

"""Publishing and syncing a crowd campaign against the fake MTurk requester server on 127.0.0.1 (the one the
tests use): wall time and provider calls per HIT, with and without throttling. Prints a table; asserts nothing.

    .venv/bin/python benchmarks/crowd.py                    # the demo collection, 0% and 10% throttled
    .venv/bin/python benchmarks/crowd.py --throttle 0 0.3

Each row runs in a fresh process against a throw-away SQLite database (the provider calls dominate). Tasks run
eagerly here, so the submitted HITs close rounds and build new HITs, which the sync publishes ("new HITs").
Throttled calls are slow on purpose: botocore's adaptive mode lowers its request rate after throttling.
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
    parser.add_argument(
        "--throttle", type=float, nargs="+", default=[0.0, 0.1], help="share of calls throttled"
    )
    parser.add_argument("--run", type=float, help=argparse.SUPPRESS)  # internal: one row in this process
    args = parser.parse_args()
    if args.run is not None:
        print(json.dumps(run_row(args.run)))
        return 0
    print(
        f"{'throttled':>9} {'HITs':>5} {'publish s':>10} {'ms/HIT':>7} {'create calls':>12} "
        f"{'sync s':>7} {'sync calls':>10} {'approved':>8} {'new HITs':>8} {'duplicates':>10}"
    )
    for share in args.throttle:
        workdir = Path(tempfile.mkdtemp(prefix="toppref-bench-crowd-"))
        env = os.environ | {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_LOG_LEVEL": "WARNING",
            "DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}",
            "TOPPREF_MEDIA_ROOT": str(workdir / "media"),
            "AWS_ACCESS_KEY_ID": "AKIDBENCH",
            "AWS_SECRET_ACCESS_KEY": "not-a-secret",
            "AWS_CONFIG_FILE": str(workdir / "aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(workdir / "aws-credentials"),
            "TOPPREF_PUBLIC_URL": "https://toppref.example.org",
        }
        env.pop("REDIS_URL", None)
        result = subprocess.run(
            [sys.executable, __file__, "--run", str(share)],
            env=env,
            cwd=REPO_DIR,
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            print(f"{share:>9.0%} error: {(result.stderr or result.stdout).strip().splitlines()[-1]}")
            continue
        row = json.loads(result.stdout.strip().splitlines()[-1])
        print(
            f"{share:>9.0%} {row['hits']:>5} {row['publish_s']:>10.2f} {row['ms_per_hit']:>7.1f} "
            f"{row['create_calls']:>12} {row['sync_s']:>7.2f} {row['sync_calls']:>10} {row['approved']:>8} "
            f"{row['republished']:>8} {row['duplicates']:>10}"
        )
    return 0


def run_row(share: float) -> dict:
    sys.path.insert(0, str(REPO_DIR))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from judging.engine import PerfectOracle
    from judging.models import Hit, HitSlot
    from judging.services import (
        assignment_start,
        assignment_submit,
        campaign_advance,
        campaign_create,
        campaign_start,
        worker_get_or_create,
    )
    from judging.services.crowd_sync import campaign_sync
    from judging.services.publishing import campaign_publish
    from pools.models import Collection
    from pools.services import demo_load
    from pools.trec import read_qrels
    from tests.judging.crowd.fake_mturk import FakeMTurk

    call_command("migrate", verbosity=0)
    demo_load(directory=REPO_DIR / "demo")
    oracle = PerfectOracle(read_qrels(REPO_DIR / "demo" / "qrels.preference.txt"))
    campaign = campaign_create(
        collection=Collection.objects.current().get(name="demo"), name="bench", seed=1, provider="mturk"
    )
    campaign = campaign_start(campaign=campaign)
    campaign_advance(campaign=campaign)
    from unittest import mock

    from judging.tasks import crowd_sync_task

    # Each submit queues a sync to look for the provider's confirmation; tasks run eagerly here, so that
    # would sync after every HIT: left out, this measures one sync of all the submitted work.
    no_sync_per_submit = mock.patch.object(crowd_sync_task, "apply_async")
    with FakeMTurk() as fake, no_sync_per_submit:
        settings.TOPPREF_MTURK_ENDPOINT_URL = fake.url
        hits = list(Hit.objects.filter(campaign=campaign).order_by("number"))
        fake.faults = [("CreateHITWithHITType", "throttle")] * round(share * len(hits))
        started = time.perf_counter()
        campaign_publish(campaign=campaign)
        publish_s = time.perf_counter() - started
        create_calls = len(fake.calls_of("CreateHITWithHITType"))
        for number, hit in enumerate(Hit.objects.filter(campaign=campaign).order_by("number")):
            worker_id = f"A{number:05d}BENCH"
            assignment = assignment_start(
                hit=hit, worker=worker_get_or_create(provider="mturk", external_id=worker_id)
            )
            slots = HitSlot.objects.filter(hit=hit).values_list(
                "position", "topic__topic_id", "left_id", "left__docid", "right_id", "right__docid"
            )
            winners = {
                position: left_id if oracle.prefer(topic, left, right) == left else right_id
                for position, topic, left_id, left, right_id, right in slots
            }
            assignment_submit(assignment=assignment, winners=winners)
            fake.submit(hit.external_id, worker_id)
        fake.faults = [("ListAssignmentsForHIT", "throttle")] * round(share * len(hits))
        calls_before = len(fake.calls)
        started = time.perf_counter()
        report = campaign_sync(campaign=campaign)
        sync_s = time.perf_counter() - started
        return {
            "hits": len(hits),
            "publish_s": publish_s,
            "ms_per_hit": 1000 * publish_s / max(len(hits), 1),
            "create_calls": create_calls,
            "sync_s": sync_s,
            "sync_calls": len(fake.calls) - calls_before,
            "approved": report.approved,
            "republished": len(report.published.hit_numbers) if report.published else 0,
            # HITs at MTurk beyond those recorded here: a duplicate would show up here.
            "duplicates": len(fake.hits) - Hit.objects.filter(published_at__isnull=False).count(),
        }


if __name__ == "__main__":
    sys.exit(main())

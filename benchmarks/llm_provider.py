"""A language model judging a collection alone, against the stand-in OpenAI-compatible server on 127.0.0.1
(the one the tests use) answering every request after ``--delay`` seconds: pair judgments per second in the
embedded default (SQLite, tasks run in the process), as ``campaign_publish`` runs it. Prints a table;
asserts nothing.

    .venv/bin/python benchmarks/llm_provider.py                       # 200 ms a reply, concurrency 8
    .venv/bin/python benchmarks/llm_provider.py --concurrency 4 8 16 --collection wide

Collections: ``demo`` (13 questions, 374 passages: few HITs at a time, since each round waits for the last),
and ``wide``, made up here (40 questions of 10 passages, 7 of them relevant: every topic in stage 2 at once,
all its HITs open together, as in a track of many topics). Each row runs in a fresh process against a
throw-away SQLite database. ``pairs/s`` counts every pair the model answered (both orders asked): the
candidates' pairs and the HITs' hidden challenges; ``prefs/s`` the candidates' pairs only. The ceiling is
``concurrency / delay / 2`` pairs a second (two requests a pair); ``in flight`` is the mean number of requests
under way. The second run of each row is the same campaign again, answered from the cache (no request).
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
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8], help="--llm-max-concurrency")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the stand-in takes to reply")
    parser.add_argument("--collection", nargs="+", choices=("demo", "wide"), default=["demo", "wide"])
    parser.add_argument("--run", type=int, help=argparse.SUPPRESS)  # internal: one row in this process
    args = parser.parse_args()
    if args.run is not None:
        print(json.dumps(run_row(args.run, args.delay, args.collection[0])))
        return 0
    print(
        f"{'collection':>10} {'concurrency':>11} {'delay s':>7} {'HITs':>5} {'pairs':>6} {'prefs':>6} {'requests':>8} "
        f"{'seconds':>8} {'pairs/s':>8} {'prefs/s':>8} {'ceiling':>8} {'in flight':>9} {'cached s':>9} {'re-sent':>8}"
    )
    for collection, concurrency in [(c, n) for c in args.collection for n in args.concurrency]:
        workdir = Path(tempfile.mkdtemp(prefix="toppref-bench-llm-"))
        env = os.environ | {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_LOG_LEVEL": "WARNING",
            "DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}",
            "TOPPREF_MEDIA_ROOT": str(workdir / "media"),
        }
        env.pop("REDIS_URL", None)
        result = subprocess.run(
            [
                sys.executable,
                __file__,
                *("--run", str(concurrency), "--delay", str(args.delay), "--collection", collection),
            ],
            env=env,
            cwd=REPO_DIR,
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            print(
                f"{collection:>10} {concurrency:>11} error: {(result.stderr or result.stdout).strip().splitlines()[-1]}"
            )
            continue
        row = json.loads(result.stdout.strip().splitlines()[-1])
        print(
            f"{collection:>10} {concurrency:>11} {args.delay:>7.2f} {row['hits']:>5} {row['pairs']:>6} {row['prefs']:>6} "
            f"{row['requests']:>8} {row['seconds']:>8.1f} {row['pairs_per_s']:>8.1f} {row['prefs_per_s']:>8.1f} "
            f"{concurrency / args.delay / 2:>8.1f} {row['in_flight']:>9.1f} {row['cached_seconds']:>9.1f} {row['resent']:>8}"
        )
        print(f"{'':>22} longest gaps between requests (s): {row['longest_gaps']}")
    return 0


def wide_collection(directory: Path) -> dict[tuple[str, str], float]:
    """Write the ``wide`` collection in the demo's format into ``directory``; returns the oracle's values
    by (question, passage text): the grade, then an order within a grade, so every pair has one answer."""
    import random

    rng = random.Random(7)
    words = "the of water heat light energy cell river city law music market plant signal data".split()
    values: dict[tuple[str, str], float] = {}
    with (
        open(directory / "topics.tsv", "w") as topics,
        open(directory / "passages.jsonl", "w") as passages,
        open(directory / "qrels.graded.txt", "w") as qrels,
    ):
        for t in range(40):
            question = f"Question {t}: what does {rng.choice(words)} do to {rng.choice(words)}?"
            topics.write(f"w{t}\t{question}\n")
            for p in range(10):
                grade = rng.choice((1, 2, 3)) if p < 7 else 0
                text = f"w{t}-p{p}: " + " ".join(rng.choice(words) for _ in range(rng.randint(40, 90)))
                passages.write(json.dumps({"id": f"w{t}-p{p:02d}", "text": text}) + "\n")
                qrels.write(f"w{t} 0 w{t}-p{p:02d} {grade}\n")
                values[(question, text)] = grade + p / 100
    return values


def run_row(concurrency: int, delay: float, collection: str) -> dict:
    sys.path.insert(0, str(REPO_DIR))
    import logging

    import django

    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    from django.conf import settings
    from django.core.management import call_command

    from judging.models import Campaign, Judgment
    from pools.services import demo_load
    from tests.judging.crowd.fake_llm import FakeLlm, demo_oracle

    call_command("migrate", verbosity=0)
    if collection == "wide":
        directory = Path(tempfile.mkdtemp(prefix="toppref-bench-wide-"))
        values = wide_collection(directory)

        def oracle(question: str, first: str, second: str) -> int:
            a, b = values.get((question, first), 0.0), values.get((question, second), 0.0)
            return 1 if (a, -len(first), first) > (b, -len(second), second) else 2
    else:
        directory, oracle = REPO_DIR / "demo", demo_oracle(REPO_DIR / "demo")
    demo_load(directory=directory)

    timings = {}
    with FakeLlm(oracle=oracle, delay=delay) as fake:
        settings.TOPPREF_LLM_BASE_URL = fake.url
        for name in ("bench", "bench-again"):
            call_command(
                "campaign_create",
                name,
                "--collection",
                "demo",
                "--seed",
                "1",
                "--provider",
                "llm",
                "--llm-model",
                "stand-in",
                "--llm-max-concurrency",
                str(concurrency),
                stdout=open(os.devnull, "w"),  # noqa: SIM115
            )
            call_command("campaign_start", name, stdout=open(os.devnull, "w"))  # noqa: SIM115
            requests_before = len(fake.requests)
            started = time.perf_counter()
            clock = time.monotonic()
            call_command(
                "campaign_publish",
                name,
                stdout=open(os.devnull, "w"),  # noqa: SIM115
                stderr=open(os.devnull, "w"),  # noqa: SIM115
            )
            timings[name] = (time.perf_counter() - started, len(fake.requests) - requests_before)
            if name == "bench":
                # Requests under way, on average over the run: each is under way for ``delay`` seconds.
                busy = len(fake.arrivals) * delay / (time.monotonic() - clock)
                gaps = sorted(b - a for a, b in zip(fake.arrivals, fake.arrivals[1:], strict=False))[-5:]
    campaign = Campaign.objects.get(name="bench")
    assert campaign.status == Campaign.Status.DONE, campaign.status
    answers = Judgment.objects.filter(assignment__campaign=campaign, assignment__status="accepted")
    pairs, prefs = answers.count(), answers.filter(slot__is_challenge=False).count()
    seconds, requests = timings["bench"]
    return {
        "hits": campaign.hits.count(),
        "pairs": pairs,
        "prefs": prefs,
        "requests": requests,
        "seconds": seconds,
        "pairs_per_s": pairs / seconds,
        "prefs_per_s": prefs / seconds,
        "cached_seconds": timings["bench-again"][0],
        "resent": timings["bench-again"][1],
        "in_flight": busy,
        "longest_gaps": [round(g, 2) for g in gaps],
    }


if __name__ == "__main__":
    sys.exit(main())

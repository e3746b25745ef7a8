"""What a collection version costs: seconds for an import of one changed passage into a collection of N
passages with no started campaign (in place), with a started campaign (a new version: topics, passages and
grades copied inside the database), and for the same file again on a started one (nothing changes: the copy
is made and rolled back), beside the import of all N passages into the empty collection. Prints a table;
asserts nothing.

    .venv/bin/python benchmarks/collection_versions.py                  # 10,000 and 100,000 passages
    .venv/bin/python benchmarks/collection_versions.py --sizes 1000000

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
TOPICS = 50
GRADES_PER_TOPIC = 20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="passages")
    parser.add_argument("--database-url", default="", help="default: a throw-away SQLite file")
    parser.add_argument("--run", action="store_true", help=argparse.SUPPRESS)  # internal
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run_rows(args.sizes, Path(os.environ["TOPPREF_MEDIA_ROOT"]).parent)))
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="toppref-bench-versions-"))
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_LOG_LEVEL": "WARNING",
        "DATABASE_URL": args.database_url or f"sqlite:///{workdir / 'bench.sqlite3'}",
        "TOPPREF_MEDIA_ROOT": str(workdir / "media"),
    }
    env.pop("REDIS_URL", None)
    result = subprocess.run(
        [sys.executable, __file__, "--run", "--sizes", *map(str, args.sizes)],
        env=env,
        cwd=REPO_DIR,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        print((result.stderr or result.stdout).strip().splitlines()[-1])
        return 1
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    print(
        f"{'passages':>9} {'import all s':>13} {'in place s':>11} {'new version s':>14} {'unchanged s':>12} "
        f"{'versions':>9}"
    )
    for row in rows:
        print(
            f"{row['passages']:>9} {row['full_import']:>13.3f} {row['in_place']:>11.3f} {row['new_version']:>14.3f} "
            f"{row['unchanged']:>12.3f} {row['versions']:>9}"
        )
    return 0


def run_rows(sizes: list[int], workdir: Path) -> list[dict]:
    sys.path.insert(0, str(REPO_DIR))
    import django

    django.setup()
    from django.core.management import call_command

    from judging.services import campaign_create, campaign_start
    from pools.models import Collection
    from pools.services import collection_create, passages_import, qrels_import, topics_import

    call_command("migrate", verbosity=0)
    rows = []
    for size in sizes:
        name = f"bench-{size}"
        passages, topics, qrels = (workdir / f"{name}.{kind}" for kind in ("jsonl", "tsv", "qrels"))
        with open(passages, "w") as out:
            for index in range(size):
                out.write(json.dumps({"id": f"p{index}", "text": f"passage {index} " * 20}) + "\n")
        topics.write_text("".join(f"t{topic}\tquestion {topic}\n" for topic in range(TOPICS)))
        qrels.write_text(
            "".join(
                f"t{topic} Q0 p{(topic * GRADES_PER_TOPIC + rank) % size} {rank % 4}\n"
                for topic in range(TOPICS)
                for rank in range(GRADES_PER_TOPIC)
            )
        )
        collection = collection_create(name=name)
        topics_import(collection=collection, path=topics)
        started = time.perf_counter()
        passages_import(collection=collection, path=passages)
        full_import = time.perf_counter() - started
        qrels_import(collection=collection, path=qrels)

        in_place = _change_seconds(collection, workdir, "changed in place")
        campaign_start(campaign=campaign_create(collection=collection, name=name, seed=1), topic_ids=["t0"])
        unchanged = _change_seconds(collection, workdir, "changed in place")
        new_version = _change_seconds(collection, workdir, "changed in a new version")
        rows.append(
            {
                "passages": size,
                "full_import": full_import,
                "in_place": in_place,
                "new_version": new_version,
                "unchanged": unchanged,
                "versions": Collection.objects.filter(name=name).count(),
            }
        )
    return rows


def _change_seconds(collection, workdir: Path, text: str) -> float:
    """Seconds for importing one passage (``p0``) with ``text`` into ``collection``."""
    from pools.services import passages_import

    path = workdir / f"{collection.name}-change.jsonl"
    path.write_text(json.dumps({"id": "p0", "text": text}) + "\n")
    started = time.perf_counter()
    passages_import(collection=collection, path=path)
    return time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())

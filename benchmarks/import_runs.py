"""Time and peak memory of importing a large TREC run (a 20-million-line run must import in bounded memory).
Prints a table; asserts nothing.

    .venv/bin/python benchmarks/import_runs.py                 # 1M, 5M and 20M lines
    .venv/bin/python benchmarks/import_runs.py --lines 200000  # quick look

Each size runs in a fresh process (so peak RSS is that import's own) against a throw-away SQLite database
and media folder in a temporary directory, unless DATABASE_URL is set. The run is 1,000 lines per topic.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
LINES_PER_TOPIC = 1000


def write_run(path: Path, lines: int) -> None:
    sys.path.insert(0, str(REPO_DIR))
    from trecio import write_run as write_trec_run

    with open(path, "w", encoding="ascii") as handle:
        write_trec_run(
            handle,
            (
                (f"{line // LINES_PER_TOPIC + 1}_1", f"doc{line}", rank, round(1000 - rank / 7, 4), "bench")
                for line in range(lines)
                for rank in (line % LINES_PER_TOPIC,)
            ),
        )


def measure_one(lines: int) -> dict:
    """Generate a run of ``lines`` lines, import it, and report seconds and peak RSS of this process."""
    work_dir = Path(tempfile.mkdtemp(prefix="toppref-bench-"))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{work_dir / 'bench.sqlite3'}")
    os.environ["TOPPREF_MEDIA_ROOT"] = str(work_dir / "media")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    sys.path.insert(0, str(REPO_DIR))
    import django

    django.setup()
    from django.core.management import call_command

    from pools import services

    call_command("migrate", verbosity=0)
    run_path = work_dir / "bench.run"
    write_run(run_path, lines)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    name = f"bench-{os.getpid()}"
    collection = services.collection_create(name=name, is_strict=False)
    started = time.perf_counter()
    run = services.run_import(collection=collection, path=run_path, progress=False)
    seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    size = run_path.stat().st_size
    result = {
        "lines": run.line_count,
        "topics": run.topic_count,
        "megabytes": size / 1e6,
        "seconds": seconds,
        "peak_rss_mib": peak_kib / 1024,
        "rss_before_mib": rss_before / 1024,
        "database": django.db.connection.vendor,
    }
    # Leave no trace: the benchmark database may be a shared one when DATABASE_URL is set.
    services.collection_delete(collection=collection)
    django.db.connections.close_all()
    shutil.rmtree(work_dir)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[1_000_000, 5_000_000, 20_000_000])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure_one(args.child)))
        return 0
    header = f"{'lines':>12} {'topics':>7} {'file MB':>8} {'import s':>9} {'lines/s':>11} {'peak RSS MiB':>13} {'RSS before':>11}  db"
    print(header)
    print("-" * len(header))
    for lines in args.lines:
        output = subprocess.run(
            [sys.executable, __file__, "--child", str(lines)], check=True, capture_output=True, text=True
        ).stdout
        row = json.loads(output.strip().splitlines()[-1])
        print(
            f"{row['lines']:>12,} {row['topics']:>7,} {row['megabytes']:>8.0f} {row['seconds']:>9.1f} "
            f"{row['lines'] / row['seconds']:>11,.0f} {row['peak_rss_mib']:>13.0f} {row['rss_before_mib']:>11.0f}  {row['database']}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

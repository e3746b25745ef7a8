"""Speed and memory of the ``toppref`` command line against ir_measures' Compat and pytrec_eval's NDCG.

Generates a TREC-scale set in a temporary directory (default 100 runs x 200 topics x 1000 documents; preference
qrels with 5 levels; seeded), then measures, one after the other on this machine, wall time and CPU time
(user + sys, from ``os.wait4``'s rusage, so that a loaded machine shows in the gap between the two):

- ``toppref --help`` and ``toppref evaluate --help``: interpreter start and imports, the fixed cost of a call;
- ``toppref evaluate QRELS RUN... -m compat@0.95`` on the first ``--compare-runs`` runs (default 20) and on all of
  them, as subprocesses (default ``--jobs``: two runs at once in threads), with peak resident memory;
- the same 20 runs with ``-m ndcg@10``, and the library in-process in one thread;
- ir_measures ``Compat(p=0.95)`` and pytrec_eval-terrier ``ndcg_cut.10`` on the same 20 files (parsing
  included; evaluators reused), in this process.

Then it prints the ratios against the goals (``toppref --help`` under 0.3 s; 20 runs under 1.2 s wall and 500 MB;
the full set under 2 GB; 40x ir_measures' Compat; 5x pytrec_eval's ndcg_cut.10).

Usage: ``.venv/bin/python benchmarks/measures.py [--runs 100 --topics 200 --docs 1000 --compare-runs 20]
[--skip-ir-measures]``. Prints tables; asserts nothing (timings on a shared 2-core machine vary by +-30 %).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

REPO_DIR = Path(__file__).resolve().parent.parent
TOPPREF = REPO_DIR / ".venv" / "bin" / "toppref"

LEVEL_SHARES = [0.40, 0.25, 0.15, 0.12, 0.08]  # levels 1..5: fewer items at the top, as with top-k levels


def generate(directory: Path, *, runs: int, topics: int, docs: int, seed: int) -> tuple[Path, list[Path]]:
    """Write qrels.txt and run000.txt...; return their paths.

    Per topic: a pool of 5 * docs documents; 60 judged with levels 1..5 and 20 judged 0 (integers, so that
    ir_measures can read them). Each run ranks ``docs`` documents per topic: a run-specific share (30-90 %) of
    the judged documents at quality-dependent places, the rest from the pool, strictly decreasing scores.
    """
    rng = np.random.default_rng(seed)
    pool = 5 * docs
    topic_ids = np.array([str(401 + t) for t in range(topics)])
    judged = np.stack([rng.choice(pool, 80, replace=False) for _ in range(topics)])
    levels = np.concatenate(
        [rng.choice([1, 2, 3, 4, 5], (topics, 60), p=LEVEL_SHARES), np.zeros((topics, 20), dtype=int)], axis=1
    )
    qrels_path = directory / "qrels.txt"
    _write_lines(
        qrels_path,
        {
            "topic": np.repeat(topic_ids, 80),
            "q0": np.full(topics * 80, "Q0"),
            "docid": _docids(np.repeat(np.arange(topics), 80), judged.ravel()),
            "value": levels.ravel().astype(str),
        },
    )
    run_paths = []
    for r in range(runs):
        share = rng.uniform(0.3, 0.9)
        quality = rng.uniform(0.0, 1.0)
        chosen = np.empty((topics, docs), dtype=np.int64)
        for t in range(topics):
            is_kept = rng.random(80) < share
            kept = judged[t][is_kept]
            # better runs put higher levels first
            kept = kept[np.argsort(-levels[t][is_kept] * quality + rng.random(len(kept)))]
            others = rng.choice(np.setdiff1d(np.arange(pool), judged[t]), docs - len(kept), replace=False)
            places = np.sort(rng.choice(docs, len(kept), replace=False))
            ranking = np.insert(others, places - np.arange(len(kept)), kept)[:docs]
            chosen[t] = ranking
        scores = np.sort(rng.random((topics, docs)), axis=1)[:, ::-1] * 100 + 1e-9 * np.arange(docs)[::-1]
        path = directory / f"run{r:03d}.txt"
        _write_lines(
            path,
            {
                "topic": np.repeat(topic_ids, docs),
                "q0": np.full(topics * docs, "Q0"),
                "docid": _docids(np.repeat(np.arange(topics), docs), chosen.ravel()),
                "rank": np.tile(np.arange(1, docs + 1), topics).astype(str),
                "score": np.char.mod("%.9f", scores.ravel()),
                "runid": np.full(topics * docs, f"bench{r:03d}"),
            },
        )
        run_paths.append(path)
    return qrels_path, run_paths


def _docids(topic: np.ndarray, doc: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise("D", pa.array(topic.astype(str)), "-", pa.array(doc.astype(str)), "")


def _write_lines(path: Path, columns: dict) -> None:
    table = pa.table(
        {
            name: pa.array(values) if not isinstance(values, pa.Array) else values
            for name, values in columns.items()
        }
    )
    pa_csv.write_csv(
        table,
        path,
        write_options=pa_csv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none"),
    )


def time_command(arguments: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + sys) and peak RSS (MiB) of one ``toppref`` subprocess."""
    start = time.perf_counter()
    process = subprocess.Popen([str(TOPPREF), *arguments], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"toppref {' '.join(arguments[:1])} failed with status {status}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


# The floor of `toppref evaluate`: a fresh Python process that only reads the same files with pyarrow (the
# columns evaluate reads: topic, docid, score of the runs; topic, docid, value of the qrels).
READ_ONLY = """
import sys
import pyarrow as pa
import pyarrow.csv as csv
options = csv.ParseOptions(delimiter=" ")
for path in sys.argv[1:]:
    csv.read_csv(path, read_options=csv.ReadOptions(autogenerate_column_names=True), parse_options=options)
"""


def time_read_only(paths: list[Path]) -> tuple[float, float, float]:
    """Wall and CPU seconds, peak RSS of a fresh Python process reading ``paths`` with pyarrow and nothing else."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", READ_ONLY, *map(str, paths)], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"the pyarrow read of the run files failed with status {status}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def best_of(repeats: int, arguments: list[str]) -> tuple[float, float, float]:
    """The fastest of ``repeats`` calls (the least disturbed by other processes)."""
    return min((time_command(arguments) for _ in range(repeats)), key=lambda timing: timing[0])


def time_in_process(qrels: Path, runs: list[Path], measure: str) -> float:
    """Wall seconds of the library alone, one thread: read each run, order, align, score."""
    sys.path.insert(0, str(REPO_DIR))
    from metrics.core.evaluate import evaluate_run, parse_measure
    from metrics.core.readers import read_qrels, read_run

    start = time.perf_counter()
    parsed_qrels = read_qrels(qrels)
    measures = [parse_measure(measure)]
    for run in runs:
        evaluate_run(parsed_qrels, read_run(run), measures)
    return time.perf_counter() - start


def time_ir_measures_compat(qrels: Path, runs: list[Path]) -> float:
    import ir_measures
    from ir_measures import Compat

    start = time.perf_counter()
    evaluator = ir_measures.evaluator([Compat(p=0.95)], ir_measures.read_trec_qrels(str(qrels)))
    for run in runs:
        evaluator.calc_aggregate(ir_measures.read_trec_run(str(run)))
    return time.perf_counter() - start


def time_pytrec_eval_ndcg(qrels: Path, runs: list[Path]) -> float:
    import pytrec_eval

    start = time.perf_counter()
    with open(qrels) as file:
        evaluator = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(file), {"ndcg_cut.10"})
    for run in runs:
        with open(run) as file:
            evaluator.evaluate(pytrec_eval.parse_run(file))
    return time.perf_counter() - start


def process_time(function, *arguments) -> tuple[float, float]:
    """Wall and CPU seconds of ``function(*arguments)`` in this process."""
    start, cpu = time.perf_counter(), time.process_time()
    function(*arguments)
    return time.perf_counter() - start, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--compare-runs", type=int, default=20, help="runs of the side-by-side comparison")
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--skip-ir-measures", action="store_true", help="skip the slowest contender")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="toppref-bench-") as temporary:
        directory = Path(temporary)
        start = time.perf_counter()
        qrels, runs = generate(directory, runs=args.runs, topics=args.topics, docs=args.docs, seed=args.seed)
        size = sum(p.stat().st_size for p in runs) / 2**20
        print(
            f"generated {args.runs} runs x {args.topics} topics x {args.docs} docs "
            f"({args.runs * args.topics * args.docs:,} run lines, {size:,.0f} MiB) in "
            f"{time.perf_counter() - start:.1f} s; {os.cpu_count()} CPUs; load average "
            f"{os.getloadavg()[0]:.1f}",
            flush=True,
        )
        few = runs[: args.compare_runs]
        label = f"{len(few)} runs"
        rows = []

        def add(what: str, wall: float, cpu: float | None, rss: float | None = None) -> None:
            rows.append((what, wall, cpu, rss))

        help_wall, help_cpu, _ = best_of(3, ["--help"])
        add("toppref --help", help_wall, help_cpu)
        add("toppref evaluate --help", *best_of(3, ["evaluate", "--help"])[:2])
        compat = best_of(2, ["evaluate", str(qrels), *map(str, few), "-m", "compat@0.95"])
        add(f"toppref evaluate -m compat@0.95, {label}", *compat)
        ndcg = best_of(2, ["evaluate", str(qrels), *map(str, few), "-m", "ndcg@10"])
        add(f"toppref evaluate -m ndcg@10, {label}", *ndcg)
        floor = min((time_read_only([qrels, *few]) for _ in range(2)), key=lambda timing: timing[0])
        add(f"floor: fresh python reading the same files with pyarrow, {label}", *floor)
        add(
            f"library in-process, 1 thread, compat@0.95, {label}",
            *process_time(time_in_process, qrels, few, "compat@0.95"),
        )
        pytrec = process_time(time_pytrec_eval_ndcg, qrels, few)
        add(f"pytrec_eval ndcg_cut.10 (incl. parse_run), {label}", *pytrec)
        ir = None
        if not args.skip_ir_measures:
            ir = process_time(time_ir_measures_compat, qrels, few)
            add(f"ir_measures Compat(p=0.95) (incl. read_trec_run), {label}", *ir)
        everything = time_command(["evaluate", str(qrels), *map(str, runs), "-m", "compat@0.95"])
        add(f"toppref evaluate -m compat@0.95, all {len(runs)} runs", *everything)

    rankings = len(few) * args.topics
    print("\n| what | wall s | CPU s | topic-rankings/s (wall) | peak RSS |\n|---|---|---|---|---|")
    for what, wall, cpu, rss in rows:
        per_second = f"{rankings / wall:,.0f}" if label in what else ""
        memory = f"{rss:,.0f} MiB" if rss is not None else ""
        print(f"| {what} | {wall:.2f} | {cpu:.2f} | {per_second} | {memory} |")
    print("\n| goal | measured | target |\n|---|---|---|")
    print(f"| toppref --help | {help_wall:.2f} s | < 0.3 s |")
    print(f"| evaluate compat@0.95, {label}, wall | {compat[0]:.2f} s | < 1.2 s |")
    print(f"| evaluate compat@0.95, {label}, peak RSS | {compat[2]:,.0f} MiB | < 500 MiB |")
    print(
        f"| evaluate compat@0.95, {label}, against the pyarrow read floor ({floor[0]:.2f} s) | "
        f"{compat[0] / floor[0]:.2f}x | <= 1.5x |"
    )
    print(f"| evaluate compat@0.95, all {len(runs)} runs, peak RSS | {everything[2]:,.0f} MiB | < 2048 MiB |")
    for name, timing in (("ir_measures Compat", ir), ("pytrec_eval ndcg_cut.10", pytrec)):
        if timing is None:
            continue
        wall, cpu = timing
        target = "40x" if name.startswith("ir_measures") else "5x"
        print(
            f"| speed-up of evaluate compat@0.95 over {name} | {wall / compat[0]:.1f}x wall, "
            f"{cpu / compat[1]:.1f}x CPU | >= {target} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

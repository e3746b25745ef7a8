"""Speed and memory of ``toppref evaluate`` against ir_measures' Compat and pytrec_eval's NDCG (issue 3).

Generates a TREC-scale set in a temporary directory (default 100 runs x 200 topics x 1000 documents; preference
qrels with 5 levels; seeded), then times, one after the other on this machine:

- ``toppref evaluate QRELS RUN... -m compat@0.95`` as a subprocess (start-up and parsing included; default
  ``--jobs``, i.e. two runs at once in threads on a multi-core machine), and its peak resident memory
  (``os.wait4`` rusage of the child); for context, the start-up alone and the library in one thread;
- the same for ``-m ndcg@10``;
- ir_measures ``Compat(p=0.95)`` on the same files (``read_trec_run`` parsing included; evaluator reused);
- pytrec_eval-terrier ``ndcg_cut.10`` (``parse_run`` parsing included; evaluator reused).

Usage: ``.venv/bin/python benchmarks/measures.py [--runs 100 --topics 200 --docs 1000] [--skip-ir-measures]``.
Prints a table; asserts nothing (timings on a shared 2-core machine vary by +-30 %).
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


def time_toppref(qrels: Path, runs: list[Path], measure: str) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one ``toppref evaluate`` subprocess."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [str(TOPPREF), "evaluate", str(qrels), *map(str, runs), "-m", measure], stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"toppref evaluate failed with status {status}")
    return wall, usage.ru_maxrss / 1024


def time_startup() -> float:
    """Wall seconds of ``toppref evaluate --help``: interpreter start and imports, the fixed cost of a call."""
    start = time.perf_counter()
    subprocess.run([str(TOPPREF), "evaluate", "--help"], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--docs", type=int, default=1000)
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
            f"{time.perf_counter() - start:.1f} s; {os.cpu_count()} CPUs",
            flush=True,
        )
        rankings = args.runs * args.topics
        rows = []
        compat_wall, compat_rss = time_toppref(qrels, runs, "compat@0.95")
        rows.append(
            ("toppref evaluate -m compat@0.95 (subprocess)", compat_wall, f"{compat_rss:,.0f} MiB peak RSS")
        )
        rows.append(("  of which start-up (toppref evaluate --help)", time_startup(), ""))
        rows.append(
            ("  library in-process, 1 thread, compat@0.95", time_in_process(qrels, runs, "compat@0.95"), "")
        )
        ndcg_wall, ndcg_rss = time_toppref(qrels, runs, "ndcg@10")
        rows.append(("toppref evaluate -m ndcg@10 (subprocess)", ndcg_wall, f"{ndcg_rss:,.0f} MiB peak RSS"))
        pytrec_wall = time_pytrec_eval_ndcg(qrels, runs)
        rows.append(("pytrec_eval ndcg_cut.10 (incl. parse_run)", pytrec_wall, ""))
        ir_wall = None
        if not args.skip_ir_measures:
            ir_wall = time_ir_measures_compat(qrels, runs)
            rows.append(("ir_measures Compat(p=0.95) (incl. read_trec_run)", ir_wall, ""))

    print("\n| what | wall s | topic-rankings/s | note |\n|---|---|---|---|")
    for what, wall, note in rows:
        print(f"| {what} | {wall:.1f} | {rankings / wall:,.0f} | {note} |")
    print()
    if ir_wall is not None:
        print(f"compat speed-up over ir_measures Compat: {ir_wall / compat_wall:.1f}x (goal >= 20x)")
    print(f"compat time / pytrec_eval ndcg_cut.10 time: {compat_wall / pytrec_wall:.2f} (goal <= 1)")
    print(f"peak RSS of toppref evaluate -m compat@0.95: {compat_rss:,.0f} MiB (goal < 2048)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

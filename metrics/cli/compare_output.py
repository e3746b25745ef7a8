"""What ``toppref compare`` prints: the line types and their columns (tsv, csv), and JSON without NaN."""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterator
from typing import Any


def without_nan(value: Any) -> Any:
    """NaN (undefined: one run, no pair, no case) as JSON null; bare NaN is not valid JSON."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {key: without_nan(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_nan(item) for item in value]
    return value


# Column names of each line type, written once before its first line ('#' + type, then these).
COLUMNS = {
    "sensitivity": ("measure", "test", "topics", "pairs", "distinguished", "share"),
    "tau": ("measure_a", "measure_b", "tau"),
    "pair": ("measure", "run_a", "run_b", "value", "p_value"),
    "stability": (
        "measure",
        "judge",
        "tpr",
        "fpr",
        "sets",
        "tau_mean",
        "tau_sd",
        "significant",
        "agreement",
        "mapped_p",
    ),
    "run": ("measure", "runid", "mean", "ci_low", "ci_high", "rank"),
}


def _table_rows(report: dict) -> Iterator[tuple[str, list[Any]]]:
    names = list(report["measures"])
    for name, measure in report["measures"].items():
        yield (
            "sensitivity",
            [
                name,
                measure["test"],
                measure["topics"],
                len(measure["pairs"]),
                measure["distinguished"],
                _number(measure["sensitivity"]),
            ],
        )
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            yield "tau", [a, b, _number(report["kendall_tau"][a][b])]
    for name, measure in report["measures"].items():
        for pair in measure["pairs"]:
            yield (
                "pair",
                [
                    name,
                    pair["run_a"],
                    pair["run_b"],
                    _number(pair["value"]),
                    _number(pair["p_value"], digits=6),
                ],
            )
    for name, measure in report["measures"].items():
        for row in measure.get("stability", []):
            yield (
                "stability",
                [
                    name,
                    row["judge"],
                    _number(row["tpr"]),
                    _number(row["fpr"]),
                    row["sets"],
                    _number(row["tau_mean"]),
                    _number(row["tau_sd"]),
                    row["significant"],
                    _number(row["agreement"]),
                    _number(row["mapped_p"]),
                ],
            )
    for name, measure in report["measures"].items():
        for run in measure["runs"]:
            yield (
                "run",
                [
                    name,
                    run["runid"],
                    _number(run["mean"]),
                    _number(run["ci_low"]),
                    _number(run["ci_high"]),
                    run["rank"],
                ],
            )


def write_table(report: dict, *, delimiter: str) -> None:
    writer = csv.writer(sys.stdout, delimiter=delimiter, lineterminator="\n")
    started = set()
    for kind, row in _table_rows(report):
        if kind not in started:
            started.add(kind)
            writer.writerow([f"#{kind}", *COLUMNS[kind]])
        writer.writerow([kind, *row])


def _number(value: float, digits: int = 4) -> str:
    # trec_eval prints 4 decimals; p-values get more so that small ones stay readable.
    if value != value:
        return "nan"
    return f"{value:.{digits}g}" if digits > 4 else f"{value:.{digits}f}"

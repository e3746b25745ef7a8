"""``toppref`` subcommands of the metrics app (see config/cli.py), one module each: ``compat``, ``evaluate``,
``compare`` and ``plot`` (with ``run_set``, the inputs compare and plot share, and ``compare_output``, what
compare prints); ``common`` holds the readers and options they share. All of them read files only (no Django).

Every input is checked before anything is printed; runs that share a runid are named after their files
(:func:`metrics.core.comparison.distinct_run_names`), reported once on stderr."""

from __future__ import annotations

import argparse
import importlib

COMMAND_MODULES = {
    "compat": "metrics.cli.compat",
    "evaluate": "metrics.cli.evaluate",
    "compare": "metrics.cli.compare",
    "plot": "metrics.cli.plot",
}


def register(subparsers: argparse._SubParsersAction, only: str | None = None) -> None:
    """Add this app's subcommands (only the one named ``only`` when given; see config/cli.py). Each command's
    module is imported only when it is registered, so ``toppref compat`` never loads numpy's comparison code."""
    for name, module_name in COMMAND_MODULES.items():
        if only in (None, name):
            importlib.import_module(module_name).register(subparsers)


def add_relevance_options(parser: argparse.ArgumentParser) -> None:
    """How qrels values become relevance, shared by ``evaluate``, ``compare`` and ``plot``
    (:func:`metrics.cli.common.add_relevance_options`)."""
    from metrics.cli.common import add_relevance_options as add

    add(parser)

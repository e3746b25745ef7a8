"""``toppref`` subcommands of the metrics app (see config/cli.py)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this app's subcommands."""

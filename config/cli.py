"""The ``toppref`` command line: one entry point, subcommands contributed by each app.

Each app's ``cli.py`` exposes ``register(subparsers)``, which adds its subcommands with
``parser.set_defaults(handler=function, needs_django=bool)``. A handler takes the parsed arguments and
returns an exit status. Commands that only read files (``thin``, ``compat``, ``evaluate``, ``simulate``,
``plan``...) never start Django, so they work without a database.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def django_setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def build_parser() -> argparse.ArgumentParser:
    from judging import cli as judging_cli
    from metrics import cli as metrics_cli
    from pools import cli as pools_cli

    parser = argparse.ArgumentParser(
        prog="toppref",
        description="Top-k preference judgments: pools, judging, and measures (Clarke, Vtyurina and Smucker).",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for module in (pools_cli, judging_cli, metrics_cli):
        module.register(subparsers)
    manage = subparsers.add_parser("manage", help="run a Django management command (same as manage.py)")
    manage.add_argument("arguments", nargs=argparse.REMAINDER)
    manage.set_defaults(handler=_manage, needs_django=False)
    return parser


def _manage(args: argparse.Namespace) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(["toppref manage", *args.arguments])
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "needs_django", False):
        django_setup()
    try:
        return int(args.handler(args) or 0)
    except BrokenPipeError:
        # `toppref evaluate ... | head` must not print a traceback.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""The ``toppref`` command line: one entry point, subcommands contributed by each app.

Start-up is kept small (docs/decisions.md, "A command line that starts at once"): ``COMMANDS`` names each
subcommand's module and one-line help, so ``toppref --help`` imports no app at all, and ``toppref NAME ...``
imports only NAME's module. Each app's ``cli.py`` exposes ``register(subparsers, only=None)``, which adds its
subcommands (only the one named ``only`` when given) with ``parser.set_defaults(handler=function,
needs_django=bool)``. A handler takes the parsed arguments and returns an exit status. Commands that only read
files (``thin``, ``compat``, ``evaluate``, ``compare``, ``plot``, ``simulate``, ``plan``) import neither Django
nor Celery, so they work without a database.

Errors: a handler raises :class:`UsageError` (exit 2) or :class:`DataError` (exit 1), or returns the status
itself; ``main`` prints ``toppref COMMAND: error: MESSAGE`` as one line. Anything else unexpected is also one
line (exit 1) unless ``--traceback`` asks for the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

EXIT_BAD_DATA = 1
EXIT_BAD_USAGE = 2

# name -> (module that registers it, one-line help for `toppref --help`). A new subcommand goes here and in
# its app's register(); a name missing here still works, only slower (every app's commands are registered).
COMMANDS: dict[str, tuple[str, str]] = {
    "thin": (
        "pools.cli",
        "thin graded qrels to the candidate pool for top-k preference judging (section 4.1)",
    ),
    "import": ("pools.cli", "import topics, passages, qrels or a run into a collection (all or nothing)"),
    "collection": ("pools.cli", "create or list collections"),
    "simulate": ("judging.cli", "run a crowd campaign or a dedicated tournament with simulated assessors"),
    "plan": ("judging.cli", "estimate judgments, HITs, cost and the risk of losing a top-k item"),
    "agreement": (
        "judging.agreement_cli",
        "agreement and Cohen's kappa of two judgment logs on the pairs both judged",
    ),
    "compat": ("metrics.cli", "compatibility of one run (drop-in for the reference compatibility.py)"),
    "evaluate": ("metrics.cli", "score runs under any measures (compat, ndcg@k, ap, rr, p@k, rbp@p, esl...)"),
    "compare": (
        "metrics.cli",
        "meta-evaluation: per-run means with CIs, ranks, Kendall's tau, paired significance, stability",
    ),
    "plot": (
        "metrics.cli",
        "PNG figures: measure-vs-measure scatter (Fig. 4) or runs with CIs (Fig. 9)",
    ),
    "manage": ("config.cli", "run a Django management command (same as manage.py)"),
}


class UsageError(Exception):
    """Bad arguments: ``main`` prints the message on one line and exits 2."""


class DataError(Exception):
    """An input that cannot be used (missing, a directory, malformed, empty): one line, exit 1."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``toppref evaluate: error: ... (see toppref evaluate --help)``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_BAD_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


# Argument types: argparse turns their ValueError/ArgumentTypeError into a one-line usage error (exit 2).


def finite_float(text: str) -> float:
    """A float that is neither NaN nor infinite (money, thresholds, rates and gains must be real numbers)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def non_negative_float(text: str) -> float:
    value = finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def bounded_int(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in [low, high] (no upper bound when ``high`` is None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low or (high is not None and value > high):
            bounds = f"at least {low}" if high is None else f"between {low} and {high}"
            raise argparse.ArgumentTypeError(f"{value} is out of range: must be {bounds}")
        return value

    parse.__name__ = "integer"
    return parse


# numpy's generators take seeds in [0, 2**32) for the legacy API and any non-negative integer for the new one;
# one range everywhere keeps `--seed` meaning the same in every command.
seed = bounded_int(0, 2**32 - 1)


def input_file(path: str | os.PathLike[str]) -> None:
    """Raise :class:`DataError` unless ``path`` is a readable file (a directory says it is one)."""
    location = Path(path)
    if location.is_dir():
        raise DataError(f"{path}: is a directory, not a file")
    if not location.exists():
        raise DataError(f"{path}: no such file")
    if not os.access(location, os.R_OK):
        raise DataError(f"{path}: permission denied")


def output_file(path: str | os.PathLike[str]) -> None:
    """Raise :class:`UsageError` unless ``path`` can be written: checked before any computation."""
    location = Path(path)
    parent = location.parent if str(location.parent) else Path(".")
    if location.is_dir():
        raise UsageError(f"{path}: is a directory, not a file")
    if not parent.is_dir():
        raise UsageError(f"{path}: directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK) or (location.exists() and not os.access(location, os.W_OK)):
        raise UsageError(f"{path}: permission denied")


def output_files(
    outputs: Sequence[str | os.PathLike[str] | None], *, inputs: Sequence[str | os.PathLike[str] | None]
) -> None:
    """``output_file`` for each given output, and raise :class:`UsageError` where one names an input of the
    same command or another of its outputs: the write would destroy the input, or one output the other."""
    read = {_file_identity(path) for path in inputs if path is not None}
    written: set[object] = set()
    for path in outputs:
        if path is None:
            continue
        output_file(path)
        where = _file_identity(path)
        if where in read:
            raise UsageError(f"{path}: is also an input of this command; writing it would destroy it")
        if where in written:
            raise UsageError(f"{path}: is given for two outputs")
        written.add(where)


def _file_identity(path: str | os.PathLike[str]) -> object:
    """What names one file however it is spelt: its device and inode when it exists (a hard link, a symlink, a
    relative path), else its resolved path."""
    where = Path(path).resolve()
    try:
        status = where.stat()
    except OSError:
        return where
    return (status.st_dev, status.st_ino)


# A bar appears only once its work has run this long: a quick command stays quiet.
PROGRESS_DELAY_SECONDS = 1.0


class _NoProgressBar:
    """What ``progress_bar`` gives off a terminal: a bar that counts and shows nothing."""

    n = 0

    def __enter__(self) -> _NoProgressBar:
        return self

    def __exit__(self, *exception: object) -> None:
        return None

    def update(self, count: int = 1) -> None:
        self.n += count

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        return None


def progress_bar(*, total: int | None, description: str, unit: str) -> Any:
    """A tqdm bar on stderr for a command's long work, shown only on a terminal and only after a second.
    Elsewhere (a pipe, a file, a benchmark) tqdm is not even imported: its import costs more CPU than some of
    the work it would count."""
    if not sys.stderr.isatty():
        return _NoProgressBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=description, unit=unit, file=sys.stderr, delay=PROGRESS_DELAY_SECONDS)


def warn(command: str, message: str) -> None:
    print(f"toppref {command}: warning: {message}", file=sys.stderr)


def note(command: str, message: str) -> None:
    print(f"toppref {command}: note: {message}", file=sys.stderr)


def django_setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line (the first word that is not an option), if any."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv``: the named subcommand fully, every other one as a name and a line of help.
    With ``argv`` None every subcommand is registered fully (tests; slow)."""
    parser = _Parser(
        prog="toppref",
        description="Top-k preference judgments: pools, judging, and measures (Clarke, Vtyurina and Smucker, "
        '"Assessing top-k preferences").',
    )
    parser.add_argument(
        "--traceback", action="store_true", help="show the Python traceback of an unexpected error"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    chosen = None if argv is None else _command_of(argv)
    if argv is not None and chosen not in COMMANDS:
        chosen = None  # an unknown word: argparse reports it against the full list below
        argv = None if _command_of(argv) is not None else argv
    for name, (module_name, help_text) in COMMANDS.items():
        if argv is None or name == chosen:
            _register(subparsers, name, module_name, help_text)
        else:
            subparsers.add_parser(name, help=help_text, add_help=False)
    return parser


def _register(subparsers: argparse._SubParsersAction, name: str, module_name: str, help_text: str) -> None:
    if name in subparsers.choices:
        return
    if name == "manage":
        manage = subparsers.add_parser(name, help=help_text)
        manage.add_argument("arguments", nargs=argparse.REMAINDER)
        manage.set_defaults(handler=_manage, needs_django=False)
        return
    module = importlib.import_module(module_name)
    module.register(subparsers, only=name)
    # `--traceback` may also follow the subcommand; SUPPRESS keeps the top-level value when it does not.
    subparsers.choices[name].add_argument(
        "--traceback", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )


def _manage(args: argparse.Namespace) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(["toppref manage", *args.arguments])
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser(argv).parse_args(argv)
    except SystemExit as exit:  # --help (0) or a usage error (2, already printed on one line)
        return exit.code if isinstance(exit.code, int) else EXIT_BAD_USAGE
    prefix = f"toppref {args.command}"
    try:
        if getattr(args, "needs_django", False):
            django_setup()
        return int(args.handler(args) or 0)
    except UsageError as error:
        print(f"{prefix}: error: {error}", file=sys.stderr)
        return EXIT_BAD_USAGE
    except DataError as error:
        print(f"{prefix}: error: {error}", file=sys.stderr)
        return EXIT_BAD_DATA
    except BrokenPipeError:
        # `toppref evaluate ... | head` must not print a traceback.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # noqa: BLE001 - the last line of defence: users see one line, not a traceback
        if args.traceback:
            raise
        print(
            f"{prefix}: error: {type(error).__name__}: {error} (run again with --traceback for details)",
            file=sys.stderr,
        )
        return EXIT_BAD_DATA


if __name__ == "__main__":
    sys.exit(main())

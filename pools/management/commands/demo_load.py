from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from pools.services import ImportRejectedError, demo_load
from pools.trec import TrecFormatError


class Command(BaseCommand):
    help = "Load the demo collection shipped in demo/ (idempotent; --reset deletes it first)."

    def add_arguments(self, parser):
        parser.add_argument("--dir", default=str(Path(settings.BASE_DIR) / "demo"), help="demo directory")
        parser.add_argument("--reset", action="store_true", help="delete the demo collection first")

    def handle(self, *args, dir, reset, **options):
        try:
            result = demo_load(directory=dir, reset=reset)
        except (TrecFormatError, ImportRejectedError) as error:
            raise CommandError(f"{error} (nothing loaded)") from None
        except OSError as error:
            raise CommandError(f"{error.filename}: {error.strerror} (nothing loaded)") from None
        write = self.stdout.write
        strictness = (
            "strict: rows naming an unknown topic are refused" if result.collection.is_strict else "lenient"
        )
        write(f"collection {result.collection.name} ({strictness})")
        write("  created / updated / unchanged = rows this load added, changed, or found as in the file")
        write(f"  {'':<17}{'created':>9}{'updated':>9}{'unchanged':>11}")
        for name, counts in (
            ("topics", result.topics),
            ("passages", result.passages),
            ("graded judgments", result.qrels),
        ):
            write(f"  {name:<17}{counts.created:>9}{counts.updated:>9}{counts.unchanged:>11}")
        write(f"  runs (replaced on every load):{'' if result.runs else ' none'}")
        for run in result.runs:
            write(
                f"    {run.name:<15}{_count(run.topic_count, 'topic'):>11}{_count(run.line_count, 'line'):>13}"
            )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"

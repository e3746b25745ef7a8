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
        self.stdout.write(
            f"collection {result.collection.name}: topics {result.topics}; passages {result.passages}; "
            f"graded judgments {result.qrels}; runs {', '.join(run.name for run in result.runs) or 'none'}"
        )

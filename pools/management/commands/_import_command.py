"""The shared shape of the ``*_import`` commands: find the collection, run one import service, turn a bad
line into a CommandError naming file, line and problem."""

from django.core.management.base import BaseCommand, CommandError

from pools.models import Collection
from pools.services import ImportRejectedError
from trecio import TrecFormatError


class ImportCommand(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("collection", help="collection name")
        parser.add_argument("path", help="file to import")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")

    def handle(self, *args, collection, path, quiet, **options):
        try:
            collection_object = Collection.objects.get(name=collection)
        except Collection.DoesNotExist:
            raise CommandError(f"no collection {collection!r} (create it with collection_create)") from None
        try:
            message = self.run_import(collection_object, path, progress=not quiet, **options)
        except (TrecFormatError, ImportRejectedError) as error:
            raise CommandError(f"{error} (nothing imported)") from None
        except OSError as error:
            raise CommandError(f"{error.filename or path}: {error.strerror} (nothing imported)") from None
        self.stdout.write(f"{collection_object.name}: {message}")

    def run_import(self, collection: Collection, path: str, *, progress: bool, **options) -> str:
        raise NotImplementedError

"""The shared shape of the ``*_import`` commands: find the collection, check ``--owner`` may change it, run
one import service, turn a bad line into a CommandError naming file, line and problem. Without ``--owner``
the server's operator imports (any collection). A change to a version that a started campaign uses is made
in a new version, which the printed result names."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from pools.models import Collection
from pools.services import (
    CollectionForbiddenError,
    ImportRejectedError,
    collection_change_check,
)
from trecio import TrecFormatError


class ImportCommand(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("collection", help="collection name")
        parser.add_argument("path", help="file to import")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")
        parser.add_argument(
            "--owner",
            help="import as this user: refused unless they own the collection or are staff (as on the API)",
        )

    def handle(self, *args, collection, path, quiet, owner=None, **options):
        try:
            collection_object = Collection.objects.current().get(name=collection)
        except Collection.DoesNotExist:
            raise CommandError(f"no collection {collection!r} (create it with collection_create)") from None
        if owner:
            user = get_user_model().objects.filter(username=owner).first()
            if user is None:
                raise CommandError(f"owner: no user named {owner!r}", returncode=2)
            try:
                collection_change_check(collection_object, user=user)
            except CollectionForbiddenError as error:
                raise CommandError(f"{error} (nothing imported)", returncode=2) from None
        try:
            message = self.run_import(collection_object, path, progress=not quiet, **options)
        except (TrecFormatError, ImportRejectedError) as error:
            raise CommandError(f"{error} (nothing imported)") from None
        except OSError as error:
            raise CommandError(f"{error.filename or path}: {error.strerror} (nothing imported)") from None
        self.stdout.write(f"{collection_object.name}: {message}")

    def run_import(self, collection: Collection, path: str, *, progress: bool, **options) -> str:
        raise NotImplementedError

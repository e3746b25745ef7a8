from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from pools.models import Collection
from pools.services import (
    CollectionOwnerError,
    collection_copy,
    collection_owner_get,
    collection_validation_message,
)


class Command(BaseCommand):
    help = (
        "Copy a collection (topics, passages, graded qrels and its own runs) under a new name: a collection of "
        "one's own to change. --owner owns the copy (default: the source's owner). (A collection that a started "
        "campaign uses needs no copy: its owner's imports make a new version.)"
    )

    def add_arguments(self, parser):
        parser.add_argument("source", help="collection to copy")
        parser.add_argument("name", help="name of the new collection")
        parser.add_argument("--owner", help="username of the researcher (or staff) who owns the copy")
        parser.add_argument("--description", help="description of the copy (default: the source's)")

    def handle(self, *args, source, name, owner, description, **options):
        found = Collection.objects.current().select_related("owner").filter(name=source).first()
        if found is None:
            raise CommandError(f"no collection {source!r}", returncode=2)
        try:
            owner_user = collection_owner_get(username=owner) if owner else found.owner
            copy = collection_copy(source=found, name=name, owner=owner_user, description=description)
        except CollectionOwnerError as error:
            raise CommandError(str(error), returncode=2) from None
        except ValidationError as error:
            raise CommandError(collection_validation_message(error), returncode=2) from None
        self.stdout.write(
            f"copied collection {found.name} to {copy.name}: {copy.topics.count()} topics, "
            f"{copy.items.count()} passages, {copy.runs.count()} runs"
        )

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from pools.services import (
    CollectionOwnerError,
    collection_create,
    collection_owner_get,
    collection_validation_message,
)


class Command(BaseCommand):
    help = (
        "Create a collection (strict unless --lenient: qrels and runs may not create topics), owned by --owner "
        "(a researcher or staff: only they and staff may change it; without --owner, staff only)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--description", default="")
        parser.add_argument("--lenient", action="store_true")
        parser.add_argument("--owner", help="username of the researcher (or staff) who owns the collection")

    def handle(self, *args, name, description, lenient, owner, **options):
        try:
            owner_user = collection_owner_get(username=owner) if owner else None
            collection = collection_create(
                name=name, description=description, is_strict=not lenient, owner=owner_user
            )
        except CollectionOwnerError as error:
            raise CommandError(str(error), returncode=2) from None
        except ValidationError as error:
            raise CommandError(collection_validation_message(error)) from None
        owned = f", owner {owner_user.username}" if owner_user else ""
        self.stdout.write(
            f"created collection {collection.name} ({'strict' if collection.is_strict else 'lenient'}{owned})"
        )

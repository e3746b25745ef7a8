from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from pools.services import collection_create


class Command(BaseCommand):
    help = "Create a collection (strict unless --lenient: qrels and runs may not create topics)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--description", default="")
        parser.add_argument("--lenient", action="store_true")

    def handle(self, *args, name, description, lenient, **options):
        try:
            collection = collection_create(name=name, description=description, is_strict=not lenient)
        except ValidationError as error:
            raise CommandError(
                "; ".join(f"{field}: {' '.join(m)}" for field, m in error.message_dict.items())
            ) from None
        self.stdout.write(
            f"created collection {collection.name} ({'strict' if collection.is_strict else 'lenient'})"
        )

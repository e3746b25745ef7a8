from django.core.management.base import CommandError

from pools.management.commands._import_command import ImportCommand
from pools.services import topics_import
from pools.services.topics import TOPIC_FORMATS, topic_format_for


class Command(ImportCommand):
    help = (
        "Import topics: TSV 'topic_id<TAB>question', TREC CAsT JSON (with --resolved questions), or "
        "conversation turns 'topic_id<TAB>conversation_id<TAB>turn<TAB>utterance' of known topics."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--format", choices=TOPIC_FORMATS, default=None)
        parser.add_argument("--resolved", default=None, help="CAsT: 'topic_id<TAB>resolved question' file")

    def run_import(self, collection, path, *, progress, format, resolved, **options):
        if resolved is not None and (format or topic_format_for(path)) != "cast":
            raise CommandError("--resolved only applies to CAsT JSON topics")
        result = topics_import(
            collection=collection, path=path, format=format, resolved_path=resolved, progress=progress
        )
        return f"topics: {result}"

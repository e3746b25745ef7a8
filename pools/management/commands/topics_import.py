from pools.management.commands._import_command import ImportCommand
from pools.services import topics_import_cast, topics_import_tsv, topics_import_turns


class Command(ImportCommand):
    help = (
        "Import topics: TSV 'topic_id<TAB>question', TREC CAsT JSON (with --resolved questions), or "
        "conversation turns 'topic_id<TAB>conversation_id<TAB>turn<TAB>utterance' of known topics."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--format", choices=("tsv", "cast", "turns"), default=None)
        parser.add_argument("--resolved", default=None, help="CAsT: 'topic_id<TAB>resolved question' file")

    def run_import(self, collection, path, *, progress, format, resolved, **options):
        format = format or ("cast" if path.lower().endswith(".json") else "tsv")
        if format == "cast":
            result = topics_import_cast(collection=collection, path=path, resolved_path=resolved)
        elif format == "turns":
            result = topics_import_turns(collection=collection, path=path)
        else:
            result = topics_import_tsv(collection=collection, path=path, progress=progress)
        return f"topics: {result}"

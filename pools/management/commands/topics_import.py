from pools.management.commands._import_command import ImportCommand
from pools.services import topics_import_cast, topics_import_tsv


class Command(ImportCommand):
    help = "Import topics: TSV 'topic_id<TAB>question', or TREC CAsT JSON (with --resolved questions)."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--format", choices=("tsv", "cast"), default=None)
        parser.add_argument("--resolved", default=None, help="CAsT: 'topic_id<TAB>resolved question' file")

    def run_import(self, collection, path, *, progress, format, resolved, **options):
        if (format or ("cast" if path.lower().endswith(".json") else "tsv")) == "cast":
            result = topics_import_cast(collection=collection, path=path, resolved_path=resolved)
        else:
            result = topics_import_tsv(collection=collection, path=path, progress=progress)
        return f"topics: {result}"

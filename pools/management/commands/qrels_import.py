from pools.management.commands._import_command import ImportCommand
from pools.services import qrels_import


class Command(ImportCommand):
    help = "Import graded judgments from TREC qrels 'topic Q0 docid grade'."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--replace", action="store_true", help="overwrite stored grades the file changes")

    def run_import(self, collection, path, *, progress, replace, **options):
        return f"graded judgments: {qrels_import(collection=collection, path=path, replace=replace, progress=progress)}"

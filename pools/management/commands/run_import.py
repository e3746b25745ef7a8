from pools.management.commands._import_command import ImportCommand
from pools.services import run_import


class Command(ImportCommand):
    help = "Import a TREC run 'topic Q0 docid rank score tag' (validated, stored as a file)."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--name", default=None, help="default: file name without extension")
        parser.add_argument("--replace", action="store_true")

    def run_import(self, collection, path, *, progress, name, replace, **options):
        run = run_import(collection=collection, path=path, name=name, replace=replace, progress=progress)
        return (
            f"run {run.name}: {run.line_count} lines over {run.topic_count} topics, stored as {run.file.name}"
        )

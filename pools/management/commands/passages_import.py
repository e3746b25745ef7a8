from pools.management.commands._import_command import ImportCommand
from pools.services import passages_import


class Command(ImportCommand):
    help = 'Import passages: TSV \'docid<TAB>text\' or JSONL {"id", "text"}.'

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--format", choices=("tsv", "jsonl"), default=None)

    def run_import(self, collection, path, *, progress, format, **options):
        return (
            f"passages: {passages_import(collection=collection, path=path, format=format, progress=progress)}"
        )

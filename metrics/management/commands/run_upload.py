from pathlib import Path

from django.core.files import File
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from judging.management.campaign_lookup import campaign_for_command, campaign_owner_argument
from metrics.uploads import RunUploadError, run_upload, run_validate_and_score
from pools.models import Run
from pools.services import run_delete


class Command(BaseCommand):
    help = (
        "Upload a TREC run to a campaign (its own: no other campaign sees it) as the dashboard and the API do: stored, validated "
        "(errors as file:line: problem) and, once the campaign is finished, scored."
    )

    def add_arguments(self, parser):
        parser.add_argument("campaign", help="campaign name")
        campaign_owner_argument(parser)
        parser.add_argument("path", help="TREC run file")
        parser.add_argument("--name", help="run name (default: the file name without extension)")

    def handle(self, *args, campaign, path, name, owner, **options):
        found = campaign_for_command(campaign, owner, returncode=2)
        source = Path(path)
        if not source.is_file():
            raise CommandError(f"{path}: no such file", returncode=2)
        name = name or source.stem
        try:
            with open(source, "rb") as handle:
                run = run_upload(campaign=found, name=name, upload=File(handle, name=source.name))
        except RunUploadError as error:
            raise CommandError(str(error), returncode=2) from None
        # Validate now (with a broker the queued task would do it too, and finds the run done: idempotent).
        run = run_validate_and_score(run=run)
        if run.status != Run.Status.READY:
            # A script gets the problem and nothing stays behind (the dashboard keeps failed uploads to show).
            message = run.error.replace(f"{run.name}.run", source.name, 1)
            with transaction.atomic():
                run_delete(run=run)
            raise CommandError(message, returncode=1)
        self.stdout.write(f"run {run.name}: {run.line_count} lines, {run.topic_count} topics, {run.status}")

from django.core.management.base import BaseCommand, CommandError

from judging.crowd import CrowdError
from judging.management.campaign_lookup import campaign_for_command, campaign_owner_argument
from judging.services.crowd_sync import campaign_sync


class Command(BaseCommand):
    help = (
        "Sync a crowd campaign with its provider: collect submitted work, approve and record payments, give "
        "returned work back to the queue, exclude failed workers, expire HITs of a paused or finished "
        "campaign, publish HITs built since the last publish."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="campaign name")
        campaign_owner_argument(parser)

    def handle(self, *args, name, owner, **options):
        campaign = campaign_for_command(name, owner)
        try:
            report = campaign_sync(campaign=campaign)
        except CrowdError as error:
            raise CommandError(f"campaign {name}: {error}") from None
        for line in report.lines():
            self.stdout.write(line)

from django.core.management.base import BaseCommand, CommandError

from judging.management.campaign_lookup import campaign_for_command, campaign_owner_argument
from judging.services import CampaignStateError, campaign_resume


class Command(BaseCommand):
    help = "Resume a paused campaign: HITs are handed out and published again."

    def add_arguments(self, parser):
        parser.add_argument("name", help="campaign name")
        campaign_owner_argument(parser)

    def handle(self, *args, name, owner, **options):
        campaign = campaign_for_command(name, owner, returncode=2)
        try:
            campaign = campaign_resume(campaign=campaign)
        except CampaignStateError as error:
            raise CommandError(str(error), returncode=2) from None
        self.stdout.write(f"campaign {campaign.name}: {campaign.status}")

from django.core.management.base import BaseCommand, CommandError

from judging.management.campaign_lookup import campaign_for_command, campaign_owner_argument
from judging.services import CampaignStateError, campaign_pause


class Command(BaseCommand):
    help = "Pause a running campaign: no new HITs are handed out or published."

    def add_arguments(self, parser):
        parser.add_argument("name", help="campaign name")
        campaign_owner_argument(parser)

    def handle(self, *args, name, owner, **options):
        campaign = campaign_for_command(name, owner, returncode=2)
        try:
            campaign = campaign_pause(campaign=campaign)
        except CampaignStateError as error:
            raise CommandError(str(error), returncode=2) from None
        self.stdout.write(f"campaign {campaign.name}: {campaign.status}")
        if getattr(campaign, "provider_message", ""):
            self.stderr.write(f"warning: {campaign.provider_message}")

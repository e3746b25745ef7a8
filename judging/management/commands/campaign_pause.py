from django.core.management.base import BaseCommand, CommandError

from judging.models import Campaign
from judging.services import CampaignStateError, campaign_pause


class Command(BaseCommand):
    help = "Pause a running campaign: no new HITs are handed out or published."

    def add_arguments(self, parser):
        parser.add_argument("name", help="campaign name")

    def handle(self, *args, name, **options):
        campaign = Campaign.objects.filter(name=name).first()
        if campaign is None:
            raise CommandError(f"no campaign named {name!r}", returncode=2)
        try:
            campaign = campaign_pause(campaign=campaign)
        except CampaignStateError as error:
            raise CommandError(str(error), returncode=2) from None
        self.stdout.write(f"campaign {campaign.name}: {campaign.status}")
        if getattr(campaign, "provider_message", ""):
            self.stderr.write(f"warning: {campaign.provider_message}")

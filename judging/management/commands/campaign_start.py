from django.core.management.base import BaseCommand, CommandError

from judging.management.campaign_lookup import campaign_for_command, campaign_owner_argument
from judging.selectors import campaign_progress
from judging.services import CampaignConfigError, CampaignStateError, campaign_start


class Command(BaseCommand):
    help = "Start a campaign: thin the pools, open every topic's first round (or tournament), build HITs."

    def add_arguments(self, parser):
        parser.add_argument("name", help="campaign name")
        campaign_owner_argument(parser)
        parser.add_argument("--topics", nargs="+", default=None, help="only these topic ids (e.g. a pilot)")

    def handle(self, *args, name, topics, owner, **options):
        campaign = campaign_for_command(name, owner)
        try:
            campaign = campaign_start(campaign=campaign, topic_ids=topics)
        except CampaignConfigError as error:
            raise CommandError(str(error), returncode=2) from None
        except CampaignStateError as error:
            raise CommandError(str(error)) from None
        progress = campaign_progress(campaign=campaign)
        self.stdout.write(
            f"campaign {campaign.name} is {campaign.status}: topics {progress.topics}, "
            f"{progress.pairs_queued + progress.pairs_in_hits} pairs to judge, "
            f"HITs { {status: n for status, n in progress.hits.items() if n} }"
        )

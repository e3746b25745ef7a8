from django.core.management.base import BaseCommand

from judging.management.campaign_lookup import campaign_for_command, campaign_owner_argument
from metrics.leaderboard import campaign_runs_score


class Command(BaseCommand):
    help = (
        "Score every ready run of a campaign's collection for its leaderboard: compatibility at the four p "
        "presets, NDCG@3/5/10, AP and RR against the campaign's preferences and the graded qrels."
    )

    def add_arguments(self, parser):
        parser.add_argument("campaign", help="campaign name")
        campaign_owner_argument(parser)

    def handle(self, *args, campaign, owner, **options):
        found = campaign_for_command(campaign, owner, returncode=2)
        stored = campaign_runs_score(campaign=found)
        self.stdout.write(f"campaign {found.name}: {stored} scores stored")

from django.core.management.base import BaseCommand, CommandError

from judging.models import Campaign
from metrics.leaderboard import campaign_runs_score


class Command(BaseCommand):
    help = (
        "Score every ready run of a campaign's collection for its leaderboard: compatibility at the four p "
        "presets, NDCG@3/5/10, AP and RR against the campaign's preferences and the graded qrels."
    )

    def add_arguments(self, parser):
        parser.add_argument("campaign", help="campaign name")

    def handle(self, *args, campaign, **options):
        found = Campaign.objects.select_related("collection").filter(name=campaign).first()
        if found is None:
            raise CommandError(f"no campaign named {campaign!r}", returncode=2)
        stored = campaign_runs_score(campaign=found)
        self.stdout.write(f"campaign {found.name}: {stored} scores stored")

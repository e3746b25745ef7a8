from django.core.management.base import BaseCommand, CommandError

from judging.models import Campaign
from judging.services import campaign_advance


class Command(BaseCommand):
    help = (
        "Bring running campaigns up to date after a crash or lost tasks: open missing rounds, close complete "
        "ones, expire overdue HITs, build HITs. Safe to run any time (e.g. from cron)."
    )

    def add_arguments(self, parser):
        parser.add_argument("names", nargs="*", help="campaign names (default: every running campaign)")

    def handle(self, *args, names, **options):
        campaigns = Campaign.objects.filter(status=Campaign.Status.RUNNING)
        if names:
            campaigns = Campaign.objects.filter(name__in=names)
            missing = sorted(set(names) - set(campaigns.values_list("name", flat=True)))
            if missing:
                raise CommandError(f"no campaign named {', '.join(missing)}")
        for campaign in campaigns:
            counts = campaign_advance(campaign=campaign)
            self.stdout.write(
                f"{campaign.name}: " + ", ".join(f"{key} {value}" for key, value in counts.items())
            )

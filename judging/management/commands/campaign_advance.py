import time

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from judging.management.campaign_lookup import campaign_for_command, campaign_owner_argument
from judging.models import Campaign
from judging.services import campaign_advance, hit_expire_overdue


class Command(BaseCommand):
    help = (
        "Bring running campaigns up to date after a crash or lost tasks: open missing rounds, close complete "
        "ones, expire overdue assignments and HITs, build HITs. Safe to run any time (e.g. from cron); with "
        "--loop it repeats every --interval seconds until interrupted, the sweep for a deployment without "
        "celery beat."
    )

    def add_arguments(self, parser):
        parser.add_argument("names", nargs="*", help="campaign names (default: every running campaign)")
        campaign_owner_argument(parser)
        parser.add_argument(
            "--loop", action="store_true", help="sweep again every --interval seconds until interrupted"
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=60.0,
            metavar="SECONDS",
            help="seconds between two sweeps with --loop (default 60)",
        )

    def handle(self, *args, names, loop, interval, owner, **options):
        if not interval > 0 or interval == float("inf"):
            raise CommandError(f"--interval must be a positive number of seconds, not {interval}")
        missing = [name for name in names if not Campaign.objects.filter(name=name).exists()]
        if missing:
            raise CommandError(f"no campaign named {', '.join(sorted(missing))}")
        pks = [campaign_for_command(name, owner).pk for name in names]
        try:
            while True:
                self.sweep(pks, stamp=loop)
                if not loop:
                    return
                time.sleep(interval)
        except KeyboardInterrupt:
            self.stdout.write("stopped")

    def sweep(self, pks, *, stamp):
        prefix = f"{timezone.now():%Y-%m-%d %H:%M:%S} " if stamp else ""
        if pks:
            campaigns = Campaign.objects.filter(pk__in=pks)
        else:
            # Overdue work of campaigns that are not running (paused) expires too; running ones follow.
            expired = len(hit_expire_overdue())
            if expired:
                self.stdout.write(f"{prefix}all campaigns: hits_expired {expired}")
            campaigns = Campaign.objects.filter(status=Campaign.Status.RUNNING)
        for campaign in campaigns.order_by("name"):
            counts = campaign_advance(campaign=campaign)
            self.stdout.write(
                f"{prefix}{campaign.name}: " + ", ".join(f"{key} {value}" for key, value in counts.items())
            )

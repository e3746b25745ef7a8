import json
import random

from django.core.management.base import BaseCommand, CommandError

from judging.engine import NoisyOracle, PerfectOracle
from judging.management.campaign_lookup import campaign_for_command, campaign_owner_argument
from judging.models import Campaign
from judging.selectors import campaign_progress
from judging.services.simulated_crowd import CampaignStalledError, campaign_simulate, tournament_simulate
from pools.trec import TrecFormatError, read_qrels


class Command(BaseCommand):
    help = (
        "Judge a started campaign with simulated workers (crowd) or a simulated assessor (tournament) that "
        "follow a preference qrels file (higher value wins; equal values: smaller docid), through the same "
        "services real workers use. Prints the campaign's progress as JSON."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="campaign name")
        campaign_owner_argument(parser)
        parser.add_argument("--oracle", required=True, help="preference qrels the simulated assessors follow")
        parser.add_argument(
            "--error-rate", type=float, default=None, help="reverse each answer with this probability"
        )
        parser.add_argument("--workers", type=int, default=5, help="simulated crowd workers (default 5)")
        parser.add_argument("--seed", type=int, default=0, help="seed of the noisy oracle")
        parser.add_argument(
            "--wait", action="store_true", help="leave rounds and HITs to Celery workers and wait for them"
        )

    def handle(self, *args, name, oracle, error_rate, workers, seed, wait, owner, **options):
        if error_rate is not None and not 0 <= error_rate <= 1:
            raise CommandError(f"--error-rate must be in [0, 1] (got {error_rate})")
        if workers < 1:
            raise CommandError(f"--workers must be at least 1 (got {workers})")
        campaign = campaign_for_command(name, owner)
        if campaign.status == Campaign.Status.DRAFT:
            raise CommandError(f"campaign {name!r} is not started (run campaign_start first)")
        try:
            values = read_qrels(oracle)
        except (OSError, TrecFormatError) as error:
            raise CommandError(str(error)) from None
        assessor = (
            PerfectOracle(values)
            if error_rate is None
            else NoisyOracle(values, error_rate=error_rate, rng=random.Random(seed))
        )
        try:
            if campaign.mode == Campaign.Mode.TOURNAMENT:
                tournament_simulate(campaign=campaign, oracle=assessor)
            else:
                campaign_simulate(campaign=campaign, oracle=assessor, worker_count=workers, drive=not wait)
        except CampaignStalledError as error:
            raise CommandError(str(error)) from None
        campaign.refresh_from_db()
        progress = {"campaign": campaign.name} | campaign_progress(campaign=campaign).as_json()
        self.stdout.write(json.dumps(progress, default=str, indent=2))

import argparse

from django.core.management.base import BaseCommand, CommandError

from judging.crowd import CrowdError
from judging.management.campaign_lookup import campaign_for_command, campaign_owner_argument
from judging.services import CampaignStateError
from judging.services.publishing import campaign_publish


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of HITs")
    return value


class Command(BaseCommand):
    help = (
        "Publish a running campaign's unpublished HITs to its crowd provider (MTurk, Prolific or local), "
        "within its budget and the provider's balance; --dry-run prints HITs, assignments, pay, fees and total "
        "cost and publishes nothing. A campaign with a language model lets it judge first (with a progress "
        "bar); --dry-run estimates its tokens and cost from the passage lengths."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="campaign name")
        campaign_owner_argument(parser)
        parser.add_argument("--max-hits", type=positive, default=None, help="publish at most N HITs")
        parser.add_argument(
            "--dry-run", action="store_true", help="print what would be published, do nothing"
        )

    def handle(self, *args, name, max_hits, dry_run, owner, **options):
        campaign = campaign_for_command(name, owner)
        bar = None

        def progress(done: int, total: int) -> None:
            nonlocal bar
            if bar is None:
                from tqdm import tqdm

                bar = tqdm(desc=f"{campaign.llm_model} questions", unit="q", file=self.stderr._out)
            bar.total = total
            bar.update(done - bar.n)

        try:
            report = campaign_publish(
                campaign=campaign, max_hits=max_hits, is_dry_run=dry_run, llm_progress=progress
            )
        except (CampaignStateError, CrowdError) as error:
            raise CommandError(f"campaign {name}: {error}") from None
        finally:
            if bar is not None:
                bar.close()
        for line in report.lines():
            self.stdout.write(line)

"""Print the stored scores of a collection's runs: against a campaign's preference qrels, or the graded ones."""

from django.core.management.base import BaseCommand, CommandError

from judging.models import Campaign
from metrics.models import RunScore
from metrics.services import run_scores_compute
from metrics.tasks import CAMPAIGN_MEASURES


class Command(BaseCommand):
    help = (
        "Print a table of stored run scores (one row per run, one column per measure) for a campaign's "
        "preference qrels, with the graded-qrels scores of the same measures beside them."
    )

    def add_arguments(self, parser):
        parser.add_argument("campaign", help="campaign name")
        parser.add_argument("--kind", choices=["combined", "top_k", "best"], default="combined")
        parser.add_argument("-m", "--measure", nargs="+", default=CAMPAIGN_MEASURES, help="measures to show")

    def handle(self, *args, campaign, kind, measure, **options):
        found = Campaign.objects.select_related("collection").filter(name=campaign).first()
        if found is None:
            raise CommandError(f"no campaign named {campaign!r}")
        # Graded scores are cheap and make the comparison the paper draws (Table 3): compute them if missing.
        graded = RunScore.objects.filter(run__collection=found.collection, campaign__isnull=True, measure__in=measure)
        if graded.count() < found.collection.runs.count() * len(measure):
            run_scores_compute(collection=found.collection, measures=measure)
        if not RunScore.objects.filter(campaign=found, qrels_kind=kind).exists():
            run_scores_compute(campaign=found, measures=measure, qrels_kind=kind)
        for title, scores in (
            (f"Runs scored against campaign {found.name}'s {kind} preference qrels", RunScore.objects.filter(campaign=found, qrels_kind=kind)),
            ("The same runs against the graded qrels", RunScore.objects.filter(run__collection=found.collection, campaign__isnull=True)),
        ):
            table = {}
            for score in scores.filter(measure__in=measure).select_related("run"):
                table.setdefault(score.run.name, {})[score.measure] = score.mean
            self.stdout.write(f"\n{title}:")
            header = f"{'run':<16}" + "".join(f"{name:>12}" for name in measure)
            self.stdout.write(header)
            self.stdout.write("-" * len(header))
            first = measure[0]
            for run_name in sorted(table, key=lambda name: -table[name].get(first, float("-inf"))):
                row = table[run_name]
                self.stdout.write(
                    f"{run_name:<16}" + "".join(f"{row[name]:>12.4f}" if name in row else f"{'-':>12}" for name in measure)
                )

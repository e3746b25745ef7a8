"""Print the stored scores of a collection's runs: against a campaign's preference qrels, or the graded ones."""

from django.core.management.base import BaseCommand, CommandError

from judging.models import Campaign
from metrics.core.evaluate import parse_measure
from metrics.models import RunScore
from metrics.services import ScoreRequestError, run_scores_compute
from metrics.tasks import CAMPAIGN_MEASURES


class Command(BaseCommand):
    help = (
        "Print a table of stored run scores (one row per run, one column per measure) for a campaign's "
        "preference qrels, with the graded-qrels scores of the same measures beside them. Scores not stored "
        "yet are computed first."
    )

    def add_arguments(self, parser):
        parser.add_argument("campaign", help="campaign name")
        parser.add_argument("--kind", choices=["combined", "top_k", "best"], default="combined")
        parser.add_argument("-m", "--measure", nargs="+", default=CAMPAIGN_MEASURES, help="measures to show")

    def handle(self, *args, campaign, kind, measure, **options):
        try:
            # Stored rows carry canonical names (compat -> compat@0.95), so look them up by those.
            measures = [parse_measure(name).name for name in measure]
        except ValueError as error:
            raise CommandError(str(error)) from None
        found = Campaign.objects.select_related("collection").filter(name=campaign).first()
        if found is None:
            raise CommandError(f"no campaign named {campaign!r}")
        collection = found.collection
        expected = collection.runs.count() * len(measures)
        # Graded scores are cheap and make the comparison the paper draws (Table 3).
        for title, scores, source in (
            (
                f"Runs scored against campaign {found.name}'s {kind} preference qrels",
                RunScore.objects.filter(campaign=found, qrels_kind=kind, measure__in=measures),
                {"campaign": found, "qrels_kind": kind},
            ),
            (
                "The same runs against the graded qrels",
                RunScore.objects.filter(
                    run__collection=collection, campaign__isnull=True, measure__in=measures
                ),
                {"collection": collection},
            ),
        ):
            if scores.count() < expected:
                try:
                    run_scores_compute(measures=measures, **source)
                except ScoreRequestError as error:
                    raise CommandError(str(error)) from None
            self._write_table(title, scores.select_related("run"), measures)

    def _write_table(self, title: str, scores, measures: list[str]) -> None:
        table: dict[str, dict[str, float]] = {}
        for score in scores:
            table.setdefault(score.run.name, {})[score.measure] = score.mean
        self.stdout.write(f"\n{title}:")
        header = f"{'run':<16}" + "".join(f"{name:>12}" for name in measures)
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        first = measures[0]
        for run_name in sorted(table, key=lambda name: -table[name].get(first, float("-inf"))):
            row = table[run_name]
            self.stdout.write(
                f"{run_name:<16}"
                + "".join(f"{row[name]:>12.4f}" if name in row else f"{'-':>12}" for name in measures)
            )

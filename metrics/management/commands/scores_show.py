"""Print the stored scores of a collection's runs: against a campaign's preference qrels, or the graded ones."""

import textwrap

from django.core.management.base import BaseCommand, CommandError

from judging.management.campaign_lookup import campaign_for_command, campaign_owner_argument
from metrics.core.evaluate import parse_measure
from metrics.core.legend import FAMILY_MEANING, KIND_MEANING, qrels_difference, relevance_note
from metrics.core.trec import DEFAULT_THRESHOLD
from metrics.leaderboard import LEADERBOARD_MEASURES
from metrics.models import RunScore
from metrics.selectors import campaign_run_list
from metrics.services import ScoreRequestError, run_scores_compute

LEGEND_WIDTH = 110


class Command(BaseCommand):
    help = (
        "Print a table of stored run scores (one row per run, one column per measure) for a campaign's "
        "preference qrels, with the graded-qrels scores of the same measures beside them. Scores not stored "
        "yet are computed first."
    )

    def add_arguments(self, parser):
        parser.add_argument("campaign", help="campaign name")
        campaign_owner_argument(parser)
        parser.add_argument("--kind", choices=["combined", "top_k", "best"], default="combined")
        parser.add_argument(
            "-m", "--measure", nargs="+", default=LEADERBOARD_MEASURES, help="measures to show"
        )

    def handle(self, *args, campaign, kind, measure, owner, **options):
        try:
            # Stored rows carry canonical names (compat -> compat@0.95), so look them up by those.
            measures = [parse_measure(name).name for name in measure]
        except ValueError as error:
            raise CommandError(str(error)) from None
        found = campaign_for_command(campaign, owner)
        collection = found.collection
        runs = list(campaign_run_list(campaign=found))  # never another campaign's uploads
        expected = len(runs) * len(measures)
        # Graded scores are cheap and make the comparison the paper draws (Table 3).
        tables = (
            (
                f"Runs scored against campaign {found.name}'s {kind} preference qrels ({KIND_MEANING[kind]})",
                RunScore.objects.filter(campaign=found, qrels_kind=kind, measure__in=measures, run__in=runs),
                {"campaign": found, "qrels_kind": kind},
            ),
            (
                "The same runs against the graded qrels (grades only)",
                RunScore.objects.filter(run__in=runs, campaign__isnull=True, measure__in=measures),
                {"collection": collection, "runs": runs},
            ),
        )
        for number, (title, scores, source) in enumerate(tables):
            if scores.count() < expected:
                try:
                    run_scores_compute(measures=measures, **source)
                except ScoreRequestError as error:
                    raise CommandError(str(error)) from None
            self._write_table(title, scores.select_related("run"), measures, with_legend=number == 0)
        self.stdout.write("")
        self._write_wrapped(qrels_difference(kind))

    def _write_table(self, title: str, scores, measures: list[str], *, with_legend: bool) -> None:
        table: dict[str, dict[str, float]] = {}
        topics: set[int] = set()
        for score in scores:
            table.setdefault(score.run.name, {})[score.measure] = score.mean
            topics.add(score.topic_count)
        self.stdout.write(f"\n{title}:")
        if with_legend:
            self._write_wrapped(_legend(measures, topics))
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

    def _write_wrapped(self, text: str) -> None:
        for line in textwrap.wrap(text, width=LEGEND_WIDTH):
            self.stdout.write(line)


def _legend(measures: list[str], topic_counts: set[int]) -> str:
    """One sentence naming every column: what the rows hold and what each measure is."""
    topics = f"{topic_counts.pop()} topics" if len(topic_counts) == 1 else "the topics"
    families = [name.split("@")[0] for name in measures]
    meanings = [
        f"{family}{'@p' if family == 'compat' else '@k' if '@' in name else ''} = {FAMILY_MEANING[family]}"
        for family, name in dict(zip(families, measures, strict=True)).items()
        if family in FAMILY_MEANING
    ]
    note = relevance_note(families, DEFAULT_THRESHOLD)
    note = f"; {note}" if note else ""
    return f"Columns: each run's mean over {topics}, best first; {'; '.join(meanings)}{note}."

import logging
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Count

from judging.engine import DEFAULT_PARAMS, CrowdParams, PerfectOracle, tournament_judgment_bound
from judging.models import Campaign
from judging.selectors import campaign_judgment_counts, campaign_progress, campaign_ranked
from judging.services import campaign_create, campaign_delete, campaign_start
from judging.services.simulation import campaign_simulate, tournament_simulate
from pools.models import Collection, GradedJudgment, Topic
from pools.trec import TrecFormatError, read_qrels

CROWD_CAMPAIGN = "demo-crowd"
TOURNAMENT_CAMPAIGN = "demo-tournament"
QUESTION_WIDTH = 48


class Command(BaseCommand):
    help = (
        "Run the crowd pipeline with simulated workers over the demo collection, then a dedicated tournament on "
        "one topic, through the real services, and print each topic's top-k. Replaces earlier demo campaigns."
    )

    def add_arguments(self, parser):
        parser.add_argument("--collection", default="demo", help="collection name (default: demo)")
        parser.add_argument(
            "--oracle",
            default=str(Path(settings.BASE_DIR) / "demo" / "qrels.preference.txt"),
            help="preference qrels the simulated workers follow (default: demo/qrels.preference.txt)",
        )
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("-k", type=int, default=DEFAULT_PARAMS.k)
        parser.add_argument("--workers", type=int, default=5)
        parser.add_argument(
            "--tournament-topic", default=None, help="topic for the tournament (default: largest pool)"
        )

    def handle(self, *args, collection, oracle, seed, k, workers, tournament_topic, **options):
        collection = Collection.objects.filter(name=collection).first()
        if collection is None:
            raise CommandError("no demo collection: load it first (manage.py demo_load)")
        # Checked before the earlier demo campaigns are deleted, so a bad argument changes nothing.
        try:
            CrowdParams(k=k).validate()
        except ValueError as error:
            raise CommandError(str(error)) from None
        if workers < 1:
            raise CommandError(f"--workers must be at least 1 (got {workers})")
        judged = GradedJudgment.objects.filter(topic__collection=collection)
        if tournament_topic is not None and not judged.filter(topic__topic_id=tournament_topic).exists():
            raise CommandError(f"topic {tournament_topic!r} has no graded judgments in {collection.name}")
        if not judged.exists():
            raise CommandError(f"collection {collection.name} has no graded judgments")
        try:
            values = read_qrels(oracle)
        except (OSError, TrecFormatError) as error:
            raise CommandError(str(error)) from None
        oracle = PerfectOracle(values)
        # Eager tasks log one line each at INFO; the table is the demo's output.
        logging.getLogger("celery.app.trace").setLevel(logging.WARNING)
        for campaign in Campaign.objects.filter(name__in=[CROWD_CAMPAIGN, TOURNAMENT_CAMPAIGN]):
            campaign_delete(campaign=campaign)

        crowd = campaign_create(collection=collection, name=CROWD_CAMPAIGN, k=k, seed=seed)
        crowd = campaign_start(campaign=crowd)
        report = campaign_simulate(campaign=crowd, oracle=oracle, worker_count=workers)
        self._print_crowd(crowd, oracle, report)

        topic_id = tournament_topic or self._largest_pool_topic(crowd)
        tournament = campaign_create(
            collection=collection, name=TOURNAMENT_CAMPAIGN, mode="tournament", k=k, seed=seed
        )
        tournament = campaign_start(campaign=tournament, topic_ids=[topic_id])
        judgments = tournament_simulate(campaign=tournament, oracle=oracle)
        self._print_tournament(tournament, topic_id, judgments, oracle)
        open_crowd, open_tournament = open_for_browser_judging(collection=collection, k=k, seed=seed)
        self.stdout.write(
            f"\nOpen to judge in the browser (/judge/): crowd campaign {open_crowd.name} "
            f"({open_crowd.hits.filter(status='open').count()} HITs), tournament {open_tournament.name}"
        )

    def _largest_pool_topic(self, campaign: Campaign) -> str:
        sizes = campaign.campaign_topics.annotate(size=Count("candidates")).order_by(
            "-size", "topic__topic_id"
        )
        return sizes.values_list("topic__topic_id", flat=True).first()

    def _print_crowd(self, campaign: Campaign, oracle: PerfectOracle, report) -> None:
        campaign.refresh_from_db()
        progress = campaign_progress(campaign=campaign)
        ranked = campaign_ranked(campaign=campaign)
        counts = campaign_judgment_counts(campaign=campaign)
        questions = dict(
            Topic.objects.filter(collection=campaign.collection).values_list("topic_id", "question")
        )
        pools = dict(
            campaign.campaign_topics.annotate(size=Count("candidates")).values_list("topic__topic_id", "size")
        )
        self.stdout.write(
            f"Crowd campaign {campaign.name} (k={campaign.k}, F={campaign.final_stage_size}, P={campaign.opponents}, "
            f"seed {campaign.seed}): {campaign.status}; {progress.judgments} judgments in {report.hits} HITs "
            f"of {campaign.preferences_per_hit}+{campaign.challenges_per_hit}, {report.discarded_hits} discarded, "
            f"cost ${progress.spend_usd}\n"
        )
        header = f"{'topic':<8} {'question':<{QUESTION_WIDTH}} {'pool':>4} {'judg.':>5}  top-{campaign.k} (rank:docid)   oracle agrees"
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for topic_id in sorted(pools):
            items = ranked.get(topic_id, [])
            truth = oracle.ranking(topic_id, oracle.values.get(topic_id, {}))[: campaign.k]
            agree = len({item.docid for item in items} & set(truth))
            top = " ".join(f"{item.rank}:{item.docid}" for item in items) or "(nothing to judge)"
            self.stdout.write(
                f"{topic_id:<8} {_shorten(questions.get(topic_id, '')):<{QUESTION_WIDTH}} {pools[topic_id]:>4} "
                f"{counts.get(topic_id, 0):>5}  {top}   {agree}/{min(campaign.k, len(truth))}"
            )

    def _print_tournament(
        self, campaign: Campaign, topic_id: str, judgments: int, oracle: PerfectOracle
    ) -> None:
        pool = campaign.campaign_topics.get(topic__topic_id=topic_id).candidates.count()
        ranked = campaign_ranked(campaign=campaign).get(topic_id, [])
        truth = oracle.ranking(topic_id, oracle.values.get(topic_id, {}))[: campaign.k]
        self.stdout.write(
            f"\nDedicated tournament {campaign.name} on topic {topic_id} (pool {pool}): {judgments} judgments "
            f"(bound |C| + (k-1)*ceil(log2 |C|) = {tournament_judgment_bound(pool, campaign.k)})"
        )
        for item in ranked:
            mark = (
                "" if item.rank > len(truth) or truth[item.rank - 1] == item.docid else "   (oracle differs)"
            )
            self.stdout.write(f"  {item.rank}. {item.docid}{mark}")


OPEN_CROWD_CAMPAIGN = "demo-open-crowd"
OPEN_TOURNAMENT_CAMPAIGN = "demo-open-tournament"


def open_for_browser_judging(*, collection: Collection, k: int = 5, seed: int = 1) -> tuple[Campaign, Campaign]:
    """Leave one campaign of each mode running for people to judge at /judge/: a local crowd campaign over
    every topic (HITs built) and a dedicated tournament on the topic with the smallest pool of at least k+1
    candidates, so that a newcomer finishes a topic in a few minutes. Replaces earlier ones."""
    for campaign in Campaign.objects.filter(name__in=[OPEN_CROWD_CAMPAIGN, OPEN_TOURNAMENT_CAMPAIGN]):
        campaign_delete(campaign=campaign)
    crowd = campaign_start(campaign=campaign_create(collection=collection, name=OPEN_CROWD_CAMPAIGN, k=k, seed=seed))
    sizes = crowd.campaign_topics.annotate(size=Count("candidates")).filter(size__gt=k).order_by("size", "topic__topic_id")
    topic_id = sizes.values_list("topic__topic_id", flat=True).first()
    tournament = campaign_create(
        collection=collection, name=OPEN_TOURNAMENT_CAMPAIGN, mode="tournament", k=k, seed=seed
    )
    tournament = campaign_start(campaign=tournament, topic_ids=[topic_id] if topic_id else None)
    return crowd, tournament


def _shorten(text: str) -> str:
    return text if len(text) <= QUESTION_WIDTH else text[: QUESTION_WIDTH - 1] + "…"

import logging
import textwrap
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Count, Q

from judging.engine import DEFAULT_PARAMS, CrowdParams, PerfectOracle, tournament_judgment_bound
from judging.models import Campaign
from judging.selectors import RESEARCHERS_GROUP, campaign_judgment_counts, campaign_progress, campaign_ranked
from judging.services import campaign_create, campaign_delete, campaign_start, hit_build
from judging.services.simulated_crowd import campaign_simulate, tournament_simulate
from pools.models import Collection, GradedJudgment, Item, Topic
from pools.trec import TrecFormatError, read_qrels

CROWD_CAMPAIGN = "demo-crowd"
# The demo researcher: `make demo`'s `demo_superuser` prints its login.
DEMO_OWNER = "admin"
TOURNAMENT_CAMPAIGN = "demo-tournament"
# The demo's tables fit a 110-column terminal; texts wrap at word boundaries (never cut mid-word).
TABLE_WIDTH = 110
TOP_WIDTH = 62
TEXT_INDENT = 9
PASSAGE_WIDTH = 60


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
            "--owner",
            default=DEMO_OWNER,
            help=f"the researcher who owns the demo campaigns, created if needed (default {DEMO_OWNER}: the "
            "login `demo_superuser` prints; the README's API example asks for its token)",
        )
        parser.add_argument(
            "--tournament-topic", default=None, help="topic for the tournament (default: largest pool)"
        )

    def handle(self, *args, collection, oracle, seed, k, workers, tournament_topic, owner, **options):
        collection = Collection.objects.current().filter(name=collection).first()
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
        oracle_name = Path(oracle).name
        oracle = PerfectOracle(values)
        # Eager tasks log one line each at INFO; the table is the demo's output.
        logging.getLogger("celery.app.trace").setLevel(logging.WARNING)
        owner = demo_owner(username=owner)
        # Names are unique per owner: the demo replaces its owner's demo campaigns, nobody else's.
        for campaign in Campaign.objects.filter(name__in=[CROWD_CAMPAIGN, TOURNAMENT_CAMPAIGN], owner=owner):
            campaign_delete(campaign=campaign)

        started = _stage(
            self.stdout,
            "crowd campaign",
            f"simulated crowd workers judge pairs of passages for every question of collection {collection.name}",
        )
        crowd = campaign_create(collection=collection, name=CROWD_CAMPAIGN, k=k, seed=seed, owner=owner)
        crowd = campaign_start(campaign=crowd)
        report = campaign_simulate(campaign=crowd, oracle=oracle, worker_count=workers)
        self._print_crowd(crowd, oracle, oracle_name, report, workers)
        _stage_done(self.stdout, "crowd campaign", started)

        topic_id = tournament_topic or self._largest_pool_topic(crowd)
        started = _stage(
            self.stdout, "tournament", f"one dedicated assessor finds the top-{k} of topic {topic_id} alone"
        )
        tournament = campaign_create(
            collection=collection, name=TOURNAMENT_CAMPAIGN, mode="tournament", k=k, seed=seed, owner=owner
        )
        tournament = campaign_start(campaign=tournament, topic_ids=[topic_id])
        judgments = tournament_simulate(campaign=tournament, oracle=oracle)
        self._print_tournament(tournament, topic_id, judgments, oracle, crowd)
        _stage_done(self.stdout, "tournament", started)
        open_crowd, open_tournament = open_for_browser_judging(
            collection=collection, k=k, seed=seed, owner=owner
        )
        self.stdout.write(
            f"\nOpen to judge in the browser (/judge/): crowd campaign {open_crowd.name} "
            f"({open_crowd.hits.filter(status='open').count()} HITs),\n  tournament {open_tournament.name}"
        )

    def _largest_pool_topic(self, campaign: Campaign) -> str:
        sizes = campaign.campaign_topics.annotate(size=Count("candidates")).order_by(
            "-size", "topic__topic_id"
        )
        return sizes.values_list("topic__topic_id", flat=True).first()

    def _print_crowd(
        self, campaign: Campaign, oracle: PerfectOracle, oracle_name: str, report, workers: int
    ) -> None:
        campaign.refresh_from_db()
        progress = campaign_progress(campaign=campaign)
        ranked = campaign_ranked(campaign=campaign)
        counts = campaign_judgment_counts(campaign=campaign)
        questions = _questions(campaign)
        topics = campaign.campaign_topics.annotate(
            size=Count("candidates", distinct=True),
            stage_1_rounds=Count("rounds", filter=Q(rounds__stage=1), distinct=True),
        ).values_list("topic__topic_id", "size", "stage_1_rounds")
        pools = {topic_id: (size, rounds) for topic_id, size, rounds in topics}
        k, F, P = campaign.k, campaign.final_stage_size, campaign.opponents
        write = self.stdout.write
        write(
            f"Crowd campaign {campaign.name} (k={k}, F={F}, P={P}, seed {campaign.seed}): {campaign.status}; "
            f"{progress.judgments} judgments in {report.hits} HITs of {campaign.preferences_per_hit}+"
            f"{campaign.challenges_per_hit}, {report.discarded_hits} discarded, cost ${progress.spend_usd}"
        )
        _legend(
            write,
            f"{workers} simulated workers follow the oracle ({oracle_name}, the true order). Pools "
            f"of more than F={F} candidates play stage-1 rounds (P={P} or {P + 1} opponents each; a candidate that "
            f"loses more than it wins is culled), then every pair left is judged once and ranked by wins "
            f"(paper sections 4.1 and 4.3).",
        )
        _legend(
            write,
            f"Columns: pool = candidates after thinning the grades; rounds = stage-1 rounds; judg. = judgments "
            f"(all n(n-1)/2 pairs when pool <= F); top-{k} = the crowd's ranking, rank:docid; oracle = how many "
            f"of the true top-{k} it found.",
        )
        header = f"{'topic':<8} {'pool':>4} {'rounds':>6} {'judg.':>5}  {f'top-{k} (rank:docid)':<{TOP_WIDTH}} oracle"
        write(header)
        write("-" * len(header))
        for topic_id in sorted(pools):
            size, rounds = pools[topic_id]
            items = ranked.get(topic_id, [])
            truth = oracle.ranking(topic_id, oracle.values.get(topic_id, {}))[:k]
            agree = len({item.docid for item in items} & set(truth))
            top = " ".join(f"{item.rank}:{item.docid}" for item in items) or "(nothing to judge)"
            write(
                f"{topic_id:<8} {size:>4} {rounds:>6} {counts.get(topic_id, 0):>5}  {top:<{TOP_WIDTH}} "
                f"{agree}/{min(k, len(truth))}"
            )
            for line in textwrap.wrap(questions.get(topic_id, ""), width=TABLE_WIDTH - TEXT_INDENT):
                write(" " * TEXT_INDENT + line)

    def _print_tournament(
        self, campaign: Campaign, topic_id: str, judgments: int, oracle: PerfectOracle, crowd: Campaign
    ) -> None:
        write = self.stdout.write
        pool = campaign.campaign_topics.get(topic__topic_id=topic_id).candidates.count()
        ranked = campaign_ranked(campaign=campaign).get(topic_id, [])
        crowd_ranked = {item.docid: item.rank for item in campaign_ranked(campaign=crowd).get(topic_id, [])}
        texts = dict(
            Item.objects.filter(
                collection=campaign.collection, docid__in=[item.docid for item in ranked]
            ).values_list("docid", "text")
        )
        truth = oracle.ranking(topic_id, oracle.values.get(topic_id, {}))[: campaign.k]
        bound = tournament_judgment_bound(pool, campaign.k)
        write(
            f"Dedicated tournament {campaign.name} on topic {topic_id} (pool {pool}): {judgments} judgments "
            f"(bound |C| + (k-1)*ceil(log2 |C|) = {bound})"
        )
        for line in textwrap.wrap(_questions(campaign).get(topic_id, ""), width=TABLE_WIDTH - 2):
            write("  " + line)
        _legend(
            write,
            f"A single-elimination tournament over the same pool (paper section 4.2): {pool - 1} matches find "
            f"the best passage, then only its path is replayed for each next place ({pool * (pool - 1) // 2} "
            f"judgments for all pairs).",
        )
        _legend(
            write,
            f"Columns: rank, docid; crowd = its rank in the crowd's top-{campaign.k} ('-' if absent); oracle = "
            f"'yes' if the oracle ranks it the same; the passage's opening words.",
        )
        for item in ranked:
            same = item.rank <= len(truth) and truth[item.rank - 1] == item.docid
            opening = textwrap.shorten(texts.get(item.docid, ""), width=PASSAGE_WIDTH, placeholder=" ...")
            write(
                f"  {item.rank}. {item.docid:<12} crowd {crowd_ranked.get(item.docid, '-')!s:<2} "
                f"oracle {'yes' if same else 'no (oracle differs)':<3}  {opening}"
            )


OPEN_CROWD_CAMPAIGN = "demo-open-crowd"
OPEN_TOURNAMENT_CAMPAIGN = "demo-open-tournament"


def demo_owner(*, username: str = DEMO_OWNER):
    """The demo's researcher (created without a usable password; ``demo_superuser`` sets one): the owner of the
    demo campaigns, so that a researcher's dashboard and API (which show only one's own campaigns) list them."""
    user, _ = get_user_model().objects.get_or_create(username=username)
    user.groups.add(Group.objects.get_or_create(name=RESEARCHERS_GROUP)[0])
    return user


def open_for_browser_judging(
    *, collection: Collection, k: int = 5, seed: int = 1, owner=None
) -> tuple[Campaign, Campaign]:
    """Leave one campaign of each mode running for people to judge at /judge/: a local crowd campaign over
    every topic (HITs built) and a dedicated tournament on the topic with the smallest pool of at least k+1
    candidates, so that a newcomer finishes a topic in a few minutes. Replaces earlier ones."""
    for campaign in Campaign.objects.filter(
        name__in=[OPEN_CROWD_CAMPAIGN, OPEN_TOURNAMENT_CAMPAIGN], owner=owner
    ):
        campaign_delete(campaign=campaign)
    crowd = campaign_start(
        campaign=campaign_create(collection=collection, name=OPEN_CROWD_CAMPAIGN, k=k, seed=seed, owner=owner)
    )
    # Built here rather than left to the queued task, so the HITs are there when this returns, with a Celery
    # worker too (building twice is harmless: the worker's run then finds nothing queued).
    hit_build(campaign=crowd)
    sizes = (
        crowd.campaign_topics.annotate(size=Count("candidates"))
        .filter(size__gt=k)
        .order_by("size", "topic__topic_id")
    )
    topic_id = sizes.values_list("topic__topic_id", flat=True).first()
    tournament = campaign_create(
        collection=collection, name=OPEN_TOURNAMENT_CAMPAIGN, mode="tournament", k=k, seed=seed, owner=owner
    )
    tournament = campaign_start(campaign=tournament, topic_ids=[topic_id] if topic_id else None)
    return crowd, tournament


def _stage(out, name: str, what: str) -> float:
    """Start one stage of the demo's story: the same line `make demo` prints for its own stages."""
    out.write(f"\n==> {name}: {what}")
    return time.monotonic()


def _stage_done(out, name: str, started: float) -> None:
    out.write(f"    {name} done in {time.monotonic() - started:.1f} s")


def _legend(write, text: str) -> None:
    """A paragraph explaining the table below, wrapped at word boundaries."""
    write("")
    for line in textwrap.wrap(text, width=TABLE_WIDTH):
        write(line)


def _questions(campaign: Campaign) -> dict[str, str]:
    return dict(Topic.objects.filter(collection=campaign.collection).values_list("topic_id", "question"))

"""Where a campaign stands: topics by state, pairs, HITs, spend (``CampaignProgress``) and the per-topic
progress table of the dashboard."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, TypedDict

from django.db.models import Count, Exists, Max, OuterRef, Q, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from judging.models import (
    LLM_WORKER_PROVIDER,
    Assignment,
    Campaign,
    CampaignTopic,
    Hit,
    Judgment,
    Pair,
    Round,
    TournamentJudgment,
    Worker,
)
from judging.selectors.workers import worker_excluded_here
from trecio import topic_order_key

# The phases of a budgeted campaign's waves (``judging.services.waves``): closure rounds, then the judge model's.
CLOSURE_PHASE, JUDGE_MODEL_PHASE = "closure", "model"


def wave_state_of(campaign: Campaign) -> dict[str, Any]:
    """``Campaign.wave_state`` with its defaults: ``waves`` opened, ``phase`` (``CLOSURE_PHASE`` or
    ``JUDGE_MODEL_PHASE``) and ``start`` (the last fit's reliabilities, or None)."""
    return {"waves": 0, "phase": CLOSURE_PHASE, "start": None} | dict(campaign.wave_state or {})


class _RoundRow(TypedDict):
    campaign_topic_id: int
    number: int
    stage: int
    candidate_count: int
    closed_at: datetime | None


class ProgressRow(TypedDict):
    """One topic of ``campaign_progress_table``."""

    topic: str
    state: str
    round: int
    stage: int | None
    pool_sizes: list[int]
    pairs_judged: int
    pairs_open: int
    is_finished: bool
    state_label: str


# A topic's state in words for the dashboard (the stored value is a code: stage_1); "Assessing top-k
# preferences", section 4: stage 1 culls the pool in rounds against a few opponents each, stage 2 judges every
# pair left.
TOPIC_STATE_WORDS = {
    "thinned": "waiting for its first round",
    "stage_1": "stage 1: culling rounds",
    "stage_2": "stage 2: every pair left",
    "tournament": "tournament",
    "done": "done",
    "nothing_to_judge": "nothing to judge",
}


class ProgressTable(TypedDict):
    """``campaign_progress_table``: one row per topic and the campaign's totals."""

    topics: list[ProgressRow]
    topics_total: int
    topics_finished: int
    fraction_finished: float
    pairs_judged: int
    pairs_open: int


@dataclass(frozen=True)
class CampaignProgress:
    """Where a campaign stands: the one row that ``campaign_status --json``, the API's ``progress`` and the
    dashboard's ``progress.json`` are adapters of (``as_json``, ``as_dict``). A new figure is a new field here,
    set in ``campaign_progress``: every surface shows it (the API's serializer is made from these fields).

    ``topics``: topic count by state; ``topics_done`` counts finished topics (``CampaignTopic.FINISHED_STATES``).
    ``judgments``: crowd judgments that count, one per judged pair (challenges and answers of discarded
    HITs excluded); ``tournament_judgments``: dedicated assessors' judgments. ``answers``: stored answers
    by kind (``preferences`` and ``challenges`` given by workers, discarded HITs included; ``tournament``).
    ``hits``: HIT count by status, every status present; ``hits_submitted``: assignments submitted.
    ``workers_active``: workers who took an assignment that counts as theirs (confirmed by the provider, or
    a logged-in judge's) and are not excluded; ``workers_excluded``: those of them excluded after a failed
    challenge. ``assessors_active``: assessors who judged a tournament pair or
    hold a topic now.
    ``hits_awaiting_confirmation``: HITs with an assignment whose answers are all in but that its provider
    (MTurk, Prolific) has not confirmed yet; ``judgments_unconfirmed``: stored answers of assignments the
    provider has not confirmed (awaiting it, or never confirmed and expired): they count toward nothing
    (docs/decisions.md "Provisional until the provider confirms"). ``spend_usd``: ``campaign_spend``
    (docs/decisions.md "Campaign spend").
    ``max_judgments``, ``waves``, ``model_rounds``: a budgeted campaign's judgment budget, the waves it has opened
    and the wave by which the judge model's rounds end (None without a budget); ``judge_model_rounds``: whether
    the judge model chooses the rounds yet."""

    status: str
    topics: dict[str, int]
    topics_done: int
    topics_total: int
    rounds: int
    pairs_queued: int
    pairs_in_hits: int
    judgments: int
    tournament_judgments: int
    answers: dict[str, int]
    hits: dict[str, int]
    hits_submitted: int
    workers_active: int
    workers_excluded: int
    assessors_active: int
    hits_awaiting_confirmation: int
    judgments_unconfirmed: int
    spend_usd: Decimal
    budget_usd: Decimal | None
    publish_note: str
    max_judgments: int | None = None
    judge_model_rounds: bool = False
    waves: int | None = None
    model_rounds: int | None = None

    @property
    def fraction_finished(self) -> float:
        return self.topics_done / self.topics_total if self.topics_total else 0.0

    @property
    def percent(self) -> int:
        """The dashboard's progress bar: whole percent of topics finished."""
        return round(100 * self.fraction_finished)

    def as_json(self) -> dict[str, Any]:
        """``campaign_status --json``: every field, money as a number of dollars (two decimals)."""
        data = asdict(self)
        data["spend_usd"] = float(self.spend_usd)
        data["budget_usd"] = None if self.budget_usd is None else float(self.budget_usd)
        return data

    def as_dict(self) -> dict[str, Any]:
        """Every field (money as ``Decimal``) and, beside them, the other names the API and the dashboard
        give the same figures (``PROGRESS_ALIASES``) and the derived ones (``fraction_finished``,
        ``answers_total``)."""
        data = asdict(self)
        data.update({alias: data[name] for alias, name in PROGRESS_ALIASES.items()})
        data["fraction_finished"] = self.fraction_finished
        data["answers_total"] = sum(self.answers.values())
        return data


# The dashboard's (and so the API's) names for figures of ``CampaignProgress``: same value, other name.
PROGRESS_ALIASES = {
    "topics_finished": "topics_done",
    "topics_by_state": "topics",
    "hits_by_status": "hits",
    "pairs_judged": "judgments",
    "spent_usd": "spend_usd",
}


@dataclass(frozen=True)
class Spend:
    """``campaign_spend``: ``committed`` (every submitted assignment: its earnings, or its HIT's reward until
    they are set, plus its HIT's fee), ``reserved`` (reward plus fee of each published HIT still open that
    nobody submitted), how many assignments were submitted, and ``llm``, the campaign's model's tokens at its
    prices (its own assignments earn nothing)."""

    committed: Decimal
    reserved: Decimal
    submitted: int
    llm: Decimal = Decimal("0")

    @property
    def total(self) -> Decimal:
        return (self.committed + self.reserved + self.llm).quantize(Decimal("0.01"))


def campaign_spend(*, campaign: Campaign) -> Spend:
    """The one spend sum (two queries): what the campaign owes or has reserved. The predicate is submission
    (``submitted_at``): a submitted assignment is owed whether or not its earnings are set yet, so the budget
    guard of publishing and the figure researchers read can never be below what workers are owed. A HIT or
    assignment without its own money uses the campaign's pay and fee."""
    pay, fee = Value(campaign.pay_per_hit_usd), Value(campaign.fee_per_hit_usd)
    # Only what the provider confirmed is owed: a forged submission earns nothing (docs/decisions.md,
    # "Provisional until the provider confirms").
    committed = (
        Assignment.objects.filter(campaign=campaign, submitted_at__isnull=False, confirmed_at__isnull=False)
        .exclude(worker__provider=LLM_WORKER_PROVIDER)
        .aggregate(
            pay=Sum(Coalesce("earned_usd", "hit__reward_usd", pay)),
            fees=Sum(Coalesce("hit__fee_usd", fee)),
            count=Count("pk"),
        )
    )
    has_submission = Assignment.objects.filter(
        hit=OuterRef("pk"), submitted_at__isnull=False, confirmed_at__isnull=False
    )
    reserved = (
        Hit.objects.filter(campaign=campaign, status=Hit.Status.OPEN, published_at__isnull=False)
        .exclude(Exists(has_submission))
        .aggregate(total=Sum(Coalesce("reward_usd", pay) + Coalesce("fee_usd", fee)))
    )
    llm = Decimal("0")
    if campaign.has_llm:
        from judging.selectors.llm import campaign_llm_cost

        llm = campaign_llm_cost(campaign=campaign)[2]
    return Spend(
        committed=Decimal(committed["pay"] or 0) + Decimal(committed["fees"] or 0),
        reserved=Decimal(reserved["total"] or 0),
        submitted=committed["count"],
        llm=llm,
    )


def campaign_progress(*, campaign: Campaign) -> CampaignProgress:
    """The ``CampaignProgress`` of ``campaign``, read fresh from the database (a dozen queries)."""
    campaign = Campaign.objects.get(pk=campaign.pk)
    topics = dict(
        CampaignTopic.objects.filter(campaign=campaign)
        .values_list("state")
        .annotate(n=Count("pk"))
        .order_by()
    )
    pairs = Pair.objects.filter(round__campaign_topic__campaign=campaign).aggregate(
        queued=Count("pk", filter=Q(winner__isnull=True, hit__isnull=True, round__closed_at__isnull=True)),
        in_hits=Count("pk", filter=Q(winner__isnull=True, hit__isnull=False)),
        judged=Count("pk", filter=Q(winner__isnull=False)),
    )
    hits = {status: 0 for status in Hit.Status.values}
    hits.update(
        Hit.objects.filter(campaign=campaign).values_list("status").annotate(n=Count("pk")).order_by()
    )
    answers = Judgment.objects.filter(assignment__campaign=campaign).aggregate(
        preferences=Count("pk", filter=Q(slot__is_challenge=False)),
        challenges=Count("pk", filter=Q(slot__is_challenge=True)),
    )
    tournament_judgments = TournamentJudgment.objects.filter(campaign_topic__campaign=campaign).count()
    # Who took an assignment here that the provider confirmed (a logged-in judge's is confirmed at once),
    # excluded for this campaign or not, in one statement: a claim under an invented id is nobody's work.
    excluded_here = worker_excluded_here(campaign=campaign)
    workers = Worker.objects.filter(
        pk__in=Assignment.objects.filter(campaign=campaign, confirmed_at__isnull=False).values("worker_id")
    ).aggregate(active=Count("pk", filter=~excluded_here), excluded=Count("pk", filter=excluded_here))
    spend = campaign_spend(campaign=campaign)
    assessors = set(
        TournamentJudgment.objects.filter(campaign_topic__campaign=campaign)
        .values_list("assessor_id", flat=True)
        .distinct()
    )
    assessors |= set(
        CampaignTopic.objects.filter(
            campaign=campaign, assessor__isnull=False, assessor_lease_until__gte=timezone.now()
        ).values_list("assessor_id", flat=True)
    )
    wave_state = wave_state_of(campaign)
    return CampaignProgress(
        status=campaign.status,
        topics=topics,
        topics_done=sum(topics.get(state, 0) for state in CampaignTopic.FINISHED_STATES),
        topics_total=sum(topics.values()),
        rounds=Round.objects.filter(campaign_topic__campaign=campaign).count(),
        pairs_queued=pairs["queued"],
        pairs_in_hits=pairs["in_hits"],
        judgments=pairs["judged"],
        tournament_judgments=tournament_judgments,
        answers={
            "preferences": answers["preferences"],
            "challenges": answers["challenges"],
            "tournament": tournament_judgments,
        },
        hits=hits,
        hits_submitted=spend.submitted,
        workers_active=workers["active"],
        workers_excluded=workers["excluded"],
        assessors_active=len(assessors),
        hits_awaiting_confirmation=Hit.objects.filter(
            campaign=campaign, assignments__status=Assignment.Status.SUBMITTED
        )
        .distinct()
        .count(),
        judgments_unconfirmed=Judgment.objects.filter(
            assignment__campaign=campaign, assignment__confirmed_at__isnull=True
        ).count(),
        spend_usd=spend.total,
        budget_usd=campaign.budget_usd,
        publish_note=campaign.publish_note,
        max_judgments=campaign.max_judgments,
        judge_model_rounds=wave_state["phase"] == JUDGE_MODEL_PHASE,
        waves=wave_state["waves"] if campaign.max_judgments is not None else None,
        model_rounds=campaign.model_rounds if campaign.max_judgments is not None else None,
    )


def campaign_progress_table(*, campaign: Campaign) -> ProgressTable:
    """Progress of every topic for the dashboard, in a fixed number of queries whatever the campaign's size:
    per topic (in natural order: d2 before d10) its state (code and words), round, pool size per round and
    pairs judged / open; plus overall totals."""
    topics = list(
        CampaignTopic.objects.filter(campaign=campaign)
        .order_by("topic__topic_id")
        .values("pk", "topic__topic_id", "state", "round_number")
    )
    rounds: dict[int, list[_RoundRow]] = defaultdict(list)
    for row in (
        Round.objects.filter(campaign_topic__campaign=campaign)
        .order_by("campaign_topic_id", "number")
        .values("campaign_topic_id", "number", "stage", "candidate_count", "closed_at")
    ):
        rounds[row["campaign_topic_id"]].append(row)
    pair_counts: dict[int, dict[str, int]] = defaultdict(lambda: {"judged": 0, "open": 0})
    pairs = Pair.objects.filter(round__campaign_topic__campaign=campaign)
    for key, lookup in (("judged", {"winner__isnull": False}), ("open", {"winner__isnull": True})):
        for topic_pk, n in (
            pairs.filter(**lookup).values_list("round__campaign_topic_id").annotate(n=Count("pk")).order_by()
        ):
            pair_counts[topic_pk][key] = n
    table: list[ProgressRow] = [
        {
            "topic": row["topic__topic_id"],
            "state": row["state"],
            "round": row["round_number"],
            "stage": rounds[row["pk"]][-1]["stage"] if rounds[row["pk"]] else None,
            "pool_sizes": [r["candidate_count"] for r in rounds[row["pk"]]],
            "pairs_judged": pair_counts[row["pk"]]["judged"],
            "pairs_open": pair_counts[row["pk"]]["open"],
            "is_finished": row["state"] in CampaignTopic.FINISHED_STATES,
            "state_label": TOPIC_STATE_WORDS.get(row["state"], row["state"]),
        }
        for row in sorted(topics, key=lambda row: topic_order_key(row["topic__topic_id"]))
    ]
    done = sum(1 for row in table if row["is_finished"])
    return {
        "topics": table,
        "topics_total": len(table),
        "topics_finished": done,
        "fraction_finished": done / len(table) if table else 0.0,
        "pairs_judged": sum(row["pairs_judged"] for row in table),
        "pairs_open": sum(row["pairs_open"] for row in table),
    }


class HeldAssignment(TypedDict):
    """An assignment in progress: who holds which HIT, since when, and their last answer."""

    worker: str
    hit_number: int
    started_at: datetime
    age_seconds: int
    answered: int
    idle_seconds: int


def campaign_held_assignments(*, campaign: Campaign, now: datetime | None = None) -> list[HeldAssignment]:
    """The campaign's assignments in progress, oldest first, with their age and how long since their last
    answer (an abandoned one is released after ``TOPPREF_IDLE_RELEASE_SECONDS`` locally, at its deadline
    on a platform). One query."""
    now = now or timezone.now()
    rows = (
        Assignment.objects.filter(campaign=campaign, status=Assignment.Status.IN_PROGRESS)
        .annotate(answered=Count("judgments"), last_answer=Max("judgments__created_at"))
        .order_by("started_at")
        .values_list(
            "worker__provider", "worker__external_id", "hit__number", "started_at", "answered", "last_answer"
        )
    )
    return [
        HeldAssignment(
            worker=f"{provider}:{external_id}",
            hit_number=hit_number,
            started_at=started_at,
            age_seconds=int((now - started_at).total_seconds()),
            answered=answered,
            idle_seconds=int((now - (last_answer or started_at)).total_seconds()),
        )
        for provider, external_id, hit_number, started_at, answered, last_answer in rows
    ]

"""Schema of the judging app: campaigns over a collection, each topic's state machine, rounds of pairs,
HITs packing pairs and challenges, workers and their assignments, judgments, and dedicated tournaments.

State changes only through ``judging.services``; these models hold the state and its invariants (constraints),
so that a crash at any point leaves a consistent database from which every step can be re-run. Deleting a
collection deletes its campaigns with it (as pools' ``collection_delete`` promises); workers and assessors stay.
"""

import uuid
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from judging.engine import (
    DEFAULT_ADAPTIVE_PARAMS,
    DEFAULT_HIT_SHAPE,
    DEFAULT_PARAMS,
    DEFAULT_PRICING,
    MAX_MODEL_ROUNDS,
)
from pools.models import Collection, Item, Topic


class Campaign(models.Model):
    """A judging project over one collection (Clarke, Vtyurina and Smucker, "Assessing top-k preferences",
    sections 4 and 5). Parameter defaults come from the engine (``judging.engine.params``).

    ``final_stage_size`` is F (pools of at most F go to the all-pairs stage 2) and ``opponents`` is P
    (opponents per candidate in a stage-1 round); they must satisfy F > P > k >= 1.
    """

    class Mode(models.TextChoices):
        CROWD = "crowd", "crowd (two-stage elimination)"
        TOURNAMENT = "tournament", "dedicated assessors (single-elimination tournament)"
        ADAPTIVE = "adaptive", "adaptive crowd (pairs chosen from what is confirmed)"

    class Culling(models.TextChoices):
        # docs/decisions.md "Culling rule": the released data support "cull iff 2*wins < opponents".
        HALF = "half", "cull iff 2*wins < opponents"
        STRICT_MAJORITY = "strict_majority", "cull unless wins > opponents/2"

    class Status(models.TextChoices):
        DRAFT = "draft"
        RUNNING = "running"
        PAUSED = "paused"
        DONE = "done"

    class Provider(models.TextChoices):
        LOCAL = "local", "local crowd (logged-in crowd users)"
        MTURK = "mturk", "Amazon Mechanical Turk"
        PROLIFIC = "prolific", "Prolific"
        LLM = "llm", "language model"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="campaigns")
    # Unique per owner, not globally: a name taken by another researcher is no answer to give (it would tell
    # one researcher another's campaign names). Lookups by name resolve the caller's own
    # (``judging.selectors.access``).
    name = models.SlugField(max_length=100)
    # Public, unguessable id: the Prolific entry page /hits/campaign/<public_id>/ (never a sequential number).
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    description = models.TextField(blank=True)
    # The researcher who owns the campaign: only they (and staff) see it, its files and its exports.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="campaigns"
    )
    provider = models.CharField(max_length=20, choices=Provider.choices, default=Provider.LOCAL)
    # What the provider gave back when the campaign was set up there (MTurk HIT type and exclusion
    # qualification ids, Prolific study ids...), so that a retried setup reuses them.
    provider_state = models.JSONField(default=dict, blank=True)
    # Why publishing last stopped short (budget, balance...), shown by campaign_status and the dashboard.
    publish_note = models.CharField(max_length=500, blank=True)
    mode = models.CharField(max_length=20, choices=Mode.choices, default=Mode.CROWD)
    k = models.PositiveIntegerField(default=DEFAULT_PARAMS.k)
    final_stage_size = models.PositiveIntegerField("F", default=DEFAULT_PARAMS.F)
    opponents = models.PositiveIntegerField("P", default=DEFAULT_PARAMS.P)
    culling = models.CharField(max_length=20, choices=Culling.choices, default=DEFAULT_PARAMS.culling)
    max_rounds = models.PositiveIntegerField(default=DEFAULT_PARAMS.max_rounds)
    # The adaptive mode (judging.engine.adaptive): votes a pair may get before it is a tie, and the
    # probability that a confirmed pair's order is right.
    max_votes = models.PositiveIntegerField(default=DEFAULT_ADAPTIVE_PARAMS.max_votes)
    confidence = models.FloatField(default=DEFAULT_ADAPTIVE_PARAMS.confidence)
    # The adaptive mode's judgment budget (``toppref simulate --max-judgments``): judging stops at this many
    # counted judgments, and once the crowd is seen to err on close pairs the judge model chooses the rounds.
    # Blank: no budget. A budgeted campaign runs in waves, as the simulator does (docs/judge-model.md).
    max_judgments = models.PositiveIntegerField(null=True, blank=True)
    # With a budget: the judge model's rounds end by this round of the campaign, the budget spread over them
    # (``toppref simulate --model-rounds``): more rounds buy quality with time, not judgments.
    model_rounds = models.PositiveIntegerField(default=DEFAULT_ADAPTIVE_PARAMS.model_rounds)
    # Where a budgeted campaign's waves stand (``judging.services.budget``): how many waves have opened, whether
    # the judge model's rounds have taken over, and the last fit's reliabilities to refit from.
    wave_state = models.JSONField(null=True, blank=True)
    seed = models.BigIntegerField(default=0)
    preferences_per_hit = models.PositiveIntegerField(default=DEFAULT_HIT_SHAPE.preferences)
    challenges_per_hit = models.PositiveIntegerField(default=DEFAULT_HIT_SHAPE.challenges)
    pay_per_hit_usd = models.DecimalField(max_digits=8, decimal_places=2, default=DEFAULT_PRICING.pay_per_hit)
    fee_per_hit_usd = models.DecimalField(max_digits=8, decimal_places=2, default=DEFAULT_PRICING.fee)
    budget_usd = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    # How long a published HIT stays open before its pairs go back to the queue.
    hit_lifetime = models.DurationField(default=timedelta(days=1))
    # How long a worker has to finish a HIT once they took it (MTurk's AssignmentDurationInSeconds).
    # Default 30 minutes: a HIT of 10 preferences and 3 challenges ("Assessing top-k preferences", section
    # 4.3) at up to two minutes a question (two passages read and compared) is 26 minutes; longer only delays
    # the HIT's return to the queue when a worker walks away (docs/decisions.md "Idle release").
    assignment_duration = models.DurationField(default=timedelta(minutes=30))
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The machine judge (judging.crowd.llm): the model's name at TOPPREF_LLM_BASE_URL, blank for none. With
    # provider "llm" it is the only judge; with a human provider it judges first and people take what it
    # leaves position-inconsistent (docs/llm-judges.md).
    llm_model = models.CharField(max_length=200, blank=True)
    # The prompt template ({question}, {passage_1}, {passage_2}); blank: the published preference prompt.
    llm_prompt = models.TextField(blank=True)
    # USD per million tokens read (prompt) and written (completion).
    llm_price_in_usd = models.DecimalField(max_digits=10, decimal_places=4, default=Decimal("0"))
    llm_price_out_usd = models.DecimalField(max_digits=10, decimal_places=4, default=Decimal("0"))
    llm_max_concurrency = models.PositiveSmallIntegerField(default=8)

    class Meta:
        ordering = ["-created_at", "name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="unique_campaign_name_per_owner"),
            models.UniqueConstraint(
                fields=["name"],
                condition=Q(owner__isnull=True),
                name="unique_campaign_name_without_owner",
                violation_error_message="A campaign without owner has this name already.",
            ),
            models.CheckConstraint(condition=Q(k__gte=1), name="campaign_k_at_least_1"),
            models.CheckConstraint(condition=Q(opponents__gt=F("k")), name="campaign_opponents_above_k"),
            models.CheckConstraint(
                condition=Q(final_stage_size__gt=F("opponents")),
                name="campaign_final_stage_size_above_opponents",
            ),
            models.CheckConstraint(condition=Q(max_rounds__gte=1), name="campaign_max_rounds_at_least_1"),
            models.CheckConstraint(
                condition=Q(preferences_per_hit__gte=1), name="campaign_hit_has_preferences"
            ),
            models.CheckConstraint(
                condition=Q(pay_per_hit_usd__gte=0) & Q(fee_per_hit_usd__gte=0),
                name="campaign_pay_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(budget_usd__isnull=True) | Q(budget_usd__gte=0),
                name="campaign_budget_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(max_judgments__isnull=True) | Q(max_judgments__gte=1),
                name="campaign_max_judgments_at_least_1",
            ),
            models.CheckConstraint(
                condition=Q(model_rounds__gte=1) & Q(model_rounds__lte=MAX_MODEL_ROUNDS),
                name="campaign_model_rounds_in_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_crowd(self) -> bool:
        """Whether crowd workers judge it in HITs (the crowd and adaptive modes)."""
        return self.mode in CROWD_MODES

    @property
    def cost_per_hit_usd(self) -> Decimal:
        return self.pay_per_hit_usd + self.fee_per_hit_usd

    @property
    def has_llm(self) -> bool:
        """Whether a language model judges in this campaign (alone, or first in a hybrid)."""
        return bool(self.llm_model)

    @property
    def has_people(self) -> bool:
        """Whether people judge in this campaign (every provider but ``llm``)."""
        return self.provider != Campaign.Provider.LLM


CROWD_MODES = (Campaign.Mode.CROWD, Campaign.Mode.ADAPTIVE)


class CampaignTopic(models.Model):
    """One topic's progress through a campaign: the stored state of the engine's topic machine.

    thinned -> stage 1 (round r) -> stage 2 -> done, or nothing_to_judge for pools of 0-1 candidates;
    dedicated campaigns go thinned -> tournament -> done. Every transition locks this row.
    """

    class State(models.TextChoices):
        THINNED = "thinned"
        STAGE_1 = "stage_1", "stage 1"
        STAGE_2 = "stage_2", "stage 2"
        TOURNAMENT = "tournament"
        DONE = "done"
        NOTHING_TO_JUDGE = "nothing_to_judge", "nothing to judge"

    # "Topic finished", the one definition: its top-k is final (judged to the end, or nothing to judge).
    FINISHED_STATES = (State.DONE, State.NOTHING_TO_JUDGE)

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="campaign_topics")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="campaign_topics")
    state = models.CharField(max_length=20, choices=State.choices, default=State.THINNED)
    round_number = models.PositiveIntegerField(default=0)
    # Engine ``Tournament.to_state()`` for dedicated campaigns: the bracket and its judgment cache.
    tournament_state = models.JSONField(null=True, blank=True)
    # Engine ``AdaptiveState.to_json()`` for adaptive campaigns: every pair's votes and what was decided.
    adaptive_state = models.JSONField(null=True, blank=True)
    # A dedicated assessor holds the topic while judging it, so two assessors never get the same pair.
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    assessor_lease_until = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["campaign_id", "topic__topic_id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "topic"], name="one_state_per_campaign_topic")
        ]
        indexes = [models.Index(fields=["campaign", "state"])]

    def __str__(self) -> str:
        return f"{self.campaign} {self.topic} {self.state}"

    @property
    def is_finished(self) -> bool:
        return self.state in self.FINISHED_STATES


class Candidate(models.Model):
    """An item of a topic's thinned pool, with its fate: culled in a round, or ranked in stage 2."""

    campaign_topic = models.ForeignKey(CampaignTopic, on_delete=models.CASCADE, related_name="candidates")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    # Order of the thinned pool (the order of the graded judgments), which the engine's seeded plans follow.
    position = models.PositiveIntegerField()
    grade = models.FloatField()
    is_active = models.BooleanField(default=True)
    culled_in_round = models.PositiveIntegerField(null=True, blank=True)
    # Set when the topic finishes: competition rank and stage-2 wins (tournament: placement order).
    rank = models.PositiveIntegerField(null=True, blank=True)
    wins = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["campaign_topic_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["campaign_topic", "item"], name="one_candidate_per_item")
        ]

    def __str__(self) -> str:
        return f"{self.campaign_topic.topic} {self.item}"


class Round(models.Model):
    """A batch of pairs of one topic that must all be judged before the topic moves on."""

    campaign_topic = models.ForeignKey(CampaignTopic, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveIntegerField()
    stage = models.PositiveSmallIntegerField()
    candidate_count = models.PositiveIntegerField()
    # What the close computed (survivors, culled, reinstated, wins, opponents): kept for audit.
    outcome = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["campaign_topic_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["campaign_topic", "number"], name="one_round_number_per_topic"),
            models.CheckConstraint(condition=Q(stage__in=[1, 2]), name="round_stage_1_or_2"),
        ]
        indexes = [models.Index(fields=["closed_at"])]

    def __str__(self) -> str:
        return f"{self.campaign_topic.topic} round {self.number} (stage {self.stage})"

    @property
    def is_open(self) -> bool:
        return self.closed_at is None


class Hit(models.Model):
    """A unit of crowd work: pairs of any topics plus challenges ("Assessing top-k preferences",
    section 4.3). One worker per HIT.

    ``provider`` and ``external_id`` tie it to the crowd platform that published it (MTurk, Prolific...).
    """

    class Status(models.TextChoices):
        OPEN = "open"
        ACCEPTED = "accepted"  # submitted, challenges passed: its judgments count
        DISCARDED = "discarded"  # failed a challenge: paid, not counted, pairs requeued
        EXPIRED = "expired"  # not submitted in time: pairs requeued

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="hits")
    number = models.PositiveIntegerField()
    # Public, unguessable id: the external HIT page /hits/<public_id>/ and MTurk's UniqueRequestToken.
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    provider = models.CharField(max_length=30, default="local")
    external_id = models.CharField(max_length=200, blank=True)
    # Money as published to the provider (reward to the worker, the provider's fee), None until published.
    reward_usd = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    fee_usd = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    published_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["campaign_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "number"], name="one_hit_number_per_campaign")
        ]
        # The next HIT to hand out is the open one with the lowest number: read in order from this index and
        # stopped at the first that nobody holds, instead of sorting every open HIT of the campaign. (Not a
        # partial index on the open HITs: the campaign path's statements are prepared with the status as a
        # parameter, and PostgreSQL's generic plans cannot use an index whose condition names a value.)
        indexes = [models.Index(fields=["campaign", "status", "number"], name="hit_by_campaign_status")]

    def __str__(self) -> str:
        return f"{self.campaign} HIT {self.number} ({self.status})"


class Pair(models.Model):
    """Two candidates of a round to compare. ``hit`` is the open HIT holding it (at most one at a time);
    ``winner`` is set from the accepted HIT's judgment, which makes the pair complete."""

    # No index of their own for ``round`` and ``hit``: they lead the unique constraint and the (hit, winner)
    # index, which serve every lookup by either, and each index more is written on every pair's two updates
    # (its HIT, its winner).
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="pairs", db_index=False)
    left = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    right = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    hit = models.ForeignKey(
        Hit, on_delete=models.SET_NULL, null=True, blank=True, related_name="open_pairs", db_index=False
    )
    winner = models.ForeignKey(Item, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    judged_at = models.DateTimeField(null=True, blank=True)
    # The adaptive mode asks one pair for several votes in a round, each its own row (0, 1, ...).
    copy = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["round_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["round", "left", "right", "copy"], name="pair_copy_once_per_round"
            ),
            models.CheckConstraint(condition=~Q(left=F("right")), name="pair_of_two_items"),
            models.CheckConstraint(
                condition=Q(winner__isnull=True) | Q(winner=F("left")) | Q(winner=F("right")),
                name="pair_winner_is_left_or_right",
            ),
        ]
        indexes = [
            # Pairs by HIT; the queued pairs (no HIT) are left out, so this index is no road to them for the
            # planner, nor written when the pairs of a round are created.
            models.Index(fields=["hit", "winner"], condition=Q(hit__isnull=False), name="pair_by_hit"),
            # The pairs still waiting for a winner, by round: whether a round is complete and which pairs are
            # queued for HIT building are probes of this small index, not scans of every pair of the round
            # (a stage-1 round holds hundreds; judged pairs leave the index).
            models.Index(fields=["round"], condition=Q(winner__isnull=True), name="pair_unjudged_by_round"),
        ]

    def __str__(self) -> str:
        return f"{self.left} vs {self.right}"


class HitSlot(models.Model):
    """One question of a HIT as shown: left/right as displayed. A challenge has no pair and stores the
    expected winner, which is never sent to the worker (a challenge must look like any other question)."""

    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="slots")
    position = models.PositiveSmallIntegerField()
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, null=True, blank=True, related_name="slots")
    left = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    right = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    is_challenge = models.BooleanField(default=False)
    expected_winner = models.ForeignKey(
        Item, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["hit_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["hit", "position"], name="one_slot_per_hit_position"),
            models.CheckConstraint(
                condition=(Q(is_challenge=True, pair__isnull=True, expected_winner__isnull=False))
                | Q(is_challenge=False, pair__isnull=False, expected_winner__isnull=True),
                name="slot_is_pair_or_challenge",
            ),
        ]

    def __str__(self) -> str:
        kind = "challenge" if self.is_challenge else "pair"
        return f"HIT {self.hit_id} #{self.position} {kind}"


# Providers whose workers arrive through forgeable query parameters (MTurk's assignmentId and workerId,
# Prolific's PROLIFIC_PID and SESSION_ID): their assignments count only once the provider confirms them.
CONFIRMED_BY_PROVIDER = ("mturk", "prolific")
# The provider of a language model's Worker row (judging.crowd.llm): paid by the token, never per HIT.
LLM_WORKER_PROVIDER = "llm"


class Worker(models.Model):
    """A crowd worker as known to one provider (``external_id`` is the provider's worker id)."""

    provider = models.CharField(max_length=30, default="local")
    external_id = models.CharField(max_length=200)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    is_excluded = models.BooleanField(default=False)
    excluded_at = models.DateTimeField(null=True, blank=True)
    exclusion_reason = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["provider", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "external_id"], name="one_worker_per_provider_id")
        ]

    def __str__(self) -> str:
        return f"{self.provider}:{self.external_id}"

    @property
    def needs_confirmation(self) -> bool:
        """Whether this worker's assignments wait for the provider's confirmation before they count."""
        return self.provider in CONFIRMED_BY_PROVIDER


class WorkerExclusion(models.Model):
    """A researcher's exclusion of a worker: it keeps the worker out of every campaign that researcher owns
    and out of no one else's. ``Worker.is_excluded`` is the global exclusion (staff, and campaigns with no
    owner, which are staff's). See docs/decisions.md, "Tenancy"."""

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="exclusions")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # The campaign whose table or challenge led to it (kept for the record; the scope is the owner).
    campaign = models.ForeignKey(Campaign, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    reason = models.CharField(max_length=200, blank=True)
    excluded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["owner_id", "worker_id"]
        constraints = [
            models.UniqueConstraint(fields=["worker", "owner"], name="one_exclusion_per_worker_owner")
        ]

    def __str__(self) -> str:
        return f"{self.worker} excluded by {self.owner_id}"


class Assignment(models.Model):
    """One worker's take on one HIT."""

    class Status(models.TextChoices):
        IN_PROGRESS = "in_progress", "in progress"
        # Every answer stored, waiting for the provider to confirm the assignment (docs/decisions.md,
        # "Provisional until the provider confirms"): not counted, not paid yet.
        SUBMITTED = "submitted", "submitted, awaiting confirmation"
        ACCEPTED = "accepted"
        DISCARDED = "discarded"
        EXPIRED = "expired"

    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="assignments")
    # The HIT's campaign, repeated here so the database can hold "one live assignment per worker and campaign".
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="assignments")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.IN_PROGRESS)
    external_id = models.CharField(max_length=200, blank=True)
    # What the provider says of it (MTurk: Submitted, Approved, Rejected; Prolific: AWAITING REVIEW, ...).
    provider_status = models.CharField(max_length=40, blank=True)
    # Prolific's completion code, issued only once the server has stored and checked every answer.
    completion_code = models.CharField(max_length=40, blank=True)
    # Earned on submit (paid whether counted or not: "Assessing top-k preferences", section 4.3); paid once the provider confirmed it.
    earned_usd = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    paid_usd = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    # started_at + the campaign's assignment_duration: work submitted before it is accepted.
    deadline_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    # When the provider vouched for this assignment (MTurk listed it for this HIT and worker, Prolific has
    # this participant's submission in the study); set at creation for the local crowd. Until then its
    # answers are stored but count toward nothing (rounds, payments, exports).
    confirmed_at = models.DateTimeField(null=True, blank=True)
    # The HIT's challenges and how many of them this worker failed, set when the assignment is counted or
    # discarded: an adaptive campaign's error estimate sums them per worker at every round it closes and
    # opens, which reading every challenge answer made grow with the campaign.
    challenges = models.PositiveSmallIntegerField(default=0)
    challenges_failed = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["hit_id", "started_at"]
        constraints = [
            # One counted assignment per HIT, and one local worker per HIT at a time. Claims from a provider's
            # page (external_id set) may coexist until the provider confirms one: a forged claim must never
            # turn the real worker away (docs/decisions.md, "Provisional until the provider confirms").
            models.UniqueConstraint(
                fields=["hit"],
                condition=Q(status="accepted") | Q(status="in_progress", external_id=""),
                name="one_live_assignment_per_hit",
            ),
            # A double click or a retry never hoards HITs: one local assignment in progress per worker and
            # campaign (the services keep the rule for Prolific participants; MTurk assigns HITs itself).
            models.UniqueConstraint(
                fields=["worker", "campaign"],
                condition=Q(status="in_progress", external_id=""),
                name="one_assignment_in_progress_per_worker_campaign",
            ),
        ]
        # A worker's assignment in progress and whether one of theirs did not count, in one campaign: an index
        # probe each, where the worker's own index scanned all of their assignments (hundreds per worker).
        indexes = [models.Index(fields=["worker", "campaign", "status"], name="assignment_worker_campaign")]

    def __str__(self) -> str:
        return f"{self.worker} on HIT {self.hit_id} ({self.status})"

    @property
    def is_confirmed(self) -> bool:
        return self.confirmed_at is not None


class Judgment(models.Model):
    """One answer of an assignment to one slot (a pair or a challenge). Unique per (assignment, slot):
    a repeated submit returns the stored judgment and never counts twice.

    ``tie`` is blank for a preference. A machine judge asked in both orders may give none: its two orders
    disagreed (``position_inconsistent``) or a reply named neither passage (``failed``); ``winner`` then holds
    the shorter passage, the published judge's rule for a tie, which counts only where no person can take the
    pair (docs/decisions.md, "A machine judge's tie")."""

    class Tie(models.TextChoices):
        NONE = "", "a preference"
        POSITION_INCONSISTENT = "position_inconsistent", "position-inconsistent (its two orders disagreed)"
        FAILED = "failed", "failed (no reply named a passage)"

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="judgments")
    slot = models.ForeignKey(HitSlot, on_delete=models.CASCADE, related_name="judgments")
    winner = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    winner_side = models.CharField(max_length=5, choices=[("left", "left"), ("right", "right")], blank=True)
    shown_at = models.DateTimeField(null=True, blank=True)
    # Milliseconds between the pair being shown and the answer, as measured in the judge's browser.
    milliseconds = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    tie = models.CharField(max_length=30, choices=Tie.choices, default=Tie.NONE, db_default="", blank=True)

    class Meta:
        ordering = ["assignment_id", "slot__position"]
        constraints = [models.UniqueConstraint(fields=["assignment", "slot"], name="one_judgment_per_slot")]

    def __str__(self) -> str:
        return f"{self.assignment_id}/{self.slot_id}: {self.winner}"


class TournamentJudgment(models.Model):
    """A dedicated assessor's preference in a tournament (Clarke, Vtyurina and Smucker, "Assessing top-k preferences", section 4.2)."""

    campaign_topic = models.ForeignKey(
        CampaignTopic, on_delete=models.CASCADE, related_name="tournament_judgments"
    )
    assessor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    left = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    right = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    winner = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    winner_side = models.CharField(max_length=5, choices=[("left", "left"), ("right", "right")], blank=True)
    milliseconds = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign_topic_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign_topic", "left", "right"], name="tournament_pair_judged_once"
            ),
            models.CheckConstraint(
                condition=Q(winner=F("left")) | Q(winner=F("right")),
                name="tournament_winner_is_left_or_right",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.campaign_topic.topic}: {self.winner}"


class Correction(models.Model):
    """An answer its judge took back ("undo") before it counted: the withdrawn judgment as it was stored, so
    that nothing a judge said is lost. The judgment row itself is deleted, so the pair has at most one
    answer and every count reads the judgments as before; the judge's new answer is an ordinary judgment.
    One correction per withdrawn judgment (``kind``, ``judgment_id``): taking the same answer back twice
    stores it once (docs/decisions.md, "Undo as a correction")."""

    class Kind(models.TextChoices):
        HIT = "hit", "a crowd judge's answer in a HIT"
        TOURNAMENT = "tournament", "an assessor's answer in a tournament"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    # The id the withdrawn Judgment or TournamentJudgment had.
    judgment_id = models.PositiveBigIntegerField()
    assignment = models.ForeignKey(
        Assignment, on_delete=models.CASCADE, null=True, blank=True, related_name="corrections"
    )
    slot = models.ForeignKey(HitSlot, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    campaign_topic = models.ForeignKey(
        CampaignTopic, on_delete=models.CASCADE, null=True, blank=True, related_name="corrections"
    )
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    left = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    right = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    winner = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    winner_side = models.CharField(max_length=5, choices=[("left", "left"), ("right", "right")], blank=True)
    milliseconds = models.PositiveIntegerField(null=True, blank=True)
    answered_at = models.DateTimeField()
    withdrawn_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "judgment_id"], name="one_correction_per_judgment"),
            models.CheckConstraint(
                condition=Q(winner=F("left")) | Q(winner=F("right")),
                name="correction_winner_is_left_or_right",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} judgment {self.judgment_id} withdrawn"


class Export(models.Model):
    """A file built from a campaign by a background task (preference qrels, judgment logs, workers table),
    kept with its checksum and served only to the campaign's owner."""

    class Kind(models.TextChoices):
        COMBINED = "combined", "preference qrels (combined)"
        TOP_K = "top_k", "preference qrels (top-k)"
        BEST = "best", "preference qrels (best)"
        JUDGMENTS = "judgments", "judgment log (CSV)"
        JUDGMENTS_RELEASE = "judgments_release", "judgment log for release (CSV, no worker ids)"
        WORKERS = "workers", "workers table (CSV)"
        LEADERBOARD = "leaderboard", "leaderboard (CSV)"
        LLM_LOG = "llm_log", "model log (CSV)"

        CONFIDENCE = "confidence", "top-k confidence (TSV: topic, docid, p_top_k, p_best)"

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        READY = "ready"
        FAILED = "failed"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="exports")
    kind = models.CharField(max_length=30, choices=Kind.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    progress = models.FloatField(default=0.0)
    # Stored under the private media root; served only through a view that checks the campaign's owner.
    file = models.FileField(upload_to="exports/", max_length=500, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    size_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["campaign", "kind"])]

    def __str__(self) -> str:
        return f"{self.campaign} {self.kind} ({self.status})"


class CampaignForecast(models.Model):
    """The planner's forecast of what a crowd campaign still needs, computed in the background
    (``judging.services.planning.campaign_forecast_refresh``, from the sweep) whenever its open pools changed,
    never in a request; the dashboard shows it with its age. ``signature`` identifies the pools it was computed
    for, so an unchanged campaign is not planned again."""

    campaign = models.OneToOneField(
        Campaign, on_delete=models.CASCADE, primary_key=True, related_name="forecast"
    )
    signature = models.CharField(max_length=64)
    hits = models.FloatField()
    cost_usd = models.DecimalField(max_digits=12, decimal_places=2)
    computed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.campaign} forecast {self.hits:.0f} HITs ${self.cost_usd}"


class LlmAnswer(models.Model):
    """A language model's answer to one question in one order: the cache that makes every answer bought
    once. ``key`` is the SHA-256 of the endpoint, model, prompt template, question and the two passage texts
    in the order shown, so a re-asked pair, a restarted task, another campaign on the same collection or a
    re-run reads it instead of asking again. ``choice`` is 1 or 2 (the passage named) or 0 (no reply named
    one, after a retry); ``replies`` are the raw replies, every attempt; tokens sum the attempts."""

    key = models.CharField(max_length=64, unique=True)
    endpoint = models.CharField(max_length=500)
    model = models.CharField(max_length=200)
    prompt_hash = models.CharField(max_length=64)
    choice = models.PositiveSmallIntegerField()
    replies = models.JSONField(default=list)
    attempts = models.PositiveSmallIntegerField(default=1)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(choice__in=[0, 1, 2]), name="llm_choice_0_1_or_2")]

    def __str__(self) -> str:
        return f"{self.model} {self.key[:12]}: {self.choice}"


class LlmRequest(models.Model):
    """One question a campaign's model was asked: a topic's two items in the order shown (``first`` as
    passage 1), once per campaign, whatever HIT held it (idempotent per pair, judge and order). ``is_cached``:
    answered from the cache, so it cost this campaign nothing; otherwise its tokens are this campaign's."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="llm_requests")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    first = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    second = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    answer = models.ForeignKey(LlmAnswer, on_delete=models.PROTECT, related_name="requests")
    is_cached = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign_id", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "topic", "first", "second"], name="llm_request_once_per_order"
            )
        ]

    def __str__(self) -> str:
        return f"{self.campaign} {self.first_id} before {self.second_id}"


class CampaignConfidence(models.Model):
    """How sure the judge model (``judging.engine.judges``) is of a campaign's top-k: for every candidate of every
    topic, the probability that it belongs in the true top-k (``p_top_k``) and that it is the best (``p_best``),
    and each judge's estimated reliability. Computed in the background (``judging.services.confidence``, from the
    sweep and once a campaign is done) whenever its counted answers changed, never in a request; pages show it
    with its age. ``signature`` identifies the answers it was fitted to."""

    campaign = models.OneToOneField(
        Campaign, on_delete=models.CASCADE, primary_key=True, related_name="top_k_confidence"
    )
    signature = models.CharField(max_length=64)
    # topic -> [[docid, p_top_k, p_best], ...], best posterior score first
    topics = models.JSONField(default=dict)
    # judge key (``w<worker id>``, ``a<assessor id>``) -> [eta, votes, challenges, challenges failed]
    judges = models.JSONField(default=dict)
    computed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.campaign} confidence ({len(self.topics)} topics)"

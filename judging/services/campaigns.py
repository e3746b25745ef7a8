"""Creating and starting campaigns, and the sweep that moves a campaign on after a crash or a lost task."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import timedelta
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from config.celery import enqueue_on_commit
from judging.engine import (
    DEFAULT_ADAPTIVE_PARAMS,
    DEFAULT_HIT_SHAPE,
    DEFAULT_PARAMS,
    DEFAULT_PRICING,
    AdaptiveParams,
    CrowdParams,
    HitShape,
    Pricing,
    TopicState,
    candidate_order,
)
from judging.models import Campaign, CampaignTopic, Candidate, Pair, Round
from judging.services.errors import CampaignConfigError, CampaignStateError
from judging.services.hits import hit_build, hit_expire_overdue
from judging.services.rounds import round_close_if_complete, round_generate
from judging.services.topic_state import (
    FINISHED_STATES,
    campaign_runs_in_waves,
    round_store,
    rounds_open_first,
    tournament_open,
)
from judging.services.waves import campaign_wave_advance
from pools.models import Collection, GradedJudgment
from pools.services import collection_lock_current, collection_version_release
from pools.thinning import thin_pool

DEFAULT_HIT_LIFETIME = timedelta(days=1)


@transaction.atomic
def campaign_create(
    *,
    collection: Collection,
    name: str,
    mode: str = Campaign.Mode.CROWD,
    k: int = DEFAULT_PARAMS.k,
    final_stage_size: int = DEFAULT_PARAMS.F,
    opponents: int = DEFAULT_PARAMS.P,
    culling: str = DEFAULT_PARAMS.culling,
    max_rounds: int = DEFAULT_PARAMS.max_rounds,
    max_votes: int = DEFAULT_ADAPTIVE_PARAMS.max_votes,
    confidence: float = DEFAULT_ADAPTIVE_PARAMS.confidence,
    max_judgments: int | None = None,
    model_rounds: int | None = None,
    seed: int = 0,
    preferences_per_hit: int = DEFAULT_HIT_SHAPE.preferences,
    challenges_per_hit: int = DEFAULT_HIT_SHAPE.challenges,
    pay_per_hit_usd: Decimal = DEFAULT_PRICING.pay_per_hit,
    fee_per_hit_usd: Decimal = DEFAULT_PRICING.fee,
    budget_usd: Decimal | None = None,
    hit_lifetime: timedelta = DEFAULT_HIT_LIFETIME,
    description: str = "",
    provider: str = Campaign.Provider.LOCAL,
    owner=None,
    llm_model: str = "",
    llm_prompt: str = "",
    llm_price_in_usd: Decimal = Decimal("0"),
    llm_price_out_usd: Decimal = Decimal("0"),
    llm_max_concurrency: int = 8,
) -> Campaign:
    """Create a draft campaign; raises ``CampaignConfigError`` naming the broken rule (F > P > k >= 1,
    at least one preference per HIT, prices finite and not negative, a budget that pays for at least one
    HIT, hence a HIT that costs something when there is a budget, a known mode, culling rule and crowd
    provider; for every mode, max votes >= 1 and a confidence strictly between 0.5 and 1, which the adaptive
    mode uses; a judgment budget ``max_judgments`` of at least 1, in the adaptive mode only; ``model_rounds``,
    the rounds the judge model spreads that budget over, in [1, MAX_MODEL_ROUNDS], other than the default only
    with a budget). Defaults are the engine's (``judging.engine.params``, ``judging.engine.adaptive``).

    A language model judges with ``llm_model`` (docs/llm-judges.md): alone with ``provider="llm"`` (then
    HITs pay nothing, the budget bounds the tokens at ``llm_price_in_usd`` / ``llm_price_out_usd`` per
    million), or first with a human provider. Refused too: ``provider="llm"`` without a model, a model in a
    tournament campaign, a prompt template without ``{question}``, ``{passage_1}``, ``{passage_2}``, token
    prices not finite and non-negative, a concurrency below 1."""
    is_llm_only = provider == Campaign.Provider.LLM
    try:
        CrowdParams(k=k, F=final_stage_size, P=opponents, culling=culling, max_rounds=max_rounds).validate()
        model_rounds = DEFAULT_ADAPTIVE_PARAMS.model_rounds if model_rounds is None else model_rounds
        AdaptiveParams(k=k, max_votes=max_votes, confidence=confidence, model_rounds=model_rounds).validate()
        if max_judgments is not None and mode != Campaign.Mode.ADAPTIVE:
            raise ValueError("a judgment budget (max_judgments) needs the adaptive mode")
        if max_judgments is not None and max_judgments < 1:
            raise ValueError(f"max judgments must be at least 1 (got {max_judgments})")
        # A campaign read back through the API carries the default: only a chosen count asks for a budget.
        if max_judgments is None and model_rounds != DEFAULT_ADAPTIVE_PARAMS.model_rounds:
            raise ValueError("model rounds spread a judgment budget: give max_judgments too")
        HitShape(preferences=preferences_per_hit, challenges=challenges_per_hit).validate()
        pricing = Pricing(pay_per_hit=Decimal(pay_per_hit_usd), fee=Decimal(fee_per_hit_usd))
        if is_llm_only:
            # The model is paid by the token: the budget bounds tokens, not HITs.
            pricing.validate()
            if budget_usd is not None and (not Decimal(budget_usd).is_finite() or Decimal(budget_usd) < 0):
                raise ValueError(f"budget must be a finite, non-negative amount (got {budget_usd})")
        else:
            pricing.validate(budget=None if budget_usd is None else Decimal(budget_usd))
        _llm_validate(
            provider=provider,
            mode=mode,
            model=llm_model,
            prompt=llm_prompt,
            prices=(llm_price_in_usd, llm_price_out_usd),
            concurrency=llm_max_concurrency,
            pay=(Decimal(pay_per_hit_usd), Decimal(fee_per_hit_usd)),
        )
    except (ValueError, ArithmeticError) as error:
        raise CampaignConfigError(f"campaign {name!r}: {error}") from error
    campaign = Campaign(
        collection=collection,
        name=name,
        description=description,
        mode=mode,
        k=k,
        final_stage_size=final_stage_size,
        opponents=opponents,
        culling=culling,
        max_rounds=max_rounds,
        max_votes=max_votes,
        confidence=confidence,
        max_judgments=max_judgments,
        model_rounds=model_rounds,
        seed=seed,
        preferences_per_hit=preferences_per_hit,
        challenges_per_hit=challenges_per_hit,
        pay_per_hit_usd=Decimal(pay_per_hit_usd),
        fee_per_hit_usd=Decimal(fee_per_hit_usd),
        budget_usd=None if budget_usd is None else Decimal(budget_usd),
        hit_lifetime=hit_lifetime,
        provider=provider,
        owner=owner,
        llm_model=llm_model,
        llm_prompt=llm_prompt,
        llm_price_in_usd=Decimal(llm_price_in_usd),
        llm_price_out_usd=Decimal(llm_price_out_usd),
        llm_max_concurrency=llm_max_concurrency,
    )
    try:
        campaign.full_clean()
    except ValidationError as error:
        details = "; ".join(
            f"{field}: {' '.join(messages)}" for field, messages in error.message_dict.items()
        )
        raise CampaignConfigError(f"campaign {name!r}: {details}") from error
    campaign.save()
    return campaign


def _llm_validate(
    *,
    provider: str,
    mode: str,
    model: str,
    prompt: str,
    prices: tuple[Decimal, Decimal],
    concurrency: int,
    pay: tuple[Decimal, Decimal],
) -> None:
    """``campaign_create``'s rules for a language model (``ValueError`` naming the broken one)."""
    from judging.crowd.llm import prompt_validate

    if provider == Campaign.Provider.LLM and not model:
        raise ValueError("provider llm needs a model (--llm-model)")
    if provider == Campaign.Provider.LLM and any(pay):
        raise ValueError(
            "a model is paid by the token (--llm-price-in, --llm-price-out), not per HIT: no --pay or --fee"
        )
    if model and mode == Campaign.Mode.TOURNAMENT:
        raise ValueError("a model judges crowd and adaptive campaigns, not tournaments")
    if prompt:
        prompt_validate(prompt, source="--llm-prompt")
    for name, price in zip(("--llm-price-in", "--llm-price-out"), prices, strict=True):
        if not Decimal(price).is_finite() or Decimal(price) < 0:
            raise ValueError(
                f"{name} must be a finite, non-negative USD amount per million tokens (got {price})"
            )
    if concurrency < 1:
        raise ValueError(f"--llm-max-concurrency must be at least 1 (got {concurrency})")


@transaction.atomic
def campaign_start(*, campaign: Campaign, topic_ids: Sequence[str] | None = None) -> Campaign:
    """Thin every judged topic's pool (Clarke, Vtyurina and Smucker, "Assessing top-k preferences", section
    4.1), order it canonically (the engine's ``candidate_order``) and put each topic into its first state:
    crowd campaigns open round 1 (stage 1 above F candidates, else stage 2) and queue HIT building;
    dedicated campaigns start a tournament per topic. Pools of 0-1 candidates finish as "nothing to judge".
    ``topic_ids`` limits the campaign to those topics (a pilot, or one topic for a dedicated assessor); an
    unknown or unjudged one is refused. A campaign that is not a draft is returned unchanged. A crowd
    campaign whose budget pays for no HIT (or whose HITs cost nothing under a budget) is refused. A refused
    start changes nothing: the campaign stays a draft without topics. The campaign keeps the version of its
    collection it starts on: an import into that version from now on makes a new one
    (``pools.services.versions``); the collection is locked first, as imports lock it, so that the start
    waits for an import in progress (and starts on its result) instead of crossing it."""
    campaign = Campaign.objects.select_related("collection").get(pk=campaign.pk)
    if campaign.status != Campaign.Status.DRAFT:
        return campaign
    collection = collection_lock_current(campaign.collection)
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.status != Campaign.Status.DRAFT:
        return campaign
    if campaign.collection_id != collection.pk:
        raise CampaignStateError(
            f"campaign {campaign.name!r}: its collection changed while it started; start it again"
        )
    if campaign.is_crowd and campaign.has_people:
        try:
            Pricing(pay_per_hit=campaign.pay_per_hit_usd, fee=campaign.fee_per_hit_usd).validate(
                budget=campaign.budget_usd
            )
        except ValueError as error:
            raise CampaignConfigError(f"campaign {campaign.name!r}: {error}") from error
    grades_by_topic: dict[int, dict[str, float]] = defaultdict(dict)
    item_ids: dict[str, int] = {}
    rows = GradedJudgment.objects.filter(topic__collection_id=campaign.collection_id).order_by("pk")
    if topic_ids is not None:
        rows = rows.filter(topic__topic_id__in=list(topic_ids))
        judged = set(rows.values_list("topic__topic_id", flat=True).distinct())
        unknown = sorted(set(topic_ids) - judged)
        if unknown:
            raise CampaignStateError(
                f"campaign {campaign.name!r}: no graded judgments for topic(s) {', '.join(unknown)} in {campaign.collection}"
            )
    for topic_pk, item_id, docid, grade in rows.values_list("topic_id", "item_id", "item__docid", "grade"):
        grades_by_topic[topic_pk][docid] = grade
        item_ids[docid] = item_id
    if not grades_by_topic:
        raise CampaignStateError(
            f"campaign {campaign.name!r}: collection {campaign.collection} has no graded judgments"
        )
    campaign.status = Campaign.Status.RUNNING
    campaign.started_at = timezone.now()
    campaign.save(update_fields=["status", "started_at"])
    # Each topic's thinned pool in canonical order: its candidates' positions, and its first state.
    pools = {topic_pk: thin_pool(grades, campaign.k) for topic_pk, grades in grades_by_topic.items()}
    orders = {topic_pk: candidate_order(pool) for topic_pk, pool in pools.items()}
    campaign_topics = CampaignTopic.objects.bulk_create(
        [CampaignTopic(campaign=campaign, topic_id=topic_pk) for topic_pk in sorted(grades_by_topic)]
    )
    Candidate.objects.bulk_create(
        [
            Candidate(
                campaign_topic=campaign_topic,
                item_id=item_ids[docid],
                position=position,
                grade=pools[campaign_topic.topic_id][docid],
            )
            for campaign_topic in campaign_topics
            for position, docid in enumerate(orders[campaign_topic.topic_id])
        ]
    )
    campaign_topics = list(
        CampaignTopic.objects.filter(campaign=campaign).select_related("campaign", "topic")
    )
    if campaign.mode == Campaign.Mode.CROWD:
        # Every topic's first round at once, from the state ``topic_state_load`` would read back.
        rounds_open_first(
            campaign=campaign,
            states=[
                (
                    campaign_topic,
                    TopicState(
                        topic=campaign_topic.topic.topic_id,
                        candidates=tuple(orders[campaign_topic.topic_id]),
                    ),
                )
                for campaign_topic in campaign_topics
            ],
            item_ids=item_ids,
        )
    elif campaign_runs_in_waves(campaign):
        # Every topic's first round at once, the wave cut at the budget (judging.services.waves).
        campaign_wave_advance(campaign=campaign)
    else:
        for campaign_topic in campaign_topics:
            if campaign.is_crowd:
                round_store(campaign_topic=campaign_topic)
            else:
                tournament_open(campaign_topic=campaign_topic)
    if campaign.is_crowd:
        enqueue_on_commit("judging.tasks.hit_build_task", campaign.pk)
    campaign.refresh_from_db()
    return campaign


@transaction.atomic
def campaign_delete(*, campaign: Campaign) -> None:
    """Delete a campaign with its topics' states, rounds, pairs, HITs and judgments (workers stay), and the
    older version of its collection that only it used."""
    collection = campaign.collection
    Campaign.objects.filter(pk=campaign.pk).delete()
    collection_version_release(collection=collection)


def campaign_advance(*, campaign: Campaign) -> dict[str, int]:
    """Bring a running crowd campaign up to date, as the tasks would have: open a round for every unfinished
    topic without one, close every complete round (a budgeted campaign: close its complete wave and open the
    next, ``campaign_wave_advance``), expire overdue HITs, build HITs for queued pairs. Each
    step is its own transaction and idempotent, so this is the recovery after a crash or a lost task, and
    the periodic safety net. Returns how many rounds were opened and closed and HITs built."""
    counts = {"rounds_opened": 0, "rounds_closed": 0, "hits_expired": 0, "hits_built": 0}
    if not campaign.is_crowd:
        return counts
    if campaign_runs_in_waves(campaign):
        # A budgeted campaign's rounds close and open wave by wave, never one topic alone.
        counts.update(campaign_wave_advance(campaign=campaign))
        counts["hits_expired"] = len(hit_expire_overdue(campaign=campaign))
        counts["hits_built"] = len(hit_build(campaign=campaign))
        return counts
    open_rounds = Round.objects.filter(campaign_topic=OuterRef("pk"), closed_at__isnull=True)
    stalled = (
        CampaignTopic.objects.filter(campaign=campaign)
        .exclude(state__in=FINISHED_STATES)
        .exclude(Exists(open_rounds))
    )
    for campaign_topic in stalled:
        if round_generate(campaign_topic=campaign_topic) is not None:
            counts["rounds_opened"] += 1
    unjudged = Pair.objects.filter(round=OuterRef("pk"), winner__isnull=True)
    complete = Round.objects.filter(campaign_topic__campaign=campaign, closed_at__isnull=True).exclude(
        Exists(unjudged)
    )
    for round in complete:
        if round_close_if_complete(round=round):
            counts["rounds_closed"] += 1
    counts["hits_expired"] = len(hit_expire_overdue(campaign=campaign))
    counts["hits_built"] = len(hit_build(campaign=campaign))
    return counts

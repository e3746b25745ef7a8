"""Campaigns (list, create, detail with progress, start / pause / resume), their topics with the top-k,
rounds and HITs."""

from __future__ import annotations

import dataclasses

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from judging import selectors
from judging.api.base import ResearcherApi
from judging.models import Campaign
from judging.selectors.llm import campaign_llm_usage
from judging.selectors.progress import PROGRESS_ALIASES, CampaignProgress
from judging.services import (
    CampaignConfigError,
    CampaignStateError,
    campaign_create,
    campaign_pause,
    campaign_resume,
    campaign_start,
)
from pools.models import Collection


class CampaignSerializer(serializers.ModelSerializer):
    collection = serializers.SlugRelatedField(slug_field="name", queryset=Collection.objects.current())
    # The version the campaign runs on: the collection's current one until it starts, then the one it
    # started on, whatever the owner imports since.
    collection_version = serializers.IntegerField(source="collection.version", read_only=True)
    owner = serializers.CharField(source="owner.username", read_only=True, default=None)

    class Meta:
        model = Campaign
        fields = [
            "name",
            "collection",
            "collection_version",
            "description",
            "owner",
            "mode",
            "provider",
            "k",
            "final_stage_size",
            "opponents",
            "culling",
            "max_rounds",
            "max_votes",
            "confidence",
            "max_judgments",
            "model_rounds",
            "seed",
            "preferences_per_hit",
            "challenges_per_hit",
            "pay_per_hit_usd",
            "fee_per_hit_usd",
            "budget_usd",
            "llm_model",
            "llm_prompt",
            "llm_price_in_usd",
            "llm_price_out_usd",
            "llm_max_concurrency",
            "status",
            "publish_note",
            "created_at",
            "started_at",
            "finished_at",
        ]
        # Names are unique per owner: the view checks the caller's own (a check over every owner's names
        # would tell one researcher another's).
        validators: list = []
        read_only_fields = [
            "owner",
            "status",
            "publish_note",
            "created_at",
            "started_at",
            "finished_at",
        ]


def _progress_field(annotation: str) -> serializers.Field:
    """The serializer field of a ``CampaignProgress`` field's annotation (the dataclass is the one list of keys)."""
    nullable = annotation.endswith(" | None")
    kind = annotation.removesuffix(" | None")
    fields = {
        "str": lambda: serializers.CharField(allow_blank=True, allow_null=nullable),
        "int": lambda: serializers.IntegerField(allow_null=nullable),
        "float": lambda: serializers.FloatField(allow_null=nullable),
        "bool": lambda: serializers.BooleanField(allow_null=nullable),
        "Decimal": lambda: serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=nullable),
        "dict[str, int]": lambda: serializers.DictField(child=serializers.IntegerField()),
    }
    return fields[kind]()


class CampaignProgressSerializer(serializers.Serializer):
    """``CampaignProgress.as_dict()``: the keys of ``campaign_status --json`` plus the dashboard's names for the
    same counts (``PROGRESS_ALIASES``), ``fraction_finished`` and ``answers_total``. Built from the dataclass's
    fields, so a figure added to ``CampaignProgress`` appears here too."""

    fraction_finished = serializers.FloatField()
    answers_total = serializers.IntegerField()

    def get_fields(self):
        fields = {}
        annotations = {field.name: str(field.type) for field in dataclasses.fields(CampaignProgress)}
        for name, annotation in annotations.items():
            fields[name] = _progress_field(annotation)
        for alias, name in PROGRESS_ALIASES.items():
            fields[alias] = _progress_field(annotations[name])
        return {**fields, **super().get_fields()}


def campaign_progress_data(campaign: Campaign) -> dict[str, object]:
    """The campaign's progress for the API: ``CampaignProgress.as_dict()`` (the names of ``campaign_status
    --json`` and, beside them, the dashboard's)."""
    return selectors.campaign_progress(campaign=campaign).as_dict()


class AdaptiveCrowdSerializer(serializers.Serializer):
    """An adaptive campaign's crowd as the engine sees it now (``campaign_adaptive_crowd``)."""

    error_rate = serializers.FloatField(help_text="the crowd's estimated probability of reversing a pair")
    error_percent = serializers.FloatField()
    challenges = serializers.IntegerField(help_text="challenge answers behind the estimate")
    challenge_failures = serializers.IntegerField()
    decisive_within_reach = serializers.BooleanField(
        help_text="false: too noisy for the stricter level within max_votes; every pair is held to the plain one"
    )
    plain_margin = serializers.IntegerField(help_text="the lead in votes that confirms a pair")
    decisive_margin = serializers.IntegerField(
        help_text="the lead in votes that confirms a pair that puts a candidate out or orders the top-k"
    )


class LlmUsageSerializer(serializers.Serializer):
    """A campaign's language model (``campaign_llm_usage``): requests sent, questions answered from the cache,
    tokens and their cost, pairs left position-inconsistent or failed."""

    model = serializers.CharField()
    requests = serializers.IntegerField()
    cached = serializers.IntegerField()
    tokens_in = serializers.IntegerField()
    tokens_out = serializers.IntegerField()
    cost_usd = serializers.FloatField()
    position_inconsistent = serializers.IntegerField()
    failed = serializers.IntegerField()


class CampaignDetailSerializer(CampaignSerializer):
    progress = serializers.SerializerMethodField()
    crowd = serializers.SerializerMethodField()
    llm = serializers.SerializerMethodField()

    class Meta(CampaignSerializer.Meta):
        fields = [*CampaignSerializer.Meta.fields, "progress", "crowd", "llm"]

    @extend_schema_field(LlmUsageSerializer(allow_null=True))
    def get_llm(self, campaign) -> dict | None:
        """The campaign's language model: what it was asked and cost; null without one."""
        usage = campaign_llm_usage(campaign=campaign)
        return None if usage is None else LlmUsageSerializer(usage).data

    @extend_schema_field(CampaignProgressSerializer)
    def get_progress(self, campaign) -> dict:
        return CampaignProgressSerializer(campaign_progress_data(campaign)).data

    @extend_schema_field(AdaptiveCrowdSerializer(allow_null=True))
    def get_crowd(self, campaign) -> dict | None:
        """Adaptive campaigns: the crowd's estimated error rate and the vote leads that confirm a pair; null
        for other modes."""
        crowd = selectors.campaign_adaptive_crowd(campaign=campaign)
        return None if crowd is None else AdaptiveCrowdSerializer(crowd).data


class CampaignListApi(ResearcherApi, generics.ListCreateAPIView):
    """The caller's campaigns (staff: all); POST creates a draft campaign owned by the caller."""

    serializer_class = CampaignSerializer

    def get_queryset(self):
        return selectors.campaign_list_visible(user=self.request.user)

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        # Names are unique per owner: only the caller's own campaigns can be in the way.
        if Campaign.objects.filter(name=data["name"], owner=self.request.user).exists():
            raise ValidationError({"name": [f"a campaign named {data['name']!r} exists already"]})
        try:
            serializer.instance = campaign_create(owner=self.request.user, **data)
        except CampaignConfigError as error:
            raise ValidationError({"non_field_errors": [str(error)]}) from None


class CampaignDetailApi(ResearcherApi, generics.RetrieveAPIView):
    """One campaign with its progress (topics by state, HITs by status, pairs, spend against budget)."""

    serializer_class = CampaignDetailSerializer

    def get_object(self):
        return self.campaign()


class CampaignActionApi(ResearcherApi, APIView):
    """POST start / pause / resume: the campaign's state after the action; 409 when the state forbids it."""

    action_name = ""
    ACTIONS = {"start": campaign_start, "pause": campaign_pause, "resume": campaign_resume}

    @extend_schema(request=None, responses={200: CampaignDetailSerializer})
    def post(self, request, name: str):
        campaign = self.campaign()
        try:
            campaign = self.ACTIONS[self.action_name](campaign=campaign)
        except CampaignStateError as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        data = CampaignDetailSerializer(campaign).data
        if getattr(campaign, "provider_message", ""):
            # Applied here, but the provider could not be told (e.g. no MTurk credentials): said, not a 500.
            data["detail"] = campaign.provider_message
        return Response(data)


class TopKItemSerializer(serializers.Serializer):
    docid = serializers.CharField()
    rank = serializers.IntegerField(help_text="competition rank, 1 = best; ties at rank k are kept")
    wins = serializers.IntegerField()
    p_top_k = serializers.FloatField(
        allow_null=True,
        help_text="the judge model's probability that the item belongs in the true top-k (an item tied with the "
        "k-th counts as in); null before the first fit",
    )
    p_best = serializers.FloatField(
        allow_null=True,
        help_text="the judge model's probability that the item is the true best; null before the first fit",
    )


class TopicSerializer(serializers.Serializer):
    topic = serializers.CharField()
    state = serializers.CharField()
    round = serializers.IntegerField()
    stage = serializers.IntegerField(allow_null=True)
    pool_sizes = serializers.ListField(child=serializers.IntegerField())
    pairs_judged = serializers.IntegerField()
    pairs_open = serializers.IntegerField()
    top_k = TopKItemSerializer(many=True, allow_null=True)
    confidence_computed_at = serializers.DateTimeField(
        allow_null=True,
        help_text="when the background last fitted the judge model that gave p_top_k and p_best (null before)",
    )


class CampaignTopicListApi(ResearcherApi, generics.ListAPIView):
    """The campaign's topics: state, round, stage, pool size per round, pairs judged and open, and, once the
    topic is finished, its top-k (``docid``, ``rank``, ``wins``; ties at rank k included) with the judge model's
    ``p_top_k`` (probability that the item belongs in the true top-k) and ``p_best`` (that it is the best), as
    last fitted in the background (null before the first fit)."""

    serializer_class = TopicSerializer

    def get_queryset(self):
        campaign = self.campaign()
        ranked = selectors.campaign_ranked(campaign=campaign)
        rows = selectors.campaign_progress_table(campaign=campaign)["topics"]
        stored = selectors.campaign_confidence(campaign=campaign)
        for row in rows:
            items = ranked.get(row["topic"])
            confidence = _item_confidence(stored, row["topic"])
            row["confidence_computed_at"] = (
                stored.computed_at if stored is not None and stored.topics else None
            )
            row["top_k"] = (
                [
                    {
                        "docid": i.docid,
                        "rank": i.rank,
                        "wins": i.wins,
                        **confidence.get(i.docid, NO_CONFIDENCE),
                    }
                    for i in items
                    if i.rank <= campaign.k
                ]
                if row["is_finished"]
                else None
            )
        return rows


# A top-k item's probabilities before the background has fitted the judge model to the campaign.
NO_CONFIDENCE = {"p_top_k": None, "p_best": None}


def _item_confidence(stored, topic: str) -> dict[str, dict[str, float]]:
    """docid -> ``p_top_k`` and ``p_best`` of one topic as last stored (empty before the first fit)."""
    if stored is None or topic not in stored.topics:
        return {}
    return {
        item.docid: {"p_top_k": item.p_top_k, "p_best": item.p_best} for item in stored.topics[topic].items
    }


class RoundSerializer(serializers.Serializer):
    topic = serializers.CharField(source="campaign_topic.topic.topic_id")
    number = serializers.IntegerField()
    stage = serializers.IntegerField()
    candidate_count = serializers.IntegerField()
    is_open = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)


class CampaignRoundListApi(ResearcherApi, generics.ListAPIView):
    """The campaign's rounds, by topic and number: stage, pool size, open or closed."""

    serializer_class = RoundSerializer

    def get_queryset(self):
        from judging.models import Round

        if getattr(self, "swagger_fake_view", False):
            return Round.objects.none()
        return (
            Round.objects.filter(campaign_topic__campaign=self.campaign())
            .select_related("campaign_topic__topic")
            .order_by("campaign_topic__topic__topic_id", "number")
        )


class HitSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    status = serializers.CharField()
    provider = serializers.CharField()
    external_id = serializers.CharField()
    reward_usd = serializers.DecimalField(max_digits=8, decimal_places=2, allow_null=True)
    fee_usd = serializers.DecimalField(max_digits=8, decimal_places=2, allow_null=True)
    published_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    closed_at = serializers.DateTimeField(allow_null=True)


class CampaignHitListApi(ResearcherApi, generics.ListAPIView):
    """The campaign's HITs by number: status, provider and its id, money as published, times."""

    serializer_class = HitSerializer

    def get_queryset(self):
        from judging.models import Hit

        if getattr(self, "swagger_fake_view", False):
            return Hit.objects.none()
        return Hit.objects.filter(campaign=self.campaign()).order_by("number")

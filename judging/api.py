"""REST API of the judging app (Django REST Framework, documented by drf-spectacular): collections,
campaigns with their progress and actions, topics with their top-k, judgments (filterable), workers, and the
planner. Thin: validate, call a selector or a service, serialize. Only researchers (the ``researchers``
group) and staff get anything; a researcher sees only their own campaigns, and another's is a 404."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import django_filters
from django import forms
from django.http import Http404
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import generics, permissions, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from judging import selectors
from judging.engine import CrowdParams, HitShape
from judging.engine.planning import plan_campaign
from judging.models import Campaign, Judgment, Worker
from judging.services import (
    CampaignConfigError,
    CampaignStateError,
    campaign_create,
    campaign_pause,
    campaign_resume,
    campaign_start,
    worker_exclude,
)
from pools.models import Collection
from pools.selectors import collection_candidate_pools, collection_list_with_counts
from pools.services import collection_create


class IsResearcher(permissions.BasePermission):
    """Staff and members of the ``researchers`` group; assessors and crowd users get 403."""

    message = "only researchers (the researchers group) and staff may use this API"

    def has_permission(self, request, view) -> bool:
        return selectors.user_is_researcher(user=request.user)


class ResearcherApi:
    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    def campaign(self) -> Campaign:
        try:
            return selectors.campaign_get_visible(user=self.request.user, name=self.kwargs["name"])
        except Campaign.DoesNotExist:
            raise Http404(f"no campaign named {self.kwargs['name']!r}") from None


# --- collections -----------------------------------------------------------------------------------------


class CollectionSerializer(serializers.ModelSerializer):
    topic_count = serializers.IntegerField(read_only=True)
    item_count = serializers.IntegerField(read_only=True)
    run_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Collection
        fields = ["name", "description", "is_strict", "topic_count", "item_count", "run_count", "created_at"]
        read_only_fields = ["created_at"]


class CollectionListApi(ResearcherApi, generics.ListCreateAPIView):
    """Collections (list, create). Topics, passages and qrels are imported with the manage commands."""

    serializer_class = CollectionSerializer

    def get_queryset(self):
        return collection_list_with_counts()

    def perform_create(self, serializer):
        data = serializer.validated_data
        collection = collection_create(
            name=data["name"], description=data.get("description", ""), is_strict=data.get("is_strict", True)
        )
        serializer.instance = collection_list_with_counts().get(pk=collection.pk)


# --- campaigns -------------------------------------------------------------------------------------------


class CampaignSerializer(serializers.ModelSerializer):
    collection = serializers.SlugRelatedField(slug_field="name", queryset=Collection.objects.all())
    owner = serializers.CharField(source="owner.username", read_only=True, default=None)

    class Meta:
        model = Campaign
        fields = [
            "name",
            "collection",
            "description",
            "owner",
            "mode",
            "provider",
            "k",
            "final_stage_size",
            "opponents",
            "culling",
            "max_rounds",
            "seed",
            "preferences_per_hit",
            "challenges_per_hit",
            "pay_per_hit_usd",
            "fee_per_hit_usd",
            "budget_usd",
            "status",
            "publish_note",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = [
            "owner",
            "provider",
            "status",
            "publish_note",
            "created_at",
            "started_at",
            "finished_at",
        ]


class CampaignProgressSerializer(serializers.Serializer):
    """The keys of ``campaign_status --json`` plus the dashboard's names for the same counts."""

    status = serializers.CharField()
    topics_done = serializers.IntegerField()
    topics_total = serializers.IntegerField()
    topics_finished = serializers.IntegerField()
    fraction_finished = serializers.FloatField()
    topics_by_state = serializers.DictField(child=serializers.IntegerField())
    rounds = serializers.IntegerField()
    judgments = serializers.IntegerField()
    tournament_judgments = serializers.IntegerField()
    answers = serializers.DictField(child=serializers.IntegerField())
    answers_total = serializers.IntegerField()
    hits = serializers.DictField(child=serializers.IntegerField())
    hits_by_status = serializers.DictField(child=serializers.IntegerField())
    hits_submitted = serializers.IntegerField()
    pairs_queued = serializers.IntegerField()
    pairs_in_hits = serializers.IntegerField()
    pairs_judged = serializers.IntegerField()
    workers_active = serializers.IntegerField()
    workers_excluded = serializers.IntegerField()
    assessors_active = serializers.IntegerField()
    spend_usd = serializers.DecimalField(max_digits=12, decimal_places=2)
    spent_usd = serializers.DecimalField(max_digits=12, decimal_places=2)
    budget_usd = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    publish_note = serializers.CharField(allow_blank=True)


def campaign_progress_data(campaign: Campaign) -> dict[str, object]:
    """The campaign's progress for the API: the names of ``campaign_status --json`` (``status``,
    ``topics_done``, ``topics_total``, ``judgments``, ``tournament_judgments``, ``hits``, ``workers_excluded``,
    ``spend_usd``...) and, beside them, the dashboard's (``topics_finished``, ``pairs_judged``...)."""
    progress = selectors.campaign_progress(campaign=campaign)
    total = progress.topics_total
    return {
        **progress.as_json(),
        "topics_finished": progress.topics_done,
        "fraction_finished": progress.topics_done / total if total else 0.0,
        "topics_by_state": progress.topics,
        "hits_by_status": progress.hits,
        "pairs_judged": progress.judgments,
        "answers_total": sum(progress.answers.values()),
        "spent_usd": progress.spend_usd,
    }


class CampaignDetailSerializer(CampaignSerializer):
    progress = serializers.SerializerMethodField()

    class Meta(CampaignSerializer.Meta):
        fields = [*CampaignSerializer.Meta.fields, "progress"]

    @extend_schema_field(CampaignProgressSerializer)
    def get_progress(self, campaign) -> dict:
        return CampaignProgressSerializer(campaign_progress_data(campaign)).data


class CampaignListApi(ResearcherApi, generics.ListCreateAPIView):
    """The caller's campaigns (staff: all); POST creates a draft campaign owned by the caller."""

    serializer_class = CampaignSerializer

    def get_queryset(self):
        return selectors.campaign_list_visible(user=self.request.user)

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        if Campaign.objects.filter(name=data["name"]).exists():
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
        return Response(CampaignDetailSerializer(campaign).data)


# --- topics, judgments, workers --------------------------------------------------------------------------


class TopicSerializer(serializers.Serializer):
    topic = serializers.CharField()
    state = serializers.CharField()
    round = serializers.IntegerField()
    stage = serializers.IntegerField(allow_null=True)
    pool_sizes = serializers.ListField(child=serializers.IntegerField())
    pairs_judged = serializers.IntegerField()
    pairs_open = serializers.IntegerField()
    top_k = serializers.ListField(child=serializers.DictField(), allow_null=True)


class CampaignTopicListApi(ResearcherApi, generics.ListAPIView):
    """The campaign's topics: state, round, stage, pool size per round, pairs judged and open, and, once the
    topic is finished, its top-k (``docid``, ``rank``, ``wins``; ties at rank k included)."""

    serializer_class = TopicSerializer

    def get_queryset(self):
        campaign = self.campaign()
        ranked = selectors.campaign_ranked(campaign=campaign)
        rows = selectors.campaign_progress_table(campaign=campaign)["topics"]
        for row in rows:
            items = ranked.get(row["topic"])
            row["top_k"] = (
                [{"docid": i.docid, "rank": i.rank, "wins": i.wins} for i in items if i.rank <= campaign.k]
                if row["is_finished"]
                else None
            )
        return rows


class IntegerFilter(django_filters.NumberFilter):
    """Whole numbers within the column's range: a huge or fractional value is a 400 naming the parameter."""

    field_class = forms.IntegerField


class JudgmentFilter(django_filters.FilterSet):
    topic = django_filters.CharFilter(field_name="slot__topic__topic_id")
    round = IntegerFilter(field_name="slot__pair__round__number", min_value=0, max_value=2**31 - 1)
    worker = IntegerFilter(field_name="assignment__worker_id", min_value=1, max_value=2**63 - 1)

    class Meta:
        model = Judgment
        fields = ["topic", "round", "worker"]


class JudgmentSerializer(serializers.ModelSerializer):
    topic = serializers.CharField(source="slot.topic.topic_id")
    left = serializers.CharField(source="slot.left.docid")
    right = serializers.CharField(source="slot.right.docid")
    winner = serializers.CharField(source="winner.docid")
    round = serializers.IntegerField(source="slot.pair.round.number", default=None)
    stage = serializers.IntegerField(source="slot.pair.round.stage", default=None)
    hit = serializers.IntegerField(source="assignment.hit.number")
    worker = serializers.IntegerField(source="assignment.worker_id")
    is_challenge = serializers.BooleanField(source="slot.is_challenge")
    is_counted = serializers.SerializerMethodField()

    class Meta:
        model = Judgment
        fields = [
            "id",
            "topic",
            "left",
            "right",
            "winner",
            "winner_side",
            "round",
            "stage",
            "hit",
            "worker",
            "is_challenge",
            "is_counted",
            "milliseconds",
            "shown_at",
            "created_at",
        ]

    def get_is_counted(self, judgment) -> bool:
        return judgment.assignment.status == "accepted" and not judgment.slot.is_challenge


class CampaignJudgmentListApi(ResearcherApi, generics.ListAPIView):
    """The campaign's crowd answers, oldest first (read-only); filter with ``?topic=``, ``?round=``,
    ``?worker=`` (a worker id of ``/workers/``)."""

    serializer_class = JudgmentSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = JudgmentFilter
    queryset = Judgment.objects.none()  # for the schema; the real one is per campaign

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Judgment.objects.none()
        campaign = self.campaign()
        return (
            Judgment.objects.filter(assignment__campaign=campaign)
            .select_related(
                "slot__topic", "slot__left", "slot__right", "slot__pair__round", "winner", "assignment__hit"
            )
            .order_by("pk")
        )


class WorkerSerializer(serializers.Serializer):
    worker_id = serializers.IntegerField()
    worker = serializers.CharField()
    is_excluded = serializers.BooleanField()
    hits_submitted = serializers.IntegerField()
    hits_discarded = serializers.IntegerField()
    challenge_pass_rate = serializers.FloatField(allow_null=True)
    agreement = serializers.FloatField(allow_null=True)
    left_rate = serializers.FloatField(allow_null=True)
    median_seconds = serializers.FloatField(allow_null=True)


class CampaignWorkerListApi(ResearcherApi, generics.ListAPIView):
    """The campaign's workers: HITs, challenge pass rate, agreement with the final ordering, left-choice
    rate, median seconds per answer, excluded or not."""

    serializer_class = WorkerSerializer

    def get_queryset(self):
        return selectors.campaign_worker_table(campaign=self.campaign())


class WorkerExcludeApi(ResearcherApi, APIView):
    """POST ``{"reason": ...}``: exclude a worker of this campaign from further work (their HITs in progress
    are discarded when submitted)."""

    @extend_schema(
        request=inline_serializer("WorkerExcludeRequest", {"reason": serializers.CharField(required=False)}),
        responses={200: WorkerSerializer},
    )
    def post(self, request, name: str, worker_id: int):
        campaign = self.campaign()
        if worker_id > 2**63 - 1:
            raise Http404(f"no worker {worker_id} in campaign {campaign.name!r}")
        worker = Worker.objects.filter(pk=worker_id, assignments__campaign=campaign).distinct().first()
        if worker is None:
            raise Http404(f"no worker {worker_id} in campaign {campaign.name!r}")
        reason = str(request.data.get("reason", "excluded by the researcher"))[:200]
        worker_exclude(worker=worker, reason=reason)
        rows = [r for r in selectors.campaign_worker_table(campaign=campaign) if r["worker_id"] == worker.pk]
        return Response(WorkerSerializer(rows[0]).data)


# --- planner ---------------------------------------------------------------------------------------------


class PlanRequestSerializer(serializers.Serializer):
    """The parameters of ``toppref plan``: a collection's graded qrels (``collection``) or one pool size."""

    collection = serializers.SlugRelatedField(
        slug_field="name", queryset=Collection.objects.all(), required=False, allow_null=True
    )
    pool_size = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=10_000)
    k = serializers.IntegerField(default=5, min_value=1)
    F = serializers.IntegerField(default=9, min_value=1)
    P = serializers.IntegerField(default=7, min_value=1)
    culling = serializers.ChoiceField(choices=Campaign.Culling.choices, default=Campaign.Culling.HALF)
    max_rounds = serializers.IntegerField(default=10, min_value=1, max_value=100)
    reinstate = serializers.BooleanField(default=True)
    preferences_per_hit = serializers.IntegerField(default=10, min_value=1)
    challenges_per_hit = serializers.IntegerField(default=3, min_value=0)
    pay_per_hit = serializers.FloatField(default=2.0, min_value=0)
    fee = serializers.FloatField(default=0.4, min_value=0)
    trials = serializers.IntegerField(default=100, min_value=1, max_value=1000)
    seed = serializers.IntegerField(default=0)

    def validate(self, data):
        if data.get("collection") is None and data.get("pool_size") is None:
            raise ValidationError({"collection": ["give collection or pool_size"]})
        return data


class PlanApi(ResearcherApi, APIView):
    """POST the ``toppref plan`` parameters: expected judgments, HITs, cost and the risk ``p_miss``."""

    @extend_schema(request=PlanRequestSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request):
        from judging.engine import Pricing

        data = PlanRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        args = data.validated_data
        params = CrowdParams(
            k=args["k"],
            F=args["F"],
            P=args["P"],
            culling=args["culling"],
            max_rounds=args["max_rounds"],
            reinstate=args["reinstate"],
        )
        try:
            params.validate()
            hit_shape = HitShape(
                preferences=args["preferences_per_hit"], challenges=args["challenges_per_hit"]
            )
            hit_shape.validate()
        except ValueError as error:
            raise ValidationError({"non_field_errors": [str(error)]}) from None
        if args.get("pool_size") is not None:
            pool_sizes = {"pool": args["pool_size"]}
        else:
            pools = collection_candidate_pools(collection=args["collection"], k=args["k"])
            pool_sizes = {topic: len(pool) for topic, pool in pools.items()}
        try:
            plan = plan_campaign(
                pool_sizes,
                params=params,
                trials=args["trials"],
                rng=random.Random(args["seed"]),
                hit_shape=hit_shape,
                pricing=Pricing(pay_per_hit=args["pay_per_hit"], fee=args["fee"]),
            )
        except ValueError as error:
            raise ValidationError({"non_field_errors": [str(error)]}) from None
        plan["seed"] = args["seed"]
        return Response(plan)


class CollectionFileSerializer(serializers.Serializer):
    file = serializers.FileField()


class ImportResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()


class CollectionFileImportApi(ResearcherApi, APIView):
    """POST a file (multipart ``file``) into a collection: ``topics`` (TSV, CAsT JSON...), ``passages``
    (TSV or JSONL) or ``qrels`` (graded, ``topic Q0 docid grade``). All or nothing: a bad line is a 400
    naming ``file:line: problem`` and nothing is imported. The format follows the file name's extension."""

    parser_classes = [MultiPartParser]
    kind = ""

    @extend_schema(
        request={"multipart/form-data": CollectionFileSerializer}, responses={200: ImportResultSerializer}
    )
    def post(self, request, name: str):
        from pools.services import passages_import, qrels_import, topics_import
        from pools.services.importing import ImportRejectedError
        from pools.trec import TrecFormatError

        collection = Collection.objects.filter(name=name).first()
        if collection is None:
            raise Http404(f"no collection named {name!r}")
        data = CollectionFileSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        importer = {"topics": topics_import, "passages": passages_import, "qrels": qrels_import}[self.kind]
        suffix = Path(upload.name).suffix
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"upload{suffix}"
            with open(path, "wb") as out:
                for chunk in upload.chunks():
                    out.write(chunk)
            try:
                result = importer(collection=collection, path=path)
            except (TrecFormatError, ImportRejectedError, ValueError) as error:
                message = str(error).replace(str(path), upload.name)
                raise ValidationError({"file": [message]}) from None
        return Response(ImportResultSerializer(result).data)


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

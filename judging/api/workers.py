"""The campaign's workers and excluding one."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from judging import selectors
from judging.api.base import ResearcherApi
from judging.models import Worker
from judging.services import (
    ExclusionScopeError,
    worker_exclude,
)
from judging.services.exclusions import SCOPE_GLOBAL, SCOPE_OWNER


class WorkerSerializer(serializers.Serializer):
    worker_id = serializers.IntegerField()
    worker = serializers.CharField()
    is_excluded = serializers.BooleanField()
    excluded_by = serializers.CharField(
        allow_null=True,
        help_text="owner: excluded by the campaign's owner (from all of their campaigns); global: by staff",
    )
    hits_submitted = serializers.IntegerField()
    hits_discarded = serializers.IntegerField()
    challenge_pass_rate = serializers.FloatField(allow_null=True)
    agreement = serializers.FloatField(allow_null=True)
    left_rate = serializers.FloatField(allow_null=True)
    median_seconds = serializers.FloatField(allow_null=True)
    reliability = serializers.FloatField(
        allow_null=True,
        help_text="1 - the engine's estimated probability that this judge (person or model) reverses a pair",
    )
    model_reliability = serializers.FloatField(
        allow_null=True,
        help_text="the judge model's reliability of this judge (Crowd-BT's eta: the probability of answering by "
        "the model rather than at random), from the campaign's last background fit; null before the first",
    )


class CampaignWorkerListApi(ResearcherApi, generics.ListAPIView):
    """The campaign's workers: HITs, challenge pass rate, agreement with the final ordering, left-choice
    rate, median seconds per answer, excluded or not."""

    serializer_class = WorkerSerializer

    def get_queryset(self):
        return selectors.campaign_worker_table(campaign=self.campaign())


class WorkerExcludeRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False)
    scope = serializers.ChoiceField(choices=[SCOPE_OWNER, SCOPE_GLOBAL], default=SCOPE_OWNER)


class WorkerExcludeApi(ResearcherApi, APIView):
    """POST ``{"reason": ..., "scope": "owner" | "global"}``: exclude a worker of this campaign from further
    work (their HITs in progress are discarded when submitted). ``owner`` (the default): from every campaign
    of this campaign's owner and no one else's; ``global``: from every campaign (staff only, 403 otherwise)."""

    @extend_schema(request=WorkerExcludeRequestSerializer, responses={200: WorkerSerializer})
    def post(self, request, name: str, worker_id: int):
        campaign = self.campaign()
        if worker_id > 2**63 - 1:
            raise Http404(f"no worker {worker_id} in campaign {campaign.name!r}")
        worker = Worker.objects.filter(pk=worker_id, assignments__campaign=campaign).distinct().first()
        if worker is None:
            raise Http404(f"no worker {worker_id} in campaign {campaign.name!r}")
        data = WorkerExcludeRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        reason = str(data.validated_data.get("reason", "excluded by the researcher"))[:200]
        try:
            worker_exclude(
                worker=worker,
                reason=reason,
                campaign=campaign,
                by=request.user,
                scope=data.validated_data["scope"],
            )
        except ExclusionScopeError as error:
            return Response({"detail": str(error)}, status=403)
        rows = [r for r in selectors.campaign_worker_table(campaign=campaign) if r["worker_id"] == worker.pk]
        return Response(WorkerSerializer(rows[0]).data)

"""The campaign's workers and excluding one."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from judging import selectors
from judging.api.base import ResearcherApi
from judging.models import Worker
from judging.services import (
    worker_exclude,
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

"""REST API of the metrics app: a campaign's runs (upload, list), its leaderboard, and its exports (request,
status, download; built by background tasks, served only to the campaign's owner and staff)."""

from __future__ import annotations

from dataclasses import asdict
from urllib.parse import urlencode

from django.http import FileResponse, Http404
from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from judging.api import ResearcherApi
from judging.models import Export
from judging.selectors import campaign_list_visible
from judging.services.exports import ExportKindError
from metrics.leaderboard import campaign_leaderboard, campaign_runs_score_request, leaderboard_export_request
from metrics.selectors import campaign_run_list
from metrics.uploads import RunUploadError, run_upload
from pools.models import Run


class RunSerializer(serializers.ModelSerializer):
    class Meta:
        model = Run
        fields = ["id", "name", "status", "progress", "error", "line_count", "topic_count", "created_at"]


class RunAcceptedSerializer(RunSerializer):
    status_url = serializers.CharField(help_text="GET it until status is ready or failed (progress 0 to 1)")

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "status_url"]


class RunUploadSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    file = serializers.FileField()


class CampaignRunListApi(ResearcherApi, generics.ListAPIView):
    """The campaign's runs (its own uploads and the collection's runs; never another campaign's); POST (multipart ``name``, ``file``) uploads a TREC run, which a
    background task validates (``status`` pending -> validating -> ready or failed, ``error`` as
    ``file:line: problem``) and then scores."""

    serializer_class = RunSerializer
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Run.objects.none()
        runs = campaign_run_list(campaign=self.campaign())
        only = self.request.query_params.get("name")
        if only and "\x00" in only:  # no run name holds NUL (PostgreSQL would refuse the query)
            return runs.none()
        return runs.filter(name=only) if only else runs

    @extend_schema(
        parameters=[OpenApiParameter("name", OpenApiTypes.STR, description="only the run of this name")],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request={"multipart/form-data": RunUploadSerializer}, responses={202: RunAcceptedSerializer}
    )
    def post(self, request, name: str):
        campaign = self.campaign()
        data = RunUploadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            run = run_upload(
                campaign=campaign,
                name=data.validated_data["name"],
                upload=data.validated_data["file"],
                uploaded_by=request.user,
            )
        except RunUploadError as error:
            field, _, message = str(error).partition(": ")
            raise ValidationError({field: [message]}) from None
        run.refresh_from_db()
        # Accepted: the file is stored (streamed to disk), validated and scored by a background task whose
        # progress the status URL shows.
        status_url = f"/api/campaigns/{campaign.name}/runs/?{urlencode({'name': run.name})}"
        data = {**RunSerializer(run).data, "status_url": status_url}
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": status_url})


class CampaignRunsScoreApi(ResearcherApi, APIView):
    """POST: score every ready run of the campaign for the leaderboard now (in the background)."""

    @extend_schema(request=None, responses={202: None})
    def post(self, request, name: str):
        campaign_runs_score_request(campaign=self.campaign())
        return Response({"detail": "scoring queued"}, status=status.HTTP_202_ACCEPTED)


class LeaderboardRowSerializer(serializers.Serializer):
    run = serializers.CharField()
    measure = serializers.CharField(help_text="the CLI's measure name, e.g. compat@0.95 or ndcg@10")
    qrels = serializers.ChoiceField(choices=["preferences", "graded"])
    mean = serializers.FloatField()
    ci_low = serializers.FloatField()
    ci_high = serializers.FloatField()
    rank = serializers.IntegerField()
    topics = serializers.IntegerField()
    p_sign = serializers.FloatField(allow_null=True)
    p_t = serializers.FloatField(allow_null=True)
    p_sign_holm = serializers.FloatField(allow_null=True)
    p_t_holm = serializers.FloatField(allow_null=True)


@extend_schema(
    parameters=[
        OpenApiParameter("baseline", OpenApiTypes.STR, description="run to test every other run against"),
        OpenApiParameter("measure", OpenApiTypes.STR, description="only this measure"),
        OpenApiParameter("qrels", OpenApiTypes.STR, enum=["preferences", "graded"]),
    ]
)
class CampaignLeaderboardApi(ResearcherApi, generics.ListAPIView):
    """Every run under every measure against the campaign's preferences and the graded qrels: mean, 95%
    bootstrap CI, rank; with ``?baseline=RUN`` the paired sign and t-tests (Holm-corrected) against it."""

    serializer_class = LeaderboardRowSerializer

    def get_queryset(self):
        campaign = self.campaign()
        baseline = self.request.query_params.get("baseline") or None
        try:
            leaderboard = campaign_leaderboard(campaign=campaign, baseline=baseline)
        except ValueError as error:
            raise ValidationError({"baseline": [str(error).partition(": ")[2]]}) from None
        rows = [asdict(row) for row in leaderboard["rows"]]
        measure, qrels = self.request.query_params.get("measure"), self.request.query_params.get("qrels")
        return [
            r for r in rows if (not measure or r["measure"] == measure) and (not qrels or r["qrels"] == qrels)
        ]


class ExportSerializer(serializers.ModelSerializer):
    campaign = serializers.CharField(source="campaign.name", read_only=True)
    checksum = serializers.CharField(source="sha256", read_only=True)
    download = serializers.SerializerMethodField()

    class Meta:
        model = Export
        fields = [
            "id",
            "campaign",
            "kind",
            "status",
            "progress",
            "checksum",
            "size_bytes",
            "error",
            "created_at",
            "finished_at",
            "download",
        ]
        read_only_fields = ["status", "progress", "size_bytes", "error", "created_at", "finished_at"]

    def get_download(self, export) -> str | None:
        return f"/api/exports/{export.pk}/download/" if export.status == Export.Status.READY else None


class ExportRequestSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Export.Kind.values)


class CampaignExportListApi(ResearcherApi, generics.ListAPIView):
    """The campaign's exports, newest first; POST ``{"kind": ...}`` requests one (built in the background)."""

    serializer_class = ExportSerializer

    def get_queryset(self):
        return Export.objects.filter(campaign=self.campaign()).select_related("campaign")

    @extend_schema(request=ExportRequestSerializer, responses={202: ExportSerializer})
    def post(self, request, name: str):
        campaign = self.campaign()
        data = ExportRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            export = leaderboard_export_request(
                campaign=campaign, kind=data.validated_data["kind"], requested_by=request.user
            )
        except ExportKindError as error:
            raise ValidationError({"kind": [str(error)]}) from None
        export.refresh_from_db()
        return Response(ExportSerializer(export).data, status=status.HTTP_202_ACCEPTED)


def export_get_visible(*, user, export_id: int) -> Export:
    if export_id > 2**63 - 1:  # beyond the id column: no such export (not a database overflow)
        raise Http404(f"no export {export_id}")
    export = (
        Export.objects.select_related("campaign")
        .filter(pk=export_id, campaign__in=campaign_list_visible(user=user))
        .first()
    )
    if export is None:
        raise Http404(f"no export {export_id}")
    return export


class ExportDetailApi(ResearcherApi, generics.RetrieveAPIView):
    """One export: status, progress, checksum (SHA-256 of the file), size."""

    serializer_class = ExportSerializer

    def get_object(self):
        return export_get_visible(user=self.request.user, export_id=self.kwargs["export_id"])


class ExportDownloadApi(ResearcherApi, APIView):
    """The export's file (only to the campaign's owner and staff; 409 until it is ready)."""

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    def get(self, request, export_id: int):
        export = export_get_visible(user=request.user, export_id=export_id)
        return export_file_response(export)


def export_file_response(export: Export):
    if export.status != Export.Status.READY or not export.file:
        return Response({"detail": f"export {export.pk} is {export.status}"}, status=status.HTTP_409_CONFLICT)
    filename = export.file.name.rsplit("/", 1)[-1]
    response = FileResponse(export.file.open("rb"), as_attachment=True, filename=filename)
    response["X-Checksum-SHA256"] = export.sha256
    return response

"""The campaign's crowd answers, filterable by topic, round and worker."""

from __future__ import annotations

import django_filters
from django import forms
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import generics, serializers

from judging.api.base import ResearcherApi
from judging.models import Judgment
from judging.selectors import judgment_is_counted


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
        return judgment_is_counted(
            assignment_status=judgment.assignment.status,
            confirmed=judgment.assignment.confirmed_at is not None,
            is_challenge=judgment.slot.is_challenge,
        )


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

"""What every researcher API view shares: the permission and the campaign lookup (another researcher's
campaign is a 404; a name means the caller's own campaign, and staff may name the owner: ``?owner=USERNAME``)."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter
from rest_framework import permissions
from rest_framework.exceptions import ValidationError

from judging import selectors
from judging.models import Campaign
from pools.access import IsResearcher

__all__ = ["IsResearcher", "ResearcherApi"]


OWNER_PARAMETER = OpenApiParameter(
    "owner",
    str,
    OpenApiParameter.QUERY,
    required=False,
    description="staff only: the username of the campaign's owner, when several owners use the name "
    "(campaign names are unique per owner; for a researcher the name always means their own campaign)",
)


class CampaignNameSchema(AutoSchema):
    """Documents ``?owner=`` on every endpoint under ``/api/campaigns/{name}/``."""

    def get_override_parameters(self):
        parameters = super().get_override_parameters()
        if "/campaigns/{name}/" in self.path:
            parameters = [*parameters, OWNER_PARAMETER]
        return parameters


class ResearcherApi:
    permission_classes = [permissions.IsAuthenticated, IsResearcher]
    schema = CampaignNameSchema()

    def campaign(self) -> Campaign:
        try:
            return selectors.campaign_get_visible(
                user=self.request.user,
                name=self.kwargs["name"],
                owner=self.request.query_params.get("owner"),
            )
        except selectors.CampaignNameAmbiguousError as error:
            raise ValidationError({"owner": [str(error)]}) from None
        except Campaign.DoesNotExist:
            raise Http404(f"no campaign named {self.kwargs['name']!r}") from None

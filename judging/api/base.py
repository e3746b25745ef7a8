"""What every researcher API view shares: the permission and the campaign lookup (another researcher's
campaign is a 404)."""

from __future__ import annotations

from django.http import Http404
from rest_framework import permissions

from judging import selectors
from judging.models import Campaign
from pools.access import IsResearcher

__all__ = ["IsResearcher", "ResearcherApi"]


class ResearcherApi:
    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    def campaign(self) -> Campaign:
        try:
            return selectors.campaign_get_visible(user=self.request.user, name=self.kwargs["name"])
        except Campaign.DoesNotExist:
            raise Http404(f"no campaign named {self.kwargs['name']!r}") from None

"""Who is a researcher: staff and members of the ``researchers`` group. At the bottom of the apps so that every
app's researcher pages and API (collections here, campaigns in judging, scores in metrics) share one rule."""

from __future__ import annotations

from rest_framework import permissions

RESEARCHERS_GROUP = "researchers"


def user_is_researcher(*, user) -> bool:
    """Researchers' pages and API are for staff and members of the ``researchers`` group only."""
    if not user.is_authenticated or not user.is_active:
        return False
    return user.is_staff or user.groups.filter(name=RESEARCHERS_GROUP).exists()


class IsResearcher(permissions.BasePermission):
    """Staff and members of the ``researchers`` group; assessors and crowd users get 403."""

    message = "only researchers (the researchers group) and staff may use this API"

    def has_permission(self, request, view) -> bool:
        return user_is_researcher(user=request.user)

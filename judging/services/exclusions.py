"""Excluding workers, per owner: a researcher's exclusion keeps a worker out of every campaign that researcher
owns and out of no one else's; staff may exclude globally (``Worker.is_excluded``). A worker failing a
challenge is excluded in the scope of the campaign's owner ("Assessing top-k preferences", section 4.3:
workers failing a challenge "were paid but excluded"). See docs/decisions.md, "Tenancy"."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from judging.models import Campaign, Worker, WorkerExclusion
from judging.selectors.exclusions import worker_is_excluded_by

SCOPE_GLOBAL = "global"
SCOPE_OWNER = "owner"


class ExclusionScopeError(PermissionError):
    """A global exclusion asked for by someone who is not staff."""

    def __init__(self) -> None:
        super().__init__("scope: only staff may exclude a worker globally (give scope 'owner')")


def worker_is_excluded(*, worker: Worker, campaign: Campaign) -> bool:
    """Whether ``worker`` may not work on ``campaign``: excluded globally, or by the campaign's owner, as
    stored (the rule of ``judging.selectors.exclusions``, where the pair page's read finds it too)."""
    return worker_is_excluded_by(worker_id=worker.pk, owner_id=campaign.owner_id)


def worker_exclusion_scope(*, worker: Worker, campaign: Campaign) -> str | None:
    """``"global"``, ``"owner"`` (excluded by the campaign's owner) or None (not excluded for it)."""
    if not worker_is_excluded(worker=worker, campaign=campaign):
        return None
    return SCOPE_GLOBAL if worker.is_excluded else SCOPE_OWNER


def worker_list_excluded_for(*, campaign: Campaign) -> QuerySet[Worker]:
    """The workers excluded for ``campaign`` (globally or by its owner), for pushing to the provider."""
    scope = Q(is_excluded=True)
    if campaign.owner_id is not None:
        scope |= Q(exclusions__owner_id=campaign.owner_id)
    return Worker.objects.filter(scope).distinct()


@transaction.atomic
def worker_exclude(
    *, worker: Worker, reason: str, campaign: Campaign | None = None, by=None, scope: str = SCOPE_OWNER
) -> Worker:
    """Exclude a worker in the scope of ``campaign``'s owner (every campaign that owner has), or globally with
    ``scope="global"`` (only staff, given as ``by``; ``ExclusionScopeError`` otherwise), or when there is no
    campaign or it has no owner (campaigns with no owner are staff's). An exclusion stays; the first reason
    is kept. The worker's row is locked (the lock order of ``judging.services.judgments``)."""
    if scope == SCOPE_GLOBAL and by is not None and not by.is_staff:
        raise ExclusionScopeError()
    worker = Worker.objects.select_for_update().get(pk=worker.pk)
    worker_exclude_locked(worker=worker, reason=reason, campaign=campaign, scope=scope)
    return worker


def worker_exclude_locked(
    *, worker: Worker, reason: str, campaign: Campaign | None = None, scope: str = SCOPE_OWNER
) -> None:
    """``worker_exclude`` for a caller that holds the worker's lock already (the challenge check)."""
    if scope == SCOPE_GLOBAL or campaign is None or campaign.owner_id is None:
        if not worker.is_excluded:
            worker.is_excluded = True
            worker.excluded_at = timezone.now()
            worker.exclusion_reason = reason[:200]
            worker.save(update_fields=["is_excluded", "excluded_at", "exclusion_reason"])
        return
    WorkerExclusion.objects.get_or_create(
        worker=worker, owner_id=campaign.owner_id, defaults={"campaign": campaign, "reason": reason[:200]}
    )

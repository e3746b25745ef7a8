"""The periodic sweep: the safety net that redoes whatever a lost task left undone and runs the clocks.

Follow-up work is enqueued after commit (STYLE.md), so a process that dies between a commit and its enqueue
loses that task: a round stays complete but open, or queued pairs wait without a HIT. The sweep finds such
states from the database alone and redoes the step, and it expires overdue assignments and HITs. It runs
from celery beat with Redis, from the request middleware in the embedded default (``judging.middleware``),
or from ``manage.py campaign_advance --loop`` (docs/decisions.md, "Who runs the sweep")."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from judging.models import CROWD_MODES, Campaign
from judging.services.campaigns import campaign_advance
from judging.services.confidence import campaign_confidence_running
from judging.services.hits import hit_expire_overdue
from judging.services.planning import campaign_forecast_refresh


def campaign_advance_running(*, now: datetime | None = None) -> dict[str, int]:
    """Expire the overdue assignments and HITs of every campaign (paused ones too), then bring every running
    crowd campaign up to date (``campaign_advance``). Idempotent; each step is its own transaction. Returns
    the summed counts of ``campaign_advance``, the number of ``campaigns`` swept and of campaigns whose
    confidence was refitted (``confidence_fitted``)."""
    counts: Counter[str] = Counter(hits_expired=len(hit_expire_overdue(now=now)))
    campaigns = list(Campaign.objects.filter(status=Campaign.Status.RUNNING, mode__in=CROWD_MODES))
    for campaign in campaigns:
        counts.update(campaign_advance(campaign=campaign))
        # the dashboard's forecast follows the pools here, in the background, not in the page's request
        campaign_forecast_refresh(campaign=campaign)
    counts["campaigns"] = len(campaigns)
    # how sure each campaign is of its top-k, refitted here in the background, never in a page's request
    counts["confidence_fitted"] = campaign_confidence_running()
    return dict(counts)

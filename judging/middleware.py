"""The embedded default's clock: with no Redis there is no celery beat, so the periodic sweep
(``campaign_advance_running``) runs on a web request when ``TOPPREF_SWEEP_SECONDS`` have passed since this
process last ran it (docs/decisions.md, "Who runs the sweep"). Set ``TOPPREF_SWEEP_SECONDS=0`` to turn it
off; with ``REDIS_URL`` it is off by default, beat runs the sweep there."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.http import HttpRequest, HttpResponse

from judging.services.sweep import campaign_advance_running

logger = logging.getLogger(__name__)


class SweepMiddleware:
    """Runs the sweep after the response of a request that comes at least ``TOPPREF_SWEEP_SECONDS`` after
    the previous sweep of this process (the first request after a start sweeps at once: that is the crash
    recovery). One request at a time sweeps; a failing sweep is logged and never breaks the page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        interval = float(getattr(settings, "TOPPREF_SWEEP_SECONDS", 0) or 0)
        if interval <= 0:
            raise MiddlewareNotUsed
        self.get_response, self.interval = get_response, interval
        self._lock = threading.Lock()
        self._last: float | None = None

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        self.sweep_if_due()
        return response

    def sweep_if_due(self) -> bool:
        """Sweep if the interval has passed and no other request is sweeping; True if this call swept."""
        now = time.monotonic()
        if self._last is not None and now - self._last < self.interval:
            return False
        if not self._lock.acquire(blocking=False):
            return False
        try:
            self._last = now
            counts = campaign_advance_running()
            if any(value for key, value in counts.items() if key != "campaigns"):
                logger.info("sweep: %s", ", ".join(f"{key} {value}" for key, value in sorted(counts.items())))
        except Exception:
            logger.exception("the periodic sweep failed; the next one retries")
        finally:
            self._lock.release()
        return True

"""Security headers for every response: a Content-Security-Policy that allows no inline script and no
third-party origin, and framing refused everywhere except on the views marked with ``frame_for_workers``
(the external HIT pages, which MTurk shows in an iframe on its worker sites).

Django 5 has no CSP support of its own (it arrives in 6.0), and the policy is small and fixed, so a few lines
here replace a dependency; see docs/decisions.md "Judging pages".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.clickjacking import xframe_options_exempt

# The providers' origins are the judging app's facts (judging/crowd/origins.py); here they are only wired in.
from judging.crowd.origins import (
    MTURK_FRAME_ANCESTORS,
    MTURK_SUBMIT_ORIGINS,
    PROLIFIC_ORIGIN,
    mturk_submit_origins,
)

logger = logging.getLogger(__name__)

__all__ = [
    "MTURK_FRAME_ANCESTORS",
    "MTURK_SUBMIT_ORIGINS",
    "PROLIFIC_ORIGIN",
    "ContentSecurityPolicyMiddleware",
    "DroppedConnectionRetryMiddleware",
    "frame_for_workers",
    "idempotent_post",
    "mturk_submit_origins",
]

BASE_POLICY = (
    ("default-src", "'self'"),
    ("script-src", "'self'"),
    ("style-src", "'self'"),
    ("img-src", "'self' data:"),
    ("font-src", "'self'"),
    ("connect-src", "'self'"),
    ("object-src", "'none'"),
    ("base-uri", "'none'"),
)


def frame_for_workers(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Mark a view as an external HIT page: framable by MTurk's worker sites and ``TOPPREF_FRAME_ANCESTORS``
    (CSP ``frame-ancestors``, no X-Frame-Options), and allowed to submit forms to MTurk and Prolific."""

    @wraps(view)
    def wrapped(*args, **kwargs):
        response = view(*args, **kwargs)
        response.toppref_framable = True
        return response

    return xframe_options_exempt(wrapped)


def base_policy_header(*, framable: bool = False) -> str:
    policy = list(BASE_POLICY)
    if framable:
        ancestors = MTURK_FRAME_ANCESTORS + tuple(getattr(settings, "TOPPREF_FRAME_ANCESTORS", []))
        policy.append(("frame-ancestors", " ".join(ancestors)))
        policy.append(("form-action", " ".join(("'self'", *mturk_submit_origins(), PROLIFIC_ORIGIN))))
    else:
        policy.append(("frame-ancestors", "'none'"))
        policy.append(("form-action", "'self'"))
    return "; ".join(f"{name} {value}" for name, value in policy)


def static_file_headers(headers, path: str, url: str) -> None:
    """``WHITENOISE_ADD_HEADERS_FUNCTION``: whitenoise answers static files before the middleware below runs,
    so the same policy and framing refusal are added here (the API docs' ``oauth2-redirect.html`` is an HTML
    page among the static files)."""
    headers["Content-Security-Policy"] = base_policy_header()
    headers["X-Frame-Options"] = "DENY"
    headers["Referrer-Policy"] = "same-origin"
    headers["X-Content-Type-Options"] = "nosniff"


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" in response:
            return response
        response["Content-Security-Policy"] = base_policy_header(
            framable=getattr(response, "toppref_framable", False)
        )
        response.setdefault("Referrer-Policy", "same-origin")
        response.setdefault("X-Content-Type-Options", "nosniff")
        return response


class UploadSizeLimitMiddleware:
    """Refuse a request whose Content-Length passes ``TOPPREF_MAX_UPLOAD_MB`` with 413, before its body is read
    (the API answers JSON ``{"detail": ...}``, the pages plain text). Bodies without a length are bounded while
    they are read (config.uploads.UploadSizeLimitHandler)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from config.uploads import max_upload_bytes, upload_limit_message

        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > max_upload_bytes():
            message = upload_limit_message(length)
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": message}, status=413)
            return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


# Views whose POST may run twice with one effect (the judging services return the stored answer for a
# repeated one), so that a dropped database connection retries them as it retries a GET.
IDEMPOTENT_POST = "toppref_idempotent_post"


def idempotent_post(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Mark a view whose POST is idempotent: ``DroppedConnectionRetryMiddleware`` may run it again."""
    setattr(view, IDEMPOTENT_POST, True)
    return view


class DroppedConnectionRetryMiddleware:
    """Run a GET, a HEAD or an idempotent POST (``idempotent_post``) once more, on a fresh connection, when
    the database connection was dropped under it (PostgreSQL restarted, ``pg_terminate_backend``, a proxy
    closing it): the judge gets the page instead of a 500 (docs/decisions.md, "A dropped database
    connection"). ``CONN_HEALTH_CHECKS`` already replaces a connection found dead when a request starts; this
    covers one that dies during the request. Only a connection that is really unusable is retried, never
    another database error, and only outside a transaction (whatever the view did in one was rolled back).
    Must come last, so that every other middleware's ``process_view`` (the CSRF check) has run."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view, view_args, view_kwargs) -> HttpResponse | None:
        from django.db import InterfaceError, OperationalError, connection

        if request.method not in ("GET", "HEAD") and not getattr(view, IDEMPOTENT_POST, False):
            return None
        try:
            return view(request, *view_args, **view_kwargs)
        except (OperationalError, InterfaceError) as error:
            # Only PostgreSQL's lost connections: SQLite's errors (a locked file) carry no SQLSTATE and are
            # not a connection that a fresh one would mend.
            if (
                connection.vendor != "postgresql"
                or connection.in_atomic_block
                or not connection_was_lost(error)
            ):
                raise
            logger.warning(
                "database connection lost during %s %s; retrying once", request.method, request.path
            )
            connection.close()
            return view(request, *view_args, **view_kwargs)


# PostgreSQL's SQLSTATEs of a connection that is gone: class 08 (connection exception) and the shutdowns of
# class 57 (57P01 terminated by an administrator, 57P02 crash, 57P03 not accepting connections yet), never a
# cancelled statement (57014), a deadlock or a serialization failure.
LOST_CONNECTION_STATES = ("57P01", "57P02", "57P03")


def connection_was_lost(error: Exception) -> bool:
    """Whether a database error says the connection itself is gone (not a failed statement): a SQLSTATE of
    class 08 or a shutdown, or a driver error with no SQLSTATE (the socket closed under it)."""
    state = getattr(error.__cause__, "sqlstate", None)
    if state is None:
        return True
    return state.startswith("08") or state in LOST_CONNECTION_STATES

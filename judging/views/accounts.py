"""The page a locked-out login gets (django-axes calls ``lockout``): it says when to try again."""

from __future__ import annotations

from axes.helpers import get_cool_off
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone


def lockout(
    request: HttpRequest, response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else None
    retry_at = timezone.now() + cool_off if cool_off else None
    return render(
        request, "registration/login_locked.html", {"minutes": minutes, "retry_at": retry_at}, status=429
    )

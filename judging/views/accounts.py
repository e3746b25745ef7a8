"""Logging in and out: the login page sends each person where their work is, and the page a locked-out login
gets (django-axes calls ``lockout``) says when to try again."""

from __future__ import annotations

from axes.helpers import get_cool_off
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from judging.selectors.access import user_is_researcher


def landing_url(*, user) -> str:
    """Where a person's work is: the dashboard for researchers and staff, the judge's start page for everyone
    else (assessors, crowd users, and accounts with no role yet, whom that page tells whom to ask)."""
    return reverse("dashboard:campaigns") if user_is_researcher(user=user) else reverse("judging:start")


class LoginView(auth_views.LoginView):
    """Django's login page; after it a safe ``next`` wins (Django checks its host and scheme), else the
    person lands on ``landing_url``."""

    def get_default_redirect_url(self) -> str:
        return landing_url(user=self.request.user)


def lockout(
    request: HttpRequest, response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else None
    retry_at = timezone.now() + cool_off if cool_off else None
    return render(
        request, "registration/login_locked.html", {"minutes": minutes, "retry_at": retry_at}, status=429
    )

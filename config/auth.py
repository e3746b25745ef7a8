"""django-axes' lockout check for logins made over HTTP only.

``AxesStandaloneBackend`` refuses an ``authenticate()`` call without a request (the test client's
``login()``, a shell, a management command); those are not attempts from an address, so there is nothing to
rate-limit and the next backend (``ModelBackend``) decides alone.
"""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend


class LoginRateLimitBackend(AxesStandaloneBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)

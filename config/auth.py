"""Login rate limiting (django-axes) that works behind a proxy.

Two limits (docs/decisions.md, "Login lockout behind a proxy"):

- **per (account, address)**: django-axes locks the pair out after ``TOPPREF_LOGIN_FAILURE_LIMIT`` failures
  for ``TOPPREF_LOGIN_COOLOFF_MINUTES``; the address is the client's (:func:`client_ip_address`), so behind the
  TLS proxy one client's failures do not lock every other client out;
- **per account**, slower: once an account has had ``TOPPREF_LOGIN_ACCOUNT_FAILURE_LIMIT`` failures from any
  addresses within the cool-off time, addresses that have never signed in to it are refused for the rest of
  that time. The addresses the account's owner has signed in from (django-axes' access log) are never
  refused by it, so an outsider spraying guesses from many addresses cannot lock the owner out.

``AxesStandaloneBackend`` refuses an ``authenticate()`` call without a request (the test client's
``login()``, a shell, a management command); those are not attempts from an address, so there is nothing to
rate-limit and the next backend (``ModelBackend``) decides alone.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from axes.backends import AxesStandaloneBackend
from axes.exceptions import AxesBackendPermissionDenied
from axes.helpers import get_client_ip_address, get_cool_off
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.hashers import Argon2PasswordHasher as DjangoArgon2PasswordHasher
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.db.models import Sum
from django.http import HttpRequest
from django.utils import timezone

from judging.selectors.rows import model_rows

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def _networks(spec: tuple[str, ...]) -> tuple[IpNetwork, ...]:
    networks = []
    for entry in spec:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"TOPPREF_TRUSTED_PROXIES: {entry!r} is not an address or a network (CIDR)"
            ) from None
    return tuple(networks)


def trusted_proxies() -> tuple[IpNetwork, ...]:
    """The networks of ``TOPPREF_TRUSTED_PROXIES`` (addresses or CIDRs, comma-separated)."""
    return _networks(tuple(entry for entry in settings.TOPPREF_TRUSTED_PROXIES if entry.strip()))


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _is_trusted(address, networks) -> bool:
    return address is not None and any(address in network for network in networks)


def client_ip_address(request: HttpRequest) -> str | None:
    """The client's address (``AXES_CLIENT_IP_CALLABLE``): ``REMOTE_ADDR``, unless that is a trusted proxy;
    then the rightmost hop of ``X-Forwarded-For`` that is not a trusted proxy (a client can write anything in
    the header, but only the hops added by our own proxies can be believed)."""
    remote = request.META.get("REMOTE_ADDR", "")
    networks = trusted_proxies()
    if not networks or not _is_trusted(_address(remote), networks):
        return remote or None
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    client = remote
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            break  # a hop our proxy did not write: the last believable one is the client
        client = str(address)
        if not _is_trusted(address, networks):
            break
    return client


def account_is_throttled(*, username: str, ip_address: str | None) -> bool:
    """Whether the per-account limit refuses this address: the account has had at least
    ``TOPPREF_LOGIN_ACCOUNT_FAILURE_LIMIT`` failures within the cool-off time, and this address has never
    signed in to it."""
    from axes.models import AccessAttempt, AccessLog

    limit = settings.TOPPREF_LOGIN_ACCOUNT_FAILURE_LIMIT
    if not username or not limit:
        return False
    since = timezone.now() - get_cool_off()
    failures = (
        AccessAttempt.objects.filter(username=username, attempt_time__gte=since).aggregate(
            total=Sum("failures_since_start")
        )["total"]
        or 0
    )
    if failures < limit:
        return False
    return not AccessLog.objects.filter(username=username, ip_address=ip_address).exists()


class LoginRateLimitBackend(AxesStandaloneBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        if account_is_throttled(username=username or "", ip_address=get_client_ip_address(request)):
            request.axes_locked_out = True  # django-axes' middleware answers with the lockout page
            raise AxesBackendPermissionDenied("too many failed logins for this account from new addresses")
        return super().authenticate(request, username=username, password=password, **kwargs)


class UserRowBackend(ModelBackend):
    """Django's ``ModelBackend``, reading the logged-in user of every request in one statement of plain SQL
    (``model_rows``): the ORM's ``get`` compiled it afresh on every request, about a tenth of a judge's
    answer in CPU (docs/decisions.md, "Plain SQL for the pair page's reads"). Same user, same checks
    (``user_can_authenticate``); the session's hash is verified by Django as before.

    Listed before Django's own ``ModelBackend``, which stays for the sessions logged in through it; a login it
    refuses stops here (``PermissionDenied``, which Django reports as a failed login) instead of hashing the
    password a second time in the next backend."""

    def get_user(self, user_id):
        model = get_user_model()
        table, pk = model._meta.db_table, model._meta.pk.column
        found = model_rows(model, f"FROM {table} u WHERE u.{pk} = %s", [user_id], alias="u")
        user = found[0] if found else None
        return user if user is not None and self.user_can_authenticate(user) else None

    def authenticate(self, request, username=None, password=None, **kwargs):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None and password is not None:
            raise PermissionDenied
        return user


class Argon2PasswordHasher(DjangoArgon2PasswordHasher):
    """Django's Argon2id hasher with the OWASP Password Storage Cheat Sheet's parameters (19 MiB of memory, two
    passes, one lane) instead of Django's (100 MiB, two passes, eight lanes): about 20 ms of CPU per login
    instead of 200 ms (PBKDF2 at a million iterations: 230 ms), so that 200 judges arriving at once log in at
    the rate they arrive on two cores (docs/decisions.md, "Logins at the rate of arrival"). A stored hash
    with other parameters (Django's Argon2, PBKDF2) is checked as it is and rehashed with these on login."""

    memory_cost = 19 * 1024
    time_cost = 2
    parallelism = 1

"""Login lockout behind a proxy: the client's address comes from X-Forwarded-For only when REMOTE_ADDR is a
proxy of TOPPREF_TRUSTED_PROXIES (the rightmost hop that is not one), so one client's failures behind the TLS
proxy lock that client out and nobody else; and the slower per-account limit refuses new addresses once an
account is under attack but never the addresses its owner signs in from."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from config.auth import client_ip_address
from tests.judging.pages_fixtures import PASSWORD, user_with_role

pytestmark = pytest.mark.django_db
PROXY = "10.0.0.2"


def login(
    client, password: str, *, forwarded_for: str | None = None, remote: str = PROXY, username: str = "ann"
):
    extra = {"REMOTE_ADDR": remote}
    if forwarded_for is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded_for
    return client.post("/accounts/login/", {"username": username, "password": password}, **extra)


@pytest.mark.parametrize(
    ("remote", "forwarded_for", "client"),
    [
        ("10.0.0.2", "203.0.113.7", "203.0.113.7"),  # through our proxy
        (
            "10.0.0.2",
            "1.1.1.1, 203.0.113.7",
            "203.0.113.7",
        ),  # a client-written hop on the left is not believed
        ("10.0.0.2", "203.0.113.7, 10.0.0.3", "203.0.113.7"),  # two trusted proxies (a CIDR)
        ("198.51.100.1", "203.0.113.7", "198.51.100.1"),  # not our proxy: the header is anyone's to write
        ("10.0.0.2", "", "10.0.0.2"),  # a proxy that wrote no header
        ("10.0.0.2", "garbage", "10.0.0.2"),
        ("10.0.0.2", "2001:db8::1", "2001:db8::1"),
    ],
)
def test_the_client_address_is_the_rightmost_untrusted_hop(settings, remote, forwarded_for, client):
    settings.TOPPREF_TRUSTED_PROXIES = ["10.0.0.0/24"]
    request = RequestFactory().get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded_for)
    assert client_ip_address(request) == client


def test_without_trusted_proxies_the_header_is_ignored(settings):
    settings.TOPPREF_TRUSTED_PROXIES = []
    request = RequestFactory().get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="203.0.113.7")
    assert client_ip_address(request) == PROXY


def test_behind_the_proxy_one_client_s_failures_lock_only_that_client(client, settings):
    settings.TOPPREF_TRUSTED_PROXIES = [PROXY]
    settings.AXES_FAILURE_LIMIT = 3
    user_with_role("ann", "assessors")
    for _ in range(3):
        login(client, "wrong", forwarded_for="203.0.113.66")
    # the attacker is locked out; the account's owner, behind the same proxy, is not
    assert login(client, PASSWORD, forwarded_for="203.0.113.66").status_code == 429
    assert login(client, PASSWORD, forwarded_for="198.51.100.20").status_code == 302


def test_the_per_account_limit_refuses_new_addresses_but_never_the_owner_s(client, settings):
    settings.TOPPREF_TRUSTED_PROXIES = [PROXY]
    settings.TOPPREF_LOGIN_ACCOUNT_FAILURE_LIMIT = 6
    user_with_role("ann", "assessors")
    # the owner signed in once from home
    assert login(client, PASSWORD, forwarded_for="198.51.100.20").status_code == 302
    client.post("/accounts/logout/", REMOTE_ADDR=PROXY)
    # a spray of guesses from many addresses, each under the per-address limit
    for address in range(3):
        for _ in range(2):
            assert login(client, "wrong", forwarded_for=f"203.0.113.{address}").status_code == 200
    # a new address is refused even with the right password; the owner's address is not
    assert login(client, PASSWORD, forwarded_for="203.0.113.200").status_code == 429
    assert login(client, PASSWORD, forwarded_for="198.51.100.20").status_code == 302


def test_the_per_account_limit_counts_only_within_the_cool_off(client, settings):
    from datetime import timedelta

    from axes.models import AccessAttempt

    settings.TOPPREF_TRUSTED_PROXIES = [PROXY]
    settings.TOPPREF_LOGIN_ACCOUNT_FAILURE_LIMIT = 4
    user_with_role("ann", "assessors")
    for address in range(2):
        for _ in range(2):
            login(client, "wrong", forwarded_for=f"203.0.113.{address}")
    assert login(client, PASSWORD, forwarded_for="203.0.113.200").status_code == 429
    # once the attempts are older than the cool-off, a new address may sign in again
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.first().attempt_time - timedelta(hours=1))
    assert login(client, PASSWORD, forwarded_for="203.0.113.200").status_code == 302

"""Sessions read through the cache (config/sessions.py): a login is never lost with the cache, and a broken
cache never gives a judge an error."""

from __future__ import annotations

import logging
import socket
from unittest import mock

import pytest
from django.test import Client

from tests.judging.pages_fixtures import PASSWORD, crowd_campaign, user_with_role

LOCAL_CACHE = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "sessions-test"}
# Nothing listens on port 1: every read and write of this cache fails at once.
DEAD_REDIS = {
    "BACKEND": "config.sessions.ReusedClientRedisCache",
    "LOCATION": "redis://127.0.0.1:1/0",
    "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
}


@pytest.fixture
def cached_sessions(settings):
    settings.CACHES = {"default": LOCAL_CACHE | {"LOCATION": "default"}, "sessions": LOCAL_CACHE}
    settings.SESSION_ENGINE = "config.sessions"
    settings.SESSION_CACHE_ALIAS = "sessions"
    return settings


@pytest.mark.django_db
def test_a_session_is_read_from_the_cache_and_survives_losing_it(cached_sessions, client):
    from django.core.cache import caches

    # given a judge logged in with cached sessions
    crowd_campaign()
    assert client.login(username=user_with_role("cat", "crowd").username, password=PASSWORD)
    client.get("/judge/")

    # when the page is read again, and again after the cache lost everything
    with mock.patch("django.contrib.sessions.backends.db.SessionStore._get_session_from_db") as from_db:
        cached = client.get("/judge/")
    caches["sessions"].clear()
    after_loss = client.get("/judge/")

    # then the first came from the cache alone, and the login outlived the cache (the database kept it)
    assert cached.status_code == 200 and from_db.call_count == 0
    assert after_loss.status_code == 200 and "cat" in after_loss.content.decode()


@pytest.mark.django_db
def test_a_cache_that_is_down_costs_the_judge_nothing(cached_sessions, client):
    # given a judge logged in, then the session cache down (Redis unreachable)
    crowd_campaign()
    assert client.login(username=user_with_role("cat", "crowd").username, password=PASSWORD)
    cached_sessions.CACHES = {"default": LOCAL_CACHE | {"LOCATION": "default"}, "sessions": DEAD_REDIS}

    # when they ask for their pair and read the instructions (a session write)
    page = client.get("/judge/next/", follow=True)
    confirmed = client.post("/judge/instructions/")
    pair = client.get("/judge/next/")

    # then every page answers, still logged in, from the database
    assert page.status_code == 200 and confirmed.status_code == 302
    assert pair.status_code == 200 and 'id="pair-form"' in pair.content.decode()


def _closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def fresh_cache_health():
    """Each test sees the sessions' cache as never having failed (the health is per process)."""
    from config import sessions

    sessions._health.clear()
    yield
    sessions._health.clear()


@pytest.mark.django_db
def test_with_redis_unreachable_from_the_start_login_pages_and_logout_work(
    settings, client, caplog, fresh_cache_health
):
    from django.contrib.sessions.models import Session

    # given the sessions' cache pointed at a closed port before anyone logged in (Redis down)
    settings.CACHES = {
        "default": LOCAL_CACHE | {"LOCATION": "default"},
        "sessions": DEAD_REDIS | {"LOCATION": f"redis://127.0.0.1:{_closed_port()}/0"},
    }
    settings.SESSION_ENGINE = "config.sessions"
    settings.SESSION_CACHE_ALIAS = "sessions"
    crowd_campaign()
    user_with_role("cat", "crowd")

    # when a judge logs in, reads a few pages and logs out
    with caplog.at_level(logging.WARNING, logger="config.sessions"):
        login = client.post("/accounts/login/", {"username": "cat", "password": PASSWORD})
        key = client.cookies["sessionid"].value
        pages = [client.get(url, follow=True).status_code for url in ("/judge/", "/judge/next/", "/judge/")]
        logout = client.post("/accounts/logout/")
        after = client.get("/judge/next/")

    # then the login, every page and the logout answered from the database, and the outage was logged once
    assert login.status_code == 302 and Session.objects.filter(session_key=key).exists() is False
    assert pages == [200, 200, 200]
    assert logout.status_code == 302 and after.status_code == 302 and "/accounts/login/" in after["Location"]
    outage_lines = [r for r in caplog.records if "unavailable" in r.getMessage()]
    assert len(outage_lines) == 1


@pytest.mark.django_db
def test_a_logout_while_the_cache_is_down_ends_the_session_and_its_cached_copy_once_it_is_back(
    cached_sessions, client, fresh_cache_health
):
    from django.contrib.sessions.models import Session
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    # given a judge logged in with cached sessions, their session in the cache
    cached_sessions.TOPPREF_SESSION_CACHE_RETRY_SECONDS = 0
    crowd_campaign()
    assert client.login(username=user_with_role("cat", "crowd").username, password=PASSWORD)
    key = client.session.session_key
    client.get("/judge/")
    cache_key = f"django.contrib.sessions.cached_db{key}"
    assert caches["sessions"].get(cache_key) is not None

    # when they log out while the cache fails every call, then the cache answers again
    with mock.patch.object(LocMemCache, "delete", side_effect=ConnectionError("Redis is down")):
        logout = client.post("/accounts/logout/")
        stale_meanwhile = caches["sessions"].get(cache_key) is not None
    # any request with a session tries the cache again: another judge logs in
    assert Client().login(username=user_with_role("dog", "crowd").username, password=PASSWORD)

    # then the logout ended the session in the database at once, and its cached copy once the cache was back
    assert logout.status_code == 302
    assert not Session.objects.filter(session_key=key).exists()
    assert stale_meanwhile
    assert caches["sessions"].get(cache_key) is None
    assert client.get("/judge/next/").status_code == 302


@pytest.mark.django_db
def test_no_session_copy_outlives_the_cache_lifetime(cached_sessions, client, fresh_cache_health):
    from django.core.cache import caches

    # given cached copies that live 60 s at most
    cached_sessions.TOPPREF_SESSION_CACHE_SECONDS = 60
    crowd_campaign()
    with mock.patch.object(caches["sessions"].__class__, "set", autospec=True) as cache_set:
        assert client.login(username=user_with_role("cat", "crowd").username, password=PASSWORD)

    # then the copy was written with that lifetime, not the session's two weeks
    assert {call.args[3] for call in cache_set.call_args_list} == {60}


def test_the_sessions_redis_cache_reuses_one_client_and_reads_what_it_wrote():
    import os

    from django.core.cache.backends.redis import RedisCache

    from config.sessions import ReusedClientRedisCache

    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("needs REDIS_URL")
    # given the sessions' cache on the real Redis
    cache = ReusedClientRedisCache(url, {"KEY_PREFIX": "reused-client-test"})

    # when it writes and reads twice
    cache.set("k", {"judge": 1}, 30)
    first, second = cache.get("k"), cache.get("k")

    # then the values are the stored ones, through one client, as Django's own backend reads them
    assert first == second == {"judge": 1}
    assert cache._cache.get_client("k") is cache._cache.get_client("k", write=True)
    assert RedisCache(url, {"KEY_PREFIX": "reused-client-test"}).get("k") == {"judge": 1}
    cache.delete("k")

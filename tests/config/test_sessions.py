"""Sessions read through the cache (config/sessions.py): a login is never lost with the cache, and a broken
cache never gives a judge an error."""

from __future__ import annotations

from unittest import mock

import pytest

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


@pytest.mark.django_db
def test_a_logout_clears_the_cache_first_and_is_refused_while_it_is_down(cached_sessions, client):
    from django.contrib.sessions.models import Session
    from django.core.cache import caches

    # given a judge logged in with cached sessions
    crowd_campaign()
    assert client.login(username=user_with_role("cat", "crowd").username, password=PASSWORD)
    key = client.session.session_key

    # when they log out while the cache is down, then again once it is back
    cached_sessions.CACHES = {"default": LOCAL_CACHE | {"LOCATION": "default"}, "sessions": DEAD_REDIS}
    with pytest.raises(Exception):  # noqa: B017 - whatever the cache client raises
        client.post("/accounts/logout/")
    kept = Session.objects.filter(session_key=key).exists()
    cached_sessions.CACHES = {"default": LOCAL_CACHE | {"LOCATION": "default"}, "sessions": LOCAL_CACHE}
    client.post("/accounts/logout/")

    # then the first logout changed nothing (the session was not ended in the database while it lived on in
    # the cache); the second ended it in both
    assert kept
    assert not Session.objects.filter(session_key=key).exists()
    assert caches["sessions"].get(f"django.contrib.sessions.cached_db{key}") is None
    assert client.get("/judge/next/").status_code == 302


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

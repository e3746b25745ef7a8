"""Sessions in the database, read through the Redis cache when there is one (``REDIS_URL``): a judging
request then reads its session with one Redis GET instead of a SQL query (docs/decisions.md, "Sessions read
through the cache").

The database stays the store of record and the cache is only ever a shortcut, so a Redis that is down,
restarted or flushed costs nobody a login, a page or a logout: Django's ``cached_db`` backend, except that
every cache read and write goes through ``SessionCacheHealth``. The first failure is logged once and the cache
is left alone for ``TOPPREF_SESSION_CACHE_RETRY_SECONDS`` (a Redis that hangs would otherwise cost every request
its socket timeout, and a log line); the database answers meanwhile. A session written or ended while the cache
could not be told keeps a stale copy there: its key is remembered and deleted from the cache as soon as it
answers again, and no copy outlives ``TOPPREF_SESSION_CACHE_SECONDS`` whatever happens (a Redis that comes
back with its data after an outage of another process's making; docs/decisions.md, "Sessions without Redis")."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.sessions.backends.cached_db import SessionStore as CachedDatabaseSessionStore
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.core.cache.backends.redis import RedisCache, RedisCacheClient

logger = logging.getLogger(__name__)

# Stale keys remembered per process at most: past it the oldest are forgotten and only the cached copy's
# lifetime (TOPPREF_SESSION_CACHE_SECONDS) bounds them.
STALE_KEYS_KEPT = 100_000


class SessionCacheHealth:
    """Whether the sessions' cache answers, for the whole process (Django's cache objects are per thread):
    while it is down every call returns its default at once; one call per ``TOPPREF_SESSION_CACHE_RETRY_SECONDS``
    tries it again. Keys whose cached copy may be stale are deleted once the cache answers again."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._retry_at = 0.0
        self.is_down = False
        self._stale: dict[str, None] = {}  # insertion-ordered set

    def call(
        self, cache: Any, operation: Callable[[], Any], *, default: Any = None, stale_key: str = ""
    ) -> Any:
        """``operation()``, or ``default`` when the cache is down or fails now. ``stale_key``: the cache key
        whose copy is wrong unless the operation succeeds (a write or a delete)."""
        if self.is_down and time.monotonic() < self._retry_at:
            self._remember(stale_key)
            return default
        try:
            result = operation()
        except Exception as error:  # noqa: BLE001 - any cache failure: the database answers
            self._remember(stale_key)
            self._failed(error)
            return default
        if self.is_down or self._stale:
            self._recovered(cache)
        return result

    def _remember(self, key: str) -> None:
        if not key:
            return
        with self._lock:
            self._stale[key] = None
            while len(self._stale) > STALE_KEYS_KEPT:
                del self._stale[next(iter(self._stale))]

    def _failed(self, error: Exception) -> None:
        with self._lock:
            self._retry_at = time.monotonic() + _setting("TOPPREF_SESSION_CACHE_RETRY_SECONDS", 10.0)
            if self.is_down:
                return
            self.is_down = True
        logger.warning(
            "session cache %s unavailable (%s: %s); sessions are read from and written to the database alone"
            " until it answers again",
            self.name,
            type(error).__name__,
            error,
        )

    def _recovered(self, cache: Any) -> None:
        with self._lock:
            was_down, self.is_down = self.is_down, False
            stale, self._stale = list(self._stale), {}
        if was_down:
            logger.warning("session cache %s answers again", self.name)
        if not stale:
            return
        try:
            cache.delete_many(stale)
        except Exception as error:  # noqa: BLE001
            for key in stale:
                self._remember(key)
            self._failed(error)


_health: dict[tuple[str, str], SessionCacheHealth] = {}
_health_lock = threading.Lock()


def session_cache_health() -> SessionCacheHealth:
    """The health of the configured sessions' cache (one per alias and location, for the process)."""
    alias = settings.SESSION_CACHE_ALIAS
    location = str(settings.CACHES.get(alias, {}).get("LOCATION", ""))
    with _health_lock:
        health = _health.get((alias, location))
        if health is None:
            health = _health[(alias, location)] = SessionCacheHealth(f"{alias!r} at {location or 'default'}")
        return health


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


class SessionStore(CachedDatabaseSessionStore):
    """Django's ``cached_db`` sessions whose cache is a shortcut only (module docstring)."""

    def _cached(self, operation: Callable[[], Any], *, default: Any = None, stale_key: str = "") -> Any:
        return session_cache_health().call(self._cache, operation, default=default, stale_key=stale_key)

    def _cache_seconds(self, expiry_age: int) -> int:
        cap = _setting("TOPPREF_SESSION_CACHE_SECONDS", 300.0)
        return int(min(expiry_age, cap)) if cap > 0 else expiry_age

    def load(self):
        key = self.cache_key
        data = self._cached(lambda: self._cache.get(key))
        if data is not None:
            return data
        stored = self._get_session_from_db()
        if not stored:
            return {}
        data = self.decode(stored.session_data)
        seconds = self._cache_seconds(self.get_expiry_age(expiry=stored.expire_date))
        self._cached(lambda: self._cache.set(key, data, seconds))
        return data

    def exists(self, session_key):
        if not session_key:
            return False
        key = self.cache_key_prefix + session_key
        return self._cached(lambda: key in self._cache, default=False) or DatabaseSessionStore.exists(
            self, session_key
        )

    def save(self, must_create=False):
        DatabaseSessionStore.save(self, must_create)
        key, data, seconds = self.cache_key, self._session, self._cache_seconds(self.get_expiry_age())
        self._cached(lambda: self._cache.set(key, data, seconds), stale_key=key)

    def delete(self, session_key=None):
        key = session_key if session_key is not None else self.session_key
        if key is None:
            return
        # The database first: a logout ends the session even while the cache is down (its stale copy is
        # deleted when the cache answers again, and expires within TOPPREF_SESSION_CACHE_SECONDS anyway).
        DatabaseSessionStore.delete(self, key)
        cache_key = self.cache_key_prefix + key
        self._cached(lambda: self._cache.delete(cache_key), stale_key=cache_key)


class _ReusedRedisCacheClient(RedisCacheClient):
    """Django's Redis cache client, keeping one ``redis.Redis`` per connection pool: the stock client builds a
    new one (its table of a few hundred response callbacks included) for every command, which cost a judging
    request more CPU than the session's GET itself. A ``redis.Redis`` is safe to share between threads (each
    command takes a connection from the pool)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients: dict[int, object] = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


class ReusedClientRedisCache(RedisCache):
    """``django.core.cache.backends.redis.RedisCache`` with ``_ReusedRedisCacheClient``: the sessions' cache."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = _ReusedRedisCacheClient

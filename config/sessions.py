"""Sessions in the database, read through the Redis cache when there is one (``REDIS_URL``): a judging
request then reads its session with one Redis GET instead of a SQL query (docs/decisions.md, "Sessions read
through the cache").

The database stays the store of record, so a login is never lost with the cache (Redis restarted, flushed or
down): Django's ``cached_db`` backend, except that the cache is only ever a shortcut. A cache that cannot be
read or written is logged and the session read from, or written to, the database alone; the stock backend
would give the judge a 500 when it tries to refill the cache after a miss. Deleting a session (a logout) is the
exception: it clears the cache first and fails if it cannot, so that a session ended in the database never
lives on in a Redis that comes back with it."""

from __future__ import annotations

import logging

from django.contrib.sessions.backends.cached_db import SessionStore as CachedDatabaseSessionStore
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.core.cache.backends.redis import RedisCache, RedisCacheClient

logger = logging.getLogger(__name__)


class SessionStore(CachedDatabaseSessionStore):
    def load(self):
        try:
            data = self._cache.get(self.cache_key)
        except Exception:  # noqa: BLE001 - any cache failure: the database answers
            logger.warning("session cache unavailable; reading the session from the database", exc_info=True)
            data = None
        if data is not None:
            return data
        stored = self._get_session_from_db()
        if not stored:
            return {}
        data = self.decode(stored.session_data)
        try:
            self._cache.set(self.cache_key, data, self.get_expiry_age(expiry=stored.expire_date))
        except Exception:  # noqa: BLE001
            logger.warning("session cache unavailable; the session stays in the database", exc_info=True)
        return data

    def delete(self, session_key=None):
        key = session_key if session_key is not None else self.session_key
        if key is None:
            return
        self._cache.delete(self.cache_key_prefix + key)  # raises while Redis is down: the logout is refused
        DatabaseSessionStore.delete(self, key)


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

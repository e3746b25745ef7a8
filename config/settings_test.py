"""Test settings: the same as ``config.settings`` (so PostgreSQL when DATABASE_URL is set, SQLite otherwise),
with fast password hashing, in-process Celery and a private media folder."""

import tempfile
from pathlib import Path

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests call services directly; a task enqueued on commit runs in-process. The one test that needs a real
# worker (tests/judging/test_celery_worker.py) starts its own process against REDIS_URL.
CELERY_TASK_ALWAYS_EAGER = True
CELERY_BROKER_URL = "memory://localhost/"
MEDIA_ROOT = Path(tempfile.mkdtemp(prefix="toppref-test-media-"))
STORAGES["staticfiles"] = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}  # noqa: F405

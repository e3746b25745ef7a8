"""Test settings: the same as ``config.settings`` (so PostgreSQL when DATABASE_URL is set, SQLite otherwise),
with fast password hashing, in-process Celery and a private media folder."""

import os
import tempfile
from pathlib import Path

# The test environment whatever the shell says (a DJANGO_ENV=production left in it must not make the suite
# need production secrets); the shell's value is put back for the subprocesses that tests start, and the
# production settings are tested in such subprocesses (tests/config/test_deploy.py).
_shell_django_env = os.environ.get("DJANGO_ENV")
os.environ["DJANGO_ENV"] = "test"
try:
    from config.settings import *  # noqa: F403
finally:
    if _shell_django_env is None:
        del os.environ["DJANGO_ENV"]
    else:
        os.environ["DJANGO_ENV"] = _shell_django_env

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests call services directly; a task enqueued on commit runs in-process. The one test that needs a real
# worker (tests/judging/test_celery_worker.py) starts its own process against REDIS_URL.
CELERY_TASK_ALWAYS_EAGER = True
CELERY_BROKER_URL = "memory://localhost/"
# No sweep on test requests (it would add queries to every page test); tests/judging/test_sweep.py drives it.
TOPPREF_SWEEP_SECONDS = 0
MEDIA_ROOT = Path(tempfile.mkdtemp(prefix="toppref-test-media-"))
STORAGES["staticfiles"] = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}  # noqa: F405

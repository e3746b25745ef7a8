"""The documented environment yields a deployable configuration, and the compose file is valid."""

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parents[2]


def _production_env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        DJANGO_ENV="production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
        DJANGO_ALLOWED_HOSTS="toppref.example.org",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    env.update(overrides)
    return env


def test_check_deploy_is_clean_under_production_settings():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO_DIR,
        env=_production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key():
    env = _production_env()
    del env["DJANGO_SECRET_KEY"]
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_embedded_default_is_sqlite_and_eager_celery():
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_ENV"}}
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; django.setup();"
        "from django.conf import settings as s;"
        "print(s.DATABASES['default']['ENGINE'], s.CELERY_TASK_ALWAYS_EAGER)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.split() == ["django.db.backends.sqlite3", "True"], result.stderr


def test_database_and_redis_urls_select_postgresql_and_a_real_broker():
    env = dict(
        os.environ,
        DATABASE_URL="postgres://u:p@db.example:5432/toppref",
        REDIS_URL="redis://cache.example:6379/0",
    )
    env.pop("DJANGO_ENV", None)
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; django.setup();"
        "from django.conf import settings as s; from config.celery import app;"
        "print(s.DATABASES['default']['ENGINE'], s.DATABASES['default']['HOST'], app.conf.broker_url, app.conf.task_always_eager)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.split() == [
        "django.db.backends.postgresql",
        "db.example",
        "redis://cache.example:6379/0",
        "False",
    ], result.stderr


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose is installed by .ci/run")
def test_docker_compose_file_is_valid():
    result = subprocess.run(
        ["docker-compose", "-f", "docker-compose.yml", "config", "-q"],
        cwd=REPO_DIR,
        env=dict(os.environ, DJANGO_SECRET_KEY="x"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def _manage_check(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("value", ["prod", "Production", "PRODUCTION", "dev", "staging", " production", ""])
def test_an_unknown_django_env_stops_the_start_naming_the_value_and_the_allowed_ones(value):
    result = _manage_check(_production_env(DJANGO_ENV=value))

    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    assert "ImproperlyConfigured" in last_line and f"DJANGO_ENV={value!r}" in last_line
    assert "development, production, test" in last_line


@pytest.mark.parametrize(
    "key", ["", "   ", "django-insecure-toppref-development-key-never-use-in-production"]
)
def test_production_never_runs_on_an_empty_or_the_built_in_key(key):
    result = _manage_check(_production_env(DJANGO_SECRET_KEY=key))

    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(("value", "debug"), [("development", "True"), ("test", "False"), (None, "True")])
def test_the_known_environments_start(value, debug):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    if value is not None:
        env["DJANGO_ENV"] = value
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; django.setup();"
        "from django.conf import settings as s; print(s.DJANGO_ENV, s.DEBUG)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=60
    )

    assert result.stdout.split() == [value or "development", debug], result.stderr


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TOPPREF_SWEEP_SECONDS", "abc"),
        ("TOPPREF_SWEEP_SECONDS", "nan"),
        ("TOPPREF_SWEEP_SECONDS", "-1"),
        ("DJANGO_SECURE_HSTS_SECONDS", "1.5"),
        ("TOPPREF_MAX_UPLOAD_MB", "lots"),
    ],
)
def test_a_numeric_setting_that_is_not_a_number_stops_the_start_naming_the_variable(name, value):
    result = _manage_check(_production_env(**{name: value}))

    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    assert "ImproperlyConfigured" in last_line and f"{name}={value!r}" in last_line


def test_a_trusted_proxy_that_is_not_an_address_stops_the_start_naming_it():
    result = _manage_check(_production_env(TOPPREF_TRUSTED_PROXIES="10.0.0.1, proxy.example"))

    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    assert "ImproperlyConfigured" in last_line and "TOPPREF_TRUSTED_PROXIES: 'proxy.example'" in last_line


def test_the_image_copies_every_package_the_project_installs():
    import re
    import tomllib

    repo = Path(__file__).resolve().parents[2]
    patterns = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"][
        "include"
    ]
    packages = {pattern.rstrip("*") for pattern in patterns}
    copied = set(re.findall(r"^COPY (\w+) \./\1$", (repo / "Dockerfile").read_text(), flags=re.M))
    assert packages <= copied, f"Dockerfile does not copy {sorted(packages - copied)}"

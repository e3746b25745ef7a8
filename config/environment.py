"""Every environment variable toppref reads, in one table: name, default, meaning.

``config/settings.py`` reads its values from here (``read``; the variables marked ``is_setting`` become Django
settings of the same name by themselves, so a new one is one row of ``VARIABLES``), and the documentation's
reference page is generated from the same rows (docs/hooks.py), so neither can miss a variable the other has.
Variables read outside Django (credentials read at publish time, gunicorn's and docker compose's own) are
listed too, with ``read_by`` saying where.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

import environ
from django.core.exceptions import ImproperlyConfigured

Kind = Literal[
    "text",
    "choice",
    "count",
    "count_or_off",
    "number",
    "integer",
    "float",
    "decimal",
    "flag",
    "list",
    "words",
    "networks",
]

_env = environ.Env()


@dataclass(frozen=True)
class Variable:
    """One environment variable.

    ``kind`` is how its text is read: ``count`` and ``number`` are whole or decimal numbers from 0 up (anything
    else stops the start naming the variable), ``integer`` and ``float`` any number, ``list`` comma-separated,
    ``count_or_off`` a count or ``off``, ``words`` space-separated, ``networks`` comma-separated addresses or CIDRs. ``default`` is the value when
    it is unset (a callable when it depends on other variables, with ``default_text`` saying how).
    """

    name: str
    group: str
    kind: Kind
    default: Any
    description: str
    is_setting: bool = True
    default_text: str | None = None
    choices: tuple[str, ...] = ()
    read_by: str = ""

    def shown_default(self) -> str:
        """The default as the documentation shows it."""
        if self.default_text is not None:
            return self.default_text
        if self.default in ("", [], None):
            return "(empty)"
        if isinstance(self.default, list):
            return ", ".join(self.default)
        return str(self.default)


DEPLOYMENT = "Deployment"
DATABASE = "Database"
TASKS = "Celery, Redis and the sweep"
UPLOADS = "Uploads and files"
LOGINS = "Logins and judging pages"
CROWD = "Crowd providers"
OUTSIDE = "Read outside Django's settings"

# One row per variable, one line each: Variable(name, group, kind, default, meaning, ...). `is_setting` (the
# default): a Django setting of the same name, set from here by config/settings.py; the others are read by
# config/settings.py into settings of other names, or by the code named in `read_by`.
# fmt: off
VARIABLES: tuple[Variable, ...] = (
    Variable("DJANGO_ENV", DEPLOYMENT, "choice", "development", "`development`, `production` or `test`; any other value stops the start. `production` turns on the secure settings (`manage.py check --deploy` is clean).", is_setting=False, choices=("development", "production", "test")),
    Variable("DJANGO_SECRET_KEY", DEPLOYMENT, "text", "", "Django's secret key; required in production (there is no built-in key there).", is_setting=False, default_text="a development key outside production"),
    Variable("DJANGO_DEBUG", DEPLOYMENT, "flag", False, "Django's DEBUG.", is_setting=False, default_text="true in development, false otherwise"),
    Variable("DJANGO_ALLOWED_HOSTS", DEPLOYMENT, "list", [], "Comma-separated host names the site answers to; required in production.", is_setting=False, default_text="127.0.0.1, localhost, [::1], testserver outside production"),
    Variable("DJANGO_CSRF_TRUSTED_ORIGINS", DEPLOYMENT, "list", [], "Comma-separated origins trusted for forms posted from another origin (Django's CSRF_TRUSTED_ORIGINS).", is_setting=False),
    Variable("DJANGO_SECURE_SSL_REDIRECT", DEPLOYMENT, "flag", True, "Production: redirect http to https (set false when the proxy in front does it).", is_setting=False),
    Variable("DJANGO_SECURE_HSTS_SECONDS", DEPLOYMENT, "count", 31536000, "Production: the HSTS max-age.", is_setting=False),
    Variable("DJANGO_LOG_LEVEL", DEPLOYMENT, "text", "INFO", "The root logger's level.", is_setting=False),
    Variable("TOPPREF_PUBLIC_URL", DEPLOYMENT, "text", "http://127.0.0.1:8000", "Where workers reach this site (`/hits/<uuid>/`, `/hits/campaign/<uuid>/`); https outside DEBUG."),
    Variable("TOPPREF_TRUSTED_PROXIES", DEPLOYMENT, "networks", [], "Comma-separated addresses or CIDRs of your reverse proxies (e.g. `10.0.0.0/8`): the client's address is then the rightmost hop of `X-Forwarded-For` that is not a trusted proxy (see the deployment guide)."),
    Variable("DATABASE_URL", DATABASE, "text", "", "e.g. `postgres://user:password@host:5432/toppref` (PostgreSQL through psycopg 3).", is_setting=False, default_text="SQLite file db.sqlite3"),
    Variable("DATABASE_CONN_MAX_AGE", DATABASE, "count", 60, "PostgreSQL: seconds a connection is kept open.", is_setting=False),
    Variable("DATABASE_PREPARE_THRESHOLD", DATABASE, "count_or_off", 2, "PostgreSQL: a statement is prepared on its connection after this many runs; `off` behind a transaction-pooling proxy such as pgbouncer before 1.21.", is_setting=False),
    Variable("REDIS_URL", TASKS, "text", "", "e.g. `redis://host:6379/0`: the Celery broker (tasks then run on a real worker) and the session cache. Unset, tasks run in-process.", is_setting=False),
    Variable("TOPPREF_SWEEP_SECONDS", TASKS, "number", lambda: 0.0 if os.environ.get("REDIS_URL") else 60.0, "Without celery beat, the web process runs the periodic sweep on a request at most this often; `0` turns it off.", default_text="60 (0 with REDIS_URL: beat runs it)"),
    Variable("TOPPREF_IDLE_RELEASE_SECONDS", TASKS, "number", 600.0, "A local judge's assignment without an answer for this long is released by the sweep; `0`: never."),
    Variable("TOPPREF_PLAN_MAX_SECONDS", TASKS, "number", 5.0, "The planner's time bound for one web request (`POST /api/plan/`), seconds: a plan not done by then is refused with the bound named. Keep it well below TOPPREF_WEB_TIMEOUT_SECONDS."),
    Variable("TOPPREF_SESSION_CACHE_SECONDS", TASKS, "number", 300.0, "A session's copy in Redis lives at most this long (a logout made while Redis was down cannot outlive it there); `0`: as long as the session."),
    Variable("TOPPREF_SESSION_CACHE_RETRY_SECONDS", TASKS, "number", 10.0, "After a Redis failure the sessions use the database alone for this long before trying Redis again."),
    Variable("TOPPREF_MEDIA_ROOT", UPLOADS, "text", "", "Folder of uploaded runs and exports (private files).", is_setting=False, default_text="media/ in the project folder"),
    Variable("TOPPREF_MAX_UPLOAD_MB", UPLOADS, "number", 512.0, "Largest upload (runs, collection files) in MiB: a larger body is refused with 413 naming the limit."),
    Variable("TOPPREF_LOGIN_FAILURE_LIMIT", LOGINS, "integer", 5, "Failed logins per account and address before that pair is locked out.", is_setting=False),
    Variable("TOPPREF_LOGIN_COOLOFF_MINUTES", LOGINS, "integer", 15, "How long a lockout lasts.", is_setting=False),
    Variable("TOPPREF_LOGIN_ACCOUNT_FAILURE_LIMIT", LOGINS, "integer", 50, "Failures per account, from any addresses, after which addresses that never signed in to it are refused; `0` turns it off."),
    Variable("TOPPREF_FRAME_ANCESTORS", LOGINS, "words", [], "Extra origins (space-separated) allowed to frame the HIT pages besides MTurk's worker sites."),
    Variable("TOPPREF_MTURK_SUBMIT_HOSTS", LOGINS, "words", [], "Extra origins (space-separated) a `turkSubmitTo` may name besides MTurk's production and sandbox."),
    Variable("TOPPREF_HIT_TOKEN_MAX_AGE", LOGINS, "integer", 14400, "Seconds a HIT page's signed token stays valid."),
    Variable("TOPPREF_MTURK_ENV", CROWD, "text", "sandbox", "`sandbox` or `production`: the MTurk endpoint publishing uses."),
    Variable("TOPPREF_MTURK_ENDPOINT_URL", CROWD, "text", "", "Overrides the MTurk endpoint (a stand-in)."),
    Variable("TOPPREF_MTURK_FRAME_HEIGHT", CROWD, "integer", 800, "Height in pixels of the HIT's frame."),
    Variable("TOPPREF_MTURK_MAX_ATTEMPTS", CROWD, "integer", 8, "Attempts per MTurk call (botocore's adaptive retry mode); what still fails is retried by the next sync."),
    Variable("TOPPREF_MTURK_FEE_RATE", CROWD, "decimal", Decimal('0.20'), "MTurk's commission on rewards."),
    Variable("TOPPREF_MTURK_TEN_PLUS_FEE_RATE", CROWD, "decimal", Decimal('0.20'), "MTurk's extra commission on HITs with 10 or more assignments."),
    Variable("TOPPREF_PROLIFIC_API_URL", CROWD, "text", "https://api.prolific.com/api/v1/", "Prolific's API base URL (a stand-in)."),
    Variable("TOPPREF_PROLIFIC_WORKSPACE_ID", CROWD, "text", "", "Prolific workspace of the balance, the exclusion group and the studies; unset, the account's only workspace (an account with several must set it: the error names them)."),
    Variable("TOPPREF_PROLIFIC_PROJECT_ID", CROWD, "text", "", "Prolific project new studies are created in; unset, the workspace's only project (a workspace with several must set it)."),
    Variable("TOPPREF_PROLIFIC_FEE_RATE", CROWD, "decimal", Decimal('0.428'), "Prolific's service fee for budgets (0.333 for academic accounts); a real publish uses the study cost calculator."),
    Variable("TOPPREF_CROWD_TIMEOUT_SECONDS", CROWD, "float", 30.0, "Timeout of one call to a crowd provider's API."),
    Variable("TOPPREF_LLM_BASE_URL", CROWD, "text", "", "A language model as a judge (`--provider llm` or `--llm-model`): the base URL of any server speaking the OpenAI Chat Completions protocol (OpenAI, Azure, vLLM, Ollama, llama.cpp, TGI), e.g. `http://127.0.0.1:8001/v1`; unset, the openai package's default (OpenAI)."),
    Variable("TOPPREF_LLM_API_KEY", CROWD, "text", "", "The key sent to that server; read when the model is asked, never at import."),
    Variable("TOPPREF_LLM_TIMEOUT_SECONDS", CROWD, "float", 60.0, "Timeout of one request to the model's server."),
    Variable("TOPPREF_LLM_MAX_RETRIES", CROWD, "integer", 6, "The openai client's own attempts (backoff with jitter on 429, 5xx and timeouts) before the task retries."),
    Variable("PROLIFIC_API_TOKEN", OUTSIDE, "text", "", "Prolific researcher token, read at publish and sync time.", is_setting=False, read_by="judging/crowd (Prolific)"),
    Variable("AWS_ACCESS_KEY_ID", OUTSIDE, "text", "", "MTurk requester credentials (with AWS_SECRET_ACCESS_KEY, or AWS_PROFILE), read by boto3 at publish time.", is_setting=False, read_by="boto3 (MTurk)"),
    Variable("AWS_SECRET_ACCESS_KEY", OUTSIDE, "text", "", "See AWS_ACCESS_KEY_ID.", is_setting=False, read_by="boto3 (MTurk)"),
    Variable("AWS_PROFILE", OUTSIDE, "text", "", "A profile of ~/.aws/credentials instead of the two keys.", is_setting=False, read_by="boto3 (MTurk)"),
    Variable("TOPPREF_PASSWORD", OUTSIDE, "text", "", "The password `user_add` gives the account (else it asks).", is_setting=False, read_by="manage.py user_add"),
    Variable("TOPPREF_WEB_TIMEOUT_SECONDS", OUTSIDE, "count", 30, "gunicorn's worker timeout in the image and docker compose: a request running longer is stopped (config/gunicorn.py refuses to start unless TOPPREF_PLAN_MAX_SECONDS is at most half of it).", is_setting=False, read_by="config/gunicorn.py"),
    Variable("TOPPREF_WEB_BIND", OUTSIDE, "text", "0.0.0.0:8000", "Where gunicorn listens in the image and docker compose.", is_setting=False, read_by="config/gunicorn.py"),
    Variable("WEB_CONCURRENCY", OUTSIDE, "count", 5, "gunicorn's sync workers in the image and docker compose (2 x cores + 1; a worker waits on the database, so more workers than cores).", is_setting=False, read_by="gunicorn"),
    Variable("POSTGRES_PASSWORD", OUTSIDE, "text", "toppref", "docker compose: the PostgreSQL password (in .env).", is_setting=False, read_by="docker-compose.yml"),
)
# fmt: on

BY_NAME: dict[str, Variable] = {variable.name: variable for variable in VARIABLES}


def _number(variable: Variable, raw: str) -> float:
    cast: Callable[[str], float] = float if variable.kind == "number" else int
    try:
        value: float | None = cast(raw)
    except ValueError:
        value = None
    if value is None or not 0 <= value < float("inf"):
        kind = "a number" if variable.kind == "number" else "a whole number"
        raise ImproperlyConfigured(f"{variable.name}={raw!r} is not {kind} from 0 up")
    return value


def _networks(variable: Variable, raw: str) -> list[str]:
    proxies = [part.strip() for part in raw.split(",") if part.strip()]
    for proxy in proxies:  # a typo must stop the start, not silently trust no one
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise ImproperlyConfigured(
                f"{variable.name}: {proxy!r} is not an address or a network (CIDR)"
            ) from None
    return proxies


def read(name: str, *, default: Any = None) -> Any:
    """The value of variable ``name`` (a row of VARIABLES), typed by its kind; ``default`` overrides the row's
    (for defaults that depend on other settings). A bad value stops the start naming the variable."""
    variable = BY_NAME[name]
    raw = os.environ.get(name)
    if raw is None:
        fallback = variable.default if default is None else default
        return fallback() if callable(fallback) else fallback
    if variable.kind == "choice" and raw not in variable.choices:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a known environment; use one of {', '.join(variable.choices)}"
        )
    if variable.kind == "count_or_off" and raw.lower() == "off":
        return "off"
    if variable.kind in ("count", "count_or_off", "number"):
        return _number(variable, raw)
    if variable.kind == "networks":
        return _networks(variable, raw)
    if variable.kind == "words":
        return raw.split()
    if variable.kind == "decimal":
        try:
            return Decimal(raw)
        except InvalidOperation:
            raise ImproperlyConfigured(f"{name}={raw!r} is not a decimal number") from None
    reader = {"integer": _env.int, "float": _env.float, "flag": _env.bool, "list": _env.list}.get(
        variable.kind
    )
    return raw if reader is None else reader(name)


def settings() -> dict[str, Any]:
    """The Django settings named after their variable (rows marked ``is_setting``), read now."""
    return {variable.name: read(variable.name) for variable in VARIABLES if variable.is_setting}

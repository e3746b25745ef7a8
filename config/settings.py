"""Settings, read from the environment.

Every environment variable is declared once, with its default and meaning, in ``config/environment.py``
(``VARIABLES``), which the documentation's reference page is generated from. With none set, toppref runs on a
SQLite file in the project folder and executes Celery tasks in-process, so a newcomer needs nothing installed.
The variables whose setting has their own name (``TOPPREF_*``) are set from that table below
(``environment.settings()``); the others are read here into Django's settings.
"""

from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from config import environment
from config.environment import read

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

# Exactly the table's choices: a mistyped one ("prod", "Production") must stop the start, never run with the
# development settings (DEBUG and a published key) where production was meant.
DJANGO_ENV = read("DJANGO_ENV")
# Every TOPPREF_* setting named after its variable, typed and checked (a bad value stops the start).
globals().update(environment.settings())
IS_PRODUCTION = DJANGO_ENV == "production"
DEVELOPMENT_SECRET_KEY = "django-insecure-toppref-development-key-never-use-in-production"

if IS_PRODUCTION:
    SECRET_KEY = read("DJANGO_SECRET_KEY")
    if not SECRET_KEY.strip() or SECRET_KEY == DEVELOPMENT_SECRET_KEY:
        raise ImproperlyConfigured(
            "DJANGO_ENV=production needs DJANGO_SECRET_KEY set to a secret of your own (there is no built-in"
            " key in production)"
        )
    DEBUG = read("DJANGO_DEBUG", default=False)
    ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS")  # required: no default in production
else:
    SECRET_KEY = read("DJANGO_SECRET_KEY", default=DEVELOPMENT_SECRET_KEY)
    # "test" is the development settings without DEBUG (Django's test runner turns it off anyway).
    DEBUG = read("DJANGO_DEBUG", default=DJANGO_ENV == "development")
    ALLOWED_HOSTS = read("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])

CSRF_TRUSTED_ORIGINS = read("DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "pools",
    "judging",
    "metrics",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.UploadSizeLimitMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # The periodic sweep where there is no celery beat (no REDIS_URL): see TOPPREF_SWEEP_SECONDS below.
    "judging.middleware.SweepMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# SQLite is the embedded default; IMMEDIATE transactions make concurrent writers queue instead of failing
# with "database is locked" halfway through a judgment, and WAL lets readers go on while one writes.
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "timeout": 30, "init_command": "PRAGMA journal_mode=WAL;"}
    )
else:
    DATABASES["default"]["CONN_MAX_AGE"] = read("DATABASE_CONN_MAX_AGE")
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # Server-side parameter binding lets psycopg prepare a statement once per connection after it has run
    # DATABASE_PREPARE_THRESHOLD times: the campaign and answer paths run the same few dozen statements
    # thousands of times, and planning them afresh each time cost the server about a third of its work.
    # Django turns it off by default for transaction-pooling proxies (pgbouncer before 1.21), which lose a
    # connection's prepared statements between transactions: behind one, set DATABASE_PREPARE_THRESHOLD=off.
    _prepare_threshold = read("DATABASE_PREPARE_THRESHOLD")
    if _prepare_threshold != "off":
        DATABASES["default"].setdefault("OPTIONS", {}).update(
            {"server_side_binding": True, "prepare_threshold": _prepare_threshold}
        )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Argon2id with OWASP's parameters first (config.auth.Argon2PasswordHasher): a password stored by any other
# hasher listed here (PBKDF2 before) is checked by it and rehashed with Argon2 at the user's next login.
PASSWORD_HASHERS = [
    "config.auth.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_URL = "media/"
MEDIA_ROOT = Path(read("TOPPREF_MEDIA_ROOT", default=str(BASE_DIR / "media")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if IS_PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# Uploads (runs, collection files): at most TOPPREF_MAX_UPLOAD_MB megabytes (MiB), refused with 413 when the
# request says so up front and with a 400 naming the limit when a chunked body passes it (config/uploads.py);
# files over FILE_UPLOAD_MAX_MEMORY_SIZE are streamed to a temporary file, never held in memory. Form and JSON
# bodies keep Django's 2.5 MB ceiling (DATA_UPLOAD_MAX_MEMORY_SIZE).
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
FILE_UPLOAD_HANDLERS = [
    "config.uploads.UploadSizeLimitHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# Outside production whitenoise serves straight from the app and static folders (no collectstatic needed).
WHITENOISE_USE_FINDERS = not IS_PRODUCTION
WHITENOISE_AUTOREFRESH = not IS_PRODUCTION


# Static files get the pages' Content-Security-Policy and framing refusal (whitenoise answers them before the
# middleware that adds those to pages runs).
def _static_file_headers(headers, path: str, url: str) -> None:
    from config.middleware import static_file_headers

    static_file_headers(headers, path, url)


WHITENOISE_ADD_HEADERS_FUNCTION = _static_file_headers


# The researchers' API: token (scripts) or session (the browser) authentication, never HTTP Basic; only
# researchers and staff (pools.access.IsResearcher); every list paginated; errors as JSON naming the field.
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: an anonymous request then gets 401 with "WWW-Authenticate: Token".
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # limit/offset with a ceiling on ?limit= (config/pagination.py: MAX_PAGE_SIZE).
    "DEFAULT_PAGINATION_CLASS": "config.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "toppref API",
    "DESCRIPTION": "Top-k preference judging: collections, campaigns, judgments, workers, runs, leaderboard, "
    "exports and the planner. Authenticate with a token (`Authorization: Token <key>`, from "
    "`manage.py api_token USERNAME`) or a session.",
    "VERSION": "0.1.0",
    # Swagger UI's assets are served by us (drf-spectacular-sidecar): /api/docs/ works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "CampaignStatusEnum": "judging.models.Campaign.Status",
        "ExportStatusEnum": "judging.models.Export.Status",
        "RunStatusEnum": "pools.models.Run.Status",
    },
}

# Celery: a real worker with Redis when REDIS_URL is set, otherwise tasks run in-process (eager).
REDIS_URL = read("REDIS_URL")
CELERY_BROKER_URL = REDIS_URL or "memory://localhost/"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
# A worker that dies mid-task must not lose it: acknowledge after the task ran, and requeue on a lost worker
# (its pool child killed: at once; the whole worker killed: Redis redelivers the unacknowledged message after
# the visibility timeout, 5 minutes). Every task is idempotent, so running one twice is harmless; the judging
# tasks' time limits (judging.tasks) keep them from outliving the visibility timeout (else Redis would hand
# one to a second worker while the first still runs). One message prefetched per process.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 300,
    # An unreachable broker fails a send in seconds (the request logs it and the sweep redoes the work),
    # never holds a judge's answer for long.
    "socket_connect_timeout": 2,
    "socket_timeout": 5,
}
# A send to a broker that is down: two quick retries, then give up (config.celery.enqueue logs it).
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
CELERY_TASK_SERIALIZER = "json"
# With Redis, sessions are read through it (config/sessions.py: the database stays their store, a Redis
# failure falls back to it). Their own cache alias, so that nothing else shares these keys; short socket
# timeouts, so that a Redis that hangs costs a judge a moment, never the request.
if REDIS_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "sessions": {
            # Django's Redis cache, with one client per process and thread instead of one per command.
            "BACKEND": "config.sessions.ReusedClientRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "toppref-session",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        },
    }
    SESSION_ENGINE = "config.sessions"
    SESSION_CACHE_ALIAS = "sessions"
# TOPPREF_SESSION_CACHE_SECONDS and TOPPREF_SESSION_CACHE_RETRY_SECONDS (config/environment.py): how long a
# session's copy lives in Redis, and how long the sessions leave Redis alone after it failed (config/sessions.py).
CELERY_ACCEPT_CONTENT = ["json"]
# Every Django process (web, worker, manage.py, tests) creates the Celery app here, so tasks queued by services
# use its broker; config/__init__.py no longer imports it, to keep the file-only `toppref` commands light.
from config import celery as _celery  # noqa: E402, F401

CELERY_TIMEZONE = TIME_ZONE
# A language model's questions wait on its server, not on the database: they have a queue of their own
# (a worker with -Q llm), so a slow model never holds up round closing and HIT building.
CELERY_TASK_ROUTES = {"judging.tasks.llm_judge_task": {"queue": "llm"}}
# Run by `celery beat` (docker-compose's beat service): overdue assignments and HITs expire, and a sweep redoes
# whatever a lost task left undone. Both are idempotent.
CELERY_BEAT_SCHEDULE = {
    "hit-expire-overdue": {"task": "judging.tasks.hit_expire_overdue_task", "schedule": 60.0},
    # Every minute: complete rounds left open and queued pairs left without a HIT by a lost task or a broker
    # blip, and idle local assignments (TOPPREF_IDLE_RELEASE_SECONDS); its cost does not grow with a campaign.
    "campaign-advance-running": {"task": "judging.tasks.campaign_advance_running_task", "schedule": 60.0},
    "crowd-sync-running": {"task": "judging.tasks.crowd_sync_running_task", "schedule": 180.0},
    "campaign-forecast-running": {"task": "judging.tasks.campaign_forecast_running_task", "schedule": 60.0},
    # Finished campaigns get their runs scored by the metrics app's own sweep (judging never names it).
    "campaign-scores-sweep": {"task": "metrics.tasks.campaign_scores_sweep_task", "schedule": 60.0},
}
# TOPPREF_IDLE_RELEASE_SECONDS: a local judge's assignment with no answer for this long is released by the
# sweep (its HIT goes to the next judge; the answers given are kept, uncounted). Crowd platforms keep their own
# clocks. TOPPREF_SWEEP_SECONDS: without Redis there is no beat, so the web process runs the same sweep on a
# request at most that often (judging.middleware.SweepMiddleware). Both are set from config/environment.py.

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": read("DJANGO_LOG_LEVEL")},
    # django-axes logs every login attempt at INFO; failures and lockouts are WARNING.
    # The openai client's HTTP layer logs every request to a model at INFO (its retries stay visible).
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "axes": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
    },
}

if IS_PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = read("DJANGO_SECURE_SSL_REDIRECT")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = read("DJANGO_SECURE_HSTS_SECONDS")
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    X_FRAME_OPTIONS = "DENY"


# --- Judging pages: accounts, login rate limiting, security headers, external HIT pages -------------------
# (kept in one block; see docs/decisions.md "Judging pages")
INSTALLED_APPS += ["axes"]
# django-axes comes after every middleware that answers by itself (it turns a locked-out login into the
# lockout page; only the retry of a dropped connection, which passes every response on, follows it); the CSP
# middleware sits before clickjacking so that views marked framable can drop X-Frame-Options for CSP.
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.middleware.clickjacking.XFrameOptionsMiddleware"),
    "config.middleware.ContentSecurityPolicyMiddleware",
)
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]
# Last of all (its process_view runs the view, after the CSRF check): a GET, or an answer, whose database
# connection dropped mid-request runs once more on a fresh one (config/middleware.py).
MIDDLEWARE += ["config.middleware.DroppedConnectionRetryMiddleware"]
# UserRowBackend reads the user of every request in plain SQL; Django's ModelBackend after it only serves the
# sessions logged in through it before (config/auth.py).
AUTHENTICATION_BACKENDS = [
    "config.auth.LoginRateLimitBackend",
    "config.auth.UserRowBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "judging:start"
LOGOUT_REDIRECT_URL = "login"
X_FRAME_OPTIONS = "DENY"
# Failed logins are counted per (account, address): five failures lock that pair out for 15 minutes. The
# address is the client's: REMOTE_ADDR, or behind a proxy listed in TOPPREF_TRUSTED_PROXIES (addresses or
# CIDRs, comma-separated) the rightmost untrusted hop of X-Forwarded-For (config/auth.py). A slower
# per-account limit refuses addresses that never signed in to an account once it has had
# TOPPREF_LOGIN_ACCOUNT_FAILURE_LIMIT failures within the cool-off time (0 turns it off).
AXES_FAILURE_LIMIT = read("TOPPREF_LOGIN_FAILURE_LIMIT")
AXES_COOLOFF_TIME = timedelta(minutes=read("TOPPREF_LOGIN_COOLOFF_MINUTES"))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "config.auth.client_ip_address"
# TOPPREF_TRUSTED_PROXIES (a typo stops the start) and TOPPREF_LOGIN_ACCOUNT_FAILURE_LIMIT: from the table.
AXES_LOCKOUT_CALLABLE = "judging.views.accounts.lockout"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
# The external HIT pages (TOPPREF_FRAME_ANCESTORS, TOPPREF_MTURK_SUBMIT_HOSTS, TOPPREF_HIT_TOKEN_MAX_AGE) and the
# crowd providers (TOPPREF_PUBLIC_URL, TOPPREF_MTURK_*, TOPPREF_PROLIFIC_*, TOPPREF_CROWD_TIMEOUT_SECONDS) are set
# from config/environment.py. Credentials are read from the environment at publish time only:
# AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) for MTurk, PROLIFIC_API_TOKEN for Prolific.
# A language model as a judge (judging.crowd.llm): TOPPREF_LLM_BASE_URL, TOPPREF_LLM_API_KEY,
# TOPPREF_LLM_TIMEOUT_SECONDS and TOPPREF_LLM_MAX_RETRIES, set from config/environment.py.

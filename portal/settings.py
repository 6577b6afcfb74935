"""The one settings module. Everything that differs between a laptop, CI and production comes from the
environment (or a ``.env`` file beside manage.py, read for values the environment does not set); see
``.env.example`` for every variable.

Production differs from development only by environment values: ``DEBUG`` defaults to false, and with
``DEBUG`` false the project refuses to start without a real ``SECRET_KEY``.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from evaluator.contract import signing
from evaluator.contract.jobs import CHECKS_QUEUE, WEB_QUEUE
from evaluator.contract.profiles import DEFAULT_PROFILE, PROFILES
from portal.env import env_bool, env_int, env_list, read_env_file

BASE_DIR = Path(__file__).resolve().parent.parent
INSECURE_DEV_SECRET_KEY = "django-insecure-parallel-kernel-arena-dev-only"  # never valid with DEBUG off


_env_file = os.environ.get("ENV_FILE", str(BASE_DIR / ".env"))
if _env_file:
    read_env_file(Path(_env_file))


# --- core -----------------------------------------------------------------------------------------------

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "").strip()
if not SECRET_KEY or SECRET_KEY == INSECURE_DEV_SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set (or is the insecure development default) and DEBUG is off. "
            "Set SECRET_KEY in the environment to a long random value, for example the output of "
            '`python -c "import secrets; print(secrets.token_urlsafe(50))"`; '
            "or set DEBUG=1 for local development."
        )
    SECRET_KEY = INSECURE_DEV_SECRET_KEY

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files served from here (/api/swagger/), no CDN
    "django_filters",
    "django_rq",
    "axes",
    "portal",
    "portal.accounts",
    "portal.contributions",
    "leaderboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves /static/ from STATIC_ROOT (gathered by `collectstatic`) with far-future caching of hashed names.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "portal.middleware.SecurityHeadersMiddleware",
    "portal.middleware.RequestSizeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "portal.middleware.PrivatePagesMiddleware",
    # A local portal's (DEBUG) missing page is the site's 404 page, not Django's technical one.
    "portal.middleware.SiteNotFoundMiddleware",
    # Last, as django-axes asks: it turns a locked-out log-in (the site's or the admin's) into the 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

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
                "portal.contributions.context_processors.moderation",  # the header's review and admin links
                "portal.accounts.context_processors.email_confirmation",  # the banner until the address is confirmed
            ],
            # The site's template tags live with the views (leaderboard/web/), not in an app's templatetags/.
            "libraries": {
                "arena": "leaderboard.web.templatetags.arena",
                "catalogue": "leaderboard.web.templatetags.catalogue",
                "kept": "leaderboard.web.templatetags.kept",
                "pager": "leaderboard.web.templatetags.pager",
            },
        },
    },
]

# --- database -------------------------------------------------------------------------------------------

_default_sqlite = BASE_DIR / "var" / "db.sqlite3"
if not os.environ.get("DATABASE_URL"):
    _default_sqlite.parent.mkdir(parents=True, exist_ok=True)
DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{_default_sqlite}",
        conn_max_age=env_int("CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite is for one machine's own use (README): WAL lets readers read while one writer writes; every transaction
    # takes the write lock when it begins (IMMEDIATE), so a quota counted inside one holds, and a writer waits up to
    # SQLITE_BUSY_TIMEOUT_S for the lock instead of answering "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": env_int("SQLITE_BUSY_TIMEOUT_S", 20),
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    # Tests get a file too, not memory: threads and processes of one test then share it as a deployment's do.
    DATABASES["default"].setdefault("TEST", {}).setdefault(
        "NAME", str(_default_sqlite.parent / f"test-{os.getpid()}.sqlite3")
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- queues ---------------------------------------------------------------------------------------------

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
if not DEBUG and not env_bool("ARENA_REDIS_WITHOUT_PASSWORD", False):  # the opt-out: the test suite's own Redis
    from urllib.parse import urlsplit

    if not urlsplit(REDIS_URL).password:
        raise ImproperlyConfigured(
            "REDIS_URL has no password, and DEBUG is off: in production Redis must require one (every worker host can "
            "reach it). Set REDIS_URL=redis://USER:PASSWORD@HOST:6379/0 with the portal's Redis ACL user "
            '(docs/operations.md, "Redis users").'
        )
# Jobs are JSON on every queue (never pickle), and a worker runs only the allow-listed jobs of its queues
# (evaluator/host/worker.py); `manage.py rqworker` uses this worker class, `rq worker` is given it on its command line.
RQ_SERIALIZER = "rq.serializers.JSONSerializer"
RQ = {"WORKER_CLASS": "evaluator.host.worker.ArenaWorker"}
# The keys of the workers whose signed replies are recorded (evaluator/contract/signing.py): ARENA_WORKER_KEYS is
# "id:role=key,..." with one id per kind of host and its role, evaluations or checks (e.g.
# gpu:evaluations=...,checks:checks=...; a host serving both: local:evaluations+checks=...): a key signs only the
# replies of its roles. Without a role a key has every role, which only DEBUG allows. ARENA_WORKER_KEY alone (with
# ARENA_WORKER_KEY_ID) is such a key, for development.
try:
    ARENA_WORKER_KEYS = signing.parse_keys(os.environ.get("ARENA_WORKER_KEYS", ""))
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
if os.environ.get("ARENA_WORKER_KEY", "").strip():
    ARENA_WORKER_KEYS.setdefault(
        os.environ.get("ARENA_WORKER_KEY_ID", "").strip() or signing.DEFAULT_KEY_ID,
        signing.WorkerKey(os.environ["ARENA_WORKER_KEY"].strip(), None),
    )
_worker_keys_hint = (
    "Set ARENA_WORKER_KEYS=gpu:evaluations=<key>,checks:checks=<key> here and ARENA_WORKER_KEY=<key> "
    '(ARENA_WORKER_KEY_ID=gpu or checks) on each worker host; make one with: python -c "import '
    'secrets; print(secrets.token_urlsafe(32))"'
)
if not DEBUG and not ARENA_WORKER_KEYS:
    raise ImproperlyConfigured(
        f"ARENA_WORKER_KEYS is empty, and DEBUG is off: without the workers' keys no result can be recorded. "
        f"{_worker_keys_hint}"
    )
_roleless = [key_id for key_id, key in ARENA_WORKER_KEYS.items() if key.roles is None]
if not DEBUG and _roleless:
    raise ImproperlyConfigured(
        f"ARENA_WORKER_KEYS names a key without a role ({', '.join(_roleless)}), and DEBUG is off: each key says what "
        f"it may sign, id:evaluations=<key> or id:checks=<key>. {_worker_keys_hint}"
    )
# Queue names come from the contract (evaluator/contract/jobs.py), the one place they are defined.
# "web" stores results; every hardware profile has a queue of its own, served by workers on hosts of that kind.
RQ_QUEUES = {WEB_QUEUE: {"URL": REDIS_URL, "DEFAULT_TIMEOUT": 300, "SERIALIZER": RQ_SERIALIZER}}
for _profile in PROFILES.values():
    RQ_QUEUES[_profile.queue] = {"URL": REDIS_URL, "DEFAULT_TIMEOUT": 900, "SERIALIZER": RQ_SERIALIZER}
# Problem proposals are checked on CPU here (evaluator/checks/problem_check.py): it runs contributors' unreviewed
# reference code, so in production serve it from a worker without database credentials, like a GPU host.
RQ_QUEUES[CHECKS_QUEUE] = {"URL": REDIS_URL, "DEFAULT_TIMEOUT": 300, "SERIALIZER": RQ_SERIALIZER}

# Rendered ranking pages (leaderboard/web/cache.py): in Redis, keyed by URL and the rankings generation that the write
# path bumps, so a page is never older than the last recorded result. The TTL only frees memory of old generations.
ARENA_PAGE_CACHE = env_bool("ARENA_PAGE_CACHE", True)
ARENA_PAGE_CACHE_TTL_S = env_int("ARENA_PAGE_CACHE_TTL_S", 600)
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    # Rate-limit counts (leaderboard/web/throttles.py), shared by every process and host through Redis.
    "throttle": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": os.environ.get("CACHE_URL", "").strip() or REDIS_URL,
        "KEY_PREFIX": (os.environ.get("ARENA_CACHE_PREFIX", "").strip() or "arena") + "-throttle",
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
    },
    "pages": {
        # Django's RedisCache keeping one client per process instead of building one per command
        "BACKEND": "leaderboard.web.cache.KeptClientRedisCache",
        "LOCATION": os.environ.get("CACHE_URL", "").strip() or REDIS_URL,
        "KEY_PREFIX": os.environ.get("ARENA_CACHE_PREFIX", "").strip() or "arena",
        "TIMEOUT": ARENA_PAGE_CACHE_TTL_S,
        # bytes only, never pickle; a Redis that hangs costs a page at most about a second, then it renders uncached
        "OPTIONS": {
            "serializer": "leaderboard.web.cache.PageSerializer",
            "socket_connect_timeout": 0.5,
            "socket_timeout": 0.5,
        },
    },
}
# The cache that counts rate limits: the API's and the forms' throttles and test mode's per-token rate and daily
# budget, all DRF throttles (leaderboard/web/throttles.py). It must be one every web process and host
# shares, i.e. Redis ("throttle" above): "default" is each process's own memory, where every gunicorn worker would
# count on its own. ARENA_THROTTLE_CACHE names another alias of CACHES.
ARENA_THROTTLE_CACHE = os.environ.get("ARENA_THROTTLE_CACHE", "").strip() or "throttle"
if ARENA_THROTTLE_CACHE not in CACHES:
    raise ImproperlyConfigured(
        f"ARENA_THROTTLE_CACHE={ARENA_THROTTLE_CACHE!r} is not a cache of settings' CACHES ({', '.join(CACHES)})."
    )
if not DEBUG and "redis" not in CACHES[ARENA_THROTTLE_CACHE]["BACKEND"].lower():
    raise ImproperlyConfigured(
        f"ARENA_THROTTLE_CACHE={ARENA_THROTTLE_CACHE!r} is not a Redis cache, and DEBUG is off: "
        f'rate limits must be counted where every web process counts (the "throttle" cache).'
    )

# --- accounts -------------------------------------------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Log-in lockouts (django-axes, for the site's and the admin's log-in alike): after AXES_FAILURE_LIMIT wrong
# passwords for one username from one address, that pair is locked out for AXES_COOLOFF_TIME (a 429 page with
# Retry-After); a right password resets the count. The log-in and sign-up forms are also throttled per address
# (REST_FRAMEWORK's "login" and "signup" rates).
# The last grants the permission "leaderboard.upload" to users whose e-mail address is confirmed (authenticates nobody).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    "portal.accounts.backends.UploadPermissionBackend",
]
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "portal.accounts.views.locked_out"
AXES_CLIENT_IP_CALLABLE = "leaderboard.web.throttles.axes_client_ip"
AXES_VERBOSE = False
AXES_DISABLE_ACCESS_LOG = True  # failed attempts are kept (they make the lockout); successful log-ins are not
# Proxies in front of gunicorn that append the client's address to X-Forwarded-For (0: trust REMOTE_ADDR only).
ARENA_TRUSTED_PROXIES = env_int("ARENA_TRUSTED_PROXIES", 0)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"
PASSWORD_RESET_TIMEOUT = env_int("PASSWORD_RESET_TIMEOUT", 3 * 24 * 3600)  # also the e-mail confirmation link's life

# E-mail (confirmation at sign-up, password reset, verdict notifications): printed to the console in development,
# sent over SMTP from these settings in production (EMAIL_BACKEND may name any Django back-end).
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "").strip() or (
    "django.core.mail.backends.console.EmailBackend"
    if DEBUG or not os.environ.get("EMAIL_HOST", "").strip()
    else "django.core.mail.backends.smtp.EmailBackend"
)
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 587)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Parallel Kernel Arena <noreply@localhost>")
# The site's address in e-mails sent from a worker (verdict notifications have no request to take it from).
ARENA_SITE_URL = os.environ.get("ARENA_SITE_URL", "http://127.0.0.1:8000").rstrip("/")

# --- API ------------------------------------------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "leaderboard.web.api_errors.exception_handler",
    # Counted in the "throttle" cache (Redis) by leaderboard/web/throttles.py; a request over a rate gets 429 with
    # Retry-After. "anon" is per client address: well above what the load test's 200 readers send from one address.
    "DEFAULT_THROTTLE_CLASSES": [
        "leaderboard.web.throttles.ApiAnonThrottle",
        "leaderboard.web.throttles.ApiUserThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("ARENA_RATE_API_ANON", "").strip() or "6000/min",
        "user": os.environ.get("ARENA_RATE_API_USER", "").strip() or "1200/min",
        "uploads": os.environ.get("ARENA_RATE_UPLOADS", "").strip() or "60/hour",  # submissions, runs, proposals
        "signup": os.environ.get("ARENA_RATE_SIGNUP", "").strip() or "10/hour",
        "login": os.environ.get("ARENA_RATE_LOGIN", "").strip() or "30/min",
    },
    "NUM_PROXIES": env_int("ARENA_TRUSTED_PROXIES", 0),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Parallel Kernel Arena API",
    "DESCRIPTION": (
        "Submit multi-GPU kernel solutions, follow their evaluation and read problem rankings. "
        "Authenticate writes with `Authorization: Token <key>` (create a token on /accounts/token/)."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Descriptions in Markdown, never reStructuredText (portal/schema.py); the enum hook is drf-spectacular's default.
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "portal.schema.markdown_descriptions"],
    # Submissions and tests both have a "state" with different choices: each choice set has a name of its own.
    "ENUM_NAME_OVERRIDES": {
        "SubmissionStateEnum": "leaderboard.models.Submission.State",
        "TestRunStateEnum": "leaderboard.models.TestRun.State",
    },
    # Swagger UI from drf-spectacular-sidecar's static files, never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- static files ---------------------------------------------------------------------------------------

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
# WhiteNoise serves STATIC_ROOT in production (DEBUG off), compressed: run `collectstatic` at deploy (the
# Dockerfile does). In development Django's staticfiles app serves static/ directly.
# SERVE_STATIC=1 keeps the older path too (Django's static view), for deployments that relied on it.
SERVE_STATIC = env_bool("SERVE_STATIC", False)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # STATIC_MANIFEST=1 (after `collectstatic`): hashed file names, cached by browsers for a year.
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if env_bool("STATIC_MANIFEST", False)
        else "whitenoise.storage.CompressedStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG  # with DEBUG on, serve from static/ without collectstatic
if not STATIC_ROOT.is_dir():  # before the first `collectstatic` (development, tests) there is nothing to serve yet
    import warnings

    warnings.filterwarnings("ignore", message="No directory at", module="whitenoise.base")

# --- security -------------------------------------------------------------------------------------------

# Production (DEBUG off) is HTTPS-only unless HTTPS=0 says otherwise: http is redirected to https, cookies are
# secure, HSTS is on. Behind a TLS-terminating proxy, the proxy must set X-Forwarded-Proto. `python manage.py check
# --deploy` is clean with these defaults (tests/portal/test_security.py runs it).
HTTPS = env_bool("HTTPS", not DEBUG)
if HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Sent on every response by portal.middleware.SecurityHeadersMiddleware. Scripts only from this site: no inline
# scripts, no eval (the vendored plotly draws the ranking charts without it); inline style attributes are allowed
# because plotly sets them while drawing.
CONTENT_SECURITY_POLICY = os.environ.get("CONTENT_SECURITY_POLICY", "").strip() or "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)

# Request size. Solution files are capped by ARENA_MAX_SOURCE_BYTES (a clear 400 from the service); a request body
# over ARENA_MAX_REQUEST_BYTES is refused before it is read (413, portal.middleware.RequestSizeLimitMiddleware), and
# form fields other than files over DATA_UPLOAD_MAX_MEMORY_SIZE get the same 413. Model-run archives go up to
# 20 MiB (leaderboard/model_runs/container.py), so the request cap stays above that. Put the same cap in the proxy in
# front.
ARENA_MAX_REQUEST_BYTES = env_int("ARENA_MAX_REQUEST_BYTES", 24 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 2 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = env_int("FILE_UPLOAD_MAX_MEMORY_SIZE", 2 * 1024 * 1024)  # larger files go to a temp file

# --- internationalisation -------------------------------------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- the arena ------------------------------------------------------------------------------------------

ARENA_MAX_SOURCE_BYTES = env_int("ARENA_MAX_SOURCE_BYTES", 256 * 1024)
ARENA_MAX_PENDING_PER_USER = env_int("ARENA_MAX_PENDING_PER_USER", 20)  # queued + running at once
# Evaluations (single submissions and model-run attempts alike) a user may start in an hour; staff are exempt.
ARENA_EVALUATIONS_PER_HOUR = env_int("ARENA_EVALUATIONS_PER_HOUR", 300)
# Test mode (POST /api/tests/, never ranked): tests one API token may create a minute, and in a day (DRF's sliding
# windows); counted in ARENA_THROTTLE_CACHE (leaderboard/web/throttles.py, TestModeThrottle).
ARENA_TEST_RATE_PER_MINUTE = env_int("ARENA_TEST_RATE_PER_MINUTE", 10)
ARENA_TEST_DAILY_BUDGET = env_int("ARENA_TEST_DAILY_BUDGET", 200)
# Fair queue: jobs of one user on one profile's RQ queue at a time; the rest wait in the database (still "queued")
# and the next is released when one ends. 1 means another user's submission waits for at most one evaluation.
ARENA_QUEUED_JOBS_PER_USER = env_int("ARENA_QUEUED_JOBS_PER_USER", 1)
ARENA_MAX_ARCHIVE_BYTES = env_int("ARENA_MAX_ARCHIVE_BYTES", 20 * 1024 * 1024)  # one model-run archive
ARENA_MAX_PENDING_RUNS_PER_USER = env_int("ARENA_MAX_PENDING_RUNS_PER_USER", 3)  # model runs being evaluated
ARENA_MAX_OPEN_PROPOSALS_PER_USER = env_int("ARENA_MAX_OPEN_PROPOSALS_PER_USER", 5)  # proposals awaiting review
# The RQ job's limit over the sum of the evaluator's phase limits (tests lower it to make a job outlive its limit).
ARENA_JOB_TIMEOUT_FACTOR = float(os.environ.get("ARENA_JOB_TIMEOUT_FACTOR", "").strip() or 1.2)
ARENA_REAP_GRACE_S = env_int("ARENA_REAP_GRACE_S", 120)  # slack past a limit before the reaper acts
# Attempts a submission gets when the platform fails (job lost, worker died, job past its limit, infra_error
# verdict): each one is a new RQ job; after the last, the submission ends as infra_error. Wrong answers are never
# retried. See docs/operations.md.
ARENA_MAX_ENQUEUES = env_int("ARENA_MAX_ENQUEUES", 3)
ARENA_DEFAULT_PROFILE = os.environ.get("ARENA_DEFAULT_PROFILE", DEFAULT_PROFILE)
# Re-measurement of the leaders (leaderboard/submissions/verification.py, docs/model-runs.md "Verified"): after a
# passed result on a GPU profile, the top ARENA_VERIFY_TOP_ENTRIES rows of that problem's ranking and every ranked run
# in the top ARENA_VERIFY_TOP_RUNS are evaluated again; ARENA_VERIFY=0 turns it off.
ARENA_VERIFY = env_bool("ARENA_VERIFY", True)
ARENA_VERIFY_TOP_ENTRIES = env_int("ARENA_VERIFY_TOP_ENTRIES", 3)
ARENA_VERIFY_TOP_RUNS = env_int("ARENA_VERIFY_TOP_RUNS", 10)
ARENA_JOB_RESULT_TTL_S = 24 * 3600  # the worker's return value stays this long, so the reaper can recover it

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # A handled 403 or 404 logs its line without the traceback of the exception that made it (portal/log_filters.py).
    "filters": {"handled_refusals": {"()": "portal.log_filters.HandledRefusalTracebacks"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["handled_refusals"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "django.db.backends": {"level": "INFO"},
    },
}

"""NotifyHub settings, read from the environment (README.md, "Configuration").

Every variable has a default that runs locally. Without ``DATABASE_URL`` and ``REDIS_URL``
the service runs embedded: SQLite, an in-process cache and rate limiter, and a file broker.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import environ
from celery.schedules import crontab
from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from whitenoise.compress import Compressor

from core.envconfig import (
    env_bool,
    env_fernet_keys,
    env_int,
    env_int_list,
    env_list,
    env_optional,
    env_provider_keys,
    env_required_outside_embedded_mode,
    env_secret,
    env_str,
    private_dir,
    private_file,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("NOTIFYHUB_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
REDIS_URL = env_optional("REDIS_URL")
# Without Redis the service runs embedded, for trying it on one machine: SQLite, an in-process cache and rate
# limiter, a file broker, and secrets generated into var/. With Redis it is a deployment, and nothing is guessed.
EMBEDDED_MODE = REDIS_URL is None
_generated_secrets_dir = VAR_DIR if EMBEDDED_MODE else None
SECRET_KEY = env_secret("SECRET_KEY", state_dir=_generated_secrets_dir)
# Newest first: secrets are encrypted with the first and read with any (core/crypto.py, which reads only this list).
# FIELD_ENCRYPTION_KEY alone is a list of one.
FIELD_ENCRYPTION_KEYS = env_fernet_keys(
    "FIELD_ENCRYPTION_KEYS", "FIELD_ENCRYPTION_KEY", state_dir=_generated_secrets_dir
)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
# How many proxies stand in front and append to X-Forwarded-For; 0 reads the socket's address only
# (core/client_address.py). Sign-in limits count by the address this gives.
TRUSTED_PROXY_HOPS = env_int("TRUSTED_PROXY_HOPS", 0)
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "core.admin.NotifyHubAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "accounts",
    "notifications",
    "domains",
    "webhooks_inbound",
    "suppressions",
    "event_endpoints",
    "email_templates",
    "customer_webhooks",
    "dashboard",
    "staff",
    "devtools",
]

MIDDLEWARE = [
    "core.logs.RequestLogMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # After whitenoise, which answers static files itself: the policy is for pages (CONTENT_SECURITY_POLICY).
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Who makes the request's changes, for the audit log (core/actor.py).
    "core.actor.ActorMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
# Requests to /api/v1/ that carry an API key need none of the browser's middleware: they run
# with this list instead (core/handlers.py). Security headers, the Host check and the audit log's actor stay.
API_KEY_MIDDLEWARE = [
    "core.logs.RequestLogMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "core.actor.ActorMiddleware",
]

ROOT_URLCONF = "notifyhub.urls"
WSGI_APPLICATION = "notifyhub.wsgi.application"
APPEND_SLASH = False

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

# --- Database -------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
# What DATABASE_URL points at: PostgreSQL itself ("none"), or PgBouncer in transaction pooling in front of it
# ("pgbouncer"), which hands each transaction the server connection that is free (docs/operations.md, "Beyond one
# machine").
DATABASE_POOLERS = ("none", "pgbouncer")
DATABASE_POOLER = env_optional("DATABASE_POOLER") or "none"
if DATABASE_POOLER not in DATABASE_POOLERS:
    raise ImproperlyConfigured(
        f"DATABASE_POOLER must be 'none' (DATABASE_URL is PostgreSQL itself) or 'pgbouncer' (PgBouncer in "
        f"transaction pooling), got {DATABASE_POOLER!r}"
    )
_database = environ.Env.db_url_config(DATABASE_URL)
if _database["ENGINE"] == "django.db.backends.sqlite3":
    if DATABASE_POOLER != "none":
        raise ImproperlyConfigured(
            f"DATABASE_POOLER={DATABASE_POOLER} needs DATABASE_URL to be the pooler's postgres:// URL"
        )
    private_dir(VAR_DIR)
    if _database["NAME"] != ":memory:":
        private_file(Path(_database["NAME"]))
    # IMMEDIATE transactions take the write lock up front, so web and worker processes
    # wait for each other (busy_timeout) instead of failing with "database is locked".
    _database["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
elif _database["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend, with a health check that polls the socket instead of sending SELECT 1.
    _database["ENGINE"] = "core.postgresql"
    _database["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE", 60)
    _database["CONN_HEALTH_CHECKS"] = True
    # Parameters travel apart from the SQL, and a statement run five times on one connection is
    # prepared once: the server stops parsing and planning the accept path's statements
    # (bench/RESULTS.md). A statement is prepared in one server session, which a transaction pooler hands to
    # another client after the transaction: behind PgBouncer nothing is prepared, and asking for it is refused.
    _pooled = DATABASE_POOLER == "pgbouncer"
    _prepared_statements = env_bool("DATABASE_PREPARED_STATEMENTS", not _pooled)
    if _pooled and _prepared_statements:
        raise ImproperlyConfigured(
            "DATABASE_PREPARED_STATEMENTS=true cannot be used with DATABASE_POOLER=pgbouncer, where a statement "
            "prepared on one server connection does not exist on the next one the pooler hands out: unset it or set "
            "it to false"
        )
    # Unnamed statements bound on the server still work through PgBouncer: each one's Parse, Bind and Execute
    # travel together, before the pooler may hand the connection on.
    _database["OPTIONS"] = {
        **_database.get("OPTIONS", {}),
        "server_side_binding": True,
        "prepare_threshold": 5 if _prepared_statements else None,
    }
    if _pooled:
        # .iterator() would DECLARE a cursor in one server session and FETCH from whichever comes next. With Django's
        # documented setting for transaction pooling it runs an ordinary query and reads its whole result at once.
        # Nothing else here keeps session state (docs/operations.md, "Beyond one machine"): the SET TIME ZONE Django
        # may send on connecting is kept by PgBouncer for its client and set again on each server connection.
        _database["DISABLE_SERVER_SIDE_CURSORS"] = True
else:
    # The scheme alone: the rest of the URL may hold a password.
    _scheme = DATABASE_URL.partition(":")[0]
    raise ImproperlyConfigured(f"DATABASE_URL must be a sqlite:// or postgres:// URL, got {_scheme}://...")
DATABASES = {"default": _database}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: broker, cache, rate limits ------------------------------------------------
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
    RATELIMIT_STORAGE_URL = REDIS_URL
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    RATELIMIT_STORAGE_URL = "memory://"

# --- Celery ---------------------------------------------------------------------------
CELERY_BROKER_URL = REDIS_URL or "filesystem://localhost/"  # kombu warns on every connection without a host
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object]
if REDIS_URL:
    CELERY_BROKER_TRANSPORT = "core.broker:RedisTransport"
    # Broker priorities 0 (first) .. 9; notifications.engine.queue maps job priorities onto them.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"queue_order_strategy": "priority", "priority_steps": [0, 5, 9]}
else:
    CELERY_BROKER_TRANSPORT = "core.broker:FileTransport"
    _broker_dir = VAR_DIR / "broker"
    _broker_dir.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir),
        "data_folder_out": str(_broker_dir),
        "control_folder": str(_broker_dir / "control"),
        # The file broker is polled: check often so a local run delivers within a blink.
        "polling_interval": 0.1,
    }
CELERY_TASK_IGNORE_RESULT = True
# Nothing lost when a worker dies: a message is acknowledged only after its task ran, a
# worker holds one message at a time, and the sweeper re-sends what a broker dropped.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fixup closes the database connection around every task unless this is set,
# which cost a new PostgreSQL connection per delivery; notifyhub.celery recycles stale ones instead.
CELERY_DB_REUSE_MAX = 1_000_000
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Publishing happens inside API requests: give up fast and let the sweeper send it later.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
JOB_SWEEP_INTERVAL_SECONDS = env_int("JOB_SWEEP_INTERVAL_SECONDS", 5, minimum=1)
# How often the dispatcher sends the tasks of scheduled sends whose time has come (docs/delivery-engine.md).
JOB_DISPATCH_INTERVAL_SECONDS = env_int("JOB_DISPATCH_INTERVAL_SECONDS", 1, minimum=1)
# Jobs that finished more than this many days ago are deleted once a day (docs/operations.md, "Retention");
# 0 or an empty value keeps them for ever.
JOB_RETENTION_DAYS = env_int("JOB_RETENTION_DAYS", 90) if env_str("JOB_RETENTION_DAYS", "90").strip() else 0
CELERY_BEAT_SCHEDULE = {
    "sweep-jobs": {
        "task": "notifications.sweep_jobs",
        "schedule": JOB_SWEEP_INTERVAL_SECONDS,
        "options": {"expires": JOB_SWEEP_INTERVAL_SECONDS},
    },
    "dispatch-jobs": {
        "task": "notifications.dispatch_jobs",
        "schedule": JOB_DISPATCH_INTERVAL_SECONDS,
        "options": {"expires": JOB_DISPATCH_INTERVAL_SECONDS},
    },
    # Each tick as the dispatcher's: a retry too far off to be counted down is published then (docs/event-endpoints.md).
    "sweep-event-deliveries": {
        "task": "event_endpoints.sweep_deliveries",
        "schedule": JOB_DISPATCH_INTERVAL_SECONDS,
        "options": {"expires": JOB_DISPATCH_INTERVAL_SECONDS},
    },
    # At a quiet hour (UTC); a run that could not start within the hour waits for the next day's.
    "purge-jobs": {
        "task": "notifications.purge_jobs",
        "schedule": crontab(hour=3, minute=30),
        "options": {"expires": 3600},
    },
    "purge-events": {
        "task": "event_endpoints.purge_events",
        "schedule": crontab(hour=3, minute=45),
        "options": {"expires": 3600},
    },
}

# --- HTTPS ---------------------------------------------------------------------------
# Production runs behind a TLS proxy: redirect plain HTTP, send HSTS, keep cookies off plain
# connections. The embedded local run is plain http://127.0.0.1, so there it is off.
HTTPS_ONLY = env_bool("HTTPS_ONLY", not EMBEDDED_MODE and not DEBUG)
if HTTPS_ONLY:
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600)
    # Both bind more than this service, so an operator opts in: includeSubDomains binds every host under the
    # domain to HTTPS, and leaving a browser's preload list takes months. The list takes only sites that send both.
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    if SECURE_HSTS_PRELOAD and not SECURE_HSTS_INCLUDE_SUBDOMAINS:
        raise ImproperlyConfigured("SECURE_HSTS_PRELOAD=true needs SECURE_HSTS_INCLUDE_SUBDOMAINS=true too")
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    # The header the TLS proxy sets to say the client spoke HTTPS; empty when nothing sits in front.
    _proto_header = env_str("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto")
    if _proto_header:
        SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proto_header.upper().replace("-", "_"), "https")
    # Load balancers' health probes and Prometheus reach the processes directly, often over plain HTTP.
    # A redirect would fail them and protect nothing: a metrics token has already crossed by then.
    SECURE_REDIRECT_EXEMPT = [r"^api/v1/health$", r"^metrics$"]
# `check --deploy` warns while HSTS leaves out subdomains (W005) or the preload list (W021): both are the opt-ins
# above, off unless the operator, who knows the rest of the domain, turns them on.
SILENCED_SYSTEM_CHECKS = ["security.W005", "security.W021"]

# --- Content-Security-Policy (docs/dashboard.md, "Content-Security-Policy") ----------------
# Every page's scripts and styles are files of ours: no inline script, event handler or style attribute, nothing
# from another origin. NONCE lets in the one inline script and style that exist, the Swagger page's start-up code
# (templates/drf_spectacular/swagger_ui.html); django-csp adds the nonce to the header only on a response whose
# template used it, so every other page's policy is 'self' alone.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, NONCE],
        # Swagger UI's stylesheet draws its icons as data: SVGs.
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# --- Auth, i18n, static ---------------------------------------------------------------
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
STATICFILES_DIRS = [BASE_DIR / "static"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "landing"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on every start without it
if not EMBEDDED_MODE and not DEBUG:
    # A deployment serves what `manage.py collectstatic` wrote to STATIC_ROOT (README.md, Production): names that
    # carry a hash of the content, so browsers keep them for ever, each beside its gzip and brotli copy.
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    # Source maps, the largest files, are fetched by developer tools alone: not worth collectstatic's time.
    WHITENOISE_SKIP_COMPRESS_EXTENSIONS = [*Compressor.SKIP_COMPRESS_EXTENSIONS, "map"]
else:
    # A run for trying things serves straight from static/ and the packages: no collectstatic step in `make run`.
    WHITENOISE_USE_FINDERS = True

# --- API ------------------------------------------------------------------------------
# The release, written in pyproject.toml alone: GET /api/v1/info and the OpenAPI document show it.
VERSION: str = tomllib.loads((BASE_DIR / "pyproject.toml").read_text())["project"]["version"]
REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["core.api.envelope.EnvelopeRenderer"],
    "DEFAULT_PARSER_CLASSES": ["core.api.parsers.JSONObjectParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_THROTTLE_CLASSES": [],
    "EXCEPTION_HANDLER": "core.api.exceptions.envelope_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "core.api.schema.ApiSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "NotifyHub API",
    "DESCRIPTION": "Queue email and webhook notifications, then follow every delivery attempt.",
    "VERSION": VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI assets served by us, not fetched from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "SCHEMA_PATH_PREFIX": "/api/v1",
    # 3.1: JSON Schema 2020-12, whose `propertyNames` and `dependentSchemas` say what a request body may hold.
    "OAS_VERSION": "3.1.0",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "core.api.schema.wrap_responses_in_envelope",
        "core.api.schema.attach_response_links",
        "core.api.schema.close_request_bodies",
    ],
    # Swagger UI shows the operations' groups in this order (an operation's tag is its path's first segment after
    # /api/v1): what a client calls first, the account holder's next, the staff-only admin operations last.
    "TAGS": [
        {"name": "ping", "description": "Check that an API key works."},
        {"name": "notifications", "description": "Send emails and webhooks, then follow, retry or cancel the jobs."},
        {"name": "suppressions", "description": "The addresses NotifyHub sends no email to."},
        {"name": "templates", "description": "Email templates NotifyHub keeps, versions and renders."},
        {"name": "event-endpoints", "description": "Your URLs NotifyHub posts your jobs' and providers' events to."},
        {
            "name": "apps",
            "description": "Webhooks to your own customers: an app per customer, its endpoints with their own "
            "secrets, and the messages fanned out to them.",
        },
        {
            "name": "user",
            "description": "The account holder's usage, audit log, figures, jobs and sending domain, with an API key "
            "or the dashboard's session.",
        },
        {"name": "health", "description": "Whether the service and what it needs are up. No authentication."},
        {"name": "info", "description": "About the service. No authentication."},
        {
            "name": "staff",
            "description": "For NotifyHub's own staff, signed in to the admin: no API key may call these.",
        },
    ],
    # One name for a choice set used by fields of several names (`provider` and `fallback`).
    "ENUM_NAME_OVERRIDES": {
        "ProviderEnum": "providers.names.ProviderName.values",
        "JobTypeEnum": "notifications.models.JobType.values",
        "JobStatusEnum": "notifications.models.JobStatus.values",
        "PartStatusEnum": "core.health.STATUSES",
        "EventTypeEnum": "event_endpoints.models.EventType.values",
    },
}
# Largest request body the API parses; bigger ones get 413 before any JSON is read.
API_MAX_BODY_BYTES = env_int("API_MAX_BODY_BYTES", 512 * 1024, minimum=1024)
# The same for an email send, whose attachments may hold 10 MiB, 13.4 MiB in base64 (docs/rules.md, "Attachments").
API_MAX_EMAIL_BODY_BYTES = env_int("API_MAX_EMAIL_BODY_BYTES", 15 * 1024 * 1024, minimum=1024)
# The same for a batch of sends (docs/rules.md, "Batches"): room for a hundred bodies of a few dozen KB each.
API_MAX_BATCH_BODY_BYTES = env_int("API_MAX_BATCH_BODY_BYTES", 5 * 1024 * 1024, minimum=1024)

# --- Notifications --------------------------------------------------------------------
PLATFORM_DOMAIN = env_str("PLATFORM_DOMAIN", "notifyhub.local")
# Where the service is reached from outside, for every URL it gives out (confirmation and reset links, the
# provider-event receivers): never the request's Host header, which a client writes.
PUBLIC_URL = env_required_outside_embedded_mode(
    "PUBLIC_URL", f"http://127.0.0.1:{env_str('PORT', '8000')}", embedded=EMBEDDED_MODE
)
PLATFORM_PROVIDERS = env_list("PLATFORM_PROVIDERS")
PLATFORM_PROVIDER_KEYS = env_provider_keys(PLATFORM_PROVIDERS, known=["SENDGRID", "RESEND", "POSTMARK"])
# Requests an account's three provider-event receivers answer a minute, then 429 (docs/inbound-events.md, "Limits").
# Postmark and Resend post once per event, SendGrid in batches: the Startup plan's 200 sends a minute, each
# delivered, opened and clicked, come to 600. A provider posts a refused request again later.
PROVIDER_EVENTS_PER_MINUTE = env_int("PROVIDER_EVENTS_PER_MINUTE", 1200, minimum=1)
SENDGRID_API_URL = env_str("SENDGRID_API_URL", "https://api.sendgrid.com/v3/")
RESEND_API_URL = env_str("RESEND_API_URL", "https://api.resend.com/")
POSTMARK_API_URL = env_str("POSTMARK_API_URL", "https://api.postmarkapp.com/")
PROVIDER_TIMEOUT_SECONDS = env_int("PROVIDER_TIMEOUT_SECONDS", 30, minimum=1)
WEBHOOK_RETRY_DELAYS = env_int_list("WEBHOOK_RETRY_DELAYS", "120,240")
# A message's deliveries to its app's endpoints wait these seconds between attempts, one attempt more than delays:
# 8 attempts over about 27 hours, as customers' endpoints go down for hours (docs/customer-webhooks.md, "Retries").
MESSAGE_RETRY_DELAYS = env_int_list("MESSAGE_RETRY_DELAYS", "5,300,1800,7200,18000,36000,36000")
# The most a message's payload may hold, as compact UTF-8 JSON (docs/customer-webhooks.md, "Messages").
MESSAGE_MAX_PAYLOAD_BYTES = env_int("MESSAGE_MAX_PAYLOAD_BYTES", 64 * 1024, minimum=1024)
EMAIL_RETRY_DELAYS = env_int_list("EMAIL_RETRY_DELAYS", "120,240")
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 30, minimum=1)
WEBHOOK_ALLOW_PRIVATE_NETWORKS = env_bool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", False)
# Failed webhook attempts in a row at one destination that make it "failing": an endpoint.failing event and an email
# to the holder (docs/event-endpoints.md, "Endpoint health").
ENDPOINT_FAILING_THRESHOLD = env_int("ENDPOINT_FAILING_THRESHOLD", 5, minimum=1)
# An app's endpoint whose every attempt has failed for this long is disabled (docs/customer-webhooks.md, "Disabling").
ENDPOINT_DISABLE_AFTER_SECONDS = env_int("ENDPOINT_DISABLE_AFTER_SECONDS", 5 * 24 * 3600, minimum=1)
WEBHOOK_CA_BUNDLE = env_optional("WEBHOOK_CA_BUNDLE")
# Runs for trying things (embedded, or DEBUG) trust the CA of `manage.py listen` and let webhooks reach its one
# port on 127.0.0.1 while it runs, nothing else local (docs/operations.md); a deployment (Redis, DEBUG off) never does.
WEBHOOK_TRUST_LISTENER = DEBUG or EMBEDDED_MODE
# Where `manage.py listen` (devtools/) publishes its port, process and CA, and where the webhook client looks for its
# one trusted local target (notifications/delivery/trusted_target.py); None, so nothing is looked for, where the
# listener is not trusted.
WEBHOOK_LOCAL_TARGET_FILE = str(VAR_DIR / "listen" / "listener.json") if WEBHOOK_TRUST_LISTENER else None
# How long a claim holds a job; past it, another worker may take over. The worker renews it while the attempt
# runs (notifications/engine/lease.py), so it bounds how long the job of a worker that died waits, not how long an
# attempt may take.
JOB_LEASE_SECONDS = env_int("JOB_LEASE_SECONDS", 15, minimum=3)
# A queued job whose task has not run after this long has its task sent again.
JOB_REQUEUE_AFTER_SECONDS = env_int("JOB_REQUEUE_AFTER_SECONDS", 300, minimum=1)
# How long a rotated-out signing secret keeps signing beside the new one (docs/delivery-engine.md); 0: not at all.
SIGNING_SECRET_OVERLAP_SECONDS = env_int("SIGNING_SECRET_OVERLAP_SECONDS", 24 * 3600, minimum=0)
# How long a consumer portal link, and the session it opens, lasts (docs/customer-webhooks.md, "Consumer portal").
PORTAL_LINK_SECONDS = env_int("PORTAL_LINK_SECONDS", 3600, minimum=60)
# How late a scheduled retry may be before the sweeper re-sends it.
JOB_RETRY_GRACE_SECONDS = env_int("JOB_RETRY_GRACE_SECONDS", 30, minimum=0)

# Free-plan email with no platform provider goes to Django's email backend: files in var/outbox.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.filebased.EmailBackend")
EMAIL_FILE_PATH = str(private_dir(VAR_DIR / "outbox"))  # mail holds confirmation and reset links

# --- Health, metrics, logs (docs/observability.md) ------------------------------------
# GET /metrics wants it as Authorization: Bearer. Unset, only an embedded run (or DEBUG) answers /metrics, and
# only to a client on the loopback interface (docs/observability.md).
METRICS_TOKEN = env_optional("METRICS_TOKEN")
# The folder where every process of the host keeps its metrics for GET /metrics to sum. prometheus_client
# reads the variable itself when first imported; set but empty, it would write into the working directory.
if os.environ.get("PROMETHEUS_MULTIPROC_DIR") == "":
    raise ImproperlyConfigured("PROMETHEUS_MULTIPROC_DIR is empty: name a folder, or unset it")
PROMETHEUS_MULTIPROC_DIR = env_optional("PROMETHEUS_MULTIPROC_DIR")
if PROMETHEUS_MULTIPROC_DIR:
    Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)
# json: one object a line for a log pipeline (production); text: for a person at a terminal (make run).
LOG_FORMAT = env_str("LOG_FORMAT", "text" if EMBEDDED_MODE else "json")
if LOG_FORMAT not in ("json", "text"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be 'json' or 'text', got {LOG_FORMAT!r}")
_celery_task_log_level = "NOTSET" if env_bool("WORKER_TASK_LOG", False) else "WARNING"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # The request id, job id and attempt of whatever this thread is handling, on every line (core/logs.py).
    "filters": {"context": {"()": "core.logs.LogContextFilter"}},
    "formatters": {
        "text": {"class": "core.logs.TextFormatter", "format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "core.logs.JsonFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["context"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # Celery's "Task ... received" and "... succeeded" lines, two a task: the delivery line says what they would
    # (docs/observability.md); and beat's "Sending due task" line, one a second for the dispatcher. Their warnings
    # and errors (a task that raised, a schedule beat cannot send) stay.
    "loggers": {
        name: {"level": _celery_task_log_level}
        for name in ("celery.worker.strategy", "celery.app.trace", "celery.beat")
    },
}

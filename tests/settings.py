"""Test settings: the service's own settings, with state kept apart from local runs."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from cryptography.fernet import Fernet

os.environ.setdefault("NOTIFYHUB_VAR_DIR", str(Path(__file__).resolve().parent.parent / "var" / "test"))
# Beside Redis the service starts only when given its secrets and PUBLIC_URL. The suite gives its own, here in the
# environment, so the services the tests start (tests/faults/) inherit the same ones.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
if not os.environ.get("FIELD_ENCRYPTION_KEYS"):  # a list given in the shell is used as it is
    os.environ.setdefault("FIELD_ENCRYPTION_KEY", Fernet.generate_key().decode())
os.environ.setdefault("PUBLIC_URL", "http://testserver")

from notifyhub.settings import *  # noqa: F403

# The test client speaks plain HTTP; tests/test_deploy.py checks the HTTPS settings.
HTTPS_ONLY = SECURE_SSL_REDIRECT = SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0
# Static files from the finders, as in `make run`, with REDIS_URL too: a deployment's storage wants collectstatic's
# manifest for every {% static %}, and tests/test_deploy.py runs collectstatic to check that one.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# Hashing cost is not under test; fast hashes keep account fixtures cheap.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Sign-in and sign-up counts (django-ratelimit) in this process's memory, emptied before each
# test: every test client and the live server come from 127.0.0.1, and Redis would keep the
# counts of earlier runs for an hour.
CACHES["ratelimit"] = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "ratelimit"}  # noqa: F405
RATELIMIT_USE_CACHE = "ratelimit"

# Worker processes started by tests must see the test database, so SQLite's is a file.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-db.sqlite3")}  # noqa: F405
if not REDIS_URL:  # noqa: F405
    CELERY_BROKER_TRANSPORT_OPTIONS["polling_interval"] = 0.05  # noqa: F405
# In-thread test workers end with their thread; a connection they kept open would stop the
# test database from being dropped. Production workers reuse connections (notifyhub.settings).
CELERY_DB_REUSE_MAX = None

"""Production settings pass Django's deployment checklist; the embedded local run stays plain HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRINT_HTTPS_SETTINGS = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS, "
    "s.SECURE_PROXY_SSL_HEADER)"
)


def run(args: list[str], tmp_path: Path, **environment: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "REDIS_URL", "DEBUG")}
    env.update(DJANGO_SETTINGS_MODULE="notifyhub.settings", NOTIFYHUB_VAR_DIR=str(tmp_path), **environment)
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


PRODUCTION = {"DEBUG": "false", "REDIS_URL": "redis://127.0.0.1:6379/15", "ALLOWED_HOSTS": "notify.example.com"}


def test_production_settings_pass_the_deployment_checks(tmp_path: Path) -> None:
    checked = run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path, **PRODUCTION)

    assert checked.returncode == 0, checked.stderr
    assert "no issues" in checked.stdout


def test_production_trusts_the_proxys_https_header_it_names(tmp_path: Path) -> None:
    printed = run(
        [sys.executable, "-c", PRINT_HTTPS_SETTINGS], tmp_path, **PRODUCTION, SECURE_PROXY_SSL_HEADER="X-Scheme"
    )

    assert printed.stdout.split(maxsplit=4) == ["True", "True", "True", "31536000", "('HTTP_X_SCHEME', 'https')\n"]


@pytest.mark.parametrize("environment", [{}, {"DEBUG": "true", "REDIS_URL": "redis://127.0.0.1:6379/15"}])
def test_local_runs_stay_on_plain_http(tmp_path: Path, environment: dict[str, str]) -> None:
    printed = run([sys.executable, "-c", PRINT_HTTPS_SETTINGS], tmp_path, **environment)

    assert printed.stdout.split() == ["False", "False", "False", "0", "None"], printed.stderr

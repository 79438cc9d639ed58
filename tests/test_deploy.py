"""Production settings pass Django's deployment checklist and serve collectstatic's hashed, compressed files; the
local runs stay plain HTTP and serve static files from where they are; `make run` stops on a taken port, and
gunicorn keeps its control socket in the checkout's var folder."""

from __future__ import annotations

import json
import os
import re
import runpy
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRINT_HTTPS_SETTINGS = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS, "
    "s.SECURE_PROXY_SSL_HEADER)"
)
PRINT_HSTS_SETTINGS = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.SECURE_HSTS_INCLUDE_SUBDOMAINS, s.SECURE_HSTS_PRELOAD)"
)
PRINT_CONTROL_SOCKET = "import runpy; print(runpy.run_path('gunicorn.conf.py')['control_socket'])"
PRINT_STATIC_SETTINGS = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.STORAGES['staticfiles']['BACKEND'], s.WHITENOISE_USE_FINDERS)"
)
# Asks the production service, through Django's test client, for two pages and then every static file they link,
# as a browser over HTTPS that takes brotli would; prints what came back as JSON on the last line.
BROWSE_PAGES = """
import json, re
import django
django.setup()
from django.test import Client

browser = Client(HTTP_HOST="notify.example.com", HTTP_X_FORWARDED_PROTO="https", HTTP_ACCEPT_ENCODING="gzip, br")
pages, files = {}, {}
for path in ("/", "/api/docs/"):
    page = browser.get(path)
    links = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.content.decode())
    pages[path] = {"status": page.status_code, "links": links}
    for url in links:
        answer = browser.get(url)
        files[url] = {
            "status": answer.status_code,
            "encoding": answer.get("Content-Encoding"),
            "cache": answer.get("Cache-Control"),
        }
print(json.dumps({"pages": pages, "files": files}))
"""


def run(
    args: list[str], tmp_path: Path, *, timeout: float = 60, **environment: str
) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "REDIS_URL", "DEBUG")}
    env.update(DJANGO_SETTINGS_MODULE="notifyhub.settings", NOTIFYHUB_VAR_DIR=str(tmp_path), **environment)
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


PRODUCTION = {"DEBUG": "false", "REDIS_URL": "redis://127.0.0.1:6379/15", "ALLOWED_HOSTS": "notify.example.com"}
HSTS_OPTED_IN = {"SECURE_HSTS_INCLUDE_SUBDOMAINS": "true", "SECURE_HSTS_PRELOAD": "true"}
LOCAL_RUNS = [{}, {"DEBUG": "true", "REDIS_URL": "redis://127.0.0.1:6379/15"}]


@pytest.mark.parametrize("hsts", [{}, HSTS_OPTED_IN], ids=["hsts-defaults", "hsts-opted-in"])
def test_production_settings_pass_the_deployment_checks(tmp_path: Path, hsts: dict[str, str]) -> None:
    checked = run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path, **PRODUCTION, **hsts
    )

    assert checked.returncode == 0, checked.stderr
    assert "no issues" in checked.stdout


def test_the_deployment_checks_still_catch_hsts_turned_off(tmp_path: Path) -> None:
    """Only the two opt-ins' warnings are silenced: HSTS itself is still checked."""
    checked = run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        tmp_path,
        **PRODUCTION,
        SECURE_HSTS_SECONDS="0",
    )

    assert checked.returncode != 0
    assert "security.W004" in checked.stderr


def test_production_trusts_the_proxys_https_header_it_names(tmp_path: Path) -> None:
    printed = run(
        [sys.executable, "-c", PRINT_HTTPS_SETTINGS], tmp_path, **PRODUCTION, SECURE_PROXY_SSL_HEADER="X-Scheme"
    )

    assert printed.stdout.split(maxsplit=4) == ["True", "True", "True", "31536000", "('HTTP_X_SCHEME', 'https')\n"]


def test_hsts_covers_subdomains_and_asks_for_preloading_only_when_told(tmp_path: Path) -> None:
    by_default = run([sys.executable, "-c", PRINT_HSTS_SETTINGS], tmp_path, **PRODUCTION)
    opted_in = run([sys.executable, "-c", PRINT_HSTS_SETTINGS], tmp_path, **PRODUCTION, **HSTS_OPTED_IN)
    subdomains_only = run(
        [sys.executable, "-c", PRINT_HSTS_SETTINGS], tmp_path, **PRODUCTION, SECURE_HSTS_INCLUDE_SUBDOMAINS="true"
    )

    assert by_default.stdout.split() == ["False", "False"], by_default.stderr
    assert opted_in.stdout.split() == ["True", "True"], opted_in.stderr
    assert subdomains_only.stdout.split() == ["True", "False"], subdomains_only.stderr


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({"SECURE_HSTS_PRELOAD": "true"}, "SECURE_HSTS_PRELOAD=true needs SECURE_HSTS_INCLUDE_SUBDOMAINS=true too"),
        ({"SECURE_HSTS_INCLUDE_SUBDOMAINS": "yes"}, "SECURE_HSTS_INCLUDE_SUBDOMAINS must be 'true' or 'false'"),
    ],
    ids=["preload-alone", "not-a-boolean"],
)
def test_hsts_options_that_make_no_sense_stop_start_up(
    tmp_path: Path, environment: dict[str, str], message: str
) -> None:
    printed = run([sys.executable, "-c", PRINT_HSTS_SETTINGS], tmp_path, **PRODUCTION, **environment)

    assert printed.returncode != 0
    assert message in printed.stderr


@pytest.mark.parametrize("environment", LOCAL_RUNS)
def test_local_runs_stay_on_plain_http(tmp_path: Path, environment: dict[str, str]) -> None:
    printed = run([sys.executable, "-c", PRINT_HTTPS_SETTINGS], tmp_path, **environment)

    assert printed.stdout.split() == ["False", "False", "False", "0", "None"], printed.stderr


@pytest.mark.parametrize("environment", LOCAL_RUNS)
def test_local_runs_serve_static_files_without_collectstatic(tmp_path: Path, environment: dict[str, str]) -> None:
    printed = run([sys.executable, "-c", PRINT_STATIC_SETTINGS], tmp_path, **environment)

    assert printed.stdout.split() == ["django.contrib.staticfiles.storage.StaticFilesStorage", "True"], printed.stderr


# collectstatic compresses Swagger UI's and Redoc's bundles with brotli: most of a minute on a busy machine.
@pytest.mark.timeout(400)
def test_production_serves_collectstatics_hashed_and_compressed_files(tmp_path: Path) -> None:
    collected = run([sys.executable, "manage.py", "collectstatic", "--noinput"], tmp_path, timeout=300, **PRODUCTION)
    assert collected.returncode == 0, collected.stderr
    static_root = tmp_path / "static"
    manifest: dict[str, str] = json.loads((static_root / "staticfiles.json").read_text())["paths"]

    browsed = run([sys.executable, "-c", BROWSE_PAGES], tmp_path, **PRODUCTION)

    assert browsed.returncode == 0, browsed.stderr
    seen: dict[str, Any] = json.loads(browsed.stdout.splitlines()[-1])
    stylesheet, script = manifest["notifyhub.css"], manifest["notifyhub.js"]
    assert re.fullmatch(r"notifyhub\.[0-9a-f]{12}\.css", stylesheet)
    for name in (stylesheet, script):
        assert all((static_root / f"{name}{suffix}").is_file() for suffix in ("", ".gz", ".br")), name
    assert seen["pages"]["/"] == {"status": 200, "links": [f"/static/{stylesheet}", f"/static/{script}"]}
    swagger_bundle = manifest["drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"]
    assert seen["pages"]["/api/docs/"]["status"] == 200
    assert f"/static/{swagger_bundle}" in seen["pages"]["/api/docs/"]["links"]
    for url, answer in seen["files"].items():
        assert answer["status"] == 200, url
        assert "immutable" in answer["cache"], url  # hashed names are cached for ever
    for url in (f"/static/{stylesheet}", f"/static/{script}", f"/static/{swagger_bundle}"):
        assert seen["files"][url]["encoding"] == "br", url


def test_a_taken_port_stops_make_run_before_it_starts_anything_with_a_message_naming_it(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        # -o install: the suite's .venv is installed already, and a test installs nothing.
        stopped = run(["make", "-o", "install", "run", f"PORT={port}"], tmp_path, timeout=30)

    assert stopped.returncode != 0
    assert f"Port {port} is taken" in stopped.stderr
    assert "NotifyHub is starting" not in stopped.stdout
    assert not (tmp_path / "db.sqlite3").exists()  # not even migrated


def test_gunicorns_control_socket_is_in_the_checkouts_var_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configured = run([sys.executable, "-c", PRINT_CONTROL_SOCKET], tmp_path)
    monkeypatch.delenv("NOTIFYHUB_VAR_DIR", raising=False)

    assert configured.stdout.strip() == str(tmp_path / "gunicorn.ctl")
    assert runpy.run_path(str(ROOT / "gunicorn.conf.py"))["control_socket"] == str(ROOT / "var" / "gunicorn.ctl")

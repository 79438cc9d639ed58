"""The production WSGI application: API key requests and provider event posts skip the browser's middleware."""

from __future__ import annotations

import base64
import io
import json
from typing import Any
from wsgiref.util import setup_testing_defaults

import pytest

from core.handlers import NotifyHubWSGIApplication
from notifications.models import Job
from tests.conftest import WEBHOOK, Client
from webhooks_inbound.services import postmark_password_generate


class WsgiResponse:
    def __init__(self, status: str, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status_code = int(status.split()[0])
        self.headers = {name.lower(): value for name, value in headers}
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)


def call(method: str, path: str, body: Any = None, **headers: str) -> WsgiResponse:
    """One request through the WSGI application gunicorn serves."""
    raw = json.dumps(body).encode() if body is not None else b""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(raw)),
        "wsgi.input": io.BytesIO(raw),
        **{f"HTTP_{name.upper()}": value for name, value in headers.items()},
    }
    setup_testing_defaults(environ)  # SERVER_NAME 127.0.0.1, which ALLOWED_HOSTS lists
    started: list[Any] = []
    chunks = NotifyHubWSGIApplication()(
        environ, lambda status, response_headers: started.extend([status, response_headers])
    )
    return WsgiResponse(started[0], started[1], b"".join(chunks))


@pytest.mark.django_db(transaction=True)
def test_a_send_with_a_key_is_accepted_without_browser_middleware(free: Client) -> None:
    response = call("POST", "/api/v1/notifications/webhook", WEBHOOK, x_api_key=free.api_key)

    assert response.status_code == 202
    assert Job.objects.filter(id=response.json()["data"]["jobId"], account=free.account).exists()
    # Security headers stay; clickjacking, session and cookie machinery are gone.
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "x-frame-options" not in response.headers
    assert "set-cookie" not in response.headers
    assert "cookie" not in response.headers.get("vary", "").lower()


@pytest.mark.django_db(transaction=True)
def test_a_bearer_key_takes_the_api_key_path_too(free: Client) -> None:
    response = call("GET", "/api/v1/ping", authorization=f"Bearer {free.api_key}")

    assert response.status_code == 200
    assert "x-frame-options" not in response.headers


@pytest.mark.django_db(transaction=True)
def test_a_request_without_a_key_keeps_the_full_middleware() -> None:
    response = call("GET", "/api/v1/ping")

    assert response.status_code == 401
    assert response.json()["error"] == "API key is missing"
    assert response.headers["x-frame-options"] == "DENY"


@pytest.mark.django_db(transaction=True)
def test_a_key_outside_the_api_does_not_skip_the_middleware(free: Client) -> None:
    response = call("GET", "/admin/", x_api_key=free.api_key)

    # The admin still has its session and auth middleware: a redirect to its sign-in page.
    assert response.status_code == 302
    assert response.headers["location"].startswith("/admin/login/")


@pytest.mark.django_db(transaction=True)
def test_the_host_check_still_applies_to_api_key_requests(free: Client) -> None:
    response = call("GET", "/api/v1/ping", x_api_key=free.api_key, host="evil.example.com")

    assert response.status_code == 400
    assert response.json()["error"] == "Bad request"


@pytest.mark.django_db(transaction=True)
def test_a_providers_event_post_skips_the_browser_middleware_too(startup: Client) -> None:
    password = postmark_password_generate(account=startup.account)
    credentials = base64.b64encode(f"postmark:{password}".encode()).decode()

    response = call(
        "POST",
        f"/api/v1/webhooks/postmark/{startup.account.public_id}",
        {"RecordType": "Delivery", "MessageID": "unknown"},
        authorization=f"Basic {credentials}",
    )

    assert response.status_code == 200
    assert response.json()["data"]["unmatched"] == 1
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "x-frame-options" not in response.headers
    assert "set-cookie" not in response.headers

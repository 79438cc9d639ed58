"""A database or Redis that cannot be reached is a 503 with Retry-After, never a 500 (docs/rules.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client as BrowserClient

from accounts.models import UsagePeriod
from notifications.models import Job
from tests.conftest import Client, free_port

PASSWORD = "a-long-password-1"


@pytest.fixture
def database_down(transactional_db: None) -> Iterator[None]:
    """The default connection pointed at a database that is not there: nothing listens on the port (PostgreSQL),
    or the file's folder does not exist (SQLite). Put back, and reconnected, afterwards."""
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "postgresql":
        connection.settings_dict["PORT"] = free_port()
    else:
        connection.settings_dict["NAME"] = "/nonexistent/notifyhub/db.sqlite3"
    yield
    connection.close()
    connection.settings_dict.clear()
    connection.settings_dict.update(saved)


def _assert_unavailable(response: Any) -> None:
    assert response.status_code == 503
    assert response["Retry-After"] == "5"


def test_an_api_call_with_the_database_down_is_503_in_the_envelope(
    free: Client, database_down: None, caplog: Any
) -> None:
    send, status = free.send_webhook(), free.get("/api/v1/notifications/jobs")

    _assert_unavailable(send)
    _assert_unavailable(status)
    assert (send.json()["success"], send.json()["error"]) == (False, "Service temporarily unavailable")
    assert "Service unavailable, answered 503: OperationalError" in caplog.text
    assert "Traceback" not in caplog.text


@pytest.fixture
def signed_in(transactional_db: None) -> BrowserClient:
    browser = BrowserClient(raise_request_exception=False)
    browser.force_login(get_user_model().objects.create_user("ada@example.com", "ada@example.com", PASSWORD))
    return browser


def test_a_dashboard_page_with_the_database_down_is_a_503_page(signed_in: BrowserClient, database_down: None) -> None:
    response = signed_in.get("/dashboard/jobs/")

    _assert_unavailable(response)
    assert "Service temporarily unavailable" in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_sign_in_with_redis_down_is_a_503_page(settings: Any) -> None:
    get_user_model().objects.create_user("ada@example.com", "ada@example.com", PASSWORD)
    # The sign-in counts' cache is Redis where nothing listens.
    settings.CACHES = {
        **settings.CACHES,
        settings.RATELIMIT_USE_CACHE: {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        },
    }

    response = BrowserClient(raise_request_exception=False).post(
        "/login/", {"username": "ada@example.com", "password": PASSWORD}
    )

    _assert_unavailable(response)
    assert "Service temporarily unavailable" in response.content.decode()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_send_the_database_cannot_finish_is_503_and_leaves_no_job_and_no_quota_spent(free: Client) -> None:
    free.send_webhook()  # the period's usage row exists: the failing send would take its unit
    used_before = UsagePeriod.objects.get(account=free.account).used
    with psycopg.connect(**_conninfo(), autocommit=False) as holder:
        # Another session holds the jobs table; this one gives up waiting for it after 200 ms, as a
        # database that fails over or restarts mid-request would end the statement.
        holder.execute(f"LOCK TABLE {Job._meta.db_table} IN ACCESS EXCLUSIVE MODE")
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '200ms'")
        try:
            response = free.send_webhook()
        finally:
            holder.rollback()
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")

    _assert_unavailable(response)
    assert Job.objects.count() == 1
    assert UsagePeriod.objects.get(account=free.account).used == used_before


def _conninfo() -> dict[str, Any]:
    params = connection.get_connection_params()
    return {key: params[key] for key in ("dbname", "user", "host", "port") if params.get(key)}

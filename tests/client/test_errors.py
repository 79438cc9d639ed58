"""Each error class, raised from a real answer of the live service (the 503 from the proxy in front of it): its
status, its code and the message docs/errors.md gives, character for character."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from accounts.plans import Plan
from accounts.services import api_key_create
from tests.client.conftest import Connect
from tests.client.hubs import Hub
from tests.client.proxy import Proxy, refuse
from tests.client.sdk import notifyhub
from tests.conftest import Client, free_port

URL = "https://hooks.example.com/in"


def raised(hub: Hub, use: Callable[[Any], Any]) -> notifyhub.NotifyHubError:
    with pytest.raises(notifyhub.NotifyHubError) as caught:
        hub.run(use)
    return caught.value


def answer(error: notifyhub.NotifyHubError) -> tuple[type, int | None, str | None, str]:
    return type(error), error.status, error.code, error.message


def test_an_unknown_key_is_an_authentication_error(connect: Connect) -> None:
    error = raised(connect("nh_" + "0" * 64), lambda nh: nh.ping())

    assert answer(error) == (notifyhub.AuthenticationError, 401, "api_key_invalid", "Invalid API key")


def test_a_read_key_sending_is_refused_by_its_scope(connect: Connect, holder: Client) -> None:
    reader = connect(api_key_create(account=holder.account, name="reader", scope="read"))

    error = raised(reader, lambda nh: nh.webhooks.send(url=URL, payload={}))

    assert answer(error) == (
        notifyhub.PermissionDeniedError,
        403,
        "api_key_scope_refused",
        "This API key's scope does not allow this request",
    )


def test_an_unknown_job_is_not_found(hub: Hub) -> None:
    error = raised(hub, lambda nh: nh.jobs.get(str(uuid.uuid4())))

    assert answer(error) == (notifyhub.NotFoundError, 404, "job_not_found", "Job not found")


def test_a_reused_idempotency_key_is_a_conflict(hub: Hub) -> None:
    hub.run(lambda nh: nh.webhooks.send(url=URL, payload={}, idempotency_key="order-1"))

    error = raised(hub, lambda nh: nh.webhooks.send(url=URL, payload={}, idempotency_key="order-1"))

    assert answer(error) == (notifyhub.ConflictError, 409, "duplicate_request", "Duplicate request detected")


def test_an_invalid_field_is_a_validation_error(hub: Hub) -> None:
    error = raised(hub, lambda nh: nh.webhooks.send(url="http://hooks.example.com/", payload={}))

    assert answer(error) == (notifyhub.ValidationError, 400, "validation_failed", "url must be a valid HTTPS URL")


def test_the_sixth_request_of_a_minute_on_the_free_plan_is_rate_limited(
    connect: Connect, make_client: Callable[..., Client]
) -> None:
    free = connect(make_client(Plan.FREE).api_key, max_retries=0)
    for _ in range(5):
        free.run(lambda nh: nh.ping())

    error = raised(free, lambda nh: nh.ping())

    assert answer(error) == (notifyhub.RateLimitError, 429, "rate_limited", "Rate limit exceeded")


def test_a_service_down_is_unavailable_once_the_retries_are_spent(
    connect: Connect, holder: Client, proxy: Proxy
) -> None:
    proxy.script(refuse(503, retry_after="0"), refuse(503, retry_after="0"))
    hub = connect(holder.api_key, base_url=proxy.url, max_retries=1)

    error = raised(hub, lambda nh: nh.ping())

    assert answer(error) == (
        notifyhub.ServiceUnavailableError,
        503,
        "service_unavailable",
        "Service temporarily unavailable",
    )
    assert len(proxy.seen) == 2


def test_no_server_is_a_connection_error_without_status_or_code(connect: Connect, holder: Client) -> None:
    hub = connect(holder.api_key, base_url=f"http://127.0.0.1:{free_port()}", max_retries=0)

    error = raised(hub, lambda nh: nh.ping())

    assert isinstance(error, notifyhub.APIConnectionError)
    assert (error.status, error.code) == (None, None)

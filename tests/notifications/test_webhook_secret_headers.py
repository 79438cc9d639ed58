"""Secret custom headers of a webhook are stored encrypted and shown masked to staff, yet reach the receiver and the
owner's own API as sent, and never a log line."""

from __future__ import annotations

import importlib
import json
import logging
from typing import Any
from uuid import UUID

import pytest
from django.apps import apps
from django.db import connection
from django.test import Client as Browser

from accounts.models import KeyScope
from accounts.services import api_key_create
from core import sql
from core.crypto import decrypt
from notifications.engine.processing import job_process
from notifications.models import Job, JobStatus, JobType
from notifications.secret_headers import is_secret_header
from notifications.selectors import job_payload_for_staff
from tests.conftest import Client
from tests.fakes.receiver import Receiver

HEADERS = {"Authorization": "Bearer tok-a1b2c3", "X-Trace": "t-1", "x-api-key": "key-d4e5f6"}
SECRET_VALUES = ("tok-a1b2c3", "key-d4e5f6")
STORED_HEADERS = {"Authorization": "***", "X-Trace": "t-1", "x-api-key": "***"}

migration_0008 = importlib.import_module("notifications.migrations.0008_move_secret_headers")


def stored_columns(job_id: str) -> tuple[str, str | None]:
    """The job's payload and secret_headers columns as the database holds them."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT payload, secret_headers FROM {sql.table(Job)} WHERE id = %s",
            [sql.db_value(Job, "id", UUID(job_id))],
        )
        return cursor.fetchone()


def send(client: Client, url: str = "https://hooks.example.com/in", headers: dict[str, str] = HEADERS) -> str:
    response = client.send_webhook(url=url, headers=headers)
    assert response.status_code == 202, response.json()
    return str(response.json()["data"]["jobId"])


def old_job(client: Client, url: str = "https://hooks.example.com/in") -> Job:
    """A job as stored before secret headers were kept apart: their values in the payload."""
    return Job.objects.create(
        account=client.account,
        type=JobType.WEBHOOK,
        payload={"url": url, "method": "POST", "headers": HEADERS, "payload": {"n": 1}},
    )


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "proxy-authorization",
        "Cookie",
        "X-Auth-Token",
        "X-API-KEY",
        "X-Client-Secret",
        "X-Password",
        "X-Hub-Signature",
        "X-Session",
        "X-Credentials",
        "Private-Token",
    ],
)
def test_a_header_naming_a_credential_is_secret(name: str) -> None:
    assert is_secret_header(name)


@pytest.mark.parametrize("name", ["X-Trace", "Accept", "Content-Language", "X-Request-Id", "Idempotency"])
def test_other_headers_are_not_secret(name: str) -> None:
    assert not is_secret_header(name)


def test_the_row_holds_no_secret_value_only_its_name(free: Client) -> None:
    job_id = send(free)

    payload, secret_headers = stored_columns(job_id)

    assert secret_headers is not None
    for value in SECRET_VALUES:
        assert value not in payload
        assert value not in secret_headers
    assert json.loads(payload)["headers"] == STORED_HEADERS
    assert json.loads(decrypt(secret_headers)) == {"Authorization": "Bearer tok-a1b2c3", "x-api-key": "key-d4e5f6"}


def test_headers_without_a_secret_are_stored_as_sent_and_nothing_is_encrypted(free: Client) -> None:
    job_id = send(free, headers={"X-Trace": "t-1"})

    payload, secret_headers = stored_columns(job_id)

    assert (json.loads(payload)["headers"], secret_headers) == ({"X-Trace": "t-1"}, None)


@pytest.mark.parametrize("path", ["/api/v1/notifications/jobs/{}", "/api/v1/user/jobs/{}"])
def test_the_owners_api_shows_the_headers_as_sent(free: Client, path: str) -> None:
    job_id = send(free)

    response = free.get(path.format(job_id))

    assert response.status_code == 200
    headers = response.json()["data"]["payload"]["headers"]
    assert list(headers.items()) == list(HEADERS.items())


@pytest.mark.parametrize("path", ["/api/v1/notifications/jobs/{}", "/api/v1/user/jobs/{}"])
@pytest.mark.parametrize(("scope", "shown"), [(KeyScope.FULL, HEADERS), (KeyScope.READ, STORED_HEADERS)])
def test_a_key_that_may_send_sees_the_values_and_a_read_key_sees_them_masked(
    free: Client, path: str, scope: KeyScope, shown: dict[str, str]
) -> None:
    jobs = [send(free), str(old_job(free).id)]
    key = api_key_create(account=free.account, name=f"{scope} key", scope=scope)

    for job_id in jobs:
        response = free.http.get(path.format(job_id), HTTP_X_API_KEY=key)

        assert response.status_code == 200, response.json()
        assert list(response.json()["data"]["payload"]["headers"].items()) == list(shown.items())


def test_the_holders_session_sees_the_values(free: Client) -> None:
    job_id = send(free)
    browser = Browser()
    browser.force_login(free.account.user)

    response = browser.get(f"/api/v1/user/jobs/{job_id}")

    assert response.status_code == 200, response.json()
    assert list(response.json()["data"]["payload"]["headers"].items()) == list(HEADERS.items())


def test_staff_see_the_secret_values_masked(free: Client) -> None:
    job = Job.objects.get(id=send(free))

    shown = job_payload_for_staff(job)

    assert shown["headers"] == STORED_HEADERS
    assert shown["url"] == "https://hooks.example.com/in"
    assert shown["payload"] == job.payload["payload"]


def test_staff_see_a_job_stored_before_the_secrets_were_kept_apart_masked_too(free: Client) -> None:
    assert job_payload_for_staff(old_job(free))["headers"] == STORED_HEADERS


@pytest.mark.django_db(transaction=True)
def test_the_receiver_gets_the_values_and_no_log_line_carries_them(
    free: Client, receiver: Receiver, delivery_settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    job_id = send(free, url=receiver.url("/hook"))

    with caplog.at_level(logging.DEBUG):
        job_process(job_id=Job.objects.get(id=job_id).id)

    (arrival,) = receiver.wait_for(1)
    assert arrival.headers["Authorization"] == "Bearer tok-a1b2c3"
    assert arrival.headers["x-api-key"] == "key-d4e5f6"
    assert arrival.headers["X-Trace"] == "t-1"
    assert Job.objects.get(id=job_id).status == JobStatus.COMPLETED
    assert any(record.name == "notifyhub.delivery" for record in caplog.records)
    for record in caplog.records:
        logged = f"{record.getMessage()} {vars(record)}"
        assert not any(value in logged for value in SECRET_VALUES), record


@pytest.mark.django_db(transaction=True)
def test_a_job_stored_before_is_delivered_with_its_values(
    free: Client, receiver: Receiver, delivery_settings: Any
) -> None:
    job = old_job(free, url=receiver.url("/hook"))

    job_process(job_id=job.id)

    (arrival,) = receiver.wait_for(1)
    assert (arrival.headers["Authorization"], arrival.headers["x-api-key"]) == ("Bearer tok-a1b2c3", "key-d4e5f6")


def test_the_migration_moves_the_values_of_jobs_stored_before_out_of_their_payload(free: Client) -> None:
    job = old_job(free)
    without_secrets = Job.objects.get(id=send(free, headers={"X-Trace": "t-1"}))

    migration_0008.move_secret_headers(apps, None)

    payload, secret_headers = stored_columns(str(job.id))
    assert json.loads(payload)["headers"] == STORED_HEADERS
    assert secret_headers is not None
    assert not any(value in payload or value in secret_headers for value in SECRET_VALUES)
    assert free.get(f"/api/v1/notifications/jobs/{job.id}").json()["data"]["payload"]["headers"] == HEADERS
    payload, secret_headers = stored_columns(str(without_secrets.id))
    assert (json.loads(payload)["headers"], secret_headers) == ({"X-Trace": "t-1"}, None)


def test_the_migration_run_again_changes_nothing_and_reversed_puts_every_value_back(free: Client) -> None:
    jobs = [old_job(free), Job.objects.get(id=send(free))]
    migration_0008.move_secret_headers(apps, None)
    moved = [stored_columns(str(job.id)) for job in jobs]

    migration_0008.move_secret_headers(apps, None)
    assert [stored_columns(str(job.id)) for job in jobs] == moved

    migration_0008.put_secret_headers_back(apps, None)
    for job in jobs:
        payload, secret_headers = stored_columns(str(job.id))
        assert (json.loads(payload), secret_headers) == ({**job.payload, "headers": HEADERS}, None)

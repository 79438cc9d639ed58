"""Where each job went, on the jobs list: an email's recipient or a webhook URL's host, and the `to` and `host`
filters that find every send to one address or one host (docs/rules.md)."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.db import connection

from notifications.models import Job, JobType
from tests.api.test_envelope import assert_error
from tests.conftest import Client
from tests.factories import JobFactory

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/notifications/jobs"


def listed(client: Client, **query: str) -> list[tuple[str, str]]:
    response = client.get(JOBS, **query)
    assert response.status_code == 200, response.json()
    return [(job["type"], job["destination"]) for job in response.json()["data"]["data"]]


def test_a_send_stores_its_destination_in_lower_case(free: Client) -> None:
    free.send_email(to="Ada.Lovelace@Example.COM")
    free.send_webhook(url="https://user:secret@Hooks.Example.com:8443/in?x=1")

    assert listed(free) == [("webhook", "hooks.example.com"), ("email", "ada.lovelace@example.com")]
    assert set(Job.objects.values_list("destination", flat=True)) == {"ada.lovelace@example.com", "hooks.example.com"}


def test_to_finds_every_email_to_one_address_in_any_case_and_nothing_else(free: Client, make_client: Any) -> None:
    for to in ("ada@example.com", "ADA@example.com", "grace@example.com"):
        free.send_email(to=to)
    free.send_webhook(url="https://ada@example.com/in")  # a webhook to the host example.com, not an email to ada
    make_client().send_email(to="ada@example.com")

    assert listed(free, to="Ada@Example.com") == [("email", "ada@example.com"), ("email", "ada@example.com")]


def test_host_finds_every_webhook_to_one_host_and_combines_with_the_other_filters(startup: Client) -> None:
    startup.send_webhook(url="https://hooks.example.com/a")
    startup.send_webhook(url="https://HOOKS.example.com/b")
    startup.send_webhook(url="https://other.example.com/a")
    JobFactory(account=startup.account, type=JobType.EMAIL, payload={"to": "someone@hooks.example.com"})

    assert listed(startup, host="hooks.example.com") == [("webhook", "hooks.example.com")] * 2
    assert listed(startup, host="hooks.example.com", status="completed") == []
    assert listed(startup, host="hooks.example.com", type="email") == []


@pytest.mark.parametrize(
    ("query", "message"),
    [({"to": "not-an-address"}, "to must be an email"), ({"host": "a" * 254}, "host must be at most 253 characters")],
)
def test_a_bad_destination_filter_is_a_400_naming_it(free: Client, query: dict[str, str], message: str) -> None:
    assert_error(free.get(JOBS, **query), 400, message)


def test_the_migration_fills_the_destination_of_the_jobs_stored_before(free: Client) -> None:
    email = JobFactory(account=free.account, type=JobType.EMAIL, payload={"to": "Ada@Example.com", "subject": "s"})
    webhook = JobFactory(account=free.account, payload={"url": "https://***@Hooks.Example.com/in", "payload": {}})
    Job.objects.update(destination="")  # as the jobs were before the column existed
    fill_destinations = __import__(
        "notifications.migrations.0010_fill_job_destinations", fromlist=["fill_destinations"]
    ).fill_destinations

    fill_destinations(apps, None)

    assert dict(Job.objects.values_list("id", "destination")) == {
        email.id: "ada@example.com",
        webhook.id: "hooks.example.com",
    }


def test_a_web_process_of_the_release_before_stores_jobs_while_the_migrations_run(free: Client) -> None:
    # The previous release's insert names every column but the destination, which it does not know.
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO notifications_job (id, account_id, type, status, priority, payload, attempts, max_attempts,"
            " claims, created_at) VALUES (%s, %s, 'email', 'pending', 5, %s, 0, 3, 0, %s)",
            ["0" * 31 + "1", free.account.pk, '{"to": "ada@example.com"}', "2026-11-24 10:00:00"],
        )

    assert list(Job.objects.values_list("destination", flat=True)) == [""]

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from accounts.plans import Plan
from notifications.models import Job
from tests.api.test_envelope import assert_error
from tests.conftest import Client, ready_to_send


def test_it_accepts_an_email_and_stores_the_job(free: Client) -> None:
    response = free.send_email()

    assert response.status_code == 202
    data = response.json()["data"]
    assert (data["status"], data["type"]) == ("pending", "email")
    job = Job.objects.get(id=data["jobId"])
    assert job.payload == {"to": "user@example.com", "subject": "Welcome", "body": "<p>Hello</p>"}
    assert (job.provider, job.fallback, job.priority) == (None, None, 5)


def test_the_platform_sender_is_allowed_on_the_free_plan(free: Client) -> None:
    response = free.send_email(**{"from": "NoReply@notifyhub.local"})

    assert response.status_code == 202
    assert Job.objects.get(id=response.json()["data"]["jobId"]).payload["from"] == "NoReply@notifyhub.local"


def test_another_sender_is_refused_on_the_free_plan(free: Client) -> None:
    response = free.send_email(**{"from": "me@mycompany.com"})

    assert_error(response, 400, "Cannot send from me@mycompany.com. Only noreply@notifyhub.local is allowed.")


def test_the_platform_domain_comes_from_settings(free: Client, settings: Any) -> None:
    settings.PLATFORM_DOMAIN = "mail.example.net"

    response = free.send_email(**{"from": "noreply@notifyhub.local"})

    assert_error(response, 400, "Cannot send from noreply@notifyhub.local. Only noreply@mail.example.net is allowed.")


@pytest.mark.parametrize("routing", [{"provider": "POSTMARK"}, {"provider": "RESEND", "fallback": "SENDGRID"}])
def test_routing_needs_a_paid_plan(free: Client, routing: dict[str, str]) -> None:
    assert_error(free.send_email(**routing), 403, "Per-message provider routing requires a paid plan")
    assert free.account.jobs.count() == 0


def test_priority_on_a_free_email_needs_a_paid_plan(free: Client) -> None:
    assert_error(free.send_email(priority=1), 403, "Priority requires a paid plan")


def test_priority_on_a_free_webhook_is_fine(free: Client) -> None:
    assert free.send_webhook(priority=1).status_code == 202


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"fallback": "SENDGRID"}, "`fallback` requires `provider` to be set"),
        ({"provider": "RESEND", "fallback": "RESEND"}, "`provider` and `fallback` must be different"),
        ({"provider": "MAILGUN"}, "provider must be one of SENDGRID, RESEND, POSTMARK"),
        ({"provider": "resend"}, "provider must be one of SENDGRID, RESEND, POSTMARK"),
        ({"fallback": "SES", "provider": "RESEND"}, "fallback must be one of SENDGRID, RESEND, POSTMARK"),
    ],
)
def test_routing_fields_are_validated_before_plan_rules(
    make_client: Callable[..., Client], overrides: dict[str, Any], message: str
) -> None:
    for plan in (Plan.FREE, Plan.STARTUP):
        assert_error(make_client(plan).send_email(**overrides), 400, message)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"to": None}, "to must be an email"),
        ({"to": "not-an-address"}, "to must be an email"),
        ({"to": "a@b@c.com"}, "to must be an email"),
        ({"to": ["user@example.com"]}, "to must be an email"),
        ({"subject": None}, "subject is required"),
        ({"subject": 12}, "subject must be a string"),
        ({"subject": "   "}, "subject must not be empty"),
        ({"subject": "Hi\r\nBcc: victim@example.com"}, "subject must be a single line"),
        ({"subject": "s" * 999}, "subject must be at most 998 characters"),
        ({"body": None}, "body is required"),
        ({"body": {"html": "x"}}, "body must be a string"),
        ({"from": "nobody"}, "from must be an email"),
        ({"priority": 2}, "priority must be one of 1, 5, 10"),
    ],
)
def test_it_rejects_bad_input_with_the_field_message(free: Client, overrides: dict[str, Any], message: str) -> None:
    body = {"to": "user@example.com", "subject": "Welcome", "body": "Hello", **overrides}
    body = {key: value for key, value in body.items() if value is not None}

    assert_error(free.post("/api/v1/notifications/email", body), 400, message)
    assert free.account.jobs.count() == 0


def test_body_validation_comes_before_plan_rules(free: Client) -> None:
    response = free.send_email(to="nope", provider="RESEND", priority=1)

    assert_error(response, 400, "to must be an email")


def test_a_paid_email_stores_its_routing_and_priority(startup: Client) -> None:
    ready_to_send(startup, "POSTMARK", "RESEND")

    response = startup.send_email(provider="POSTMARK", fallback="RESEND", priority=1)

    assert response.status_code == 202
    job = Job.objects.get(id=response.json()["data"]["jobId"])
    assert (job.provider, job.fallback, job.priority) == ("POSTMARK", "RESEND", 1)

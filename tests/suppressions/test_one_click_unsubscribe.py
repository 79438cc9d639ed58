"""The issue's walk: an email sent through Postmark with a topic is unsubscribed by POSTing its header's URL as a
mail client does; the next email on that topic, routed to SendGrid, fails as suppressed without reaching it, and
transactional mail and other topics still go (docs/suppressions.md, "One-click unsubscribe")."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from django.test import Client as Browser

from notifications.models import Job, JobStatus
from suppressions.models import Suppression
from tests.conftest import Client, ready_to_send, wait_for_job
from tests.fakes.providers import FakePostmark, FakeSendGrid
from tests.suppressions.test_suppressed_sends import accepted

PUBLIC_URL = "https://notify.example.com"


def unsubscribe_header(message: dict[str, Any]) -> tuple[str, str]:
    """The two headers of the message Postmark received: the URL inside List-Unsubscribe's <>, and the POST body."""
    headers = {entry["Name"]: entry["Value"] for entry in message["Headers"]}
    return headers["List-Unsubscribe"].removeprefix("<").removesuffix(">"), headers["List-Unsubscribe-Post"]


@pytest.mark.usefixtures("worker")
def test_an_unsubscribe_posted_from_a_postmark_email_stops_the_topic_at_sendgrid_and_nothing_else(
    holder: Client, postmark: FakePostmark, sendgrid: FakeSendGrid, settings: Any
) -> None:
    settings.PUBLIC_URL = PUBLIC_URL
    ready_to_send(holder, "POSTMARK", "SENDGRID")
    first = accepted(holder.send_email(to="Ada@example.com", topic="weekly-digest", provider="POSTMARK"))
    assert wait_for_job(first).status == JobStatus.COMPLETED
    (message,) = postmark.sent
    url, one_click = unsubscribe_header(message.json)
    assert url.startswith(f"{PUBLIC_URL}/unsubscribe/")
    assert one_click == "List-Unsubscribe=One-Click"

    # As a mail client posts it (RFC 8058): the body the header names, no cookie, no CSRF token.
    posted = Browser(enforce_csrf_checks=True).post(
        urlsplit(url).path, one_click, content_type="application/x-www-form-urlencoded"
    )

    assert posted.status_code == 200
    assert list(Suppression.objects.values_list("email", "topic", "reason")) == [
        ("ada@example.com", "weekly-digest", "UNSUBSCRIBED")
    ]
    stopped = holder.send_email(to="ada@example.com", topic="weekly-digest", provider="SENDGRID")
    assert stopped.status_code == 202
    assert stopped.json()["data"]["status"] == "failed"
    job = Job.objects.get(id=stopped.json()["data"]["jobId"])
    assert (job.status, job.error_message) == (JobStatus.FAILED, "Recipient is on the suppression list (UNSUBSCRIBED)")
    shown = holder.get(f"/api/v1/notifications/jobs/{job.id}").json()["data"]
    assert [(log["usedProvider"], log["errorMessage"]) for log in shown["deliveryLogs"]] == [
        (None, "Recipient is on the suppression list (UNSUBSCRIBED)")
    ]

    transactional = accepted(holder.send_email(to="ada@example.com", provider="SENDGRID"))
    other_topic = accepted(holder.send_email(to="ada@example.com", topic="security-alerts", provider="SENDGRID"))

    assert wait_for_job(transactional).status == wait_for_job(other_topic).status == JobStatus.COMPLETED
    sent = {call.json.get("headers", {}).get("List-Unsubscribe-Post"): call.json for call in sendgrid.sent}
    assert len(sendgrid.sent) == 2
    assert set(sent) == {None, "List-Unsubscribe=One-Click"}  # the transactional email carries no unsubscribe
    assert sent["List-Unsubscribe=One-Click"]["headers"]["List-Unsubscribe"] != f"<{url}>"

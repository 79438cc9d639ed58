"""A rich email job's delivery (docs/rules.md, "Rich email"): what each provider's API receives for every field,
through the real delivery code and the fake provider servers, and what Django's file backend leaves in the outbox."""

from __future__ import annotations

import json
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from core.errors import PlatformSenderOnly, SenderOutsideDomain
from notifications.delivery.email import deliver_email
from notifications.models import Job, JobType
from notifications.routing import email_routing_check
from tests.conftest import Client, ready_to_send
from tests.factories import JobFactory
from tests.fakes.providers import FakePostmark, FakeResend, FakeSendGrid
from tests.providers_fixtures import POSTMARK_KEY

pytestmark = pytest.mark.django_db

# Every key of the contract; the suppressed cc is written in another case than its skippedRecipients entry.
RICH: dict[str, Any] = {
    "to": "user@example.com",
    "subject": "Your invoice",
    "body": "<p>Invoice <b>42</b></p>",
    "from": "Acme Billing <billing@example.com>",
    "cc": ["accounts@example.com", "Gone@Example.com"],
    "bcc": ["audit@example.com"],
    "replyTo": "Acme Support <support@example.com>",
    "text": "Invoice 42, as plain text",
    "headers": {"X-Entity-Ref-ID": "inv-42"},
    "tags": ["invoice", "billing"],
    "metadata": {"order_id": "42", "customer": "c-7"},
    "skippedRecipients": [{"email": "gone@example.com", "reason": "bounced"}],
}


def rich_job(client: Client, *, provider: str | None = None, **changes: Any) -> Job:
    job: Job = JobFactory(account=client.account, type=JobType.EMAIL, provider=provider, payload={**RICH, **changes})
    return job


def test_postmark_receives_every_field_with_one_tag_and_the_job_id_in_the_metadata(
    startup: Client, postmark: FakePostmark
) -> None:
    job = rich_job(ready_to_send(startup, "POSTMARK"))

    outcome = deliver_email(job, attempt=1)

    assert outcome.delivered
    (call,) = postmark.sent
    assert call.headers["X-Postmark-Server-Token"] == POSTMARK_KEY
    sent = call.json
    assert sent["From"] == "Acme Billing <billing@em.example.com>"
    assert (sent["To"], sent["Cc"], sent["Bcc"]) == ("user@example.com", "accounts@example.com", "audit@example.com")
    assert sent["ReplyTo"] == "Acme Support <support@example.com>"
    assert sent["Headers"] == [{"Name": "X-Entity-Ref-ID", "Value": "inv-42"}]
    assert sent["Tag"] == "invoice"
    assert sent["Metadata"] == {"job_id": str(job.id), "order_id": "42", "customer": "c-7"}
    assert (sent["TextBody"], sent["HtmlBody"]) == ("Invoice 42, as plain text", "<p>Invoice <b>42</b></p>")


def test_sendgrid_receives_every_field_with_the_tags_as_categories_and_the_metadata_as_custom_args(
    startup: Client, sendgrid: FakeSendGrid
) -> None:
    job = rich_job(ready_to_send(startup, "SENDGRID"))

    assert deliver_email(job, attempt=1).delivered

    sent = sendgrid.sent[0].json
    assert sent["from"] == {"email": "billing@em.example.com", "name": "Acme Billing"}
    (personalization,) = sent["personalizations"]
    assert personalization["to"] == [{"email": "user@example.com"}]
    assert personalization["cc"] == [{"email": "accounts@example.com"}]
    assert personalization["bcc"] == [{"email": "audit@example.com"}]
    # anymail sends reply_to_list, which takes one address or several.
    assert sent["reply_to_list"] == [{"email": "support@example.com", "name": "Acme Support"}]
    assert "reply_to" not in sent
    assert sent["headers"] == {"X-Entity-Ref-ID": "inv-42"}
    assert sent["categories"] == ["invoice", "billing"]
    assert sent["custom_args"] == {"order_id": "42", "customer": "c-7", "job_id": str(job.id)}
    assert sent["content"] == [
        {"type": "text/plain", "value": "Invoice 42, as plain text"},
        {"type": "text/html", "value": "<p>Invoice <b>42</b></p>"},
    ]


def test_resend_receives_every_field_with_the_tags_and_metadata_as_json_headers(
    startup: Client, resend: FakeResend
) -> None:
    job = rich_job(ready_to_send(startup, "RESEND"))

    assert deliver_email(job, attempt=1).delivered

    sent = resend.sent[0].json
    assert sent["from"] == "Acme Billing <billing@em.example.com>"
    assert (sent["to"], sent["cc"], sent["bcc"]) == (
        ["user@example.com"],
        ["accounts@example.com"],
        ["audit@example.com"],
    )
    assert sent["reply_to"] == ["Acme Support <support@example.com>"]
    # Resend's own tags take a narrow character set, so anymail carries tags and metadata as JSON headers.
    assert "tags" not in sent
    headers = sent["headers"]
    assert headers["X-Entity-Ref-ID"] == "inv-42"
    assert json.loads(headers["X-Tags"]) == ["invoice", "billing"]
    assert json.loads(headers["X-Metadata"]) == {"order_id": "42", "customer": "c-7", "job_id": str(job.id)}
    assert (sent["text"], sent["html"]) == ("Invoice 42, as plain text", "<p>Invoice <b>42</b></p>")


def test_resend_leaves_out_a_clients_own_tags_and_metadata_headers_and_others_keep_them(
    startup: Client, resend: FakeResend, postmark: FakePostmark
) -> None:
    headers = {"x-metadata": '{"job_id": "another"}', "X-Tags": "[]", "X-Entity-Ref-ID": "inv-42"}
    ready_to_send(startup, "RESEND", "POSTMARK")
    job = rich_job(startup, headers=headers)
    postmark_job = rich_job(startup, provider="POSTMARK", headers=headers)

    assert deliver_email(job, attempt=1).delivered
    assert deliver_email(postmark_job, attempt=1).delivered

    sent = resend.sent[0].json["headers"]
    assert set(sent) == {"X-Entity-Ref-ID", "X-Tags", "X-Metadata"}
    assert json.loads(sent["X-Metadata"])["job_id"] == str(job.id)
    assert json.loads(sent["X-Tags"]) == ["invoice", "billing"]
    assert postmark.sent[0].json["Headers"] == [{"Name": name, "Value": value} for name, value in headers.items()]


def test_a_plain_email_sends_none_of_the_rich_fields(startup: Client, postmark: FakePostmark) -> None:
    job = JobFactory(account=ready_to_send(startup, "POSTMARK").account, type=JobType.EMAIL)

    assert deliver_email(job, attempt=1).delivered

    sent = postmark.sent[0].json
    assert set(sent) == {"From", "To", "Subject", "TextBody", "HtmlBody", "Metadata"}
    assert (sent["TextBody"], sent["Metadata"]) == ("Hello", {"job_id": str(job.id)})


def test_a_reply_to_list_and_fully_suppressed_bcc_go_out_as_such(startup: Client, postmark: FakePostmark) -> None:
    job = rich_job(
        ready_to_send(startup, "POSTMARK"),
        replyTo=["support@example.com", "Sales <sales@example.com>"],
        skippedRecipients=[{"email": "AUDIT@example.com", "reason": "complained"}],
    )

    assert deliver_email(job, attempt=1).delivered

    sent = postmark.sent[0].json
    assert sent["ReplyTo"] == "support@example.com, Sales <sales@example.com>"
    assert sent["Cc"] == "accounts@example.com, Gone@Example.com"
    assert "Bcc" not in sent


def test_postmark_keeps_the_job_id_and_the_metadata_it_takes_and_sendgrid_all_of_it(
    startup: Client, postmark: FakePostmark, sendgrid: FakeSendGrid
) -> None:
    # Postmark: at most 10 fields, names up to 20 characters and unique without case, values up to 80.
    metadata = {
        "order": "1",
        "twenty_characters_ok": "kept",
        "twenty_one_characters": "left out: its name is too long",
        "long_value": "v" * 81,
        "ORDER": "left out: order is kept already",
        **{f"k{n}": str(n) for n in range(10)},
    }
    ready_to_send(startup, "POSTMARK", "SENDGRID")
    job = rich_job(startup, metadata=metadata)
    sendgrid_job = rich_job(startup, provider="SENDGRID", metadata=metadata)

    assert deliver_email(job, attempt=1).delivered
    assert deliver_email(sendgrid_job, attempt=1).delivered

    assert postmark.sent[0].json["Metadata"] == {
        "job_id": str(job.id),
        "order": "1",
        "twenty_characters_ok": "kept",
        **{f"k{n}": str(n) for n in range(7)},
    }
    assert sendgrid.sent[0].json["custom_args"] == {**metadata, "job_id": str(sendgrid_job.id)}


def test_sendgrid_keeps_the_job_id_and_the_metadata_that_fits_in_its_10000_bytes(
    startup: Client, sendgrid: FakeSendGrid
) -> None:
    # Each value 500 characters of 4 bytes in UTF-8: four fit beside job_id and anymail's own id, the fifth not.
    metadata = {f"key{n}": "😀" * 500 for n in range(6)}
    job = rich_job(ready_to_send(startup, "SENDGRID"), metadata=metadata)

    assert deliver_email(job, attempt=1).delivered

    sent = sendgrid.sent[0].json
    assert sent["custom_args"] == {"job_id": str(job.id), **{f"key{n}": "😀" * 500 for n in range(4)}}
    assert set(sent["personalizations"][0]["custom_args"]) == {"anymail_id"}


def test_the_next_provider_after_a_5xx_receives_every_field(
    startup: Client, sendgrid: FakeSendGrid, postmark: FakePostmark
) -> None:
    job = rich_job(ready_to_send(startup, "SENDGRID", "POSTMARK"))
    sendgrid.fail(503)

    outcome = deliver_email(job, attempt=1)

    assert (outcome.delivered, outcome.used_provider) == (True, "POSTMARK")
    assert sendgrid.sent == []
    sent = postmark.sent[0].json
    assert (sent["Cc"], sent["Bcc"], sent["ReplyTo"]) == (
        "accounts@example.com",
        "audit@example.com",
        "Acme Support <support@example.com>",
    )
    assert (sent["Tag"], sent["TextBody"]) == ("invoice", "Invoice 42, as plain text")
    assert sent["Headers"] == [{"Name": "X-Entity-Ref-ID", "Value": "inv-42"}]
    assert sent["Metadata"] == {"job_id": str(job.id), "order_id": "42", "customer": "c-7"}


def test_a_provider_refusing_the_rich_message_is_a_failed_attempt_with_its_message(
    startup: Client, postmark: FakePostmark
) -> None:
    # Stored past the API's own limit of 50 recipients, so only Postmark's refusal stands in the way.
    job = rich_job(ready_to_send(startup, "POSTMARK"), cc=[f"cc{n}@example.com" for n in range(51)])

    outcome = deliver_email(job, attempt=1)

    assert (outcome.delivered, outcome.used_provider) == (False, "POSTMARK")
    assert outcome.error_message == "POSTMARK: 422 Too many Cc recipients: at most 50 are allowed."
    assert postmark.sent == []
    assert len(postmark.calls) == 1


def test_a_free_email_through_a_platform_provider_carries_every_field(
    free: Client, resend: FakeResend, settings: Any
) -> None:
    settings.PLATFORM_PROVIDERS = ["RESEND"]
    settings.PLATFORM_PROVIDER_KEYS = {"RESEND": "resend-key"}
    job = rich_job(free, **{"from": "Acme Alerts <noreply@notifyhub.local>"})

    assert deliver_email(job, attempt=1).delivered

    sent = resend.sent[0].json
    assert sent["from"] == "Acme Alerts <noreply@notifyhub.local>"
    assert (sent["cc"], sent["bcc"]) == (["accounts@example.com"], ["audit@example.com"])
    assert sent["reply_to"] == ["Acme Support <support@example.com>"]
    assert sent["text"] == "Invoice 42, as plain text"
    assert sent["headers"]["X-Entity-Ref-ID"] == "inv-42"
    assert json.loads(sent["headers"]["X-Tags"]) == ["invoice", "billing"]
    assert json.loads(sent["headers"]["X-Metadata"])["job_id"] == str(job.id)


def outbox_message(outbox: Path) -> Message:
    (written,) = outbox.iterdir()
    # Django's file backend ends each message with a line of dashes.
    content = written.read_bytes().rsplit(b"\n" + b"-" * 79, 1)[0]
    return message_from_bytes(content)


def test_the_local_file_backend_writes_every_field_into_the_outbox_message(
    free: Client, settings: Any, tmp_path: Path
) -> None:
    settings.PLATFORM_PROVIDERS = []
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path)
    job = rich_job(free, **{"from": "Acme Alerts <noreply@notifyhub.local>"})

    assert deliver_email(job, attempt=1).delivered

    message = outbox_message(tmp_path)
    assert message["From"] == "Acme Alerts <noreply@notifyhub.local>"
    assert message["Cc"] == "accounts@example.com"
    # As Django sends it: a Bcc address is a recipient, never a header.
    assert "Bcc" not in message
    assert message["Reply-To"] == "Acme Support <support@example.com>"
    assert message["X-Entity-Ref-ID"] == "inv-42"
    assert json.loads(message["X-Tags"]) == ["invoice", "billing"]
    assert json.loads(message["X-Metadata"]) == {"order_id": "42", "customer": "c-7", "job_id": str(job.id)}
    text, html = (part.get_payload(decode=True).decode() for part in message.get_payload())
    assert (text, html) == ("Invoice 42, as plain text", "<p>Invoice <b>42</b></p>")


def check_sender(client: Client, sender: str) -> None:
    email_routing_check(account=client.account, sender=sender, priority=None, provider=None, fallback=None)


def test_a_display_name_sender_is_judged_by_its_address_at_accept(startup: Client, free: Client) -> None:
    ready_to_send(startup, "SENDGRID")

    check_sender(free, "Acme Alerts <noreply@notifyhub.local>")
    check_sender(startup, "Acme Billing <billing@example.com>")
    with pytest.raises(PlatformSenderOnly) as free_refusal:
        check_sender(free, "Acme Alerts <alerts@acme.com>")
    with pytest.raises(SenderOutsideDomain) as paid_refusal:
        check_sender(startup, "Acme Billing <billing@acme.com>")

    assert free_refusal.value.message == ("Cannot send from alerts@acme.com. Only noreply@notifyhub.local is allowed.")
    assert (
        paid_refusal.value.message == "Cannot send from billing@acme.com. Use your verified domain example.com instead."
    )

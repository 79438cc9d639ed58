"""Rich email at accept: cc, bcc, replyTo, text, headers, tags and metadata, a display name on from and replyTo, the
whole message's recipient rules, and a suppressed cc or bcc left out (docs/rules.md, "Rich email")."""

from __future__ import annotations

import re
from dataclasses import replace
from email.utils import getaddresses
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given, settings
from hypothesis import strategies as st

from accounts.models import KeyScope
from accounts.services import api_key_create
from core.api.fields import NAMED_ADDRESS_SCHEMA, MailboxField
from core.mailbox import display_name_text, mailbox_parse
from notifications.models import Job
from notifications.routing import email_route
from suppressions.models import Suppression, SuppressionReason
from tests.api.test_envelope import assert_error
from tests.conftest import EMAIL, Client, ready_to_send
from tests.notifications.test_test_mode import with_test_key

JOBS = "/api/v1/notifications/jobs"
EMAIL_BATCH = "/api/v1/notifications/email/batch"
RICH: dict[str, Any] = {
    "cc": ["Ann@example.com", "bob@example.com"],
    "bcc": ["audit@example.com"],
    "replyTo": ["Support <support@example.com>", '"Acme, Inc." <help@example.com>'],
    "text": "Hello\nin plain text",
    "headers": {"X-Entity-Ref-ID": "order-42", "In-Reply-To": "<a1@example.com>"},
    "tags": ["welcome", "onboarding_v2"],
    "metadata": {"order_id": "42", "customer-tier": ""},
}
TAG_RULE = "must be 1 to 64 of A-Z, a-z, 0-9, _ and -"
NAMED_RULE = 'must be an email, or a name and an email as "Name <email>"; quote a name holding , ; : @ ( ) [ ]'


def _addresses(count: int) -> list[str]:
    return [f"reader{n}@example.com" for n in range(count)]


def _stored(response: Any) -> Job:
    assert response.status_code == 202, response.json()
    return Job.objects.get(id=response.json()["data"]["jobId"])


def test_a_rich_email_is_stored_with_each_field_as_sent(free: Client) -> None:
    job = _stored(free.send_email(**RICH))

    assert job.payload == {**EMAIL, **RICH}
    assert list(job.payload) == ["to", "subject", "body", *RICH]
    # What its events carry, beside the payload (docs/event-endpoints.md).
    assert job.labels == {"tags": RICH["tags"], "metadata": RICH["metadata"]}


def test_a_plain_email_stores_none_of_the_rich_keys(free: Client) -> None:
    job = _stored(free.send_email())

    assert (job.payload, job.labels) == (EMAIL, None)


@pytest.mark.parametrize(
    "fields",
    [
        {"replyTo": "support@example.com"},
        {"replyTo": "J. Smith <j.smith@example.com>"},
        {"replyTo": _addresses(5)},
        {"cc": [], "bcc": [], "tags": [], "headers": {}, "metadata": {}},
        {"cc": _addresses(49)},
        {"cc": _addresses(20), "bcc": [f"hidden{n}@example.com" for n in range(29)]},
        {"tags": ["t" * 64, *(f"tag-{n}" for n in range(9))]},
        {"metadata": {f"k{n}": "v" * 500 for n in range(20)}},
        {"headers": {f"X-H{n}": "v" * 998 for n in range(50)}},
        {"headers": {"x-mailer": "Acme café", "X-Empty": ""}},
        {"text": "t" * 262_144},
    ],
)
def test_what_each_field_allows_is_accepted_and_stored(free: Client, fields: dict[str, Any]) -> None:
    assert _stored(free.send_email(**fields)).payload == {**EMAIL, **fields}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"cc": "ann@example.com"}, "cc must be a list of email addresses"),
        ({"cc": None}, "cc must be a list of email addresses"),
        ({"cc": ["ann@example.com", "nope"]}, "cc[1] must be an email"),
        ({"cc": [42]}, "cc[0] must be an email"),
        ({"cc": ["Ann <ann@example.com>"]}, "cc[0] must be an email"),
        ({"bcc": {"a": "ann@example.com"}}, "bcc must be a list of email addresses"),
        ({"bcc": ["ann@localhost"]}, "bcc[0] must be an email"),
        ({"cc": _addresses(50)}, "A message may have at most 50 recipients"),
        (
            {"cc": _addresses(25), "bcc": [f"b{n}@example.com" for n in range(25)]},
            "A message may have at most 50 recipients",
        ),
        ({"cc": ["ann@example.com", "ANN@example.com"]}, "cc[1] repeats the recipient ANN@example.com"),
        ({"cc": ["User@Example.com"]}, "cc[0] repeats the recipient User@Example.com"),
        ({"cc": ["ann@example.com"], "bcc": ["Ann@Example.COM"]}, "bcc[0] repeats the recipient Ann@Example.COM"),
        ({"replyTo": []}, "replyTo must be an email or a list of 1 to 5 emails"),
        ({"replyTo": _addresses(6)}, "replyTo must be an email or a list of 1 to 5 emails"),
        ({"replyTo": 7}, "replyTo must be an email or a list of 1 to 5 emails"),
        ({"replyTo": None}, "replyTo must be an email or a list of 1 to 5 emails"),
        ({"text": None}, "text must be a string"),
        ({"tags": None}, "tags must be a list of strings"),
        ({"headers": None}, "headers must be an object of string values"),
        ({"replyTo": "nope"}, "replyTo must be an email"),
        ({"replyTo": ["a@example.com", None]}, "replyTo[1] must be an email"),
        ({"replyTo": ["a@example.com", "Acme, Inc <b@example.com>"]}, f"replyTo[1] {NAMED_RULE}"),
        ({"replyTo": f"{'n' * 201} <a@example.com>"}, "replyTo's display name must be at most 200 characters"),
        ({"replyTo": ["Ann\r\nBcc: x@evil.com <a@example.com>"]}, "replyTo[0]'s display name must be a single line"),
        ({"text": ""}, "text must not be empty"),
        ({"text": ["a"]}, "text must be a string"),
        ({"text": "t" * 262_145}, "text must be at most 262144 characters"),
        ({"text": "a\x00b"}, "text must not contain NUL characters"),
        ({"headers": ["X-A"]}, "headers must be an object of string values"),
        ({"headers": {f"X-H{n}": "v" for n in range(51)}}, "headers must have at most 50 entries"),
        ({"headers": {"X Ref": "1"}}, "headers has an invalid header name: 'X Ref'"),
        ({"headers": {"X-Ref:": "1"}}, "headers has an invalid header name: 'X-Ref:'"),
        ({"headers": {"X-Zoë": "1"}}, "headers has an invalid header name: 'X-Zoë'"),
        ({"headers": {"rEPLY-tO": "a@example.com"}}, "headers may not set Reply-To"),
        (
            {"headers": {"list-unsubscribe-post": "List-Unsubscribe=One-Click"}},
            "headers may not set List-Unsubscribe-Post",
        ),
        ({"headers": {"X-Ref": 1}}, "headers.X-Ref must be a string"),
        ({"headers": {"X-Ref": "a\r\nBcc: x@evil.com"}}, "headers.X-Ref must be a single line"),
        ({"headers": {"X-Ref": "a\nb"}}, "headers.X-Ref must be a single line"),
        ({"headers": {"X-Ref": "a\x00b"}}, "headers.X-Ref must not contain NUL characters"),
        ({"headers": {"X-Ref": "v" * 999}}, "headers.X-Ref must be at most 998 characters"),
        ({"tags": "welcome"}, "tags must be a list of strings"),
        ({"tags": [f"t{n}" for n in range(11)]}, "tags must hold at most 10 tags"),
        ({"tags": ["good", "bad tag"]}, f"tags[1] {TAG_RULE}"),
        ({"tags": [""]}, f"tags[0] {TAG_RULE}"),
        ({"tags": ["t" * 65]}, f"tags[0] {TAG_RULE}"),
        ({"tags": [3]}, f"tags[0] {TAG_RULE}"),
        ({"metadata": "order=42"}, "metadata must be an object of string values"),
        ({"metadata": {f"k{n}": "v" for n in range(21)}}, "metadata must have at most 20 entries"),
        ({"metadata": {"job_id": "mine"}}, "metadata may not set job_id"),
        ({"metadata": {"order id": "42"}}, "metadata keys must be 1 to 40 of A-Z, a-z, 0-9, _ and -, not 'order id'"),
        ({"metadata": {"k" * 41: "42"}}, f"metadata keys must be 1 to 40 of A-Z, a-z, 0-9, _ and -, not '{'k' * 41}'"),
        ({"metadata": {"order": 42}}, "metadata.order must be a string"),
        ({"metadata": {"order": "v" * 501}}, "metadata.order must be at most 500 characters"),
        ({"metadata": {"order": "\x00"}}, "metadata.order must not contain NUL characters"),
    ],
)
def test_each_fields_wrong_type_size_or_shape_is_refused_with_its_message(
    free: Client, fields: dict[str, Any], message: str
) -> None:
    assert_error(free.send_email(**fields), 400, message, "validation_failed")
    assert_error(with_test_key(free).send_email(**fields), 400, message, "validation_failed")
    assert not Job.objects.exists()


def test_the_fields_are_checked_in_order_then_the_whole_message_then_the_routing_pair(startup: Client) -> None:
    everything_wrong = {"cc": ["x"], "bcc": ["y"], "replyTo": 1, "text": 1, "headers": 1, "tags": 1, "metadata": 1}
    order = ["cc[0] must be an email", "bcc[0] must be an email", "replyTo must be an email or a list of 1 to 5 emails"]
    order += ["text must be a string", "headers must be an object of string values", "tags must be a list of strings"]
    order += ["metadata must be an object of string values"]
    for name, message in zip(list(everything_wrong), order, strict=True):
        assert_error(startup.send_email(**everything_wrong), 400, message)
        del everything_wrong[name]

    assert_error(startup.send_email(sendAt="soon", cc=["x"]), 400, "sendAt must be an ISO 8601 date-time")
    repeated = {"cc": ["user@example.com"], "fallback": "RESEND"}
    assert_error(startup.send_email(**repeated), 400, "cc[0] repeats the recipient user@example.com")


@pytest.mark.parametrize(
    ("sender", "message"),
    [
        (f"{'n' * 201} <noreply@notifyhub.local>", "from's display name must be at most 200 characters"),
        ("Acme\nBilling <noreply@notifyhub.local>", "from's display name must be a single line"),
        ("Acme <noreply@localhost>", "from must be an email"),
        ("Acme <noreply@notifyhub.local", "from must be an email"),
        ("<noreply@notifyhub.local>", f"from {NAMED_RULE}"),
        ("Acme <noreply@notifyhub.local>, Evil <x@evil.com>", f"from {NAMED_RULE}"),
        ("Acme (Billing) <noreply@notifyhub.local>", f"from {NAMED_RULE}"),
        ('"" <noreply@notifyhub.local>', f"from {NAMED_RULE}"),
        (f"Acme <{'a' * 450}@notifyhub.local>", "from must be an email"),
    ],
)
def test_a_display_name_that_is_not_one_line_of_200_before_one_address_is_refused(
    free: Client, sender: str, message: str
) -> None:
    assert_error(free.send_email(**{"from": sender}), 400, message, "validation_failed")


@pytest.mark.parametrize(
    "sender",
    [
        "NotifyHub <noreply@notifyhub.local>",
        '"Acme, Billing" <NoReply@notifyhub.local>',
        f"{'n' * 200}<noreply@notifyhub.local>",
    ],
)
def test_the_free_plans_sender_may_carry_a_display_name_kept_as_sent(free: Client, sender: str) -> None:
    assert _stored(free.send_email(**{"from": sender})).payload["from"] == sender


def test_the_free_plan_judges_the_address_inside_a_display_name(free: Client) -> None:
    response = free.send_email(**{"from": "NotifyHub <me@mycompany.com>"})

    assert_error(response, 400, "Cannot send from me@mycompany.com. Only noreply@notifyhub.local is allowed.")


@pytest.mark.parametrize("sender", ["Acme Billing <billing@example.com>", "Acme <news@em.example.com>"])
def test_a_paid_sender_with_a_display_name_on_the_verified_domain_is_accepted_as_sent(
    startup: Client, sender: str
) -> None:
    ready_to_send(startup)

    assert _stored(startup.send_email(**{"from": sender})).payload["from"] == sender


def test_a_paid_sender_with_a_display_name_on_another_domain_is_refused_by_its_address(startup: Client) -> None:
    ready_to_send(startup)

    response = startup.send_email(**{"from": "Example Billing <billing@example.com.evil.net>"})

    assert_error(
        response, 400, "Cannot send from billing@example.com.evil.net. Use your verified domain example.com instead."
    )


def test_the_paid_route_sends_from_the_sending_subdomain_with_the_name_as_given(startup: Client) -> None:
    ready_to_send(startup)

    job = _stored(startup.send_email(**{"from": '"Acme, Billing" <Billing@Example.com>'}))

    assert email_route(job).sender == '"Acme, Billing" <Billing@em.example.com>'


def _suppress(client: Client, reasons: dict[str, str]) -> None:
    for email, reason in reasons.items():
        Suppression.objects.create(account=client.account, email=email, reason=reason)


def test_a_suppressed_cc_or_bcc_is_skipped_in_one_query_and_shown_by_get_job_status(
    free: Client,
) -> None:
    _suppress(free, {"ann@example.com": SuppressionReason.HARD_BOUNCE, "audit@example.com": SuppressionReason.MANUAL})

    job = _stored(free.send_email(**RICH))

    skipped = [
        {"email": "Ann@example.com", "reason": "HARD_BOUNCE"},
        {"email": "audit@example.com", "reason": "MANUAL"},
    ]
    assert (job.status, job.payload["skippedRecipients"]) == ("pending", skipped)
    status = free.get(f"{JOBS}/{job.id}").json()["data"]
    assert status["skippedRecipients"] == skipped
    assert status["payload"] == {**EMAIL, **RICH}


def test_a_read_key_sees_the_skipped_recipients_beside_the_payload_too(free: Client) -> None:
    _suppress(free, {"bob@example.com": SuppressionReason.MANUAL})
    job = _stored(free.send_email(**RICH))
    reader = replace(free, api_key=api_key_create(account=free.account, name="Reader", scope=KeyScope.READ))

    status = reader.get(f"{JOBS}/{job.id}").json()["data"]

    assert status["skippedRecipients"] == [{"email": "bob@example.com", "reason": "MANUAL"}]
    assert "skippedRecipients" not in status["payload"]


def test_one_query_reads_the_suppressions_of_every_recipient(free: Client) -> None:
    with CaptureQueriesContext(connection) as queries:
        _stored(free.send_email(cc=_addresses(30), bcc=["x@example.com"]))

    assert len([query for query in queries if "suppression" in query["sql"]]) == 1


def test_a_suppressed_to_fails_the_job_as_before_whatever_its_cc(free: Client) -> None:
    _suppress(free, {"user@example.com": SuppressionReason.SPAM_REPORT})

    job = _stored(free.send_email(cc=["ann@example.com"]))

    assert (job.status, job.error_message) == ("failed", "Recipient is on the suppression list (SPAM_REPORT)")
    assert "skippedRecipients" not in job.payload


def test_get_job_status_shows_no_skipped_recipients_as_an_empty_list_and_none_on_a_webhook(free: Client) -> None:
    email = _stored(free.send_email(cc=["ann@example.com"]))
    webhook = _stored(free.send_webhook())

    assert free.get(f"{JOBS}/{email.id}").json()["data"]["skippedRecipients"] == []
    assert "skippedRecipients" not in free.get(f"{JOBS}/{webhook.id}").json()["data"]
    assert "skippedRecipients" not in email.payload


def test_a_batch_skips_each_items_suppressed_cc_and_refuses_a_bad_one_in_its_slot(
    free: Client,
) -> None:
    _suppress(free, {"ann@example.com": SuppressionReason.UNSUBSCRIBED, "gone@example.com": SuppressionReason.MANUAL})
    items = [
        {**EMAIL, "cc": ["Ann@Example.com", "bob@example.com"]},
        {**EMAIL, "headers": {"Bcc": "x@evil.com"}},
        {**EMAIL, "to": "gone@example.com", "bcc": ["ann@example.com"]},
        {**EMAIL, "tags": ["ok"]},
    ]

    response = free.post(EMAIL_BATCH, {"items": items})

    assert response.status_code == 202
    slots = response.json()["data"]["items"]
    assert slots[1] == {"status": 400, "error": "headers may not set Bcc", "code": "validation_failed"}
    first, suppressed, plain = (Job.objects.get(id=slots[n]["jobId"]) for n in (0, 2, 3))
    assert first.payload["skippedRecipients"] == [{"email": "Ann@Example.com", "reason": "UNSUBSCRIBED"}]
    assert (suppressed.status, suppressed.error_message) == ("failed", "Recipient is on the suppression list (MANUAL)")
    assert "skippedRecipients" not in suppressed.payload
    assert plain.payload == {**EMAIL, "tags": ["ok"]}


def test_a_batch_reads_the_suppressions_of_all_its_items_recipients_at_once(free: Client) -> None:
    items = [{**EMAIL, "cc": [f"c{n}@example.com"], "bcc": [f"b{n}@example.com"]} for n in range(5)]
    with CaptureQueriesContext(connection) as queries:
        assert free.post(EMAIL_BATCH, {"items": items}).status_code == 202

    assert len([query for query in queries if "suppression" in query["sql"]]) == 1


def test_a_test_key_stores_the_rich_fields_as_a_live_key_does(free: Client) -> None:
    job = _stored(with_test_key(free).send_email(**RICH))

    assert (job.test, job.payload) == (True, {**EMAIL, **RICH})


# Display names the document's pattern allows are ones the field takes, and ones every email parser reads as one
# address with the same name.
@settings(max_examples=200, deadline=None)
@given(value=st.from_regex(NAMED_ADDRESS_SCHEMA["pattern"]))
def test_a_named_address_the_document_allows_is_taken_and_parsed_as_one_address(value: str) -> None:
    MailboxField().run_validation(value)

    mailbox = mailbox_parse(value)
    assert mailbox.name is not None
    quoted = mailbox.name.startswith('"')
    # A parser reads the spaces of a phrase as one, and a quoted name as it is.
    name = display_name_text(mailbox.name) if quoted else re.sub(" +", " ", mailbox.name)
    assert getaddresses([value]) == [(name, mailbox.address)]

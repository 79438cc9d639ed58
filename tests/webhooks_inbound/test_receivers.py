"""The provider-event receivers: each mapping row, each way a request is refused, replays, other accounts."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Account
from tests.conftest import Client
from tests.fakes.events import Delivery, PostmarkEvents, ResendEvents, SendGridEvents
from tests.webhooks_inbound.conftest import SentEmail, post_events
from webhooks_inbound.events import sendgrid_send_ids
from webhooks_inbound.models import EmailEvent
from webhooks_inbound.services import postmark_password_generate

STALE = "The signature timestamp is missing or more than 5 minutes old"


def stored(account: Account) -> list[tuple[str, str, str, str]]:
    return [
        (event.provider, event.type, event.recipient, str(event.job_id))
        for event in EmailEvent.objects.filter(account=account).order_by("received_at", "id")
    ]


def refused(response: Any, status: int, message: str) -> None:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["success"] is False
    assert body["error"] == message


# --- mapping -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record_type", "fields", "expected"),
    [
        ("Delivery", {}, "DELIVERED"),
        ("Open", {"FirstOpen": True}, "OPENED"),
        ("Click", {"OriginalLink": "https://example.com/a"}, "CLICKED"),
        ("Bounce", {"Type": "HardBounce"}, "BOUNCED"),
        ("Bounce", {"Type": "BadEmailAddress"}, "BOUNCED"),
        ("Bounce", {"Type": "Transient"}, "DEFERRED"),
        ("Bounce", {"Type": "SoftBounce"}, "DEFERRED"),
        ("Bounce", {"Type": "DnsError"}, "DEFERRED"),
        ("SpamComplaint", {}, "SPAM_REPORT"),
        ("SubscriptionChange", {"SuppressionReason": "ManualSuppression"}, "UNSUBSCRIBED"),
        ("SubscriptionChange", {"SuppressionReason": "HardBounce"}, "UNSUBSCRIBED"),
    ],
)
def test_postmark_record_types_map_to_event_types(
    holder: Client,
    sent_email: SentEmail,
    postmark_events: PostmarkEvents,
    record_type: str,
    fields: dict[str, Any],
    expected: str,
) -> None:
    job, message_id = sent_email(holder.account, "POSTMARK")
    at = datetime(2026, 11, 20, 9, 30, 15, 123000, tzinfo=UTC)
    event = postmark_events.event(record_type, message_id=message_id, recipient="ada@example.com", at=at, **fields)

    response = post_events("postmark", holder.account, postmark_events.deliver(event))

    assert response.status_code == 200, response.content
    assert response.json()["data"] == {"received": 1, "stored": 1, "duplicates": 0, "unmatched": 0, "ignored": 0}
    (row,) = EmailEvent.objects.filter(account=holder.account)
    assert (row.provider, row.type, row.recipient, row.job_id) == ("POSTMARK", expected, "ada@example.com", job.id)
    assert row.occurred_at == at
    assert json.loads(row.payload) == event


@pytest.mark.parametrize(
    ("kind", "fields", "expected"),
    [
        ("delivered", {"response": "250 OK"}, "DELIVERED"),
        ("open", {"useragent": "Mozilla/5.0"}, "OPENED"),
        ("click", {"url": "https://example.com/a"}, "CLICKED"),
        ("bounce", {"type": "bounce", "reason": "550 5.1.1 unknown user"}, "BOUNCED"),
        ("bounce", {"type": "blocked", "reason": "421 try again later"}, "DEFERRED"),
        ("dropped", {"reason": "Bounced Address"}, "BOUNCED"),
        ("spamreport", {}, "SPAM_REPORT"),
        ("unsubscribe", {}, "UNSUBSCRIBED"),
        ("group_unsubscribe", {"asm_group_id": 7}, "UNSUBSCRIBED"),
        ("deferred", {"attempt": "2", "response": "400 try again"}, "DEFERRED"),
    ],
)
def test_sendgrid_events_map_to_event_types(
    holder: Client,
    sent_email: SentEmail,
    sendgrid_events: SendGridEvents,
    kind: str,
    fields: dict[str, Any],
    expected: str,
) -> None:
    job, message_id = sent_email(holder.account, "SENDGRID")
    event = sendgrid_events.event(kind, anymail_id=message_id, email="ada@example.com", timestamp=1795000000, **fields)

    response = post_events("sendgrid", holder.account, sendgrid_events.batch([event]))

    assert response.status_code == 200, response.content
    (row,) = EmailEvent.objects.filter(account=holder.account)
    assert (row.provider, row.type, row.recipient, row.job_id) == ("SENDGRID", expected, "ada@example.com", job.id)
    assert row.occurred_at == datetime.fromtimestamp(1795000000, tz=UTC)
    assert row.provider_event_id == event["sg_event_id"]


@pytest.mark.parametrize(
    ("kind", "data", "expected"),
    [
        ("email.delivered", {}, "DELIVERED"),
        ("email.opened", {}, "OPENED"),
        ("email.clicked", {"click": {"link": "https://example.com/a", "userAgent": "Mozilla/5.0"}}, "CLICKED"),
        ("email.bounced", {"bounce": {"message": "hard bounce message", "type": "Permanent"}}, "BOUNCED"),
        ("email.bounced", {"bounce": {"message": "mailbox full, bounce message", "type": "Transient"}}, "DEFERRED"),
        ("email.complained", {}, "SPAM_REPORT"),
        ("email.delivery_delayed", {}, "DEFERRED"),
    ],
)
def test_resend_events_map_to_event_types(
    holder: Client,
    sent_email: SentEmail,
    resend_events: ResendEvents,
    kind: str,
    data: dict[str, Any],
    expected: str,
) -> None:
    job, message_id = sent_email(holder.account, "RESEND")
    delivery = resend_events.deliver(resend_events.event(kind, email_id=message_id, to="ada@example.com", **data))

    response = post_events("resend", holder.account, delivery)

    assert response.status_code == 200, response.content
    (row,) = EmailEvent.objects.filter(account=holder.account)
    assert (row.provider, row.type, row.recipient, row.job_id) == ("RESEND", expected, "ada@example.com", job.id)
    assert row.provider_event_id == delivery.headers["svix-id"]


def test_events_notifyhub_does_not_track_are_acknowledged_and_not_stored(
    holder: Client,
    sent_email: SentEmail,
    postmark_events: PostmarkEvents,
    sendgrid_events: SendGridEvents,
    resend_events: ResendEvents,
) -> None:
    _, message_id = sent_email(holder.account)
    resubscribed = postmark_events.event("SubscriptionChange", message_id=message_id, SuppressSending=False)
    unknown_record = postmark_events.event("Delivery", message_id=message_id, RecordType="LinkTracking")
    sendgrid_batch = [sendgrid_events.event(kind, anymail_id=message_id) for kind in ("processed", "group_resubscribe")]

    answers = [
        post_events("postmark", holder.account, postmark_events.deliver(resubscribed)),
        post_events("postmark", holder.account, postmark_events.deliver(unknown_record)),
        post_events("sendgrid", holder.account, sendgrid_events.batch(sendgrid_batch)),
        post_events("resend", holder.account, resend_events.deliver(resend_events.event("email.sent", email_id="x"))),
    ]

    assert [(answer.status_code, answer.json()["data"]["ignored"]) for answer in answers] == [
        (200, 1),
        (200, 1),
        (200, 2),
        (200, 1),
    ]
    assert stored(holder.account) == []


# --- linking events to jobs ----------------------------------------------------------------


def test_an_event_finds_its_job_by_the_job_id_in_its_metadata(
    holder: Client, sent_email: SentEmail, postmark_events: PostmarkEvents
) -> None:
    job, _ = sent_email(holder.account)
    event = postmark_events.event("Delivery", message_id="not-recorded", metadata={"job_id": str(job.id)})

    response = post_events("postmark", holder.account, postmark_events.deliver(event))

    assert response.json()["data"]["stored"] == 1
    assert stored(holder.account) == [("POSTMARK", "DELIVERED", "user@example.com", str(job.id))]


@pytest.mark.parametrize(
    ("sent_as", "sg_message_id"),
    [
        ("14c5d75ce93.dfd.64b469", "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0"),
        ("Ow7Hm8WLQWqxAH-gB6OB2g", "Ow7Hm8WLQWqxAH-gB6OB2g.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0"),
    ],
)
def test_a_sendgrid_event_finds_its_job_by_the_x_message_id_its_sg_message_id_begins_with(
    holder: Client, sent_email: SentEmail, sendgrid_events: SendGridEvents, sent_as: str, sg_message_id: str
) -> None:
    job, _ = sent_email(holder.account, "SENDGRID", message_id=sent_as)
    sent_email(holder.account, "SENDGRID", message_id=sent_as + ".other")
    # No custom args: the event names the message only by SendGrid's own id.
    event = sendgrid_events.event("delivered", sg_message_id=sg_message_id)

    response = post_events("sendgrid", holder.account, sendgrid_events.batch([event]))

    assert response.json()["data"]["stored"] == 1
    assert stored(holder.account) == [("SENDGRID", "DELIVERED", "user@example.com", str(job.id))]


def test_an_sg_message_id_of_many_dots_gives_at_most_4_candidates() -> None:
    candidates = sendgrid_send_ids("14c5d75ce93.dfd.64b469" + ".0" * 100)

    assert candidates == ["14c5d75ce93", "14c5d75ce93.dfd", "14c5d75ce93.dfd.64b469", "14c5d75ce93.dfd.64b469.0"]


def test_a_sendgrid_event_of_many_dots_is_looked_up_by_at_most_4_prefixes_and_still_found(
    holder: Client, sent_email: SentEmail, sendgrid_events: SendGridEvents
) -> None:
    job, _ = sent_email(holder.account, "SENDGRID", message_id="14c5d75ce93.dfd.64b469")
    event = sendgrid_events.event("delivered", sg_message_id="14c5d75ce93.dfd.64b469" + ".0" * 100)
    looked_up: list[str] = []

    def message_ids_asked_for(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "provider_message_id" in sql:
            looked_up.extend(params[1:])  # after the account's id
        return execute(sql, params, many, context)

    with connection.execute_wrapper(message_ids_asked_for):
        response = post_events("sendgrid", holder.account, sendgrid_events.batch([event]))

    assert response.json()["data"]["stored"] == 1
    assert stored(holder.account) == [("SENDGRID", "DELIVERED", "user@example.com", str(job.id))]
    # Its smtp-id first, then the prefixes of its sg_message_id.
    assert len(looked_up) == 1 + 4


def test_an_event_for_an_unknown_message_is_acknowledged_dropped_and_logged(
    holder: Client, postmark_events: PostmarkEvents, caplog: pytest.LogCaptureFixture
) -> None:
    event = postmark_events.event("Delivery", message_id=str(uuid.uuid4()), metadata={"job_id": "not-a-uuid"})

    with caplog.at_level("INFO", logger="webhooks_inbound.services"):
        response = post_events("postmark", holder.account, postmark_events.deliver(event))

    assert response.status_code == 200
    assert response.json()["data"] == {"received": 1, "stored": 0, "duplicates": 0, "unmatched": 1, "ignored": 0}
    assert stored(holder.account) == []
    assert f"Dropped 1 POSTMARK event(s) naming no message of account {holder.account.public_id}" in caplog.messages


def test_an_event_never_attaches_to_another_accounts_job(
    holder: Client, make_client: Any, sent_email: SentEmail, sendgrid_events: SendGridEvents
) -> None:
    other = make_client("startup")
    others_job, others_message = sent_email(other.account, "SENDGRID")
    own_job, own_message = sent_email(holder.account, "SENDGRID")
    events = [
        # Another account's job, by message id and by job id: both dropped.
        sendgrid_events.event("delivered", anymail_id=others_message),
        sendgrid_events.event("open", job_id=str(others_job.id)),
        # Another account's job id beside this account's own message id: the message decides.
        sendgrid_events.event("click", anymail_id=own_message, job_id=str(others_job.id)),
    ]

    response = post_events("sendgrid", holder.account, sendgrid_events.batch(events))

    assert response.json()["data"] == {"received": 3, "stored": 1, "duplicates": 0, "unmatched": 2, "ignored": 0}
    assert stored(holder.account) == [("SENDGRID", "CLICKED", "user@example.com", str(own_job.id))]
    assert not EmailEvent.objects.filter(job=others_job).exists()


def test_the_receiver_of_another_account_refuses_this_accounts_credentials(
    holder: Client, make_client: Any, sent_email: SentEmail, postmark_events: PostmarkEvents
) -> None:
    other = make_client("startup")
    _, message_id = sent_email(holder.account)
    delivery = postmark_events.deliver(postmark_events.event("Delivery", message_id=message_id))

    not_set_up = post_events("postmark", other.account, delivery)
    postmark_password_generate(account=other.account)
    set_up = post_events("postmark", other.account, delivery)

    refused(not_set_up, 401, "Postmark events are not set up for this account")
    refused(set_up, 401, "Invalid Basic Auth credentials")
    assert EmailEvent.objects.count() == 0


# --- replays and duplicates -------------------------------------------------------------------


def test_a_postmark_event_sent_again_is_stored_once(
    holder: Client, sent_email: SentEmail, postmark_events: PostmarkEvents
) -> None:
    _, message_id = sent_email(holder.account)
    delivery = postmark_events.deliver(postmark_events.event("Open", message_id=message_id))

    first = post_events("postmark", holder.account, delivery)
    again = post_events("postmark", holder.account, delivery)

    assert (first.json()["data"]["stored"], again.json()["data"]["stored"]) == (1, 0)
    assert again.json()["data"]["duplicates"] == 1
    assert len(stored(holder.account)) == 1


def test_a_sendgrid_batch_sent_again_and_an_event_twice_in_a_batch_are_stored_once(
    holder: Client, sent_email: SentEmail, sendgrid_events: SendGridEvents
) -> None:
    _, message_id = sent_email(holder.account, "SENDGRID")
    delivered = sendgrid_events.event("delivered", anymail_id=message_id)
    opened = sendgrid_events.event("open", anymail_id=message_id)

    first = post_events("sendgrid", holder.account, sendgrid_events.batch([delivered, opened, delivered]))
    again = post_events("sendgrid", holder.account, sendgrid_events.batch([delivered, opened]))

    assert first.json()["data"] == {"received": 3, "stored": 2, "duplicates": 1, "unmatched": 0, "ignored": 0}
    assert again.json()["data"] == {"received": 2, "stored": 0, "duplicates": 2, "unmatched": 0, "ignored": 0}
    assert sorted(row[1] for row in stored(holder.account)) == ["DELIVERED", "OPENED"]


def test_a_resend_event_redelivered_with_a_new_signature_is_stored_once(
    holder: Client, sent_email: SentEmail, resend_events: ResendEvents
) -> None:
    _, message_id = sent_email(holder.account, "RESEND")
    event = resend_events.event("email.delivered", email_id=message_id)
    first = resend_events.deliver(event, message_id="msg_2Lh9KRb")
    # Svix retries keep the message id and sign again with the time of the retry.
    retry = resend_events.deliver(event, message_id="msg_2Lh9KRb", signed_at=int(time.time()) + 5)

    answers = [post_events("resend", holder.account, delivery) for delivery in (first, retry)]

    assert [answer.json()["data"]["stored"] for answer in answers] == [1, 0]
    assert len(stored(holder.account)) == 1


def test_a_sendgrid_batch_of_1000_events_is_stored_in_a_few_statements(
    holder: Client, sent_email: SentEmail, sendgrid_events: SendGridEvents
) -> None:
    messages = [sent_email(holder.account, "SENDGRID")[1] for _ in range(10)]
    kinds = ["delivered", "open", "click", "deferred"]
    events = [sendgrid_events.event(kinds[n % 4], anymail_id=messages[n % 10]) for n in range(1000)]
    delivery = sendgrid_events.batch(events)

    with CaptureQueriesContext(connection) as queries:
        response = post_events("sendgrid", holder.account, delivery)

    assert response.json()["data"] == {"received": 1000, "stored": 1000, "duplicates": 0, "unmatched": 0, "ignored": 0}
    assert EmailEvent.objects.filter(account=holder.account).count() == 1000
    statements = [query["sql"].split()[0] for query in queries.captured_queries]
    # The account with its credentials and the jobs by message id; then the insert, which skips
    # events stored before: one statement on PostgreSQL, batches of SQLite's 999-variable limit there.
    assert statements.count("SELECT") == 2
    assert statements.count("INSERT") == (1 if connection.vendor == "postgresql" else 10)
    assert statements.count("SAVEPOINT") + statements.count("BEGIN") <= 1


# --- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("customer_id", [str(uuid.uuid4()), "not-a-uuid", "1"])
def test_an_unknown_customer_id_is_404(postmark_events: PostmarkEvents, customer_id: str) -> None:
    delivery = postmark_events.deliver(postmark_events.event("Delivery", message_id="m"))

    refused(post_events("postmark", customer_id, delivery), 404, "Unknown customerId")


def test_a_deleted_accounts_receiver_is_404(holder: Client, postmark_events: PostmarkEvents) -> None:
    Account.objects.filter(pk=holder.account.pk).update(deleted_at=timezone.now())
    delivery = postmark_events.deliver(postmark_events.event("Delivery", message_id="m"))

    refused(post_events("postmark", holder.account, delivery), 404, "Unknown customerId")


@pytest.mark.parametrize(
    "authorization",
    [None, "Basic " + "cG9zdG1hcms6d3Jvbmc=", "Bearer abc", "Basic !!!", "Basic"],
    ids=["missing", "wrong password", "not basic", "not base64", "empty"],
)
def test_postmark_without_the_right_password_is_401_and_stores_nothing(
    holder: Client, sent_email: SentEmail, postmark_events: PostmarkEvents, authorization: str | None
) -> None:
    _, message_id = sent_email(holder.account)
    event = postmark_events.deliver(postmark_events.event("Delivery", message_id=message_id))
    headers = {"Authorization": authorization} if authorization else {}

    response = post_events("postmark", holder.account, Delivery(event.body, headers))

    refused(response, 401, "Invalid Basic Auth credentials")
    assert response["WWW-Authenticate"] == 'Basic realm="NotifyHub provider events"'
    assert stored(holder.account) == []


def test_a_regenerated_postmark_password_retires_the_old_one(
    holder: Client, sent_email: SentEmail, postmark_events: PostmarkEvents
) -> None:
    _, message_id = sent_email(holder.account)
    event = postmark_events.event("Delivery", message_id=message_id)
    new_password = postmark_password_generate(account=holder.account)

    old = post_events("postmark", holder.account, postmark_events.deliver(event))
    new = post_events("postmark", holder.account, postmark_events.deliver(event, password=new_password))

    refused(old, 401, "Invalid Basic Auth credentials")
    assert new.status_code == 200


@pytest.mark.parametrize("slug", ["postmark", "sendgrid", "resend"])
def test_a_provider_not_set_up_is_401(holder: Client, slug: str) -> None:
    response = post_events(slug, holder.account, Delivery(b"[]", {}))

    label = {"postmark": "Postmark", "sendgrid": "SendGrid", "resend": "Resend"}[slug]
    refused(response, 401, f"{label} events are not set up for this account")


def _tamper(delivery: Delivery) -> Delivery:
    return Delivery(delivery.body.replace(b"delivered", b"bounce"), delivery.headers)


def _without(delivery: Delivery, header: str) -> Delivery:
    return Delivery(delivery.body, {name: value for name, value in delivery.headers.items() if name != header})


def _with(delivery: Delivery, header: str, value: str) -> Delivery:
    return Delivery(delivery.body, {**delivery.headers, header: value})


SENDGRID_SIGNATURE = "X-Twilio-Email-Event-Webhook-Signature"
SENDGRID_TIMESTAMP = "X-Twilio-Email-Event-Webhook-Timestamp"


@pytest.mark.parametrize(
    ("forge", "message"),
    [
        (lambda events, batch: _tamper(batch), "Invalid SendGrid signature"),
        (lambda events, batch: SendGridEvents().batch(events), "Invalid SendGrid signature"),
        (lambda events, batch: _without(batch, SENDGRID_SIGNATURE), "Invalid SendGrid signature"),
        (lambda events, batch: _with(batch, SENDGRID_SIGNATURE, "%%%"), "Invalid SendGrid signature"),
        (
            lambda events, batch: _with(batch, SENDGRID_TIMESTAMP, str(int(time.time()) - 1)),
            "Invalid SendGrid signature",
        ),
        (lambda events, batch: _without(batch, SENDGRID_TIMESTAMP), STALE),
        (lambda events, batch: _with(batch, SENDGRID_TIMESTAMP, "yesterday"), STALE),
    ],
    ids=[
        "tampered body",
        "another key",
        "no signature",
        "garbage signature",
        "other timestamp",
        "no timestamp",
        "bad timestamp",
    ],
)
def test_sendgrid_without_a_valid_signature_is_401_and_stores_nothing(
    holder: Client, sent_email: SentEmail, sendgrid_events: SendGridEvents, forge: Any, message: str
) -> None:
    _, message_id = sent_email(holder.account, "SENDGRID")
    events = [sendgrid_events.event("delivered", anymail_id=message_id)]

    response = post_events("sendgrid", holder.account, forge(events, sendgrid_events.batch(events)))

    refused(response, 401, message)
    assert stored(holder.account) == []


@pytest.mark.parametrize("age", [-301, 301, 3600])
def test_a_signed_request_more_than_5_minutes_off_is_refused_as_a_replay(
    holder: Client, sent_email: SentEmail, sendgrid_events: SendGridEvents, resend_events: ResendEvents, age: int
) -> None:
    _, message_id = sent_email(holder.account)
    signed_at = int(time.time()) - age
    sendgrid = sendgrid_events.batch([sendgrid_events.event("delivered", anymail_id=message_id)], signed_at=signed_at)
    resend = resend_events.deliver(resend_events.event("email.delivered", email_id=message_id), signed_at=signed_at)

    refused(post_events("sendgrid", holder.account, sendgrid), 401, STALE)
    refused(post_events("resend", holder.account, resend), 401, STALE)
    assert stored(holder.account) == []


def test_a_signed_request_within_5_minutes_is_accepted(
    holder: Client, sent_email: SentEmail, sendgrid_events: SendGridEvents
) -> None:
    _, message_id = sent_email(holder.account, "SENDGRID")
    signed_at = int(time.time()) - 290
    batch = sendgrid_events.batch([sendgrid_events.event("delivered", anymail_id=message_id)], signed_at=signed_at)

    assert post_events("sendgrid", holder.account, batch).status_code == 200


@pytest.mark.parametrize(
    ("forge", "message"),
    [
        (lambda batch: _tamper(batch), "Invalid Resend signature"),
        (lambda batch: _with(batch, "svix-signature", "v1,AAAA"), "Invalid Resend signature"),
        (lambda batch: _with(batch, "svix-signature", "garbage"), "Invalid Resend signature"),
        (lambda batch: _with(batch, "svix-signature", "v1,%%%"), "Invalid Resend signature"),
        (lambda batch: _with(batch, "svix-id", "msg_other"), "Invalid Resend signature"),
        (lambda batch: _without(batch, "svix-signature"), "Invalid Resend signature"),
        (lambda batch: _without(batch, "svix-timestamp"), STALE),
    ],
    ids=["tampered body", "wrong signature", "no version", "not base64", "other id", "no signature", "no timestamp"],
)
def test_resend_without_a_valid_signature_is_401_and_stores_nothing(
    holder: Client, sent_email: SentEmail, resend_events: ResendEvents, forge: Any, message: str
) -> None:
    _, message_id = sent_email(holder.account, "RESEND")
    delivery = resend_events.deliver(resend_events.event("email.delivered", email_id=message_id))

    refused(post_events("resend", holder.account, forge(delivery)), 401, message)
    assert stored(holder.account) == []


def test_resend_signed_with_another_secret_is_401(
    holder: Client, sent_email: SentEmail, resend_events: ResendEvents
) -> None:
    _, message_id = sent_email(holder.account, "RESEND")
    delivery = ResendEvents().deliver(resend_events.event("email.delivered", email_id=message_id))

    refused(post_events("resend", holder.account, delivery), 401, "Invalid Resend signature")


@pytest.mark.parametrize(
    "body",
    [b"not json", b"\xff\xfe", b"[1, 2]", b'"text"', b'{"RecordType": "Delivery", "DeliveredAt": 5}'],
    ids=["not json", "not utf-8", "array", "string", "number for a time"],
)
def test_a_postmark_body_of_another_shape_is_400(holder: Client, postmark_events: PostmarkEvents, body: bytes) -> None:
    credentials = postmark_events.deliver({}).headers

    response = post_events("postmark", holder.account, Delivery(body, credentials))

    refused(response, 400, "The body is not a Postmark event payload")
    assert stored(holder.account) == []


@pytest.mark.parametrize("body", [b"{}", b'{"RecordType": 5}', b'{"RecordType": "Outbound"}'])
def test_a_postmark_record_of_no_known_type_is_acknowledged(
    holder: Client, postmark_events: PostmarkEvents, body: bytes
) -> None:
    credentials = postmark_events.deliver({}).headers

    response = post_events("postmark", holder.account, Delivery(body, credentials))

    assert response.status_code == 200
    assert response.json()["data"]["ignored"] == 1


@pytest.mark.parametrize(
    "events", [{"event": "delivered"}, ["text"], [{"timestamp": 1}], [{"event": "open", "timestamp": "x"}]]
)
def test_a_signed_sendgrid_body_of_another_shape_is_400(
    holder: Client, sendgrid_events: SendGridEvents, events: Any
) -> None:
    refused(
        post_events("sendgrid", holder.account, sendgrid_events.batch(events)),
        400,
        "The body is not a SendGrid event payload",
    )


def test_a_signed_resend_body_without_a_type_is_400(holder: Client, resend_events: ResendEvents) -> None:
    delivery = resend_events.deliver({"data": {"email_id": "x"}})

    refused(post_events("resend", holder.account, delivery), 400, "The body is not a Resend event payload")


def test_other_methods_are_405_in_the_envelope(holder: Client) -> None:
    from django.test import Client as HttpClient

    response = HttpClient().get(f"/api/v1/webhooks/postmark/{holder.account.public_id}")

    refused(response, 405, 'Method "GET" not allowed.')
    assert "POST" in response["Allow"]


# --- limits -----------------------------------------------------------------------------------


def padded_to(size: int, event: dict[str, Any], deliver: Callable[[dict[str, Any]], Delivery]) -> Delivery:
    """``event`` as ``deliver`` sends it, with a field of padding that brings the body to exactly ``size`` bytes."""
    unpadded = len(deliver({**event, "padding": ""}).body)
    delivery = deliver({**event, "padding": "x" * (size - unpadded)})
    assert len(delivery.body) == size
    return delivery


@pytest.mark.parametrize(
    ("slug", "limit"),
    # Postmark's bounces may carry the bounced message, so its receiver takes more.
    [("sendgrid", 1024 * 1024), ("resend", 1024 * 1024), ("postmark", 2560 * 1024)],
)
def test_a_body_over_the_receivers_cap_is_413_before_the_account_is_looked_up(
    holder: Client,
    sent_email: SentEmail,
    postmark_events: PostmarkEvents,
    sendgrid_events: SendGridEvents,
    resend_events: ResendEvents,
    slug: str,
    limit: int,
) -> None:
    _, message_id = sent_email(holder.account, slug.upper())
    event, deliver = {
        "sendgrid": (sendgrid_events.event("bounce", anymail_id=message_id), lambda e: sendgrid_events.batch([e])),
        "resend": (resend_events.event("email.bounced", email_id=message_id), resend_events.deliver),
        "postmark": (postmark_events.event("Bounce", message_id=message_id), postmark_events.deliver),
    }[slug]

    with CaptureQueriesContext(connection) as queries:
        too_large = post_events(slug, holder.account, padded_to(limit + 1, event, deliver))
    stored_after_refusal = stored(holder.account)
    at_the_cap = post_events(slug, holder.account, padded_to(limit, event, deliver))

    refused(too_large, 413, f"Request body must be at most {limit // 1024} KB")
    assert queries.captured_queries == []
    assert stored_after_refusal == []
    assert at_the_cap.json()["data"]["stored"] == 1


def test_a_sendgrid_batch_of_more_than_10000_events_is_413_and_stores_nothing(
    holder: Client, sent_email: SentEmail, sendgrid_events: SendGridEvents
) -> None:
    sent_email(holder.account, "SENDGRID", message_id="m1")
    # As small as events get: each costs its reading, mapping and lookup, whatever its size.
    events = [{"event": "delivered", "smtp-id": "m1", "sg_event_id": str(n)} for n in range(10_001)]

    too_many = post_events("sendgrid", holder.account, sendgrid_events.batch(events))
    stored_after_refusal = stored(holder.account)
    at_the_cap = post_events("sendgrid", holder.account, sendgrid_events.batch(events[:-1]))

    refused(too_many, 413, "A batch must hold at most 10000 events")
    assert stored_after_refusal == []
    assert at_the_cap.json()["data"]["stored"] == 10_000


def test_an_accounts_receivers_answer_their_requests_a_minute_then_429_while_another_accounts_still_answer(
    holder: Client, make_client: Any, postmark_events: PostmarkEvents, sendgrid_events: SendGridEvents, settings: Any
) -> None:
    assert settings.PROVIDER_EVENTS_PER_MINUTE == 1_200  # the default
    settings.PROVIDER_EVENTS_PER_MINUTE = 40
    other = make_client("startup")
    others_events = PostmarkEvents(postmark_password_generate(account=other.account))
    # Authenticated, and of no type NotifyHub tracks: the cheapest request that counts.
    untracked = postmark_events.deliver({"RecordType": "Outbound"})
    # A request that fails authentication is not counted: the customerId alone is no credential.
    wrong_password = post_events("postmark", holder.account, postmark_events.deliver({}, password="wrong"))

    answers = {post_events("postmark", holder.account, untracked).status_code for _ in range(40)}
    # The account's receivers share the one count.
    over = post_events("sendgrid", holder.account, sendgrid_events.batch([sendgrid_events.event("delivered")]))
    others = post_events("postmark", other.account, others_events.deliver({"RecordType": "Outbound"}))

    assert wrong_password.status_code == 401
    assert answers == {200}
    refused(over, 429, "Rate limit exceeded")
    assert "Retry-After" not in over
    assert others.status_code == 200

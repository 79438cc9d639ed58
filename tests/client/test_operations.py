"""Every operation of the client against the live service, each with the sync and the async client (conftest.py)."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from accounts.services import api_key_create, provider_key_set
from customer_webhooks.models import App, Message
from notifications.models import Job
from suppressions.models import Suppression
from tests.client.conftest import Connect
from tests.client.hubs import Hub
from tests.client.proxy import Proxy
from tests.client.sdk import notifyhub
from tests.conftest import Client, ready_to_send
from tests.fakes.providers import FakeSendGrid
from tests.providers_fixtures import SENDGRID_KEY

URL = "https://hooks.example.com/in"


def send_webhook(hub: Hub, **options: object) -> notifyhub.AcceptedJob:
    return hub.run(lambda nh: nh.webhooks.send(url=URL, payload={"event": "signup"}, **options))


def test_ping_checks_the_key(hub: Hub) -> None:
    pong = hub.run(lambda nh: nh.ping())

    assert pong.message == "pong"
    assert abs(pong.timestamp - datetime.now(UTC)) < timedelta(minutes=1)


def test_a_webhook_send_returns_the_accepted_job_stored_with_everything_given(hub: Hub, holder: Client) -> None:
    accepted = send_webhook(hub, method="PUT", headers={"X-Tenant": "7"}, priority=10, idempotency_key="order-7")

    assert isinstance(accepted, notifyhub.AcceptedJob)
    assert (accepted.status, accepted.type, accepted.test) == ("pending", "webhook", False)
    job = Job.objects.get(id=accepted.job_id, account=holder.account)
    assert (job.idempotency_key, job.priority) == ("order-7", 10)
    assert job.payload["method"] == "PUT"


def test_a_send_without_an_idempotency_key_is_stored_with_one_the_client_made(hub: Hub, holder: Client) -> None:
    accepted = send_webhook(hub)

    assert Job.objects.get(id=accepted.job_id).idempotency_key


def test_a_scheduled_send_waits_for_its_time(hub: Hub) -> None:
    at = datetime.now(UTC) + timedelta(hours=1)

    accepted = send_webhook(hub, send_at=at)

    job = hub.run(lambda nh: nh.jobs.get(accepted.job_id))
    assert job.status == "pending"
    assert job.scheduled_for == at.replace(microsecond=at.microsecond // 1000 * 1000)


def test_an_email_send_returns_the_accepted_job(hub: Hub, holder: Client) -> None:
    ready_to_send(holder)

    accepted = hub.run(
        lambda nh: nh.emails.send(
            to="ada@example.com", subject="Hello", body="<p>Hi</p>", from_="news@example.com", provider="SENDGRID"
        )
    )

    assert (accepted.status, accepted.type) == ("pending", "email")
    job = hub.run(lambda nh: nh.jobs.get(accepted.job_id))
    assert (job.destination, job.payload["from"]) == ("ada@example.com", "news@example.com")
    assert Job.objects.get(id=accepted.job_id).provider == "SENDGRID"


def test_a_rich_email_sends_every_field_and_its_attachments_from_bytes_and_a_path(
    hub: Hub, holder: Client, tmp_path: Path
) -> None:
    ready_to_send(holder)
    invoice = tmp_path / "invoice-42.pdf"
    invoice.write_bytes(b"%PDF-1.7 invoice 42")
    Suppression.objects.create(account=holder.account, email="gone@example.com", reason="MANUAL")

    accepted = hub.run(
        lambda nh: nh.emails.send(
            to="ada@example.com",
            subject="Your invoice",
            body='<p>Attached</p><img src="cid:logo">',
            from_="Acme Billing <news@example.com>",
            cc=["accounts@example.com", "gone@example.com"],
            reply_to=["support@example.com"],
            text="Attached",
            headers={"X-Entity-Ref-ID": "invoice-42"},
            tags=["invoice"],
            metadata={"order_id": "42"},
            attachments=[
                notifyhub.Attachment.from_path(invoice),
                notifyhub.Attachment(filename="logo.png", content=b"\x89PNG", content_id="logo"),
            ],
        )
    )

    job = hub.run(lambda nh: nh.jobs.get(accepted.job_id))
    assert job.payload["replyTo"] == ["support@example.com"]
    assert (job.payload["tags"], job.payload["metadata"]) == (["invoice"], {"order_id": "42"})
    assert [(a["filename"], a["contentType"], a["size"]) for a in job.payload["attachments"]] == [
        ("invoice-42.pdf", "application/pdf", 19),
        ("logo.png", "image/png", 4),
    ]
    assert job.payload["attachments"][0]["sha256"] == hashlib.sha256(b"%PDF-1.7 invoice 42").hexdigest()
    assert job.skipped_recipients == (notifyhub.SkippedRecipient(email="gone@example.com", reason="MANUAL"),)
    listed = hub.collect(lambda nh: nh.jobs.list(tag="invoice"))
    assert [summary.id for summary in listed] == [accepted.job_id]


def test_a_webhook_batch_answers_each_item_in_its_slot(hub: Hub) -> None:
    result = hub.run(
        lambda nh: nh.webhooks.send_batch(
            [
                {"url": URL, "payload": {"n": 1}},
                {"url": "http://not-https.example.com/", "payload": {"n": 2}},
                {"url": URL, "payload": {"n": 3}, "idempotency_key": "same"},
                {"url": URL, "payload": {"n": 4}, "idempotency_key": "same"},
            ]
        )
    )

    accepted, refused, keyed, repeated = result.items
    assert isinstance(accepted, notifyhub.AcceptedJob)
    assert isinstance(keyed, notifyhub.AcceptedJob)
    assert refused == notifyhub.RefusedItem(status=400, error="url must be a valid HTTPS URL", code="validation_failed")
    assert repeated == notifyhub.RefusedItem(status=409, error="Duplicate request detected", code="duplicate_request")


def test_an_email_batch_sends_every_item(hub: Hub, holder: Client) -> None:
    ready_to_send(holder)

    result = hub.run(
        lambda nh: nh.emails.send_batch(
            [{"to": f"user{n}@example.com", "subject": "Hi", "body": "<p>Hi</p>"} for n in range(3)]
        )
    )

    assert [item.status for item in result.items] == ["pending"] * 3
    assert Job.objects.filter(account=holder.account).exclude(idempotency_key=None).count() == 3


def test_get_shows_the_job_with_its_payload_and_logs(hub: Hub) -> None:
    accepted = send_webhook(hub, headers={"Authorization": "Bearer s3cret"})

    job = hub.run(lambda nh: nh.jobs.get(accepted.job_id))

    assert isinstance(job, notifyhub.Job)
    assert (job.id, job.type, job.destination, job.attempts, job.max_attempts) == (
        accepted.job_id,
        "webhook",
        "hooks.example.com",
        0,
        3,
    )
    assert job.payload["headers"] == {"Authorization": "Bearer s3cret"}
    assert (job.delivery_logs, job.events) == ((), ())
    assert job.created_at == accepted.created_at


def test_the_jobs_list_iterates_every_page_fetching_each_when_reached(
    connect: Connect, holder: Client, proxy: Proxy
) -> None:
    hub = connect(holder.api_key, base_url=proxy.url)
    sent = [send_webhook(hub).job_id for _ in range(5)]
    proxy.seen.clear()

    listed = hub.collect(lambda nh: nh.jobs.list(type="webhook", status="pending", page_size=2))

    assert [job.id for job in listed] == sent[::-1]  # newest first
    assert all(isinstance(job, notifyhub.JobSummary) for job in listed)
    assert [seen.path for seen in proxy.seen] == [
        f"/api/v1/notifications/jobs?type=webhook&status=pending&limit=2&page={page}" for page in (1, 2, 3)
    ]


def test_the_jobs_list_filters_by_host(hub: Hub) -> None:
    wanted = send_webhook(hub).job_id
    hub.run(lambda nh: nh.webhooks.send(url="https://elsewhere.example.org/", payload={}))

    listed = hub.collect(lambda nh: nh.jobs.list(host="hooks.example.com"))

    assert [job.id for job in listed] == [wanted]


def test_cancel_then_retry_a_pending_job(hub: Hub) -> None:
    job_id = send_webhook(hub).job_id

    cancelled = hub.run(lambda nh: nh.jobs.cancel(job_id))
    retried = hub.run(lambda nh: nh.jobs.retry(job_id))

    assert cancelled == notifyhub.JobChange(job_id=job_id, status="failed", message="Job has been cancelled")
    assert (retried.job_id, retried.status) == (job_id, "pending")
    assert hub.run(lambda nh: nh.jobs.get(job_id)).status == "pending"


def test_suppressions_are_added_listed_and_removed(hub: Hub, holder: Client) -> None:
    added = hub.run(lambda nh: nh.suppressions.add("Bounce@Example.com"))
    hub.run(lambda nh: nh.suppressions.add("other@example.com"))

    listed = hub.collect(lambda nh: nh.suppressions.list(reason="MANUAL", page_size=1))
    found = hub.collect(lambda nh: nh.suppressions.list(email="bounce@example.com"))
    removed = hub.run(lambda nh: nh.suppressions.remove("bounce@example.com"))

    assert (added.email, added.reason, added.provider, added.job_id) == ("bounce@example.com", "MANUAL", None, None)
    assert [entry.email for entry in listed] == ["other@example.com", "bounce@example.com"]
    assert found == [added]
    assert removed.email == "bounce@example.com"
    assert list(Suppression.objects.filter(account=holder.account).values_list("email", flat=True)) == [
        "other@example.com"
    ]


def test_suppressions_for_a_topic_are_added_listed_and_removed_apart(hub: Hub, holder: Client) -> None:
    every = hub.run(lambda nh: nh.suppressions.add("ada@example.com"))
    digest = hub.run(lambda nh: nh.suppressions.add("ada@example.com", topic="weekly-digest"))

    found = hub.collect(lambda nh: nh.suppressions.list(topic="weekly-digest"))
    removed = hub.run(lambda nh: nh.suppressions.remove("ada@example.com", topic="weekly-digest"))

    assert (every.topic, digest.topic) == (None, "weekly-digest")
    assert found == [digest]
    assert removed.email == "ada@example.com"
    assert list(Suppression.objects.filter(account=holder.account).values_list("topic", flat=True)) == [None]


def test_event_endpoints_are_created_listed_and_deleted(hub: Hub) -> None:
    created = hub.run(
        lambda nh: nh.event_endpoints.create(url="https://events.example.com/in", events=["job.failed", "job.failed"])
    )

    listed = hub.run(lambda nh: nh.event_endpoints.list())
    deliveries = hub.collect(lambda nh: nh.event_endpoints.deliveries(created.id, page_size=5))
    deleted = hub.run(lambda nh: nh.event_endpoints.delete(created.id))

    assert (created.url, created.events) == ("https://events.example.com/in", ("job.failed",))
    assert listed == (created,)
    assert deliveries == []
    assert deleted == notifyhub.EventEndpointDeleted(id=created.id, message="Event endpoint deleted")
    assert hub.run(lambda nh: nh.event_endpoints.list()) == ()


def test_apps_and_their_endpoints_are_created_read_changed_and_deleted(hub: Hub) -> None:
    app = hub.run(lambda nh: nh.apps.create(name="Acme", uid="acme"))
    endpoint = hub.run(
        lambda nh: nh.apps.create_endpoint("acme", url="https://acme.example.com/in", event_types=["invoice.paid"])
    )

    renamed = hub.run(lambda nh: nh.apps.update("acme", name="Acme GmbH"))
    listed = hub.collect(lambda nh: nh.apps.list(page_size=5))
    changed = hub.run(lambda nh: nh.apps.update_endpoint("acme", endpoint.id, rate_limit=10, disabled=True))
    cleared = hub.run(lambda nh: nh.apps.update_endpoint(app.id, endpoint.id, rate_limit=None))
    secret = hub.run(lambda nh: nh.apps.endpoint_secret("acme", endpoint.id))
    rotated = hub.run(lambda nh: nh.apps.rotate_endpoint_secret("acme", endpoint.id))

    assert (app.uid, app.name, renamed.name) == ("acme", "Acme", "Acme GmbH")
    assert listed == [renamed]
    assert hub.run(lambda nh: nh.apps.get(app.id)) == renamed
    assert (endpoint.event_types, endpoint.rate_limit, endpoint.description) == (("invoice.paid",), None, "")
    assert (changed.rate_limit, changed.disabled, cleared.rate_limit) == (10, True, None)
    assert hub.run(lambda nh: nh.apps.endpoints("acme")) == (cleared,)
    assert hub.run(lambda nh: nh.apps.get_endpoint("acme", endpoint.id)) == cleared
    assert secret.secret.startswith("whsec_")
    assert rotated.secret.startswith("whsec_")
    assert rotated != secret
    assert hub.run(lambda nh: nh.apps.endpoint_secret("acme", endpoint.id)) == rotated
    link = hub.run(lambda nh: nh.apps.portal("acme"))
    revoked = hub.run(lambda nh: nh.apps.revoke_portal("acme"))
    assert "/portal/" in link.url
    assert revoked.revoked_at < link.expires_at
    stored = App.objects.get(id=app.id).portal_revoked_at
    assert stored is not None
    assert abs(revoked.revoked_at - stored) < timedelta(milliseconds=1)
    deleted = hub.run(lambda nh: nh.apps.delete_endpoint("acme", endpoint.id))
    assert deleted == notifyhub.AppEndpointDeleted(id=endpoint.id, message="Endpoint deleted")
    assert hub.run(lambda nh: nh.apps.delete("acme")) == notifyhub.AppDeleted(
        id=app.id, uid="acme", message="App deleted"
    )
    assert hub.collect(lambda nh: nh.apps.list()) == []


def test_a_message_is_sent_to_an_apps_endpoints_listed_read_and_recovered(hub: Hub, holder: Client) -> None:
    hub.run(lambda nh: nh.apps.create(name="Acme", uid="acme"))
    paid = hub.run(
        lambda nh: nh.apps.create_endpoint("acme", url="https://acme.example.com/paid", event_types=["invoice.paid"])
    )
    every = hub.run(lambda nh: nh.apps.create_endpoint("acme", url="https://acme.example.com/all"))

    sent = hub.run(lambda nh: nh.apps.send_message("acme", event_type="invoice.paid", payload={"invoice": "in_1"}))
    other = hub.run(
        lambda nh: nh.apps.send_message(
            "acme", event_type="user.signed-up", payload={"user": "u_1"}, idempotency_key="signup-u_1"
        )
    )

    assert isinstance(sent, notifyhub.AcceptedMessage)
    assert (sent.event_type, sent.test) == ("invoice.paid", False)
    assert {delivery.endpoint_id for delivery in sent.deliveries} == {paid.id, every.id}
    assert [delivery.endpoint_id for delivery in other.deliveries] == [every.id]
    stored = Job.objects.filter(account=holder.account, message_id__isnull=False)
    assert {str(job.id) for job in stored} == {delivery.job_id for delivery in (*sent.deliveries, *other.deliveries)}
    keys = dict(Message.objects.filter(account=holder.account).values_list("id", "idempotency_key"))
    assert keys[uuid.UUID(other.message_id)] == "signup-u_1"
    assert keys[uuid.UUID(sent.message_id)] is not None  # one the client made
    listed = hub.collect(lambda nh: nh.apps.messages("acme", page_size=1))
    assert [message.id for message in listed] == [other.message_id, sent.message_id]
    assert hub.collect(lambda nh: nh.apps.messages("acme", event_type="invoice.paid")) == [
        notifyhub.AppMessage(id=sent.message_id, event_type="invoice.paid", created_at=sent.created_at)
    ]
    detail = hub.run(lambda nh: nh.apps.get_message("acme", sent.message_id))
    assert (detail.payload, detail.created_at) == ({"invoice": "in_1"}, sent.created_at)
    assert {(d.endpoint_id, d.job_id, d.status, d.attempts, d.max_attempts) for d in detail.deliveries} == {
        (d.endpoint_id, d.job_id, "pending", 0, 8) for d in sent.deliveries
    }

    failed_job = next(d.job_id for d in sent.deliveries if d.endpoint_id == paid.id)
    Job.objects.filter(pk=failed_job).update(status="failed", attempts=8, error_message="503 Service Unavailable")
    since = datetime.now(UTC) - timedelta(hours=1)
    recovered = hub.run(lambda nh: nh.apps.recover_endpoint("acme", paid.id, since=since))

    assert recovered == notifyhub.EndpointRecovered(requeued=1)
    assert hub.run(lambda nh: nh.jobs.get(failed_job)).status == "pending"
    assert hub.run(lambda nh: nh.apps.recover_endpoint("acme", paid.id, since=since.isoformat())).requeued == 0


def test_templates_are_created_read_replaced_rendered_and_deleted(hub: Hub, holder: Client) -> None:
    ready_to_send(holder)
    created = hub.run(
        lambda nh: nh.templates.create(alias="reset", name="Reset", subject="Hi {{ name }}", html="<p>{{ link }}</p>")
    )
    replaced = hub.run(
        lambda nh: nh.templates.update("reset", subject="Hello {{ name }}", html="<p>{{ link }}</p>", text="{{ link }}")
    )

    first = hub.run(lambda nh: nh.templates.get(created.id, version=1))
    listed = hub.collect(lambda nh: nh.templates.list(page_size=1))
    versions = hub.collect(lambda nh: nh.templates.versions("reset"))
    rendered = hub.run(lambda nh: nh.templates.render("reset", data={"name": "Ada", "link": "https://x.example/r"}))
    accepted = hub.run(
        lambda nh: nh.emails.send(
            to="user@example.com", template="reset", data={"name": "Ada", "link": "l"}, template_version=1
        )
    )
    deleted = hub.run(lambda nh: nh.templates.delete("reset"))

    assert (created.version, created.variables, created.text) == (1, ("name", "link"), None)
    assert (replaced.version, replaced.text) == (2, "{{ link }}")
    assert (first.version, first.subject) == (1, "Hi {{ name }}")
    assert [(entry.alias, entry.version) for entry in listed] == [("reset", 2)]
    assert [entry.version for entry in versions] == [2, 1]
    assert rendered == notifyhub.RenderedTemplate(
        subject="Hello Ada", html="<p>https://x.example/r</p>", text="https://x.example/r"
    )
    payload = Job.objects.get(id=accepted.job_id, account=holder.account).payload
    assert (payload["subject"], payload["templateVersion"]) == ("Hi Ada", 1)
    assert deleted == notifyhub.TemplateDeleted(id=created.id, alias="reset", message="Template deleted")


def test_an_email_batch_item_takes_a_template(hub: Hub, holder: Client) -> None:
    ready_to_send(holder)
    hub.run(lambda nh: nh.templates.create(alias="hello", name="Hello", subject="Hi {{ name }}", html="<p>hi</p>"))

    result = hub.run(
        lambda nh: nh.emails.send_batch(
            [
                {"to": "a@example.com", "template": "hello", "data": {"name": "Ada"}},
                {"to": "b@example.com", "template": "hello", "data": {}},
            ]
        )
    )

    accepted, refused = result.items
    assert isinstance(accepted, notifyhub.AcceptedJob)
    assert Job.objects.get(id=accepted.job_id).payload["subject"] == "Hi Ada"
    assert refused == notifyhub.RefusedItem(
        status=400, error="data is missing name for template hello", code="template_data_missing"
    )


def test_the_sender_domain_is_requested_verified_read_and_deleted(
    hub: Hub, holder: Client, sendgrid: FakeSendGrid
) -> None:
    provider_key_set(account=holder.account, provider="SENDGRID", api_key=SENDGRID_KEY)

    requested = hub.run(lambda nh: nh.domain.request("example.com"))
    sendgrid.mark_verified("em.example.com")
    verified = hub.run(lambda nh: nh.domain.verify())
    read = hub.run(lambda nh: nh.domain.get())
    deleted = hub.run(lambda nh: nh.domain.delete())

    assert (requested.domain, requested.sending_domain, requested.status) == (
        "example.com",
        "em.example.com",
        "pending_verification",
    )
    assert {record["type"] for record in requested.records} == {"CNAME"}
    assert verified.providers == (notifyhub.ProviderStatus(provider="SENDGRID", verified=True, error=None),)
    assert (read.status, read.verified_at) == ("verified", verified.verified_at)
    assert deleted == notifyhub.DomainDeleted(deleted=True, warnings=())


def test_the_account_shows_its_usage_stats_and_audit_log(hub: Hub, holder: Client) -> None:
    send_webhook(hub)
    api_key_create(account=holder.account, name="reporting", scope="read")

    usage = hub.run(lambda nh: nh.account.usage())
    stats = hub.run(lambda nh: nh.account.stats(days=7))
    audit = hub.collect(lambda nh: nh.account.audit_log(page_size=1))

    assert (usage.plan, usage.used, usage.limit, usage.period_start) == ("startup", 1, 15000, datetime.now(UTC).date())
    assert len(stats.days) == 7
    assert stats.totals == notifyhub.OutcomeTotals(completed=0, failed=0)
    assert [(entry.action, entry.target, entry.actor) for entry in audit] == [
        ("api_key.created", "reporting", "operator"),
        ("api_key.created", "Default", "operator"),
    ]


def test_the_key_and_base_url_come_from_the_environment(
    holder: Client, live_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTIFYHUB_API_KEY", holder.api_key)
    monkeypatch.setenv("NOTIFYHUB_BASE_URL", live_server.url)

    with notifyhub.NotifyHub() as nh:
        assert nh.ping().message == "pong"


def test_a_client_without_a_key_or_base_url_says_which_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFYHUB_API_KEY", raising=False)
    monkeypatch.delenv("NOTIFYHUB_BASE_URL", raising=False)

    with pytest.raises(ValueError, match="NOTIFYHUB_API_KEY"):
        notifyhub.NotifyHub(base_url="http://127.0.0.1:8000")
    with pytest.raises(ValueError, match="NOTIFYHUB_BASE_URL"):
        notifyhub.AsyncNotifyHub("nh_" + "0" * 64)


@pytest.mark.anyio
async def test_the_async_client_sends_concurrently_and_iterates_with_async_for(
    holder: Client, live_server: Any
) -> None:
    async with notifyhub.AsyncNotifyHub(holder.api_key, base_url=live_server.url) as nh:
        accepted = await asyncio.gather(*(nh.webhooks.send(url=URL, payload={"n": n}) for n in range(5)))
        listed = [job.id async for job in nh.jobs.list(page_size=2)]

    assert sorted(listed) == sorted(job.job_id for job in accepted)

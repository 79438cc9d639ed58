"""An email with a topic carries RFC 8058's one-click unsubscribe headers through every provider and the local file
backend, pointing at NotifyHub's own page for its recipient and topic; one without a topic carries neither
(docs/suppressions.md, "One-click unsubscribe")."""

from __future__ import annotations

from email import message_from_bytes, policy
from pathlib import Path
from typing import Any

import pytest

from notifications.delivery.email import deliver_email
from notifications.models import Job, JobType
from suppressions.unsubscribe import Unsubscription, unsubscription_read
from tests.conftest import Client, ready_to_send
from tests.factories import JobFactory
from tests.fakes.providers import FakePostmark, FakeResend, FakeSendGrid
from tests.notifications.test_test_mode import with_test_key

pytestmark = pytest.mark.django_db

PUBLIC_URL = "https://notify.example.com"
ONE_CLICK = "List-Unsubscribe=One-Click"


@pytest.fixture(autouse=True)
def public_url(settings: Any) -> None:
    settings.PUBLIC_URL = PUBLIC_URL


def email_job(client: Client, *, topic: str | None, provider: str | None = None, **payload: Any) -> Job:
    fields = {"to": "Ada@Example.com", "subject": "Digest", "body": "<p>Hi</p>", **payload}
    if topic is not None:
        fields["topic"] = topic
    job: Job = JobFactory(account=client.account, type=JobType.EMAIL, provider=provider, payload=fields, topic=topic)
    return job


def unsubscription_of(list_unsubscribe: str) -> Unsubscription | None:
    """Whom the header's URL unsubscribes: it is ``<PUBLIC_URL/unsubscribe/<token>/>``."""
    prefix, suffix = f"<{PUBLIC_URL}/unsubscribe/", "/>"
    assert list_unsubscribe.startswith(prefix), list_unsubscribe
    assert list_unsubscribe.endswith(suffix), list_unsubscribe
    return unsubscription_read(list_unsubscribe.removeprefix(prefix).removesuffix(suffix))


def test_postmark_receives_both_headers_beside_the_clients_own(startup: Client, postmark: FakePostmark) -> None:
    job = email_job(ready_to_send(startup, "POSTMARK"), topic="weekly-digest", headers={"X-Entity-Ref-ID": "d-1"})

    assert deliver_email(job, attempt=1).delivered

    headers = {entry["Name"]: entry["Value"] for entry in postmark.sent[0].json["Headers"]}
    assert set(headers) == {"X-Entity-Ref-ID", "List-Unsubscribe", "List-Unsubscribe-Post"}
    assert headers["List-Unsubscribe-Post"] == ONE_CLICK
    assert unsubscription_of(headers["List-Unsubscribe"]) == Unsubscription(
        account_id=startup.account.pk, email="ada@example.com", topic="weekly-digest"
    )


def test_sendgrid_receives_both_headers(startup: Client, sendgrid: FakeSendGrid) -> None:
    job = email_job(ready_to_send(startup, "SENDGRID"), topic="news")

    assert deliver_email(job, attempt=1).delivered

    headers = sendgrid.sent[0].json["headers"]
    assert headers["List-Unsubscribe-Post"] == ONE_CLICK
    assert unsubscription_of(headers["List-Unsubscribe"]) == Unsubscription(
        startup.account.pk, "ada@example.com", "news"
    )


def test_resend_receives_both_headers(startup: Client, resend: FakeResend) -> None:
    job = email_job(ready_to_send(startup, "RESEND"), topic="news")

    assert deliver_email(job, attempt=1).delivered

    headers = resend.sent[0].json["headers"]
    assert headers["List-Unsubscribe-Post"] == ONE_CLICK
    assert unsubscription_of(headers["List-Unsubscribe"]) == Unsubscription(
        startup.account.pk, "ada@example.com", "news"
    )


def test_the_local_file_backend_writes_both_headers(free: Client, settings: Any, tmp_path: Path) -> None:
    settings.PLATFORM_PROVIDERS = []
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path)
    job = email_job(free, topic="news")

    assert deliver_email(job, attempt=1).delivered

    (written,) = tmp_path.iterdir()
    # Read as a mail client does: the long header's line is folded before its `<`, which unfolding undoes.
    message = message_from_bytes(written.read_bytes(), policy=policy.default)
    assert message["List-Unsubscribe-Post"] == ONE_CLICK
    assert unsubscription_of(str(message["List-Unsubscribe"]).strip()) == Unsubscription(
        free.account.pk, "ada@example.com", "news"
    )


def test_an_email_without_a_topic_carries_neither_header(
    startup: Client, postmark: FakePostmark, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    ready_to_send(startup, "POSTMARK", "SENDGRID", "RESEND")
    for provider in ("POSTMARK", "SENDGRID", "RESEND"):
        assert deliver_email(email_job(startup, topic=None, provider=provider), attempt=1).delivered

    assert "Headers" not in postmark.sent[0].json
    assert "headers" not in sendgrid.sent[0].json
    assert not any(name.lower().startswith("list-") for name in resend.sent[0].json.get("headers", {}))


def test_each_recipient_and_topic_has_its_own_link_and_every_email_to_them_the_same(
    startup: Client, postmark: FakePostmark
) -> None:
    ready_to_send(startup, "POSTMARK")
    jobs = [
        email_job(startup, topic="news"),
        email_job(startup, topic="news", to="ada@example.com"),
        email_job(startup, topic="digest"),
        email_job(startup, topic="news", to="grace@example.com"),
    ]
    for job in jobs:
        assert deliver_email(job, attempt=1).delivered

    links = [
        next(entry["Value"] for entry in sent.json["Headers"] if entry["Name"] == "List-Unsubscribe")
        for sent in postmark.sent
    ]
    assert links[0] == links[1]
    assert len({links[0], links[2], links[3]}) == 3


def test_a_test_key_send_with_a_topic_is_validated_and_sends_nothing(startup: Client, postmark: FakePostmark) -> None:
    tester = with_test_key(ready_to_send(startup, "POSTMARK"))

    refused = tester.send_email(topic="Not A Topic")
    job_id = tester.send_email(topic="news").json()["data"]["jobId"]
    job = Job.objects.get(id=job_id)

    assert refused.status_code == 400
    assert refused.json()["error"] == "topic must be 1 to 64 of a-z, 0-9, _ and -"
    assert (job.test, job.topic) == (True, "news")
    assert deliver_email(job, attempt=1).delivered
    assert postmark.sent == []

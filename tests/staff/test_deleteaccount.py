from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Account
from notifications.models import Attachment, Job
from tests.conftest import Client
from tests.factories import DeliveryLogFactory, FailedJobFactory


def run(*args: str, answer: str | None = None, monkeypatch: Any = None) -> str:
    if answer is not None:
        monkeypatch.setattr("builtins.input", lambda prompt: answer)
    out = StringIO()
    call_command("deleteaccount", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_a_soft_delete_stops_the_key_and_keeps_everything(free: Client) -> None:
    job = FailedJobFactory(account=free.account)

    output = run(free.account.user.email)

    assert "is deleted: its API key answers 403" in output
    assert free.get("/api/v1/ping").status_code == 403
    assert Account.objects.get(pk=free.account.pk).deleted_at is not None
    assert Job.objects.filter(id=job.id).exists()


def test_a_second_soft_delete_says_it_is_deleted_already(free: Client) -> None:
    run(free.account.user.email)

    with pytest.raises(CommandError, match="deleted already; add --permanent"):
        run(free.account.user.email)


def test_permanent_asks_for_the_email_and_removes_everything(free: Client, monkeypatch: Any) -> None:
    job = FailedJobFactory(account=free.account)
    DeliveryLogFactory(job=job, attempt=1)
    email = free.account.user.email

    output = run(email, "--permanent", answer=email.upper(), monkeypatch=monkeypatch)

    everything = (
        "1 job, 1 delivery log, 0 attachments, 0 events, 0 sending domains, 0 domain registrations, 1 API key, "
        "0 provider keys"
    )
    assert f"This removes {email} for good: {everything}." in output
    assert f"{email} is gone for good. Deleted: {everything}." in output
    assert not Account.objects.filter(pk=free.account.pk).exists()
    assert not Job.objects.filter(id=job.id).exists()


def test_permanent_removes_the_jobs_attachments(free: Client) -> None:
    job = FailedJobFactory(account=free.account)
    Attachment.objects.create(
        job=job, position=0, filename="a.pdf", content_type="application/pdf", size=3, sha256="0" * 64, content=b"pdf"
    )

    run(free.account.user.email, "--permanent", "--no-input")

    assert not Attachment.objects.exists()


def test_permanent_without_the_right_email_deletes_nothing(free: Client, monkeypatch: Any) -> None:
    with pytest.raises(CommandError, match="Not confirmed; nothing was deleted"):
        run(free.account.user.email, "--permanent", answer="someone@else.com", monkeypatch=monkeypatch)

    assert Account.objects.filter(pk=free.account.pk, deleted_at__isnull=True).exists()


def test_permanent_with_no_input_asks_nothing(free: Client) -> None:
    output = run(free.account.user.email, "--permanent", "--no-input")

    assert "is gone for good" in output
    assert not Account.objects.filter(pk=free.account.pk).exists()


@pytest.mark.django_db
def test_an_unknown_email_is_refused() -> None:
    with pytest.raises(CommandError, match=r"No account for nobody@example\.com"):
        run("nobody@example.com")

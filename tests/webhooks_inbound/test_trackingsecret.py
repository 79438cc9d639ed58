"""``manage.py trackingsecret``: the receiver URLs, a Postmark password, SendGrid's key, Resend's secret."""

from __future__ import annotations

import base64
from io import StringIO

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.core.management import CommandError, call_command

from tests.conftest import Client
from tests.fakes.events import PostmarkEvents, ResendEvents, SendGridEvents
from tests.webhooks_inbound.conftest import SentEmail, post_events
from webhooks_inbound.models import TrackingCredentials


def run(*args: str) -> list[str]:
    out = StringIO()
    call_command("trackingsecret", *args, stdout=out)
    return out.getvalue().splitlines()


def receiver_lines(holder: Client, base: str = "https://notify.example.com") -> list[str]:
    public_id = holder.account.public_id
    return [
        f"Postmark  {base}/api/v1/webhooks/postmark/{public_id}",
        f"SendGrid  {base}/api/v1/webhooks/sendgrid/{public_id}",
        f"Resend    {base}/api/v1/webhooks/resend/{public_id}",
    ]


@pytest.fixture(autouse=True)
def _public_url(settings: object) -> None:
    settings.PUBLIC_URL = "https://notify.example.com/"  # type: ignore[attr-defined]


def test_generate_prints_the_receiver_urls_then_a_working_postmark_password_last(
    holder: Client, sent_email: SentEmail
) -> None:
    lines = run(holder.account.user.email, "generate")

    assert lines[:3] == receiver_lines(holder)
    password = lines[-1]
    assert len(password) >= 40
    _, message_id = sent_email(holder.account)
    delivery = PostmarkEvents(password).deliver(PostmarkEvents(password).event("Delivery", message_id=message_id))
    assert post_events("postmark", holder.account, delivery).status_code == 200
    # Kept only as a digest.
    assert password not in TrackingCredentials.objects.get(account=holder.account).postmark_password_digest


def test_set_sendgrid_stores_the_verification_key_and_signed_events_pass(holder: Client, sent_email: SentEmail) -> None:
    sendgrid = SendGridEvents()

    lines = run(holder.account.user.email, "set", "sendgrid", sendgrid.verification_key)

    assert lines == [f"Stored the sendgrid credential of {holder.account.user.email}.", *receiver_lines(holder)]
    _, message_id = sent_email(holder.account, "SENDGRID")
    batch = sendgrid.batch([sendgrid.event("delivered", anymail_id=message_id)])
    assert post_events("sendgrid", holder.account, batch).json()["data"]["stored"] == 1


def test_set_resend_stores_the_secret_encrypted_and_signed_events_pass(holder: Client, sent_email: SentEmail) -> None:
    resend = ResendEvents()

    run(holder.account.user.email, "set", "resend", resend.secret)

    assert resend.secret not in TrackingCredentials.objects.get(account=holder.account).encrypted_resend_secret
    _, message_id = sent_email(holder.account, "RESEND")
    delivery = resend.deliver(resend.event("email.delivered", email_id=message_id))
    assert post_events("resend", holder.account, delivery).json()["data"]["stored"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["set", "sendgrid", "not-a-key"],
            "The SendGrid verification key must be the base64 public key SendGrid shows",
        ),
        (["set", "resend", "secret"], "The Resend signing secret must be the whsec_... secret Resend shows"),
        (["set", "resend", "whsec_"], "The Resend signing secret must be the whsec_... secret Resend shows"),
        (["set", "sendgrid"], "'set' takes a provider (sendgrid or resend) and its key or secret"),
        (["generate", "sendgrid"], "'generate' takes no provider or value"),
    ],
)
def test_bad_values_are_refused_and_nothing_is_stored(holder: Client, args: list[str], message: str) -> None:
    with pytest.raises(CommandError) as refused:
        run(holder.account.user.email, *args)

    assert str(refused.value) == message
    assert (
        not TrackingCredentials.objects.filter(account=holder.account)
        .exclude(postmark_password_digest="", sendgrid_verification_key="", encrypted_resend_secret="")
        .exists()
    )


def test_a_non_p256_key_is_refused(holder: Client) -> None:
    der = (
        ec.generate_private_key(ec.SECP384R1())
        .public_key()
        .public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    )

    with pytest.raises(CommandError, match="SendGrid verification key"):
        run(holder.account.user.email, "set", "sendgrid", base64.b64encode(der).decode())


@pytest.mark.django_db
def test_an_unknown_email_is_refused() -> None:
    with pytest.raises(CommandError, match=r"No account for nobody@example\.com"):
        run("nobody@example.com", "generate")

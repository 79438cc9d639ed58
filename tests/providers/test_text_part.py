"""Every email's plain-text part is its HTML as a reader sees it: line breaks kept, each link as ``text (url)``."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.test import Client as Browser

from accounts.services import account_create
from notifications.services import platform_email_send
from providers.base import Credentials, OutgoingEmail
from providers.registry import get_provider
from providers.text import text_part
from tests.fakes.providers import FakeSendGrid
from tests.providers_fixtures import SENDGRID_KEY

HTML = '<p>Hello</p><p>Click <a href="https://x.example/a">here</a></p>'
TEXT = "Hello\n\nClick here (https://x.example/a)"


def test_the_provider_receives_a_text_part_with_the_paragraphs_and_the_link_target(sendgrid: FakeSendGrid) -> None:
    email = OutgoingEmail(job_id=None, sender="noreply@em.example.com", to="user@example.com", subject="Hi", html=HTML)

    get_provider("SENDGRID").send(email, Credentials(api_key=SENDGRID_KEY))

    (call,) = sendgrid.sent
    assert call.json["content"] == [{"type": "text/plain", "value": TEXT}, {"type": "text/html", "value": HTML}]


@pytest.mark.parametrize(
    ("html", "text"),
    [
        ("<p>First line<br>second line</p>", "First line\nsecond line"),
        ("<p>Steps:</p><ul><li>Sign up</li><li>Send</li></ul>", "Steps:\n\n  * Sign up\n  * Send"),
        ('<p><a href="https://x.example/r/1">https://x.example/r/1</a></p>', "https://x.example/r/1"),
        ('<a href="#top">Back to top</a>', "Back to top"),
        ('<a href="mailto:help@x.example">Write to us</a>', "Write to us (mailto:help@x.example)"),
        ("<style>p { color: red }</style><p>Styled</p>", "Styled"),
        ("Just text &amp; an entity", "Just text & an entity"),
    ],
    ids=["br", "list", "link-text-is-its-url", "fragment", "mailto", "style", "plain"],
)
def test_the_text_part_reads_as_the_html_shows(html: str, text: str) -> None:
    assert text_part(html) == text


def test_notifyhubs_own_mail_gets_the_same_text_part(db: None) -> None:
    platform_email_send(to="ada@example.com", subject="Hi", html=HTML)

    (message,) = mail.outbox
    assert message.body == TEXT


def test_a_password_reset_emails_its_link_in_the_text_part_too(db: None) -> None:
    account_create(email="ada@example.com", plan="free", password="a sound passphrase 42")

    Browser().post("/password-reset/", {"email": "ada@example.com"})

    (message,) = mail.outbox
    link = re.search(r'href="([^"]+)"', message.alternatives[0][0])  # type: ignore[attr-defined]
    assert link
    assert "/password-reset/" in link.group(1)
    assert link.group(1) in message.body

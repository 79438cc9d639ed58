"""Fake provider servers wired into settings, each accepting one known credential."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.providers import FakePostmark, FakeResend, FakeSendGrid

SENDGRID_KEY = "sendgrid-key"
RESEND_KEY = "resend-key"
POSTMARK_KEY = "postmark-key"
POSTMARK_ACCOUNT_TOKEN = "postmark-account-token"


@pytest.fixture
def sendgrid(settings: Any) -> Iterator[FakeSendGrid]:
    with FakeSendGrid() as fake:
        fake.accept_key(SENDGRID_KEY)
        settings.SENDGRID_API_URL = fake.url
        yield fake


@pytest.fixture
def resend(settings: Any) -> Iterator[FakeResend]:
    with FakeResend() as fake:
        fake.accept_key(RESEND_KEY)
        settings.RESEND_API_URL = fake.url
        yield fake


@pytest.fixture
def postmark(settings: Any) -> Iterator[FakePostmark]:
    with FakePostmark() as fake:
        fake.accept_key(POSTMARK_KEY)
        fake.accept_account_token(POSTMARK_ACCOUNT_TOKEN)
        settings.POSTMARK_API_URL = fake.url
        yield fake

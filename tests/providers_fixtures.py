"""Fake provider servers wired into settings, each accepting one known credential."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest

from tests.fakes.providers import FakePostmark, FakeProvider, FakeResend, FakeSendGrid

FakeT = TypeVar("FakeT", bound=FakeProvider)

SENDGRID_KEY = "sendgrid-key"
RESEND_KEY = "resend-key"
POSTMARK_KEY = "postmark-key"
POSTMARK_ACCOUNT_TOKEN = "postmark-account-token"


@contextmanager
def serving(fake: FakeT, settings: Any, *, key: str) -> Iterator[FakeT]:
    """Starts the fake, has it accept ``key``, and points its ``*_API_URL`` setting at it."""
    with fake:
        fake.accept_key(key)
        setattr(settings, f"{fake.name}_API_URL", fake.url)
        yield fake


@pytest.fixture
def sendgrid(settings: Any) -> Iterator[FakeSendGrid]:
    with serving(FakeSendGrid(), settings, key=SENDGRID_KEY) as fake:
        yield fake


@pytest.fixture
def resend(settings: Any) -> Iterator[FakeResend]:
    with serving(FakeResend(), settings, key=RESEND_KEY) as fake:
        yield fake


@pytest.fixture
def postmark(settings: Any) -> Iterator[FakePostmark]:
    with serving(FakePostmark(), settings, key=POSTMARK_KEY) as fake:
        fake.accept_account_token(POSTMARK_ACCOUNT_TOKEN)
        yield fake

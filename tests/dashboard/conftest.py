from __future__ import annotations

import pytest
from django.test import Client as Browser

from accounts.models import Account
from tests.conftest import Client


@pytest.fixture
def browser(db: None) -> Browser:
    return Browser()


@pytest.fixture
def holder(startup: Client) -> tuple[Browser, Account]:
    """A signed-in Startup holder's browser, and their account."""
    browser = Browser()
    browser.force_login(startup.account.user)
    return browser, startup.account

from __future__ import annotations

import pytest
from django.utils import timezone

from accounts.models import Account
from accounts.services import api_key_issue
from tests.api.test_envelope import assert_error
from tests.clients import APIClient
from tests.conftest import Client

PING = "/api/v1/ping"


def test_a_missing_key_is_401(db: None) -> None:
    assert_error(APIClient().get(PING), 401, "API key is missing")


def test_an_empty_key_header_counts_as_missing(db: None) -> None:
    assert_error(APIClient().get(PING, HTTP_X_API_KEY=""), 401, "API key is missing")


def test_a_non_bearer_authorization_header_is_not_a_key(db: None) -> None:
    assert_error(APIClient().get(PING, HTTP_AUTHORIZATION="Basic dXNlcjpwYXNz"), 401, "API key is missing")


@pytest.mark.parametrize(
    "key",
    [
        "nh_" + "0" * 63,  # too short
        "nh_" + "A" * 64,  # upper case
        "xx_" + "a" * 64,  # wrong prefix
        "nh_" + "a" * 64,  # well formed, unknown
    ],
)
def test_a_malformed_or_unknown_key_is_401(db: None, key: str) -> None:
    assert_error(APIClient().get(PING, HTTP_X_API_KEY=key), 401, "Invalid API key")


def test_the_key_works_as_a_bearer_token(free: Client) -> None:
    response = APIClient().get(PING, HTTP_AUTHORIZATION=f"Bearer {free.api_key}")

    assert response.status_code == 200


def test_both_headers_at_once_are_refused(free: Client) -> None:
    response = APIClient().get(PING, HTTP_X_API_KEY=free.api_key, HTTP_AUTHORIZATION=f"Bearer {free.api_key}")

    assert_error(response, 400, "Send the API key in one header only")


def test_a_rotated_key_stops_working_and_the_new_one_works(free: Client) -> None:
    new_key = api_key_issue(account=free.account)

    assert_error(APIClient().get(PING, HTTP_X_API_KEY=free.api_key), 401, "Invalid API key")
    assert APIClient().get(PING, HTTP_X_API_KEY=new_key).status_code == 200


@pytest.mark.parametrize("change", [{"is_active": False}, {"deleted_at": timezone.now()}])
def test_an_inactive_or_deleted_account_is_403(free: Client, change: dict[str, object]) -> None:
    Account.objects.filter(pk=free.account.pk).update(**change)

    assert_error(free.get(PING), 403, "Account is inactive")
    assert_error(free.send_webhook(), 403, "Account is inactive")
    assert free.account.jobs.count() == 0


def test_the_key_is_stored_only_as_a_digest(free: Client) -> None:
    stored = free.account.api_keys.get()

    assert free.api_key not in (stored.digest, stored.hint)
    assert len(stored.digest) == 64

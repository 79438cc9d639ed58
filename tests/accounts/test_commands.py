from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.keys import API_KEY_PATTERN
from accounts.models import Account
from accounts.selectors import provider_credentials, signing_secret_get, signing_secrets_get
from core.api.envelope import iso_utc
from tests.clients import APIClient


def run(*args: str) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().splitlines()


def ping(api_key: str) -> int:
    return APIClient().get("/api/v1/ping", HTTP_X_API_KEY=api_key).status_code


@pytest.mark.django_db
def test_createaccount_prints_a_working_key_alone_on_the_last_line() -> None:
    lines = run("createaccount", "dev@example.com", "--plan", "indie", "--password", "s3cret-pass")

    api_key = lines[-1]
    assert API_KEY_PATTERN.fullmatch(api_key)
    assert ping(api_key) == 200
    account = Account.objects.get(user__email="dev@example.com")
    assert account.plan == "indie"
    assert account.user.check_password("s3cret-pass")


@pytest.mark.django_db
def test_createaccount_refuses_a_second_account_for_one_email() -> None:
    run("createaccount", "dev@example.com")

    with pytest.raises(CommandError, match="already exists"):
        run("createaccount", "DEV@example.com")


@pytest.mark.django_db
def test_createaccount_refuses_a_bad_email() -> None:
    with pytest.raises(CommandError, match="not an email address"):
        run("createaccount", "nobody")


@pytest.mark.django_db
def test_rotateapikey_revokes_the_old_key() -> None:
    old_key = run("createaccount", "dev@example.com")[-1]

    new_key = run("rotateapikey", "dev@example.com")[-1]

    assert API_KEY_PATTERN.fullmatch(new_key)
    assert new_key != old_key
    assert (ping(old_key), ping(new_key)) == (401, 200)


@pytest.mark.django_db
def test_setplan_changes_the_plan() -> None:
    run("createaccount", "dev@example.com")

    run("setplan", "dev@example.com", "startup")

    assert Account.objects.get(user__email="dev@example.com").plan == "startup"


@pytest.mark.django_db
def test_commands_name_an_unknown_account() -> None:
    with pytest.raises(CommandError, match=r"No account for ghost@example\.com"):
        run("rotateapikey", "ghost@example.com")


@pytest.mark.django_db
def test_signingsecret_generate_rotate_delete() -> None:
    run("createaccount", "dev@example.com")

    first = run("signingsecret", "dev@example.com", "generate")[-1]
    with pytest.raises(CommandError, match="already has a signing secret"):
        run("signingsecret", "dev@example.com", "generate")
    rotated = run("signingsecret", "dev@example.com", "rotate")
    second = rotated[-1]
    account = Account.objects.get(user__email="dev@example.com")
    # The previous secret signs beside the new one for SIGNING_SECRET_OVERLAP_SECONDS (24 hours), and says until when.
    until = account.signing_secret.previous_signs_until
    assert until is not None
    assert rotated[-2] == (
        f"Signing secret of dev@example.com (shown once; the previous one also signs every delivery until "
        f"{iso_utc(until)}):"
    )
    assert signing_secrets_get(account_id=account.pk) == [second, first]

    assert first.startswith("whsec_")
    assert second.startswith("whsec_")
    assert first != second
    assert signing_secret_get(account_id=account.pk) == second
    assert second not in account.signing_secret.encrypted_secret
    run("signingsecret", "dev@example.com", "delete")
    assert signing_secret_get(account_id=account.pk) is None
    assert signing_secrets_get(account_id=account.pk) == []
    with pytest.raises(CommandError, match="has no signing secret"):
        run("signingsecret", "dev@example.com", "rotate")


@pytest.mark.django_db
def test_providerkey_adds_orders_replaces_and_removes_keys() -> None:
    run("createaccount", "dev@example.com", "--plan", "startup")
    account = Account.objects.get(user__email="dev@example.com")

    run("providerkey", "dev@example.com", "add", "resend", "re_1")
    run("providerkey", "dev@example.com", "add", "POSTMARK", "pm_server", "--account-token", "pm_account")
    run("providerkey", "dev@example.com", "add", "SENDGRID", "SG.1", "--priority", "1")
    run("providerkey", "dev@example.com", "add", "RESEND", "re_2")

    credentials = provider_credentials(account=account)
    assert list(credentials) == ["SENDGRID", "RESEND", "POSTMARK"]
    assert credentials["RESEND"].api_key == "re_2"
    assert credentials["POSTMARK"].account_token == "pm_account"
    assert all("re_2" not in key.encrypted_api_key for key in account.provider_keys.all())
    run("providerkey", "dev@example.com", "remove", "SENDGRID")
    assert list(provider_credentials(account=account)) == ["RESEND", "POSTMARK"]
    with pytest.raises(CommandError, match="has no SENDGRID key"):
        run("providerkey", "dev@example.com", "remove", "SENDGRID")
    with pytest.raises(CommandError, match="needs the provider API key"):
        run("providerkey", "dev@example.com", "add", "SENDGRID")

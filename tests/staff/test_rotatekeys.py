"""`manage.py rotatekeys`: every stored secret re-encrypted with the newest of FIELD_ENCRYPTION_KEYS, once."""

from __future__ import annotations

import base64
import re
from io import StringIO
from typing import Any

import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import models

from accounts.models import ProviderKey, SigningSecret
from accounts.services import provider_key_set, signing_secret_generate
from core.crypto import encrypt, reencrypt
from customer_webhooks.models import Endpoint
from customer_webhooks.selectors import endpoint_signing_secrets
from customer_webhooks.services import app_create, endpoint_secret_rotate
from customer_webhooks.services import endpoint_create as customer_endpoint_create
from event_endpoints.models import EventEndpoint
from event_endpoints.services import endpoint_create
from notifications.models import Job
from staff import keyrotation
from staff.keyrotation import ENCRYPTED_COLUMNS, Column, column_name
from tests.conftest import Client
from tests.factories import JobFactory
from tests.notifications.test_purge_jobs import interrupt_on_second_batch
from webhooks_inbound.models import TrackingCredentials
from webhooks_inbound.services import resend_secret_set

OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()
RESEND_SECRET = "whsec_" + base64.b64encode(b"resend-signing-secret-24b").decode()
SIGNING_SECRET: Column = (SigningSecret, "encrypted_secret")
PROGRESS_LINE = re.compile(r"^(\d[\d,]*)/(\d[\d,]*) secrets \((\d+\.\d)%\) [\d,]+/s$")


@pytest.fixture
def keys(settings: Any) -> Any:
    """The settings, with secrets stored under OLD until a test puts NEW first."""
    settings.FIELD_ENCRYPTION_KEYS = [OLD]
    return settings


def store_every_secret(client: Client) -> dict[Column, str]:
    """A secret in every encrypted column, stored as the services store them; what each column holds, decrypted."""
    account = client.account
    provider_key_set(account=account, provider="POSTMARK", api_key="pm-server-token", account_token="pm-account-token")
    # Rotated once: the secret it replaced still signs, from a column of its own.
    previous_signing_secret = signing_secret_generate(account=account)
    signing_secret = signing_secret_generate(account=account)
    resend_secret_set(account=account, signing_secret=RESEND_SECRET)
    sent = client.send_webhook(
        url="https://hook-user:hook-pass@hooks.example.com/in", headers={"Authorization": "Bearer tok-a1b2c3"}
    )
    assert sent.status_code == 202, sent.json()
    endpoint_create(
        account=account, url="https://event-user:event-pass@hooks.example.com/events", events=["job.failed"]
    )
    app = app_create(account=account, uid="acme", name="Acme")
    customer_endpoint = customer_endpoint_create(app=app, url="https://app-user:app-pass@hooks.example.com/acme")
    # Rotated once too: the endpoint's secret it replaced still signs, from a column of its own.
    (previous_endpoint_secret,) = endpoint_signing_secrets(customer_endpoint)
    endpoint_secret = endpoint_secret_rotate(customer_endpoint)
    return {
        (ProviderKey, "encrypted_api_key"): "pm-server-token",
        (ProviderKey, "encrypted_account_token"): "pm-account-token",
        SIGNING_SECRET: signing_secret,
        (SigningSecret, "previous_encrypted_secret"): previous_signing_secret,
        (Job, "url_credentials"): "hook-user:hook-pass",
        (Job, "secret_headers"): '{"Authorization": "Bearer tok-a1b2c3"}',
        (TrackingCredentials, "encrypted_resend_secret"): RESEND_SECRET,
        (EventEndpoint, "url_credentials"): "event-user:event-pass",
        (Endpoint, "url_credentials"): "app-user:app-pass",
        (Endpoint, "encrypted_secret"): endpoint_secret,
        (Endpoint, "previous_encrypted_secret"): previous_endpoint_secret,
    }


def stored(column: Column) -> list[str]:
    """The column's non-empty values as the database holds them."""
    model, field = column
    return list(
        model.objects.exclude(**{f"{field}__isnull": True}).exclude(**{field: ""}).values_list(field, flat=True)
    )


def decrypted_with(key: str, token: str) -> str:
    return Fernet(key.encode()).decrypt(token.encode()).decode()


def rotatekeys(*args: str, stderr: StringIO | None = None) -> str:
    out = StringIO()
    call_command("rotatekeys", *args, stdout=out, stderr=stderr or StringIO())
    return out.getvalue()


def report(**counts: str) -> str:
    """What a run prints: one line per listed column, ``counts`` by column name, else nothing found."""
    return "".join(
        f"{column_name(column)}: {counts.get(column_name(column), '0 re-encrypted, 0 skipped')}\n"
        for column in ENCRYPTED_COLUMNS
    )


def every_column(outcome: str) -> str:
    return report(**{column_name(column): outcome for column in ENCRYPTED_COLUMNS})


def test_it_reencrypts_every_listed_column_with_the_new_key(startup: Client, keys: Any) -> None:
    plaintexts = store_every_secret(startup)
    assert set(plaintexts) == set(ENCRYPTED_COLUMNS)
    keys.FIELD_ENCRYPTION_KEYS = [NEW, OLD]

    output = rotatekeys()

    assert output == every_column("1 re-encrypted, 0 skipped")
    assert "accounts_signingsecret.encrypted_secret: 1 re-encrypted, 0 skipped\n" in output
    assert {column: [decrypted_with(NEW, token) for token in stored(column)] for column in plaintexts} == {
        column: [plaintext] for column, plaintext in plaintexts.items()
    }


def test_every_encrypted_value_the_services_store_is_in_a_listed_column(startup: Client, keys: Any) -> None:
    store_every_secret(startup)

    assert encrypted_columns_found() == set(ENCRYPTED_COLUMNS)


def encrypted_columns_found() -> set[Column]:
    """Every text column of every model holding a value that OLD decrypts."""
    return {
        (model, field.name)
        for model in apps.get_models()
        for field in model._meta.concrete_fields
        if isinstance(field, models.CharField | models.TextField)
        and any(_is_encrypted(value) for value in model._base_manager.values_list(field.attname, flat=True))
    }


def _is_encrypted(value: object) -> bool:
    """A text the key decrypts; a JSON column reads as what it holds, never as text."""
    if not isinstance(value, str):
        return False
    try:
        decrypted_with(OLD, value)
    except InvalidToken:
        return False
    return True


def test_a_second_run_reencrypts_nothing(startup: Client, keys: Any) -> None:
    store_every_secret(startup)
    keys.FIELD_ENCRYPTION_KEYS = [NEW, OLD]
    rotatekeys()
    after_first = {column: stored(column) for column in ENCRYPTED_COLUMNS}

    output = rotatekeys()

    assert output == every_column("0 re-encrypted, 1 skipped (1 already under the newest key)")
    assert {column: stored(column) for column in ENCRYPTED_COLUMNS} == after_first


def test_empty_columns_are_left_alone(startup: Client, keys: Any) -> None:
    provider_key_set(account=startup.account, provider="SENDGRID", api_key="sg-key")
    JobFactory(account=startup.account)
    keys.FIELD_ENCRYPTION_KEYS = [NEW, OLD]

    output = rotatekeys()

    assert output == report(**{"accounts_providerkey.encrypted_api_key": "1 re-encrypted, 0 skipped"})
    assert ProviderKey.objects.get().encrypted_account_token == ""
    assert Job.objects.get().url_credentials is None


def test_a_secret_its_holder_set_between_read_and_write_is_not_overwritten(
    startup: Client, keys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_every_secret(startup)
    keys.FIELD_ENCRYPTION_KEYS = [NEW, OLD]
    (read,) = stored(SIGNING_SECRET)
    set_meanwhile: list[str] = []

    def holder_rotates_it_first(token: str) -> str | None:
        # Once: the rotation moves the token it replaced into the previous secret's column, read after this one.
        if token == read and not set_meanwhile:
            set_meanwhile.append(signing_secret_generate(account=startup.account))
        return reencrypt(token)

    monkeypatch.setattr(keyrotation, "reencrypt", holder_rotates_it_first)

    output = rotatekeys()

    assert "accounts_signingsecret.encrypted_secret: 0 re-encrypted, 1 skipped (1 changed since read)\n" in output
    (kept,) = stored(SIGNING_SECRET)
    assert decrypted_with(NEW, kept) == set_meanwhile[0]
    assert output.count(": 1 re-encrypted, 0 skipped\n") == len(ENCRYPTED_COLUMNS) - 1


def test_progress_goes_to_stderr_a_line_every_ten_batches(startup: Client, keys: Any) -> None:
    secrets = len(store_every_secret(startup)) + 6
    for number in range(6):
        JobFactory(account=startup.account, url_credentials=encrypt(f"user:pass{number}"))
    keys.FIELD_ENCRYPTION_KEYS = [NEW, OLD]
    stderr = StringIO()

    rotatekeys("--batch-size", "1", stderr=stderr)

    lines = stderr.getvalue().splitlines()
    assert secrets == 17  # a line at the tenth batch of one secret each, and at the last
    assert [PROGRESS_LINE.match(line).groups() for line in lines] == [  # type: ignore[union-attr]
        ("10", "17", "58.8"),
        ("17", "17", "100.0"),
    ]


def test_an_interrupted_run_reports_what_it_did_and_a_second_run_does_the_rest(
    startup: Client, keys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_every_secret(startup)
    keys.FIELD_ENCRYPTION_KEYS = [NEW, OLD]
    out = StringIO()
    interrupt_on_second_batch(monkeypatch)

    with pytest.raises(CommandError, match=r"^Interrupted: run rotatekeys again to re-encrypt the rest\.$") as stopped:
        call_command("rotatekeys", "--batch-size", "1", stdout=out, stderr=StringIO())

    assert stopped.value.returncode == 130
    first, second = (column_name(column) for column in ENCRYPTED_COLUMNS[:2])
    assert out.getvalue() == report(**{first: "1 re-encrypted, 0 skipped", second: "1 re-encrypted, 0 skipped"})
    monkeypatch.undo()
    assert rotatekeys().count(": 1 re-encrypted, 0 skipped\n") == len(ENCRYPTED_COLUMNS) - 2


def test_a_secret_no_listed_key_decrypts_is_named_and_left_as_it_is(startup: Client, keys: Any) -> None:
    lost_key = Fernet.generate_key()
    unreadable = JobFactory(account=startup.account, url_credentials=Fernet(lost_key).encrypt(b"user:pass").decode())
    provider_key_set(account=startup.account, provider="SENDGRID", api_key="sg-key")
    keys.FIELD_ENCRYPTION_KEYS = [NEW, OLD]
    out, stderr = StringIO(), StringIO()

    with pytest.raises(CommandError, match=r"^1 secret\(s\) decrypt with no key of FIELD_ENCRYPTION_KEYS") as failed:
        call_command("rotatekeys", stdout=out, stderr=stderr)

    assert failed.value.returncode == 1
    assert out.getvalue() == report(
        **{
            "accounts_providerkey.encrypted_api_key": "1 re-encrypted, 0 skipped",
            "notifications_job.url_credentials": "0 re-encrypted, 0 skipped, 1 unreadable",
        }
    )
    assert f"notifications_job.url_credentials, row {unreadable.id}: no key of FIELD_ENCRYPTION_KEYS decrypts it" in (
        stderr.getvalue()
    )
    assert stored((Job, "url_credentials")) == [unreadable.url_credentials]


@pytest.mark.django_db
@pytest.mark.parametrize("size", ["0", "many"])
def test_it_refuses_a_batch_size_that_is_not_a_positive_number(size: str) -> None:
    with pytest.raises(CommandError, match=r"argument --batch-size: must be"):
        rotatekeys("--batch-size", size)

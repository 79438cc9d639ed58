"""``manage.py apps EMAIL list|show APP|enable APP ENDPOINT_ID``: an account's apps at the shell."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import AuditAction, AuditEntry
from core.api.envelope import iso_utc
from customer_webhooks.models import Endpoint
from customer_webhooks.services import app_create, endpoint_create
from tests.conftest import Client

FAILING_SINCE = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)


def run(*args: str) -> list[str]:
    out = StringIO()
    call_command("apps", *args, stdout=out)
    return out.getvalue().splitlines()


def refusal(*args: str) -> str:
    with pytest.raises(CommandError) as refused:
        run(*args)
    return str(refused.value)


def test_list_shows_each_app_newest_first_with_its_endpoint_count(free: Client) -> None:
    email = free.account.user.email
    acme = app_create(account=free.account, name="Acme", uid="acme")
    endpoint_create(app=acme, url="https://hooks.acme.example/a")
    endpoint_create(app=acme, url="https://hooks.acme.example/b")
    bare = app_create(account=free.account, name="Bare")

    lines = run(email, "list")

    assert lines == [
        f"{bare.id}\t-\tBare\t{iso_utc(bare.created_at)}\t0 endpoint(s)",
        f"{acme.id}\tacme\tAcme\t{iso_utc(acme.created_at)}\t2 endpoint(s)",
        f"2 app(s) for {email}.",
    ]


def test_show_masks_each_url_and_says_why_an_endpoint_is_disabled(free: Client) -> None:
    email = free.account.user.email
    acme = app_create(account=free.account, name="Acme", uid="acme")
    live = endpoint_create(app=acme, url="https://u:p@hooks.acme.example/T0/s3cret", event_types=["invoice.paid"])
    gone = endpoint_create(app=acme, url="https://old.acme.example/", rate_limit=10)
    held = endpoint_create(app=acme, url="https://held.acme.example/in")
    Endpoint.objects.filter(pk=live.pk).update(failing_since=FAILING_SINCE)
    Endpoint.objects.filter(pk=gone.pk).update(disabled=True, disabled_reason="gone")
    Endpoint.objects.filter(pk=held.pk).update(disabled=True)

    lines = run(email, "show", str(acme.id))

    assert lines == [
        f"app acme (Acme), created {iso_utc(acme.created_at)}: 3 endpoint(s)",
        f"{live.id}\thttps://hooks.acme.example/***\tinvoice.paid\t-\tenabled\tfailing since 2026-11-20T08:00:00.000Z",
        f"{gone.id}\thttps://old.acme.example\t*\t10/s\tdisabled (gone)\t-",
        f"{held.id}\thttps://held.acme.example/***\t*\t-\tdisabled (by the holder)\t-",
    ]
    assert "s3cret" not in "\n".join(lines)


def test_enable_starts_an_endpoint_notifyhub_disabled_afresh_and_records_the_operator(free: Client) -> None:
    email = free.account.user.email
    acme = app_create(account=free.account, name="Acme", uid="acme")
    endpoint = endpoint_create(app=acme, url="https://hooks.acme.example/in")
    Endpoint.objects.filter(pk=endpoint.pk).update(
        disabled=True, disabled_reason="failing", failing_since=FAILING_SINCE
    )

    (line,) = run(email, "enable", "acme", str(endpoint.id))

    assert line == (
        f"Enabled endpoint {endpoint.id} (https://hooks.acme.example/***) of app acme (Acme), disabled for 'failing': "
        "it receives the app's next messages. Its failed deliveries stay failed until the holder recovers them "
        "(POST .../recover)."
    )
    stored = Endpoint.objects.get(pk=endpoint.pk)
    assert (stored.disabled, stored.disabled_reason, stored.failing_since) == (False, "", None)
    entry = AuditEntry.objects.get(account=free.account, action=AuditAction.ENDPOINT_UPDATED)
    assert (entry.actor, entry.target, entry.ip) == ("operator", "https://hooks.acme.example/*** (app acme)", None)


def test_refusals(free: Client, make_client: Callable[..., Client]) -> None:
    email = free.account.user.email
    acme = app_create(account=free.account, name="Acme", uid="acme")
    enabled = endpoint_create(app=acme, url="https://hooks.acme.example/in")
    held = endpoint_create(app=acme, url="https://held.acme.example/in")
    Endpoint.objects.filter(pk=held.pk).update(disabled=True)
    other = make_client()
    theirs = app_create(account=other.account, name="Theirs", uid="theirs")
    their_endpoint = endpoint_create(app=theirs, url="https://hooks.theirs.example/in")

    assert refusal("nobody@example.com", "list") == "No account for nobody@example.com"
    assert refusal(email, "list", "acme") == "'list' takes no app"
    assert refusal(email, "show") == "'show' needs the app's id or uid"
    assert refusal(email, "show", "acme", str(enabled.id)) == "'show' takes no endpoint id"
    assert refusal(email, "show", "theirs") == "App theirs not found"
    assert refusal(email, "show", str(theirs.id)) == f"App {theirs.id} not found"
    assert refusal(email, "enable", "acme") == "'enable' needs the endpoint's id"
    assert refusal(email, "enable", "acme", str(their_endpoint.id)) == "Endpoint not found"
    assert refusal(email, "enable", "acme", str(uuid.uuid4())) == "Endpoint not found"
    assert refusal(email, "enable", "acme", "not-an-id") == "Endpoint not found"
    assert refusal(email, "enable", "acme", str(enabled.id)) == f"Endpoint {enabled.id} is enabled already"
    assert refusal(email, "enable", "acme", str(held.id)) == (
        f"Endpoint {held.id} was disabled by the account holder, who may enable it"
    )
    assert not AuditEntry.objects.filter(action=AuditAction.ENDPOINT_UPDATED).exists()

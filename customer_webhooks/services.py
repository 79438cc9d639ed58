"""Creating, changing and deleting an account's apps and their endpoints (docs/customer-webhooks.md).

Each change is recorded in the audit log in its own transaction (docs/rules.md, "Audit log"): the target names the
app by its uid (or id) and an endpoint by its URL's origin, never a secret, a credential or a URL's path.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import TypedDict

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Account, AuditAction
from accounts.services import audit_record
from core.crypto import decrypt, encrypt
from core.errors import AppUidTaken, EndpointLimit
from customer_webhooks.models import ENDPOINTS_PER_APP, App, Endpoint, Message
from customer_webhooks.selectors import endpoint_signing_secrets
from notifications.delivery.http import MASK, split_credentials, url_for_audit
from notifications.engine import store
from notifications.models import Job
from notifications.services import jobs_delete_in_batches

# The columns a PATCH of an endpoint may write.
UPDATABLE = (
    "url",
    "url_credentials",
    "event_types",
    "description",
    "rate_limit",
    "disabled",
    "disabled_reason",
    "failing_since",
)
# Deliveries, or messages, a delete takes a transaction at a time (endpoint_delete, app_delete).
DELETE_BATCH_SIZE = 1000
# Random bytes in an endpoint's secret: Standard Webhooks' receivers take any key of 24 to 64 bytes.
SECRET_BYTES = 24


def app_create(*, account: Account, name: str, uid: str | None = None) -> App:
    """A new app; a uid the account uses already is AppUidTaken."""
    app = App(account=account, uid=uid, name=name)
    with _uid_kept_unique(uid), transaction.atomic():
        app.save(force_insert=True)
        audit_record(account=account, action=AuditAction.APP_CREATED, target=_app_target(app))
    return app


def app_update(*, app: App, name: str | None = None, uid: str | None = None) -> App:
    """Renames the app or gives it another uid (what is None stays); a uid another app of the account has is
    AppUidTaken. A request that changes nothing records nothing."""
    changed = {
        field: value for field, value in (("name", name), ("uid", uid)) if value not in (None, getattr(app, field))
    }
    if not changed:
        return app
    for field, value in changed.items():
        setattr(app, field, value)
    with _uid_kept_unique(uid), transaction.atomic():
        app.save(update_fields=list(changed))
        audit_record(account=app.account, action=AuditAction.APP_UPDATED, target=_app_target(app))
    return app


def app_delete(app: App) -> None:
    """Deletes the app with its endpoints, its messages and their deliveries: the deliveries and messages first, in
    batches (``_deliveries_delete``), then the app with what came meanwhile and its audit entry, together."""
    target = _app_target(app)  # delete() takes the instance's id away
    for endpoint in Endpoint.objects.filter(app=app):
        _deliveries_delete(endpoint)
    for test in (False, True):
        _messages_delete(Message.objects.filter(app=app, test=test))
    with transaction.atomic():
        app.delete()
        audit_record(account=app.account, action=AuditAction.APP_DELETED, target=target)


def endpoint_create(
    *,
    app: App,
    url: str,
    event_types: Sequence[str] = (),
    description: str | None = None,
    rate_limit: int | None = None,
) -> Endpoint:
    """A new endpoint of the app with a secret of its own; the app's 21st is EndpointLimit."""
    endpoint = Endpoint(
        app=app,
        event_types=list(event_types),
        description=description or "",
        rate_limit=rate_limit,
        encrypted_secret=encrypt(_new_secret()),
    )
    _url_set(endpoint, url)
    with transaction.atomic():
        # The app's row, locked until the transaction ends: two creates at once take turns, so both cannot take
        # the last place.
        App.objects.select_for_update().filter(pk=app.pk).first()
        if Endpoint.objects.filter(app=app).count() >= ENDPOINTS_PER_APP:
            raise EndpointLimit()
        endpoint.save(force_insert=True)
        endpoint_audit(endpoint, AuditAction.ENDPOINT_CREATED)
    return endpoint


class EndpointChanges(TypedDict, total=False):
    """What a PATCH of an endpoint may change; a key it does not hold stays as it is."""

    url: str
    event_types: list[str]
    # None: no description, no limit.
    description: str | None
    rate_limit: int | None
    disabled: bool


def endpoint_update(*, endpoint: Endpoint, changes: EndpointChanges) -> Endpoint:
    """Changes what ``changes`` holds, and those columns alone: what the engine writes meanwhile (``failing_since``,
    a disabling) is not written over. Enabling an endpoint starts it afresh: why it was disabled and since when it
    failed are forgotten. A request that changes nothing records nothing."""
    before = {field: getattr(endpoint, field) for field in UPDATABLE}
    if "url" in changes:
        _url_set(endpoint, changes["url"])
    if "event_types" in changes:
        endpoint.event_types = changes["event_types"]
    if "description" in changes:
        endpoint.description = changes["description"] or ""
    if "rate_limit" in changes:
        endpoint.rate_limit = changes["rate_limit"]
    if changes.get("disabled", endpoint.disabled) != endpoint.disabled:
        endpoint.disabled = changes["disabled"]
        endpoint.disabled_reason = ""
        endpoint.failing_since = None
    changed = [field for field in UPDATABLE if getattr(endpoint, field) != before[field]]
    if changed:
        with transaction.atomic():
            endpoint.save(update_fields=changed)
            endpoint_audit(endpoint, AuditAction.ENDPOINT_UPDATED)
    return endpoint


def endpoint_delete(endpoint: Endpoint) -> None:
    """Deletes the endpoint with its deliveries: the deliveries first, in batches (``_deliveries_delete``), then the
    endpoint with any delivery made meanwhile and its audit entry, together."""
    _deliveries_delete(endpoint)
    with transaction.atomic():
        endpoint.delete()
        endpoint_audit(endpoint, AuditAction.ENDPOINT_DELETED)


def _deliveries_delete(endpoint: Endpoint) -> None:
    """Deletes the endpoint's deliveries with their logs, tags and announcements, DELETE_BATCH_SIZE a transaction,
    down its index of deliveries. Django's cascade from the endpoint would collect them all first and delete them in
    statements naming every id, in one transaction: seconds, and a lock on each, for an endpoint with tens of
    thousands (bench/RESULTS.md, "customer-webhooks-delete"). A batch deleted stays deleted should a later step fail:
    deleting again finishes the job."""
    for _ in jobs_delete_in_batches(Job.objects.filter(endpoint=endpoint), batch_size=DELETE_BATCH_SIZE):
        pass


def _messages_delete(messages: QuerySet[Message]) -> None:
    """Deletes ``messages`` (their deliveries gone before them) DELETE_BATCH_SIZE a transaction, walking their index
    by creation from where the last batch ended, never over the entries it deleted (``store.walk_from``)."""
    position: store.Position | None = None
    while batch := list(store.walk_from(messages, position).values_list("created_at", "id")[:DELETE_BATCH_SIZE]):
        Message.objects.filter(id__in=[message_id for _, message_id in batch]).delete()
        position = batch[-1]


def endpoint_secret_rotate(endpoint: Endpoint) -> str:
    """Gives the endpoint a new secret, returned in plaintext; the one it replaces keeps signing beside it for
    SIGNING_SECRET_OVERLAP_SECONDS, as an account's does (accounts.services.signing_secret_generate), so the
    endpoint's receiver verifies deliveries while it is given the new one."""
    secret = _new_secret()
    overlap = timedelta(seconds=settings.SIGNING_SECRET_OVERLAP_SECONDS)
    with transaction.atomic():
        current = Endpoint.objects.select_for_update().only("encrypted_secret").get(pk=endpoint.pk)
        endpoint.previous_encrypted_secret = current.encrypted_secret if overlap else ""
        endpoint.previous_signs_until = timezone.now() + overlap if overlap else None
        endpoint.encrypted_secret = encrypt(secret)
        endpoint.save(update_fields=["encrypted_secret", "previous_encrypted_secret", "previous_signs_until"])
        endpoint_audit(endpoint, AuditAction.ENDPOINT_SECRET_ROTATED)
    return secret


def endpoint_secret_reveal(endpoint: Endpoint) -> str:
    """The secret that signs the endpoint's deliveries, for its holder to hand on; the reading is audit-logged, as
    whoever holds the secret can sign as NotifyHub does (docs/rules.md, "Audit log")."""
    secret = endpoint_signing_secrets(endpoint)[0]
    endpoint_audit(endpoint, AuditAction.ENDPOINT_SECRET_REVEALED)
    return secret


def _new_secret() -> str:
    """``whsec_`` and base64, as Standard Webhooks' secrets are written (core/signing.py decodes it so)."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def _url_set(endpoint: Endpoint, url: str) -> None:
    """The URL as stored: its credentials masked, and kept apart encrypted (as a webhook job's). The same credentials
    keep their token, so a PATCH giving the URL there is changes nothing; so does the URL as the API shows it, its
    credentials masked (``***``): they stay as they are."""
    masked_url, credentials = split_credentials(url)
    endpoint.url = masked_url
    if credentials == MASK and endpoint.url_credentials:
        return
    if not credentials:
        endpoint.url_credentials = None
    elif not endpoint.url_credentials or decrypt(endpoint.url_credentials) != credentials:
        endpoint.url_credentials = encrypt(credentials)


@contextmanager
def _uid_kept_unique(uid: str | None) -> Iterator[None]:
    """Turns the database's refusal of a uid the account has already into AppUidTaken: its unique constraint
    decides, so two requests at once cannot both take one."""
    try:
        yield
    except IntegrityError as error:
        if uid is None:
            raise
        raise AppUidTaken(uid=uid) from error


def _app_target(app: App) -> str:
    return app.uid or str(app.id)


def endpoint_audit(endpoint: Endpoint, action: AuditAction) -> None:
    """Records ``action`` on the endpoint in its account's audit log, naming it by its URL as the log names an event
    endpoint's (never its credentials, path or query), then its app."""
    target = f"{url_for_audit(endpoint.url)} (app {_app_target(endpoint.app)})"
    audit_record(account=endpoint.app.account, action=action, target=target)

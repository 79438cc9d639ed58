"""Reading apps, endpoints and messages (docs/customer-webhooks.md)."""

from __future__ import annotations

import re
import uuid

from django.db.models import Count, QuerySet
from django.utils import timezone

from accounts.models import Account
from accounts.selectors import signing_secrets_decrypt
from core.errors import AppNotFound, EndpointNotFound
from core.paging import page_rows
from customer_webhooks.models import APP_UID, App, Endpoint

# An app's id as the API shows it; a uid of this shape is refused, so an id-or-uid names one app only.
APP_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def app_get(*, account: Account, app: str) -> App:
    """The account's app whose id or uid is ``app``; another account's, or none, is AppNotFound (the same answer)."""
    found = App.objects.filter(**_app_named(app), account=account).first()
    if found is None:
        raise AppNotFound(app=app)
    return found


def app_get_with_enabled_endpoints(*, account: Account, app: str) -> tuple[App, list[Endpoint]]:
    """The account's app named by ``app`` (as app_get finds it, or AppNotFound) and its enabled endpoints, oldest
    first: one statement, the endpoints with their app, when it has any (a message's accept reads them so); app_get's
    when it has none."""
    named = {f"app__{lookup}": value for lookup, value in _app_named(app).items()}
    endpoints = list(Endpoint.objects.filter(**named, app__account=account, disabled=False).select_related("app"))
    if not endpoints:
        return app_get(account=account, app=app), []
    found = endpoints[0].app
    found.account = account
    for endpoint in endpoints:
        endpoint.app = found
    return found, endpoints


def _app_named(app: str) -> dict[str, object]:
    """The lookup of the app whose id or uid is ``app``. A uid is never shaped like an id; a reference that can be
    neither (one with a NUL in it, which PostgreSQL's text refuses, among others) is AppNotFound, not looked up."""
    if APP_ID.fullmatch(app):
        return {"id": uuid.UUID(app)}
    if APP_UID.fullmatch(app):
        return {"uid": app}
    raise AppNotFound(app=app)


def app_list(*, account: Account, page: int, limit: int) -> tuple[list[App], int]:
    """One page of the account's apps, newest first, and their total."""
    return page_rows(App.objects.filter(account=account).order_by("-created_at", "-id"), page=page, limit=limit)


def apps_with_endpoint_counts(*, account: Account) -> QuerySet[App]:
    """The account's apps, newest first, each with ``endpoint_count`` annotated (``manage.py apps``)."""
    return (
        App.objects.filter(account=account).annotate(endpoint_count=Count("endpoints")).order_by("-created_at", "-id")
    )


def endpoint_list(*, app: App) -> list[Endpoint]:
    """The app's endpoints, oldest first (there are at most ENDPOINTS_PER_APP)."""
    return list(Endpoint.objects.filter(app=app))


def endpoint_get(*, app: App, endpoint_id: str) -> Endpoint:
    """The app's endpoint of this id; another app's, another account's or none is EndpointNotFound."""
    try:
        found = Endpoint.objects.filter(app=app, id=uuid.UUID(endpoint_id)).first()
    except ValueError:
        found = None
    if found is None:
        raise EndpointNotFound()
    found.app = app
    return found


def endpoint_signing_secrets(endpoint: Endpoint) -> list[str]:
    """The secrets that sign the endpoint's deliveries now, newest first: its secret and, until
    ``previous_signs_until``, the one its last rotation replaced (customer_webhooks.services.endpoint_secret_rotate)."""
    still_signs = endpoint.previous_signs_until is not None and endpoint.previous_signs_until > timezone.now()
    return signing_secrets_decrypt(endpoint.encrypted_secret, endpoint.previous_encrypted_secret if still_signs else "")

"""Reading apps, endpoints and messages (docs/customer-webhooks.md)."""

from __future__ import annotations

import re
import uuid

from django.db.models import Q

from accounts.models import Account
from core.errors import AppNotFound
from customer_webhooks.models import App

# An app's id as the API shows it; a uid of this shape is refused, so an id-or-uid names one app only.
APP_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def app_get(*, account: Account, app: str) -> App:
    """The account's app whose id or uid is ``app``; another account's, or none, is AppNotFound (the same answer)."""
    named = Q(uid=app)
    if APP_ID.fullmatch(app):
        named |= Q(id=uuid.UUID(app))
    found = App.objects.filter(named, account=account).first()
    if found is None:
        raise AppNotFound(app=app)
    return found

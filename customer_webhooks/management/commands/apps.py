"""``manage.py apps``: an account's apps and their endpoints at the shell, and an endpoint NotifyHub disabled enabled
again (docs/operations.md, docs/customer-webhooks.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.commands._account_args import account_or_error
from accounts.models import Account
from core.api.envelope import iso_utc
from core.errors import AppNotFound, EndpointNotFound
from customer_webhooks.models import App, Endpoint
from customer_webhooks.selectors import app_get, apps_with_endpoint_counts, endpoint_get, endpoint_list
from customer_webhooks.services import endpoint_update
from notifications.delivery.http import url_for_audit

NONE = "-"
# Apps a query of `list` reads at a time: the list is streamed, never held whole.
CHUNK_SIZE = 1000


class Command(BaseCommand):
    help = (
        "List an account's apps, newest first (id, uid, name, created at, endpoints; tab-separated); show one app's "
        "endpoints (id, URL with its path masked, event types, rate limit, state, failing since); or enable again "
        "an endpoint NotifyHub disabled (after a 410 Gone or days of failures)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("action", choices=["list", "show", "enable"])
        parser.add_argument("app", nargs="?", help="with 'show' and 'enable': the app's id or uid")
        parser.add_argument("endpoint_id", nargs="?", help="with 'enable': the endpoint's id")

    def handle(
        self, *args: Any, email: str, action: str, app: str | None, endpoint_id: str | None, **options: Any
    ) -> None:
        account = account_or_error(email)
        if action == "list":
            if app is not None:
                raise CommandError("'list' takes no app")
            self._list(account, email)
            return
        if not app:
            raise CommandError(f"'{action}' needs the app's id or uid")
        if action == "show":
            if endpoint_id is not None:
                raise CommandError("'show' takes no endpoint id")
            self._show(found_app(account, app))
            return
        if not endpoint_id:
            raise CommandError("'enable' needs the endpoint's id")
        self._enable(found_endpoint(found_app(account, app), endpoint_id))

    def _list(self, account: Account, email: str) -> None:
        listed = 0
        for each in apps_with_endpoint_counts(account=account).iterator(chunk_size=CHUNK_SIZE):
            self.stdout.write(app_line(each))
            listed += 1
        self.stdout.write(f"{listed:,} app(s) for {email}.")

    def _show(self, app: App) -> None:
        endpoints = endpoint_list(app=app)
        self.stdout.write(f"{app_name(app)}, created {iso_utc(app.created_at)}: {len(endpoints)} endpoint(s)")
        for endpoint in endpoints:
            self.stdout.write(endpoint_line(endpoint))

    def _enable(self, endpoint: Endpoint) -> None:
        if not endpoint.disabled:
            raise CommandError(f"Endpoint {endpoint.id} is enabled already")
        # The holder's own choice (PATCH disabled: true) is the holder's to undo, not the operator's.
        if not endpoint.disabled_reason:
            raise CommandError(f"Endpoint {endpoint.id} was disabled by the account holder, who may enable it")
        reason = endpoint.disabled_reason
        endpoint_update(endpoint=endpoint, changes={"disabled": False})
        self.stdout.write(
            f"Enabled endpoint {endpoint.id} ({url_for_audit(endpoint.url)}) of {app_name(endpoint.app)}, disabled "
            f"for '{reason}': it receives the app's next messages. Its failed deliveries stay failed until the "
            "holder recovers them (POST .../recover)."
        )


def found_app(account: Account, app: str) -> App:
    try:
        return app_get(account=account, app=app)
    except AppNotFound as error:
        raise CommandError(error.message) from None


def found_endpoint(app: App, endpoint_id: str) -> Endpoint:
    try:
        return endpoint_get(app=app, endpoint_id=endpoint_id)
    except EndpointNotFound as error:
        raise CommandError(error.message) from None


def app_name(app: App) -> str:
    return f"app {app.uid or app.id} ({app.name})"


def app_line(app: App) -> str:
    # endpoint_count: annotated by apps_with_endpoint_counts, which django-stubs does not carry through.
    count = app.endpoint_count  # type: ignore[attr-defined]
    return "\t".join([str(app.id), app.uid or NONE, app.name, iso_utc(app.created_at), f"{count} endpoint(s)"])


def endpoint_line(endpoint: Endpoint) -> str:
    # A path may hold the receiver's token, as the audit log knows: shown masked, as there.
    fields = [
        str(endpoint.id),
        url_for_audit(endpoint.url),
        ",".join(endpoint.event_types) or "*",
        f"{endpoint.rate_limit}/s" if endpoint.rate_limit else NONE,
        endpoint_state(endpoint),
        f"failing since {iso_utc(endpoint.failing_since)}" if endpoint.failing_since else NONE,
    ]
    return "\t".join(fields)


def endpoint_state(endpoint: Endpoint) -> str:
    if not endpoint.disabled:
        return "enabled"
    return f"disabled ({endpoint.disabled_reason or 'by the holder'})"

"""Who makes a change, and from which address, for the account audit log (docs/rules.md, "Audit log").

Each request's middleware says so for the request's time: staff (``staff:<username>``) on the admin site and the
admin endpoints, the holder's customer (``portal:<app>``) on the consumer portal's pages, which say so with
``acting_as``, the account holder (``holder``) everywhere else, the dashboard and API keys alike, with the
client's address and, when an API key authenticated the request, which key. A change made outside any request, by
a manage.py command or in the Django shell, is the operator's, with no address. The value lives in a context
variable (one per thread and per asyncio task), so concurrent requests never mix, and it is worked out only when a
change asks for it: a request that changes nothing pays for setting it and no more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial

from django.http import HttpRequest, HttpResponse

from core.client_address import client_address, is_address

HOLDER = "holder"
OPERATOR = "operator"
# Where staff work (notifyhub/urls.py): the admin site, and the admin endpoints beside the API.
STAFF_PATHS = ("/admin/", "/api/v1/admin/")


def staff(username: str) -> str:
    return f"staff:{username}"


def portal(app: str) -> str:
    """The holder's customer on the consumer portal of the app whose uid (or id) is ``app``."""
    return f"portal:{app}"


@dataclass(frozen=True)
class Actor:
    # "holder", "operator", "staff:<username>" or "portal:<app>".
    name: str
    # The client's address; None outside a request.
    ip: str | None
    # The id of the API key the holder acted with; None for the dashboard's session, staff and the operator.
    api_key_id: int | None = None


OPERATING = Actor(name=OPERATOR, ip=None)

_acting: ContextVar[Callable[[], Actor] | None] = ContextVar("notifyhub_actor", default=None)


def current_actor() -> Actor:
    """Who is making a change now: the operator when no request or ``acting_as`` block says otherwise."""
    acting = _acting.get()
    return OPERATING if acting is None else acting()


@contextmanager
def acting_as(name: str, ip: str | None = None) -> Iterator[Actor]:
    """Changes made inside the block are ``name``'s, from ``ip``."""
    actor = Actor(name=name, ip=ip)
    token = _acting.set(lambda: actor)
    try:
        yield actor
    finally:
        _acting.reset(token)


def request_actor(request: HttpRequest) -> Actor:
    """The request's actor. On staff's paths the admin or the endpoint has signed the user in by the time a change
    asks; the lean chain sets no user (core/handlers.py), and the admin endpoints refuse an API key. Elsewhere the
    API key, when one authenticated the request, is on ``request.auth`` by then (DRF puts it there, and nothing
    else does)."""
    address = client_address(request)
    ip = address if is_address(address) else None
    user = getattr(request, "user", None)
    if user is not None and request.path_info.startswith(STAFF_PATHS):
        return Actor(name=staff(user.get_username()), ip=ip)
    return Actor(name=HOLDER, ip=ip, api_key_id=getattr(getattr(request, "auth", None), "pk", None))


class ActorMiddleware:
    """Makes each request's changes its actor's (``request_actor``), in both middleware chains."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _acting.set(partial(request_actor, request))
        try:
            return self.get_response(request)
        finally:
            _acting.reset(token)

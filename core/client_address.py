"""The address a request came from, as far as the proxies in front of NotifyHub can be trusted.

With ``TRUSTED_PROXY_HOPS`` = 0 (the default: nothing in front) it is ``REMOTE_ADDR`` and no header a client
can write is read. With N proxies in front, each appends the address it saw to ``X-Forwarded-For``, so the
N-th entry from the right is the one the outermost trusted proxy saw; anything left of it is the client's
own writing (docs/dashboard.md, "Limits").
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    hops: int = settings.TRUSTED_PROXY_HOPS
    remote = str(request.META.get("REMOTE_ADDR") or "")
    if hops == 0:
        return remote
    forwarded = [entry.strip() for entry in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    # Fewer entries than proxies: the request did not come through all of them, so only the socket is known.
    if len(forwarded) < hops or not is_address(forwarded[-hops]):
        return remote
    return forwarded[-hops]


def is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def client_network(request: HttpRequest) -> str:
    """What limits count by: the client's IPv4 address, or its IPv6 /64, which one subscriber holds whole."""
    address = client_address(request)
    if ":" not in address:
        return address
    try:
        return str(ipaddress.ip_network(f"{address}/64", strict=False).network_address)
    except ValueError:
        return address

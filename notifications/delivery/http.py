"""The one HTTP client for customer endpoints, and the address rule it shares with the API.

requests-hardened resolves the host once, refuses private, loopback, link-local, CG-NAT
and other internal targets (IPv4 and IPv6), and connects to the address it checked, so a
DNS answer cannot change between the check and the connection. Redirects are never
followed. One pooled session per process and configuration keeps connections alive.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import threading
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

import certifi
import requests
from django.conf import settings
from requests_hardened import Config, HTTPSession


def webhook_session() -> requests.Session:
    return _session(
        block_private=not settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
        ca_bundle=settings.WEBHOOK_CA_BUNDLE,
    )


@cache
def _session(*, block_private: bool, timeout: int, ca_bundle: str | None) -> requests.Session:
    config = Config(
        ip_filter_enable=block_private,
        ip_filter_allow_loopback_ips=False,
        never_redirect=True,
        default_timeout=(timeout, timeout),
    )
    session = HTTPSession(config)
    session.trust_env = False  # no proxies or CA settings from the environment
    session.verify = _trusted_cas(ca_bundle) if ca_bundle else certifi.where()
    return session


def _trusted_cas(extra_bundle: str) -> str:
    """The public CAs plus the extra bundle: ``verify=`` takes one file, which replaces the defaults.

    urllib3 reads the file on every new connection, from any thread or worker process, so it
    is never rewritten in place: each content gets its own name, written whole then renamed.
    """
    contents = Path(certifi.where()).read_text() + "\n" + Path(extra_bundle).read_text()
    digest = hashlib.sha256(contents.encode()).hexdigest()[:16]
    combined = Path(settings.VAR_DIR) / f"webhook-ca-bundle-{digest}.pem"
    if not combined.exists():
        combined.parent.mkdir(parents=True, exist_ok=True)
        partial = combined.with_name(f"{combined.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        partial.write_text(contents)
        os.replace(partial, combined)
    return str(combined)


def is_local_target(url: str) -> bool:
    """Whether the URL names localhost or a literal non-public IP address.

    Only what the URL says, checked when a send is accepted: names that resolve to private
    addresses are refused at delivery, where the resolved address is checked and connected to.
    """
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return not address.is_global

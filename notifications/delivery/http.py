"""The one HTTP client for customer endpoints, and the address rule it shares with the API.

requests-hardened resolves the host once and connects to the address it checked, so a DNS
answer cannot change between the check and the connection. The check is ours,
:func:`is_public_address`, both here at connect time and when a send is accepted: only
globally routable unicast addresses pass, and in a local run the one trusted local target
(:mod:`notifications.delivery.trusted_target`). Redirects are never followed. One pooled session
per process and configuration keeps connections alive, to many destinations at once, and verifies
TLS with one context per process (docs/delivery-engine.md, "Webhooks").
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import ssl
import threading
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

import certifi
import requests
from django.conf import settings
from requests.adapters import DEFAULT_POOLSIZE, HTTPAdapter
from requests_hardened import Config, HTTPSession
from requests_hardened.ip_filter import InvalidIPAddress
from requests_hardened.ip_filter_adapter import IPFilterAdapter
from urllib3.util.ssl_ import create_urllib3_context

from core.crypto import decrypt
from core.logs import url_origin
from notifications.delivery.trusted_target import TrustedTarget, current_trusted_target

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# The IPv6 global unicast space; everything outside it (IPv4-compatible ::/96, IPv4-translated
# ::ffff:0:0:0/96, site-local fec0::/10, NAT64 64:ff9b::/96...) reaches somewhere we cannot judge.
GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
# Inside it, prefixes that tunnel to an IPv4 address of any kind: 6to4 and Teredo.
TUNNELS = (ipaddress.ip_network("2002::/16"), ipaddress.ip_network("2001::/32"))
# The destinations (host and port) a process keeps connections to; beyond this urllib3 closes the least recently
# used. requests' default, 10, would close and reopen connections as soon as deliveries rotate over more hosts.
DESTINATION_POOLS = 100


def webhook_session() -> requests.Session:
    return _session(
        block_private=not settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
        ca_bundle=settings.WEBHOOK_CA_BUNDLE,
        trusted_target=current_trusted_target(),
    )


@cache
def _session(
    *, block_private: bool, timeout: int, ca_bundle: str | None, trusted_target: TrustedTarget | None
) -> requests.Session:
    config = Config(
        ip_filter_enable=block_private,
        ip_filter_allow_loopback_ips=False,
        never_redirect=True,
        default_timeout=(timeout, timeout),
    )
    session = HTTPSession(config)
    extra_bundles = [bundle for bundle in (ca_bundle, trusted_target.ca_file if trusted_target else None) if bundle]
    tls = _tls_context(_trusted_cas(*extra_bundles) if extra_bundles else certifi.where())
    for scheme in ("http://", "https://"):
        adapter = (
            PublicAddressAdapter(tls=tls, is_https_proto=scheme == "https://", trusted_target=trusted_target)
            if block_private
            else WebhookAdapter(tls=tls)
        )
        session.mount(scheme, adapter)
    session.trust_env = False  # no proxies or CA settings from the environment
    return session


@cache
def _tls_context(ca_file: str) -> ssl.SSLContext:
    """urllib3's client context trusting the CAs in ``ca_file``, built once per process and file.

    Left to itself, urllib3 builds a context and reads the whole CA file into it for every new
    connection.
    """
    context = create_urllib3_context()
    context.load_verify_locations(cafile=ca_file)
    return context


def _trusted_cas(*extra_bundles: str) -> str:
    """The public CAs plus the extra bundles, in one file named after its content.

    The name is what :func:`_tls_context` is cached under, so a bundle rewritten in place (a new
    trusted local target's CA) makes a new context. Any thread or worker process may be reading the
    file, so it is never rewritten in place either: each content is written whole, then renamed.
    """
    contents = "\n".join(Path(bundle).read_text() for bundle in (certifi.where(), *extra_bundles))
    digest = hashlib.sha256(contents.encode()).hexdigest()[:16]
    combined = Path(settings.VAR_DIR) / f"webhook-ca-bundle-{digest}.pem"
    if not combined.exists():
        combined.parent.mkdir(parents=True, exist_ok=True)
        partial = combined.with_name(f"{combined.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        partial.write_text(contents)
        os.replace(partial, combined)
    return str(combined)


def is_public_address(address: IPAddress) -> bool:
    """Whether a webhook may connect to ``address``: a globally routable unicast address."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return is_public_address(address.ipv4_mapped)
        if address not in GLOBAL_UNICAST or any(address in tunnel for tunnel in TUNNELS):
            return False
    return address.is_global and not address.is_multicast


def is_refused_target(url: str) -> bool:
    """Whether a webhook (or an event endpoint) to ``url`` is refused when it is given: a local target, unless
    WEBHOOK_ALLOW_PRIVATE_NETWORKS (docs/rules.md, "Webhooks")."""
    return not settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS and is_local_target(url)


def is_local_target(url: str) -> bool:
    """Whether the URL names localhost or a literal IP address that is not public, other than
    the running trusted local target in a local run.

    Only what the URL says, checked when a send is accepted: names that resolve to other
    addresses are refused at delivery, where the resolved address is checked and connected to.
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return not is_public_address(address) and not _is_trusted_target(address, parts)


def _is_trusted_target(address: IPAddress, parts: SplitResult) -> bool:
    trusted_target = current_trusted_target()
    try:
        return trusted_target is not None and trusted_target.admits(address, parts.port)
    except ValueError:  # a port out of range
        return False


class WebhookAdapter(HTTPAdapter):
    """Keeps connections to up to DESTINATION_POOLS destinations, and verifies TLS with the process's one context.

    requests documents the way to a context of one's own: set ``ssl_context`` in the pool key attributes and drop
    the CA file it would otherwise name
    (https://requests.readthedocs.io/en/latest/api/#requests.adapters.HTTPAdapter.build_connection_pool_key_attributes).
    """

    def __init__(self, *, tls: ssl.SSLContext, **kwargs: Any) -> None:
        self._tls = tls
        super().__init__(**kwargs)
        # requests-hardened's adapter passes no pool sizes along to HTTPAdapter: set them once the chain is built.
        self.init_poolmanager(DESTINATION_POOLS, DEFAULT_POOLSIZE)

    def build_connection_pool_key_attributes(self, *args: Any, **kwargs: Any) -> Any:
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(*args, **kwargs)
        # Only for connections that check certificates: urllib3 sets the context's verify mode from the
        # connection's, and the shared context must never be switched to CERT_NONE.
        if host_params["scheme"] == "https" and pool_kwargs.get("cert_reqs") == "CERT_REQUIRED":
            pool_kwargs.pop("ca_certs", None)
            pool_kwargs["ssl_context"] = self._tls
        return host_params, pool_kwargs

    def cert_verify(self, conn: Any, url: str, verify: Any, cert: Any) -> None:
        """Sets nothing on the pool: its key attributes above already carry the verify mode and the context. What
        requests sets here, a CA file, would be read into the shared context again for every new connection. (The
        session sends no client certificate.)"""


class PublicAddressAdapter(WebhookAdapter, IPFilterAdapter):
    """requests-hardened's adapter, with :func:`is_public_address` judging the address it pinned.

    Its own filter asks ``is_private``, which lets IPv4-compatible and site-local IPv6 through.
    With a trusted local target it lets loopback through, and this check admits the target's one port.
    """

    def __init__(self, *, tls: ssl.SSLContext, is_https_proto: bool, trusted_target: TrustedTarget | None) -> None:
        super().__init__(tls=tls, is_https_proto=is_https_proto, allow_loopback=trusted_target is not None)
        self._trusted_target = trusted_target

    def build_connection_pool_key_attributes(self, *args: Any, **kwargs: Any) -> Any:
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(*args, **kwargs)
        address = ipaddress.ip_address(host_params["host"].strip("[]"))
        admitted = self._trusted_target is not None and self._trusted_target.admits(address, host_params["port"])
        if not is_public_address(address) and not admitted:
            raise InvalidIPAddress(address)
        return host_params, pool_kwargs


MASK = "***"


def split_credentials(url: str) -> tuple[str, str | None]:
    """The URL with its ``user:password@`` replaced by ``***@``, and what was there (None if nothing).

    The masked URL is what is stored and shown; the credentials are kept apart, encrypted.
    """
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, None
    return urlunsplit(parts._replace(netloc=f"{MASK}@{host}")), userinfo


def stored_url(masked_url: str, encrypted_credentials: str | None) -> str:
    """The URL to call: the stored one, with the credentials :func:`split_credentials` took out of it back in."""
    return with_credentials(masked_url, decrypt(encrypted_credentials)) if encrypted_credentials else masked_url


def with_credentials(masked_url: str, credentials: str) -> str:
    """The URL :func:`split_credentials` masked, with its credentials back in place."""
    parts = urlsplit(masked_url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{credentials}@{host}"))


def url_for_audit(url: str) -> str:
    """The URL as the audit log names an endpoint's: its origin, and its path masked whole, as are its query and
    fragment, where a receiver's token rides (``/services/T0/B0/<token>``), and its credentials (docs/rules.md,
    "Audit log": never a secret)."""
    origin = url_origin(url)
    return origin if urlsplit(url).path in {"", "/"} else f"{origin}/{MASK}"

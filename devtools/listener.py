"""``manage.py listen``'s receiver: HTTPS on 127.0.0.1 with a certificate of its own CA (:mod:`devtools.tls`),
telling what arrives and whether its signature verifies (docs/operations.md, docs/delivery-engine.md "Receiving").

Local runs deliver to it once it publishes itself (:mod:`devtools.record`).
"""

from __future__ import annotations

import errno
import ssl
import textwrap
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from core.signing import verify_signature
from devtools.tls import LOOPBACK, TlsFiles

DEFAULT_PORT = 8443
ANSWER = b'{"ok":true}'


def listener_url(port: int) -> str:
    return f"https://{LOOPBACK}:{port}/"


@dataclass(frozen=True)
class Arrival:
    method: str
    path: str
    headers: Message
    body: bytes


def signature_verdicts(arrival: Arrival, secret: str | None) -> list[str]:
    """A line for each scheme that signs the delivery and is checked: NotifyHub's header, then Standard Webhooks'."""
    verdicts = [f"Signature: {signature_verdict(arrival, secret)}"]
    if secret is not None and arrival.headers.get("webhook-signature") is not None:
        verdicts.append(f"Standard Webhooks signature: {standard_verdict(arrival, secret)}")
    return verdicts


def standard_verdict(arrival: Arrival, secret: str) -> str:
    """Whether the Standard Webhooks headers verify, as that specification's own library judges."""
    headers = {name: arrival.headers.get(name, "") for name in ("webhook-id", "webhook-timestamp", "webhook-signature")}
    try:
        Webhook(secret).verify(arrival.body, headers, json_parse=False)
    except (WebhookVerificationError, ValueError):  # a secret that is not base64 after whsec_ is a ValueError
        return "DOES NOT VERIFY (another secret, an altered body or id, or older than 5 minutes)"
    return "verified"


def signature_verdict(arrival: Arrival, secret: str | None) -> str:
    """Whether the delivery's X-Webhook-Signature verifies, as :func:`core.signing.verify_signature` judges."""
    header = arrival.headers.get("X-Webhook-Signature")
    if header is None:
        return "none, the delivery is unsigned (its account has no signing secret)"
    if secret is None:
        return "not checked (give listen --account EMAIL or --secret SECRET)"
    if verify_signature(secret, header, arrival.body):
        return "verified"
    return "DOES NOT VERIFY (another secret, an altered body, or older than 5 minutes)"


def describe(arrival: Arrival, *, verdicts: list[str], status: int) -> str:
    """An arrival as listen prints it, after a blank line: request line, headers, the body as it came, the
    verdict, the answer."""
    lines = [
        "",
        f"{arrival.method} {arrival.path}  ({datetime.now():%H:%M:%S})",
        *(f"  {name}: {value}" for name, value in arrival.headers.items()),
        "",
        textwrap.indent(arrival.body.decode("utf-8", errors="replace"), "  "),
        "",
        *(f"  {verdict}" for verdict in verdicts),
        f"  Answered: {status}",
    ]
    return "\n".join(lines)


class ListenServer(ThreadingHTTPServer):
    """Serves 127.0.0.1 over TLS; ``on_arrival`` takes every request and returns the status to answer."""

    daemon_threads = True

    def __init__(self, *, port: int | None, tls: TlsFiles, on_arrival: Callable[[Arrival], int]) -> None:
        self.on_arrival = on_arrival
        self._bind(port)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(tls.cert, tls.key)
        self.socket = context.wrap_socket(self.socket, server_side=True)

    def _bind(self, port: int | None) -> None:
        """``port`` (0: any free one), or without one DEFAULT_PORT, or a free port when that one is taken."""
        try:
            super().__init__((str(LOOPBACK), DEFAULT_PORT if port is None else port), ArrivalHandler)
        except OSError as error:
            if port is not None or error.errno != errno.EADDRINUSE:
                raise
            super().__init__((str(LOOPBACK), 0), ArrivalHandler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class ArrivalHandler(BaseHTTPRequestHandler):
    server: ListenServer
    protocol_version = "HTTP/1.1"

    def _arrive(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        status = self.server.on_arrival(Arrival(self.command, self.path, self.headers, body))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _arrive

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: listen prints each arrival itself."""


def printer(write: Callable[[str], None], *, secret: str | None, status: int) -> Callable[[Arrival], int]:
    """``on_arrival`` for :class:`ListenServer`: one whole description per arrival, never interleaved,
    and ``status`` for every answer."""
    lock = threading.Lock()

    def print_arrival(arrival: Arrival) -> int:
        text = describe(arrival, verdicts=signature_verdicts(arrival, secret), status=status)
        with lock:
            write(text)
        return status

    return print_arrival

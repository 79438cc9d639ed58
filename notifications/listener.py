"""``manage.py listen``'s receiver: HTTPS on 127.0.0.1 with a certificate of its own CA, telling what
arrives and whether its signature verifies (docs/operations.md, docs/delivery-engine.md "Receiving").

Local runs find it through :mod:`notifications.delivery.local_listener`.
"""

from __future__ import annotations

import errno
import os
import ssl
import textwrap
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from core.signing import verify_signature
from notifications.delivery.local_listener import LOOPBACK

DEFAULT_PORT = 8443
VALIDITY = timedelta(days=365)
RENEW_BEFORE = timedelta(days=1)
CA_NAME = "NotifyHub listen CA"
ANSWER = b'{"ok":true}'


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    cert: Path
    key: Path


def tls_files(folder: Path) -> TlsFiles:
    """The CA, and the server's certificate and key from it, in ``folder``: made on first use, and again
    when one is missing or the certificate is about to end.

    The CA's key signs the one certificate and is never stored: the CA that local runs trust can vouch
    for nothing else.
    """
    files = TlsFiles(ca=folder / "ca.pem", cert=folder / "cert.pem", key=folder / "key.pem")
    if not _usable(files):
        folder.mkdir(parents=True, exist_ok=True)
        _issue(files)
    return files


def _usable(files: TlsFiles) -> bool:
    try:
        not_after = x509.load_pem_x509_certificate(files.cert.read_bytes()).not_valid_after_utc
    except (OSError, ValueError):
        return False
    return files.ca.exists() and files.key.exists() and not_after - datetime.now(UTC) > RENEW_BEFORE


def _issue(files: TlsFiles) -> None:
    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (
        _certificate(CA_NAME, issuer=CA_NAME, public_key=ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    server = (
        _certificate(str(LOOPBACK), issuer=CA_NAME, public_key=server_key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(LOOPBACK)]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = server_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write(files.key, key_pem, mode=0o600)
    _write(files.cert, server.public_bytes(serialization.Encoding.PEM))
    _write(files.ca, ca.public_bytes(serialization.Encoding.PEM))


def _certificate(subject: str, *, issuer: str, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = datetime.now(UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + VALIDITY)
    )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _write(path: Path, content: bytes, *, mode: int = 0o644) -> None:
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    partial.write_bytes(content)
    partial.chmod(mode)
    os.replace(partial, path)


@dataclass(frozen=True)
class Arrival:
    method: str
    path: str
    headers: Message
    body: bytes


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


def describe(arrival: Arrival, *, verdict: str, status: int) -> str:
    """An arrival as listen prints it, after a blank line: request line, headers, the body as it came, the
    verdict, the answer."""
    lines = [
        "",
        f"{arrival.method} {arrival.path}  ({datetime.now():%H:%M:%S})",
        *(f"  {name}: {value}" for name, value in arrival.headers.items()),
        "",
        textwrap.indent(arrival.body.decode("utf-8", errors="replace"), "  "),
        "",
        f"  Signature: {verdict}",
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
        text = describe(arrival, verdict=signature_verdict(arrival, secret), status=status)
        with lock:
            write(text)
        return status

    return print_arrival

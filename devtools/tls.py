"""``manage.py listen``'s TLS: a CA of its own and, from it, a certificate for 127.0.0.1 (docs/operations.md, "Its
certificate")."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from django.conf import settings

from devtools.files import write_whole

# The one address listen serves on, and the one its certificate names.
LOOPBACK = ipaddress.IPv4Address("127.0.0.1")
VALIDITY = timedelta(days=365)
RENEW_BEFORE = timedelta(days=1)
CA_NAME = "NotifyHub listen CA"


def listen_dir() -> Path:
    """Where listen keeps its CA, and the certificate and key it serves with."""
    return Path(settings.VAR_DIR) / "listen"


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
    write_whole(files.key, key_pem, mode=0o600)
    write_whole(files.cert, server.public_bytes(serialization.Encoding.PEM))
    write_whole(files.ca, ca.public_bytes(serialization.Encoding.PEM))


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

"""TLS certificates for the simulated lab: one self-signed CA per state folder, one server
certificate per endpoint address.

The CA is written to ``<state_dir>/ca.pem`` so a client can verify the simulated BMCs and arrays
(``tls: {mode: verify, ca_file: .../ca.pem}``) exactly as it would a real lab's. Keys stay in the
state folder (mode 0600) and are never committed. EC P-256 keys keep start-up fast for a lab with
many endpoints.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_FILE = "ca.pem"
CA_KEY_FILE = "ca-key.pem"
CERTS_DIR = "certs"

_lock = threading.Lock()


@dataclass(frozen=True)
class ServerCert:
    cert_file: Path  # server certificate followed by the CA (a chain clients can verify)
    key_file: Path
    ca_file: Path


def _write_private(path: Path, data: bytes) -> None:
    """Write atomically with mode 0600 (the key never exists world-readable)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _write_public(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def ensure_ca(state_dir: Path, common_name: str = "labctl simulated lab CA") -> tuple[Path, Path]:
    """The state folder's CA (certificate, key), created on first use and reused afterwards."""
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = state_dir / CA_FILE, state_dir / CA_KEY_FILE
    with _lock:
        if cert_path.exists() and key_path.exists():
            try:
                cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
                if cert.not_valid_after_utc > _now() + dt.timedelta(days=1):
                    return cert_path, key_path
            except ValueError:
                pass  # unreadable: make a new one
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=825))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        _write_private(key_path, _key_pem(key))
        _write_public(cert_path, cert.public_bytes(serialization.Encoding.PEM))
        return cert_path, key_path


def server_cert(state_dir: Path, host: str, name: str = "") -> ServerCert:
    """Issue a certificate for ``host`` (an IP or a DNS name) signed by the state folder's CA.

    The subject alternative names hold the host (as an IP address when it is one) and ``name``,
    so hostname verification passes for a client that connects by address.
    """
    state_dir = Path(state_dir)
    ca_cert_path, ca_key_path = ensure_ca(state_dir)
    ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    sans: list[x509.GeneralName] = []
    try:
        sans.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        sans.append(x509.DNSName(host))
    if name and name != host:
        sans.append(x509.DNSName(name))
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name or host)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=397))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    out = state_dir / CERTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{host}_{name}".replace(":", "_").replace("/", "_") if name else host.replace(":", "_")
    cert_file, key_file = out / f"{stem}.pem", out / f"{stem}-key.pem"
    _write_private(key_file, _key_pem(key))
    _write_public(
        cert_file,
        cert.public_bytes(serialization.Encoding.PEM) + ca_cert.public_bytes(serialization.Encoding.PEM),
    )
    return ServerCert(cert_file, key_file, ca_cert_path)


def server_ssl_context(state_dir: Path, host: str, name: str = "") -> ssl.SSLContext:
    """A server-side TLS context with a fresh certificate for ``host``."""
    sc = server_cert(state_dir, host, name)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(sc.cert_file, sc.key_file)
    return ctx

"""A small HTTP server on loopback that answers a broker's API from recorded responses.

Brokers speak forms, XML, JSON and ICA files, and set cookies and paging headers, so a route
gets the whole request (``Call``) and returns raw bytes with headers (``Answer``). The server keeps
every request, so a test can hold the client's calls against the recorded endpoints. It runs in a
thread of the test process on 127.0.0.1 and a free port, and is closed by the test
(``with Replay(route) as server``).
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlsplit

RECORDINGS = Path(__file__).parent / "recordings"


def recording(name: str) -> bytes:
    return (RECORDINGS / name).read_bytes()


def recorded_json(name: str) -> Any:
    return json.loads(recording(name))


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    query: dict[str, str]
    form: dict[str, str]
    body: bytes
    headers: dict[str, str]  # lower-case names
    base_url: str = ""  # scheme://host:port the request came to

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def json(cls, obj: Any, status: int = 200, headers: list[tuple[str, str]] | None = None) -> Answer:
        return cls(status, json.dumps(obj).encode(), [("Content-Type", "application/json"), *(headers or [])])

    @classmethod
    def xml(cls, body: bytes, headers: list[tuple[str, str]] | None = None) -> Answer:
        return cls(200, body, [("Content-Type", "application/xml; charset=utf-8"), *(headers or [])])


Route = Callable[[Call], Answer]


class Replay:
    """HTTPS with ``default_tls`` (the certificate the tests' trust store holds, see conftest) unless
    given another context or ``plain=True``."""

    default_tls: ClassVar[ssl.SSLContext | None] = None

    def __init__(self, route: Route, tls: ssl.SSLContext | None = None, plain: bool = False):
        tls = None if plain else (tls or Replay.default_tls)
        self.route = route
        self.scheme = "https" if tls else "http"
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms delayed-ACK wait

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                ctype = self.headers.get("Content-Type", "")
                form = (
                    dict(parse_qsl(raw.decode(), keep_blank_values=True))
                    if "x-www-form-urlencoded" in ctype
                    else {}
                )
                call = Call(
                    self.command,
                    parts.path,
                    dict(parse_qsl(parts.query, keep_blank_values=True)),
                    form,
                    raw,
                    {k.lower(): v for k, v in self.headers.items()},
                    f"{replay.scheme}://{self.headers.get('Host', '')}",
                )
                with replay._lock:
                    replay.calls.append(call)
                try:
                    answer = replay.route(call)
                except Exception as exc:  # a route that fails answers 500 naming why
                    answer = Answer(500, repr(exc).encode())
                self.send_response(answer.status)
                for k, v in answer.headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            do_GET = do_POST = do_HEAD = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="broker-replay",
            daemon=True,
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self.scheme}://{host}:{port}"

    def __enter__(self) -> Replay:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def paths(self) -> list[tuple[str, str]]:
        with self._lock:
            return [(c.method, c.path) for c in self.calls]


def self_signed(tmp: Path) -> ssl.SSLContext:
    """A server context with a certificate for 127.0.0.1 that nobody trusts (made in the test)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(key, hashes.SHA256())
    )
    (tmp / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp / "cert.pem", tmp / "key.pem")
    return ctx

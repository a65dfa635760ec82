"""A small threaded HTTPS server that the simulated REST endpoints (Redfish, Unity) build on.

Standard library only: :class:`http.server.ThreadingHTTPServer` with the TLS handshake done in the
connection's own thread (a slow or silent client cannot stall the accept loop), HTTP/1.1
keep-alive, JSON helpers, and :meth:`SimHttpsServer.hang` for faults where a device accepts the
connection and never answers: the request is held until :meth:`SimHttpsServer.stop`.

A subclass implements :meth:`SimHttpsServer.handle` (``Request`` in, ``Response`` out); it reaches
the lab twin, the fault book and the lab clock through ``self.ctx``.
"""

from __future__ import annotations

import base64
import binascii
import errno
import hmac
import json
import logging
import socket
import ssl
import struct
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NoReturn
from urllib.parse import parse_qsl, unquote, urlsplit

from labctl.errors import BadInputError
from labctl.sim.certs import server_ssl_context
from labctl.sim.endpoint import EndpointInfo, PortInUseError, SimContext

log = logging.getLogger(__name__)

TLS_HANDSHAKE_TIMEOUT_S = 10.0
IDLE_CONNECTION_TIMEOUT_S = 120.0  # a keep-alive connection with no request for this long is closed
MAX_BODY_BYTES = 4 * 1024 * 1024


class DropConnection(Exception):
    """Raised inside a handler: close the connection without writing a response."""


@dataclass
class Request:
    method: str
    path: str  # percent-decoded, without the query string
    query: dict[str, str]  # first value of each parameter, decoded
    raw_query: str
    headers: Message
    body: bytes
    client: tuple[str, int]

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    @property
    def cookies(self) -> dict[str, str]:
        jar: SimpleCookie = SimpleCookie()
        for raw in self.headers.get_all("Cookie") or []:
            try:
                jar.load(raw)
            except Exception:
                continue
        return {k: m.value for k, m in jar.items()}

    def basic_auth(self) -> tuple[str, str] | None:
        """(user, password) of an ``Authorization: Basic`` header; None without one, or when it
        does not decode."""
        scheme, _, value = (self.header("Authorization") or "").partition(" ")
        if scheme.lower() != "basic" or not value:
            return None
        try:
            user, _, password = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return user, password

    def json(self) -> Any:
        """The body as JSON; raises :class:`ValueError` when it is not."""
        if not self.body:
            raise ValueError("the request has no body")
        return json.loads(self.body.decode("utf-8"))


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str | None = None

    def header(self, name: str, value: str) -> Response:
        self.headers.append((name, value))
        return self


def credentials_match(user: str, password: str, want_user: str, want_password: str) -> bool:
    """Both compared in constant time, neither comparison skipped when the other fails."""
    ok_user = hmac.compare_digest(user.encode(), want_user.encode())
    ok_pw = hmac.compare_digest(password.encode(), want_password.encode())
    return ok_user and ok_pw


def json_response(
    status: int,
    payload: Any,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    *,
    content_type: str = "application/json; charset=utf-8",
) -> Response:
    body = json.dumps(payload, indent=None, separators=(",", ":")).encode("utf-8")
    items = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    return Response(status, body, items, content_type)


def empty_response(status: int, headers: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> Response:
    items = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    return Response(status, b"", items, None)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE_CONNECTION_TIMEOUT_S
    disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stall
    server: _Server

    def version_string(self) -> str:
        return self.server.app.server_header

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s: " + format, self.server.app.info.kind, self.server.app.info.name, *args)

    def _dispatch(self) -> None:
        app = self.server.app
        length = self.headers.get("Content-Length")
        try:
            n = int(length) if length else 0
        except ValueError:
            n = -1
        if n < 0 or n > MAX_BODY_BYTES:
            self.send_error(HTTPStatus.BAD_REQUEST, "bad Content-Length")
            self.close_connection = True
            return
        body = self.rfile.read(n) if n else b""
        parts = urlsplit(self.path)
        req = Request(
            method=self.command,
            path=unquote(parts.path) or "/",
            query=dict(parse_qsl(parts.query, keep_blank_values=True)),
            raw_query=parts.query,
            headers=self.headers,
            body=body,
            client=self.client_address,
        )
        try:
            resp = app.handle(req)
        except DropConnection:
            self.close_connection = True
            return
        except Exception:  # a bug in the simulator: answer like a device would, log it
            log.exception("%s %s: %s %s failed", app.info.kind, app.info.name, self.command, self.path)
            resp = app.internal_error(req)
        self._write(resp)

    def _write(self, resp: Response) -> None:
        self.send_response(resp.status)
        names = {k.lower() for k, _ in resp.headers}
        for k, v in resp.headers:
            self.send_header(k, v)
        if resp.content_type and "content-type" not in names:
            self.send_header("Content-Type", resp.content_type)
        body = b"" if self.command == "HEAD" else resp.body
        self.send_header("Content-Length", str(len(resp.body)))
        if self.server.app.stopping:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if body:
            self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = _dispatch


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True  # a restart is not blocked by TIME_WAIT; a live listener still is
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], app: SimHttpsServer, tls: ssl.SSLContext):
        self.app = app
        self.tls = tls
        self.open_connections: set[socket.socket] = set()
        self.conn_lock = threading.Lock()
        super().__init__(address, _Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        # The TLS handshake runs here, in the connection's thread, not in the accept loop.
        request.settimeout(TLS_HANDSHAKE_TIMEOUT_S)
        try:
            conn = self.tls.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError) as exc:
            log.debug("%s %s: TLS handshake failed: %s", self.app.info.kind, self.app.info.name, exc)
            return
        with self.conn_lock:
            self.open_connections.add(conn)
        try:
            _Handler(conn, client_address, self)
        except (OSError, ssl.SSLError) as exc:
            log.debug("%s %s: connection ended: %s", self.app.info.kind, self.app.info.name, exc)
        finally:
            if self.app.stopping:
                # abortive close: no TIME_WAIT left on the server's address, which would stop a
                # plain bind() (without SO_REUSEADDR) of the same address for a minute after stop
                try:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            try:
                conn.close()
            except OSError:
                pass
            with self.conn_lock:
                self.open_connections.discard(conn)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug(
            "%s %s: error on a connection from %s", self.app.info.kind, self.app.info.name, client_address
        )

    def drop_connections(self, wait_s: float = 2.0) -> None:
        """Wake every connection's thread (it closes its socket) and wait for them to finish."""
        with self.conn_lock:
            conns = list(self.open_connections)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            with self.conn_lock:
                if not self.open_connections:
                    return
            time.sleep(0.005)


class SimHttpsServer:
    """Base of the simulated REST endpoints: one HTTPS listener on one loopback address."""

    server_header = "Apache"

    def __init__(self, ctx: SimContext, *, kind: str, name: str, host: str, port: int):
        self.ctx = ctx
        self.info = EndpointInfo(kind=kind, name=name, host=host, port=port, protocol="https")
        self._stop = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Bind and serve in a background thread; returns once the address is listening."""
        if self._httpd is not None:
            return
        self._stop.clear()
        tls = server_ssl_context(self.ctx.state_dir, self.info.host, self.info.name)
        try:
            httpd = _Server((self.info.host, self.info.port), self, tls)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortInUseError(self.info.kind, self.info.name, self.info.host, self.info.port) from None
            raise BadInputError(
                f"{self.info.kind} endpoint for {self.info.name}: cannot listen on "
                f"{self.info.host}:{self.info.port}: {exc.strerror or exc} (use a loopback address)"
            ) from None
        if self.info.port == 0:
            self.info = EndpointInfo(
                self.info.kind, self.info.name, self.info.host, httpd.server_address[1], self.info.protocol
            )
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"sim-{self.info.kind}-{self.info.name}",
            daemon=True,
        )
        self._thread.start()
        self.on_start()

    def stop(self) -> None:
        """Stop serving, release hung requests, close every connection and free the address."""
        self._stop.set()
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self.on_stop()
        httpd.shutdown()
        httpd.server_close()
        httpd.drop_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> SimHttpsServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def on_start(self) -> None:
        """Hook for subclasses (background samplers)."""

    def on_stop(self) -> None:
        """Hook for subclasses."""

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    @property
    def base_url(self) -> str:
        return f"https://{self.info.host}:{self.info.port}"

    # --- request handling ----------------------------------------------------------------------
    def handle(self, req: Request) -> Response:
        raise NotImplementedError

    def internal_error(self, req: Request) -> Response:
        return json_response(500, {"error": "internal simulator error"})

    def hang(self) -> NoReturn:
        """Hold the current request without answering until :meth:`stop`, then drop it."""
        self._stop.wait()
        raise DropConnection()

    def wait(self, wall_seconds: float) -> bool:
        """Sleep in a background thread; False when the server is stopping."""
        return not self._stop.wait(wall_seconds)


def parse_host_port(url: str, default_port: int = 443) -> tuple[str, int]:
    """``https://127.21.0.11:8443/...`` -> ("127.21.0.11", 8443)."""
    parts = urlsplit(url)
    if not parts.hostname:
        raise BadInputError(f"{url!r}: not a URL with a host (write e.g. https://127.21.0.11:8443)")
    return parts.hostname, parts.port or default_port

"""A small HTTP server on loopback that answers an array's management API from recorded responses.

The tests give it a ``route`` function (method, path, query, body -> status, headers, JSON) that
picks a recorded response; the server keeps a log of every request, so a test can hold the
driver's calls against the endpoints a real array was recorded answering. It runs in a thread of
the test process and is stopped by the test (``with Replay(route) as server``).
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

RECORDINGS = Path(__file__).parent / "recordings"


def recording(name: str) -> Any:
    """A recorded JSON body (``.json`` or gzip-compressed ``.json.gz``) under ``recordings/``."""
    path = RECORDINGS / name
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return json.loads(data)


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    headers: dict[str, str]


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Route = Callable[[Call], Answer]


class Replay:
    """Serve ``route``'s answers on 127.0.0.1 (a free port) until stopped."""

    def __init__(self, route: Route):
        self.route = route
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                call = Call(
                    self.command,
                    parts.path,
                    dict(parse_qsl(parts.query, keep_blank_values=True)),
                    json.loads(raw) if raw else None,
                    {k.lower(): v for k, v in self.headers.items()},
                )
                with replay._lock:
                    replay.calls.append(call)
                try:
                    answer = replay.route(call)
                except Exception as exc:  # a route that fails answers 500 naming why
                    answer = Answer(500, {"replay_error": repr(exc)})
                body = b"" if answer.body is None else json.dumps(answer.body).encode()
                self.send_response(answer.status)
                for k, v in answer.headers.items():
                    self.send_header(k, v)
                if body:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="replay", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Replay:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def endpoints(self) -> set[tuple[str, str]]:
        """(method, path) of every request served."""
        with self._lock:
            return {(c.method, c.path) for c in self.calls}

"""A small HTTP server on loopback that answers with recorded Redfish responses.

Each route (method, path) has a script: the recorded answers in order, the last one repeated. The
server keeps every request it got, so a test can say what the driver sent (a DELETE of the session
it was given, a retry after a 503). It is not a Redfish service: it replays what real iDRACs said
(:mod:`tests.conformance.redfish.recordings`), nothing more.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RECORDINGS = Path(__file__).parent / "recordings"


def recording(name: str) -> Any:
    """A recorded JSON document under ``recordings/``."""
    return json.loads((RECORDINGS / name).read_text())


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Replay:
    routes: dict[tuple[str, str], list[Answer]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def on(self, method: str, path: str, *answers: Answer) -> None:
        self.routes[(method, path)] = list(answers)

    def get(self, path: str, body: Any) -> None:
        self.on("GET", path, Answer(200, body))

    def answer(self, method: str, path: str) -> Answer:
        with self.lock:
            script = self.routes.get((method, path))
            if not script:
                return Answer(404, {"error": {"code": "Base.1.0.GeneralError", "message": "not recorded"}})
            return script.pop(0) if len(script) > 1 else script[0]

    def requests(self, method: str, path: str | None = None) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.method == method and (path is None or s.path == path)]


def _handler(replay: Replay) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the test asserts
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("latin-1")
            path = self.path.split("?", 1)[0]
            with replay.lock:
                replay.seen.append(Seen(self.command, path, dict(self.headers.items()), body))
            ans = replay.answer(self.command, path)
            data = b"" if ans.body is None else json.dumps(ans.body).encode()
            self.send_response(ans.status)
            for k, v in ans.headers:
                self.send_header(k, v)
            if data:
                self.send_header("Content-Type", "application/json;odata.metadata=minimal;charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = _serve

    return Handler


@contextmanager
def replay_server() -> Iterator[Replay]:
    """A replay server on 127.0.0.1 (a free port), stopped on exit."""
    replay = Replay()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(replay))
    server.daemon_threads = True
    replay.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield replay
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def recorded_idrac(replay: Replay, *, sessions: list[Answer] | None = None) -> None:
    """The routes of the recorded iDRAC (PowerEdge R640, iDRAC firmware 3.34.34.34, Redfish 1.4.0)."""
    d = "idrac-r640-3.34"
    root = recording(f"{d}/root.json")
    system = recording(f"{d}/system.json")
    replay.get("/redfish/v1/", root)
    replay.get("/redfish/v1/Systems", _collection("/redfish/v1/Systems", system["@odata.id"]))
    replay.get(system["@odata.id"], system)
    replay.get("/redfish/v1/Managers", recording(f"{d}/manager_collection.json"))
    manager = recording(f"{d}/manager.json")
    replay.get(manager["@odata.id"], manager)
    login = root["Links"]["Sessions"]["@odata.id"]  # this firmware: /redfish/v1/Sessions
    session = recording("sushy/session.json") | {"@odata.id": f"{login}/22"}
    replay.on(
        "POST",
        login,
        *(
            sessions
            or [Answer(201, session, (("X-Auth-Token", "recorded-token"), ("Location", f"{login}/22")))]
        ),
    )
    replay.on("DELETE", f"{login}/22", Answer(200, None))


def _collection(uri: str, *members: str) -> dict[str, Any]:
    return {
        "@odata.id": uri,
        "Members": [{"@odata.id": m} for m in members],
        "Members@odata.count": len(members),
    }


def recorded_error(name: str, headers: tuple[tuple[str, str], ...] = ()) -> Answer:
    """A recorded error answer (``recordings/errors/<name>``: its status and body)."""
    r = recording(f"errors/{name}")
    return Answer(int(r["status"]), r["body"], headers)

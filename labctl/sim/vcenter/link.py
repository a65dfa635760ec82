"""The twin's end of labctl-vcsim's private link (vcsimlab/link.go): HTTPS on the simulated
vCenter's own address, basic auth with the vCenter credentials, JSON bodies.

- ``events(after, wait_s)``: the journal of operations the twin must apply (power, guest reboot
  and shutdown, host maintenance), long-polled;
- ``push(body)``: the twin's state (guests, hosts, datastores, performance counters).

One persistent connection per calling thread (the event poll and the pushes run on two threads);
every request has a timeout and a failed connection is opened again on the next call.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import threading
from dataclasses import dataclass
from typing import Any

LINK_PATH = "/labctl/twin"


class LinkError(RuntimeError):
    pass


@dataclass(frozen=True)
class JournalEvent:
    seq: int
    op: str  # powerOn, powerOff, reset, suspend, rebootGuest, shutdownGuest, enterMaintenance, exitMaintenance
    vm: str = ""
    host: str = ""


@dataclass(frozen=True)
class EventBatch:
    events: tuple[JournalEvent, ...]
    last: int  # the journal's last seq
    lost: bool  # events were dropped before they were read


@dataclass(frozen=True)
class PushAnswer:
    ignored: tuple[str, ...] = ()  # VMs whose state was older than their last power operation
    seq: int = 0
    samples: int = 0  # real-time snapshots the simulator holds


class TwinLink:
    def __init__(
        self, host: str, port: int, user: str, password: str, ca_file: str | None, *, timeout_s: float = 15.0
    ):
        self.host, self.port = host, port
        self.where = f"https://{host}:{port}{LINK_PATH}"
        self.timeout_s = timeout_s
        if ca_file:
            self._ssl = ssl.create_default_context(cafile=ca_file)
            self._ssl.check_hostname = False  # the certificate names the IP, verified against the lab's CA
        else:
            self._ssl = ssl._create_unverified_context()
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        self._headers = {"Authorization": f"Basic {token}", "Content-Type": "application/json"}
        self._local = threading.local()

    def _conn(self, timeout_s: float) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(self.host, self.port, timeout=timeout_s, context=self._ssl)
            self._local.conn = conn
        conn.timeout = timeout_s
        if conn.sock is not None:
            conn.sock.settimeout(timeout_s)
        return conn

    def _request(self, method: str, path: str, body: bytes | None, timeout_s: float) -> Any:
        conn = self._conn(timeout_s)
        try:
            conn.request(method, LINK_PATH + path, body=body, headers=self._headers)
            resp = conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            self._local.conn = None
            raise LinkError(f"{self.where}{path}: {exc}") from None
        if resp.status != 200:
            text = data.decode(errors="replace").strip()[:300]
            raise LinkError(f"{self.where}{path}: HTTP {resp.status}: {text}")
        return json.loads(data)

    def events(self, after: int, wait_s: float) -> EventBatch:
        wait_ms = max(0, int(wait_s * 1000))
        got = self._request("GET", f"/events?after={after}&wait_ms={wait_ms}", None, self.timeout_s + wait_s)
        events = tuple(
            JournalEvent(int(e["seq"]), str(e["op"]), str(e.get("vm", "")), str(e.get("host", "")))
            for e in got.get("events") or ()
        )
        return EventBatch(events, int(got.get("last", 0)), bool(got.get("lost", False)))

    def push(self, body: dict[str, Any]) -> PushAnswer:
        got = self._request("POST", "/state", json.dumps(body).encode(), self.timeout_s)
        return PushAnswer(tuple(got.get("ignored") or ()), int(got.get("seq", 0)), int(got.get("samples", 0)))

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

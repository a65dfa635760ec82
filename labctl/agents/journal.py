"""The agent's journal of orders: what it started, what it finished and what it reported.

JetStream delivers an order again when its ack never reached the hub (the link dropped) or when
the agent died before acking it. The journal, a JSON-lines file in the agent's state folder, lets
the agent answer such a delivery without acting twice: a finished order's results are sent again
(with their ids, so the hub keeps one copy), and an order that was started by an agent that then
died is reported ``interrupted`` rather than executed a second time.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from labctl.drivers.hub.protocol import MachineResult, OrderDone

log = logging.getLogger(__name__)

KEEP_ORDERS: Final = 2000  # the journal is rewritten with the newest this many when it grows past twice that


@dataclass
class Entry:
    order: str
    state: Literal["started", "done"]
    results: dict[str, MachineResult] = field(default_factory=dict)
    done: OrderDone | None = None


class Journal:
    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._entries: dict[str, Entry] = {}
        self._lines = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._load()
        self._f = path.open("a")
        if path.stat().st_size and not path.read_bytes().endswith(b"\n"):
            self._f.write("\n")  # end a line torn by a crash, so the next one stands on its own

    def _load(self) -> None:
        if not self.path.exists():
            return
        for n, line in enumerate(self.path.read_text(errors="replace").splitlines(), 1):
            try:
                rec = json.loads(line)
                self._apply(rec)
            except (ValueError, KeyError, TypeError) as exc:  # a torn last line after a crash
                log.warning("%s:%d: unreadable journal line skipped (%s)", self.path, n, exc)
            self._lines += 1

    def _apply(self, rec: dict[str, object]) -> None:
        order = str(rec["order"])
        entry = self._entries.setdefault(order, Entry(order, "started"))
        if rec["op"] == "result":
            r = MachineResult.model_validate(rec["result"])
            entry.results[r.machine] = r
        elif rec["op"] == "done":
            entry.state = "done"
            entry.done = OrderDone.model_validate(rec["done"])

    def _write(self, rec: dict[str, object]) -> None:
        with self._lock:
            self._apply(rec)
            self._f.write(json.dumps(rec) + "\n")
            self._f.flush()  # an agent killed a moment later still finds the line
            self._lines += 1
            if self._lines > 2 * KEEP_ORDERS * 4:
                self._compact()

    def _compact(self) -> None:
        keep = list(self._entries.values())[-KEEP_ORDERS:]
        self._entries = {e.order: e for e in keep}
        tmp = self.path.with_suffix(".tmp")
        lines = 0
        with tmp.open("w") as f:
            for e in keep:
                f.write(json.dumps({"op": "start", "order": e.order}) + "\n")
                for r in e.results.values():
                    f.write(json.dumps({"op": "result", "order": e.order, "result": r.model_dump()}) + "\n")
                if e.done is not None:
                    f.write(json.dumps({"op": "done", "order": e.order, "done": e.done.model_dump()}) + "\n")
                lines += 2 + len(e.results)
        self._f.close()
        tmp.replace(self.path)
        self._f = self.path.open("a")
        self._lines = lines

    def close(self) -> None:
        with self._lock:
            self._f.close()

    def get(self, order: str) -> Entry | None:
        with self._lock:
            return self._entries.get(order)

    def begin(self, order: str) -> Entry | None:
        """Start ``order`` unless it is known: None if the caller is now executing it, else its
        entry (an order delivered twice at once must still be executed once)."""
        with self._lock:
            known = self._entries.get(order)
            if known is not None:
                return known
            self._entries[order] = Entry(order, "started")
        self._write({"op": "start", "order": order})
        return None

    def result(self, result: MachineResult) -> None:
        self._write({"op": "result", "order": result.order, "result": result.model_dump()})

    def finish(self, done: OrderDone) -> None:
        self._write({"op": "done", "order": done.order, "done": done.model_dump()})

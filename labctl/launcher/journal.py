"""The launcher's journal: every protocol event, numbered, kept on disk as it happens.

The controller polls ``events -After N``; sequence numbers only grow (a restarted daemon continues
from the file), so a poll that failed is repeated without losing or doubling anything.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any


class Journal:
    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._entries: list[dict[str, Any]] = []
        self.seq = 0
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a crash; the next one is whole
                if isinstance(obj, dict) and isinstance(obj.get("seq"), int):
                    self.seq = max(self.seq, obj["seq"])
                    self._entries.append(obj)
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())

    def add(self, event: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.seq += 1
            entry = {**event, "seq": self.seq}
            self._entries.append(entry)
            self._fh.write(json.dumps(entry) + "\n")
            self._fh.flush()
            return entry

    def after(self, seq: int) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self._entries if e["seq"] > seq]

    def close(self) -> None:
        with self._lock:
            self._fh.close()

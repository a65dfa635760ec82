"""Fixtures for the lease tests: each behaviour runs against both backends (a folder of lease
files, and a bucket on a real nats-server), and holders run in processes of their own."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from labctl.agents.nats_server import NatsServer
from labctl.lab.lease.record import RecordLeaseStore
from tests.nats_server import nats_hub, nats_hub_and_leaf, shared_nats_hub, unique_bucket  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
EVENT_TIMEOUT_S = 30.0  # a holder process starting up on a busy machine


@dataclass
class Backend:
    """One lease backend for a test: ``spec`` for a holder process, ``store()`` for this one."""

    name: str
    spec: str
    make: Callable[[], RecordLeaseStore]
    opened: list[RecordLeaseStore] = field(default_factory=list)

    def store(self) -> RecordLeaseStore:
        s = self.make()
        self.opened.append(s)
        return s


@pytest.fixture(params=["file", "nats"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "file":
        from labctl.lab.lease.file import FileLeaseStore

        where = tmp_path / "leases"
        b = Backend("file", f"file:{where}", lambda: FileLeaseStore(where))
    else:
        from labctl.lab.lease.hub import NatsLeaseStore

        hub: NatsServer = request.getfixturevalue("shared_nats_hub")
        bucket = unique_bucket("lease")
        b = Backend("nats", f"nats:{hub.url}#{bucket}", lambda: NatsLeaseStore(hub.url, bucket=bucket))
    try:
        yield b
    finally:
        for s in b.opened:
            s.close()


@pytest.fixture
def file_stores(tmp_path: Path) -> Iterator[Callable[[], RecordLeaseStore]]:
    """New FileLeaseStores on ``tmp_path``; all closed (their leases released) after the test."""
    from labctl.lab.lease.file import FileLeaseStore

    opened: list[RecordLeaseStore] = []

    def make() -> RecordLeaseStore:
        opened.append(FileLeaseStore(tmp_path))
        return opened[-1]

    try:
        yield make
    finally:
        for s in opened:
            s.close()


class HolderProcess:
    """A ``tests.lease.holder`` process; :meth:`event` reads its next JSON line."""

    def __init__(self, spec: str, resources: list[str], **opts: Any):
        args = [sys.executable, "-m", "tests.lease.holder", spec, *resources]
        for key, value in opts.items():
            flag = "--" + key.replace("_", "-")
            if value is True:
                args.append(flag)
            elif value is not False and value is not None:
                args += [flag, str(value)]
        self.proc = subprocess.Popen(
            args, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        self._sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self._sel.register(self.proc.stdout, selectors.EVENT_READ)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def event(self, timeout_s: float = EVENT_TIMEOUT_S) -> dict[str, Any]:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._sel.select(timeout=min(0.5, max(0.0, deadline - time.monotonic()))):
                line = self.proc.stdout.readline()
                if line:
                    return json.loads(line)
                break  # end of output: it exited
        err = self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
        raise AssertionError(
            f"holder {self.pid}: no event within {timeout_s:g} s (exit {self.proc.poll()}) {err}"
        )

    def wait_for(self, event: str, timeout_s: float = EVENT_TIMEOUT_S) -> dict[str, Any]:
        got = self.event(timeout_s)
        assert got["event"] == event, got
        return got

    def go(self) -> None:
        """Let a holder started with ``on_go=True`` take its lease now."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        """SIGKILL, and reap it (a zombie would still look alive to /proc)."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()
        self._sel.close()


@pytest.fixture
def holders() -> Iterator[Callable[..., HolderProcess]]:
    """Start holder processes; every one is killed and reaped at the end of the test."""
    started: list[HolderProcess] = []

    def start(spec: str, *resources: str, **opts: Any) -> HolderProcess:
        h = HolderProcess(spec, list(resources), **opts)
        started.append(h)
        return h

    try:
        yield start
    finally:
        for h in started:
            h.stop()


def wait_until(predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Poll ``predicate`` until it is truthy; its value, or fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s:g} s: {what}")
        time.sleep(0.05)

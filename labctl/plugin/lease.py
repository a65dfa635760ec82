"""The lab lease a plan session holds: one run owns a lab at a time.

The session takes ``lab:<name>`` before it touches a machine and gives it back at its end; a second
run waits up to ``--lease-wait`` seconds, then stops with one line naming the holder (exit 2).

ADAPTER (the lead switches it over when branch lease-nats is merged): the lease comes from
:mod:`labctl.lab.lease` (``open_lease_store().take(...)``, renewed by its own thread, lapsing when the
holder dies) when that module exists. Until then a minimal stand-in with the same behaviour for one
machine: an exclusive ``flock`` on ``<lease dir>/<resource>.lock`` (released by the kernel when the
process dies, so it never needs renewing), the holder written beside it for the message.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from labctl.errors import BadInputError

LEASE_DIR_VAR = "LABCTL_LEASE_DIR"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
POLL_S = 0.2  # how often a waiting run tries again, wall seconds


class HeldLease(Protocol):
    resource: str

    def release(self) -> None: ...


def lab_resource(lab_name: str) -> str:
    return f"lab:{lab_name}"


def take_lab_lease(lab_name: str, what: str, *, wait_s: float = 0.0) -> HeldLease:
    """Take ``lab:<lab_name>`` for this process; raises BadInputError naming the holder."""
    resource = lab_resource(lab_name)
    try:
        from labctl.lab import lease as real  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return _FlockLease.take(resource, what, wait_s)
    holder = real.holder_description(what)
    return real.open_lease_store().take(resource, holder, wait_s=wait_s)  # type: ignore[no-any-return]


def _lease_dir() -> Path:
    env = os.environ.get(LEASE_DIR_VAR)
    return Path(env) if env else PROJECT_ROOT / ".labctl" / "leases"


class _FlockLease:
    def __init__(self, resource: str, fd: int):
        self.resource = resource
        self._fd: int | None = fd

    @classmethod
    def take(cls, resource: str, what: str, wait_s: float) -> _FlockLease:
        folder = _lease_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / (quote(resource, safe="") + ".lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + max(0.0, wait_s)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _holder(path)
                    os.close(fd)
                    waited = f", still after waiting {wait_s:g} s" if wait_s > 0 else ""
                    raise BadInputError(
                        f"{resource} is leased by {holder}{waited} (wait for it with --lease-wait SECONDS, "
                        "or stop that run)"
                    ) from None
                time.sleep(POLL_S)
        info = {
            "holder": f"{_user()}@{socket.gethostname()} pid {os.getpid()} ({what})",
            "since": time.time(),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        return cls(resource, fd)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing the descriptor drops the flock


def _holder(path: Path) -> str:
    try:
        data: Any = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        data = {}
    holder = data.get("holder") if isinstance(data, dict) else None
    if not holder:
        return "another run"
    age = time.time() - float(data.get("since", time.time()))
    return f"{holder} for {age:.0f} s"


def _user() -> str:
    try:
        import getpass

        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())

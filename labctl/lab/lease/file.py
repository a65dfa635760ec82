"""The single-machine lease store: one JSON file per leased resource in a folder.

The default when a lab has no hub (``.labctl/leases`` in the project, or ``$LABCTL_LEASE_DIR``).
Every read-modify-write holds an exclusive ``flock`` on the folder's lock file, so processes on
this machine see one order of events; a record is written to a temporary file and renamed over the
old one, so a reader never sees half a record. A holder's lease lapses when it is not renewed
within its TTL, and at once when its process on this host is gone (pid and start time checked).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final
from urllib.parse import quote

from labctl.lab.lease.model import default_lease_dir, this_host
from labctl.lab.lease.record import (
    KEEP,
    LeaseRecord,
    LeaseRef,
    LeaseStoreError,
    RecordLeaseStore,
    T,
    Transaction,
    pid_alive,
)

log = logging.getLogger(__name__)

LOCK_FILE: Final = ".lock"
SUFFIX: Final = ".lease.json"
# A transaction holds the lock for a millisecond or so; one that is never free means a holder is
# stopped (SIGSTOP, a debugger) inside one.
LOCK_WAIT_S: Final = 10.0
_LOCK_POLL_S: Final = 0.005


class FileLeaseStore(RecordLeaseStore):
    """Leases of this machine, in ``directory`` (default ``$LABCTL_LEASE_DIR`` or
    ``.labctl/leases``)."""

    def __init__(self, directory: Path | str | None = None, *, lock_wait_s: float = LOCK_WAIT_S):
        super().__init__()
        self.directory = Path(directory) if directory is not None else default_lease_dir()
        self.lock_wait_s = lock_wait_s
        self.call_timeout_s = lock_wait_s
        self._host = this_host()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LeaseStoreError(
                f"{self.directory}: cannot create the lease folder ({exc.strerror}; "
                f"set $LABCTL_LEASE_DIR to a writable folder)"
            ) from None

    @property
    def where(self) -> str:
        return str(self.directory)

    def _ref_live(self, ref: LeaseRef, now: float) -> bool:
        if ref.lapsed(now):
            return False
        # a holder on this host whose process is gone lets go at once, not a TTL later
        return (
            ref.holder_pid is None
            or ref.holder_host != self._host
            or pid_alive(ref.holder_pid, ref.pid_start)
        )

    def _path(self, resource: str) -> Path:
        return self.directory / (quote(resource, safe="") + SUFFIX)

    @contextlib.contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        lock_path = self.directory / LOCK_FILE
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        # a new open file description per call: flock then also orders the threads of one process
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise LeaseStoreError(f"{lock_path}: cannot open the lease lock ({exc.strerror})") from None
        try:
            deadline = time.monotonic() + self.lock_wait_s
            while True:
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise LeaseStoreError(
                            f"{lock_path}: lease lock not free after {self.lock_wait_s:g} s (a process "
                            f"holding it is stopped? see `fuser {lock_path}`)"
                        ) from None
                    time.sleep(_LOCK_POLL_S)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def _load(self, path: Path, tolerate_corrupt: bool) -> LeaseRecord | None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise LeaseStoreError(f"{path}: cannot read the lease ({exc.strerror})") from None
        try:
            return LeaseRecord.from_json(data, str(path))
        except LeaseStoreError:
            if tolerate_corrupt:
                return None
            raise

    def _write(self, path: Path, record: LeaseRecord) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(record.to_json())
            os.replace(tmp, path)  # atomic: readers see the old record or the new, never half
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _transact(self, resource: str, fn: Transaction[T], *, tolerate_corrupt: bool = False) -> T:
        path = self._path(resource)
        with self._locked(exclusive=True):
            record = self._load(path, tolerate_corrupt)
            if record is not None and record.resource != resource:
                raise LeaseStoreError(f"{path}: holds the lease of {record.resource}, not {resource}")
            new, result = fn(record)
            try:
                if new is None:
                    path.unlink(missing_ok=True)
                elif new is not KEEP:
                    assert isinstance(new, LeaseRecord)
                    self._write(path, new)
            except OSError as exc:
                raise LeaseStoreError(f"{path}: cannot write the lease ({exc.strerror})") from None
            return result

    def _records(self) -> list[LeaseRecord]:
        records = []
        with self._locked(exclusive=False):
            for path in sorted(self.directory.glob("*" + SUFFIX)):
                try:
                    record = self._load(path, tolerate_corrupt=False)
                except LeaseStoreError as exc:
                    log.warning("%s", exc)
                    continue
                if record is not None:
                    records.append(record)
        return records

"""The lease logic both backends share: take, renew, release, list, break and reservations, as
transactions over one resource's record.

A backend provides only :meth:`RecordLeaseStore._transact` (read a resource's record, apply a
transaction, write its answer atomically: under a file lock, or as a compare-and-set on the
record's revision) and :meth:`RecordLeaseStore._records`. The record is the same JSON document on
both: the resource, whether it is shared, and one reference per holder, each with its own token,
TTL and last renewal, so a shared resource's holders come and go (and lapse) independently.
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from labctl.errors import BadInputError, LabctlError
from labctl.lab.lease.model import (
    DEFAULT_TTL_S,
    MAX_TTL_S,
    RESERVATION_PREFIX,
    Lease,
    LeaseHeld,
    LeaseInfo,
    LeaseStoreError,
    check_resource,
    check_ttl,
    reservation_token,
    this_host,
    this_user,
)

log = logging.getLogger(__name__)

_POLL_FIRST_S: Final = 0.05  # waiting for a held lease: first re-check, then x1.5 up to the max
_POLL_MAX_S: Final = 0.5


def process_start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, /proc/PID/stat field 22): tells a reused pid
    from the holder. None when there is no such live process (gone, or a zombie) or no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": state is field 3
    if not fields or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def pid_alive(pid: int, start_ticks: int | None) -> bool:
    """The process ``pid`` still runs and is the same process (its start time matches)."""
    if Path("/proc/self/stat").exists():
        now_ticks = process_start_ticks(pid)
        return now_ticks is not None and (start_ticks is None or now_ticks == start_ticks)
    try:  # no /proc: the pid alone
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LeaseRef(BaseModel):
    """One holder's reference: a shared resource has one per holder, an exclusive lease one."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    token: str  # this holder's secret-free id; a reservation's is "hand:<user@host>"
    holder: str
    holder_pid: int | None = None  # None: not bound to a process (a reservation)
    pid_start: int | None = None  # start ticks of holder_pid, so a reused pid is not mistaken for it
    holder_host: str
    taken_at: float
    renewed_at: float
    ttl_s: float

    def lapsed(self, now: float, grace_s: float = 0.0) -> bool:
        return now - self.renewed_at > self.ttl_s + grace_s


class LeaseRecord(BaseModel):
    """The stored state of one resource (a JSON file, or a JetStream key-value entry)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    version: int = 1
    resource: str
    shared: bool = False
    refs: tuple[LeaseRef, ...] = ()

    def info(self) -> LeaseInfo:
        first = min(self.refs, key=lambda r: r.taken_at)
        return LeaseInfo(
            resource=self.resource,
            holder=first.holder,
            holder_pid=first.holder_pid,
            holder_host=first.holder_host,
            taken_at=first.taken_at,
            renewed_at=max(r.renewed_at for r in self.refs),
            ttl_s=max(r.ttl_s for r in self.refs),
            shared=self.shared,
            refs=len(self.refs),
            holders=tuple(r.holder for r in sorted(self.refs, key=lambda r: r.taken_at)),
            reserved_by=tuple(
                r.token.removeprefix(RESERVATION_PREFIX)
                for r in self.refs
                if r.token.startswith(RESERVATION_PREFIX)
            ),
        )

    def expires_at(self) -> float:
        return max(r.renewed_at + r.ttl_s for r in self.refs)

    def to_json(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> LeaseRecord:
        try:
            return cls.model_validate_json(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise LeaseStoreError(
                f"{where}: unreadable lease record ({first['msg']}; `labctl lease break` removes it)"
            ) from None


class _Keep:
    """A transaction's answer for "write nothing"."""


KEEP: Final = _Keep()
T = TypeVar("T")
# A transaction reads a resource's record (None: no record) and answers (the record to store,
# None to delete it, or KEEP), result. It may run more than once (compare-and-set retries), so it
# must not have side effects.
Transaction = Callable[[LeaseRecord | None], tuple[LeaseRecord | _Keep | None, T]]


@dataclass(frozen=True)
class _Taken:
    record: LeaseRecord
    first_user: bool


# Stores still open when the interpreter exits: their leases are released then, so a run that
# ends without releasing (an uncaught error, sys.exit) frees the lab at once, not a TTL later.
_open_stores: weakref.WeakSet[RecordLeaseStore] = weakref.WeakSet()


@atexit.register
def _close_open_stores() -> None:
    for store in list(_open_stores):
        try:
            store.close()
        except Exception as exc:  # at exit: say so, never raise
            log.warning("%s: leases not released at exit: %s", store.where, exc)


class RecordLeaseStore(abc.ABC):
    """Take, renew, release, list and break over a backend's compare-and-set of one record.

    A backend provides :meth:`_transact` (read one resource's record, apply a transaction, write
    its answer atomically: under a file lock, or as a compare-and-set on the record's revision)
    and :meth:`_records` (every record, for listing).
    """

    call_timeout_s: float = 5.0
    # a reference whose renewal is this much older than its TTL is dead (clocks of other hosts)
    clock_grace_s: float = 0.0
    max_ttl_s: float = MAX_TTL_S

    def __init__(self) -> None:
        self._held: set[Lease] = set()
        self._held_lock = threading.Lock()
        _open_stores.add(self)

    # backend -------------------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def where(self) -> str:
        """Where the leases live, for messages: a folder or a hub URL (without credentials)."""

    @abc.abstractmethod
    def _transact(self, resource: str, fn: Transaction[T], *, tolerate_corrupt: bool = False) -> T:
        """Apply ``fn`` to ``resource``'s record atomically. A corrupt record raises, or is given
        to ``fn`` as None when ``tolerate_corrupt`` (so break can remove it)."""

    @abc.abstractmethod
    def _records(self) -> list[LeaseRecord]:
        """Every stored record (live or lapsed), skipping unreadable ones with a warning."""

    def _ref_live(self, ref: LeaseRef, now: float) -> bool:
        return not ref.lapsed(now, self.clock_grace_s)

    def close(self) -> None:
        """Release every lease this store still holds (best effort), then close the backend."""
        _open_stores.discard(self)
        with self._held_lock:
            held = list(self._held)
        for lease in held:
            try:
                lease.release()
            except LabctlError as exc:
                log.warning("%s: not released on close: %s", lease.resource, exc)

    def __enter__(self) -> RecordLeaseStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # the shared logic -----------------------------------------------------------------------------
    def _live(self, record: LeaseRecord | None, now: float) -> tuple[LeaseRef, ...]:
        if record is None:
            return ()
        return tuple(r for r in record.refs if self._ref_live(r, now))

    def _forget(self, lease: Lease) -> None:
        with self._held_lock:
            self._held.discard(lease)

    def _new_ref(self, token: str, holder: str, ttl_s: float, bound_to_process: bool) -> LeaseRef:
        now = time.time()
        pid = os.getpid() if bound_to_process else None
        return LeaseRef(
            token=token,
            holder=holder,
            holder_pid=pid,
            pid_start=process_start_ticks(pid) if pid is not None else None,
            holder_host=this_host(),
            taken_at=now,
            renewed_at=now,
            ttl_s=ttl_s,
        )

    def _take_ref(
        self,
        resource: str,
        ref: LeaseRef,
        shared: bool,
        wait_s: float,
        *,
        owner: str | None = None,
        keep_holder: bool = False,
    ) -> tuple[_Taken, LeaseRef]:
        """Add ``ref`` to ``resource`` (or replace this token's earlier one), waiting up to
        ``wait_s``; LeaseHeld when another holder keeps it. A reservation of ``owner`` (user@host)
        does not keep it: the owner's own run goes ahead under it. ``keep_holder``: a token taken
        again keeps the holder text it had (extending a reservation keeps its note)."""
        under = reservation_token(owner) if owner else None
        deadline = time.monotonic() + wait_s
        delay_s = _POLL_FIRST_S
        while True:
            now = time.time()
            mine = ref.model_copy(update={"taken_at": now, "renewed_at": now})

            def fn(
                record: LeaseRecord | None, mine: LeaseRef = mine
            ) -> tuple[LeaseRecord | _Keep, _Taken | LeaseInfo]:
                live = self._live(record, mine.renewed_at)
                earlier = next((r for r in live if r.token == mine.token), None)
                others = tuple(r for r in live if r.token != mine.token)
                blocking = [r for r in others if r.token != under]
                if record is not None and blocking and not (shared and record.shared):
                    return KEEP, record.model_copy(update={"refs": others}).info()
                if earlier is not None:  # a reservation taken again: renewed, first taken then
                    kept = {"holder": earlier.holder} if keep_holder else {}
                    mine = mine.model_copy(update={"taken_at": earlier.taken_at, **kept})
                # under others (shared ones, or its owner's reservation) the record stays as shared
                # as it was: taking under an exclusive reservation never opens it to shared takers
                still_shared = shared and (record is None or not others or record.shared)
                new = LeaseRecord(resource=resource, shared=still_shared, refs=(*others, mine))
                return new, _Taken(new, first_user=not others)

            outcome = self._transact(resource, fn)
            if isinstance(outcome, _Taken):
                return outcome, next(r for r in outcome.record.refs if r.token == mine.token)
            assert isinstance(outcome, LeaseInfo)
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                raise LeaseHeld(outcome, waited_s=wait_s)
            time.sleep(min(delay_s, left_s))
            delay_s = min(delay_s * 1.5, _POLL_MAX_S)

    def take(
        self,
        resource: str,
        holder: str,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        wait_s: float = 0,
        shared: bool = False,
        owner: str | None = None,
    ) -> Lease:
        """Take ``resource`` for this process; renewed every ``ttl_s / 3`` until released.

        ``wait_s`` > 0 waits that long for the holder to let go, then raises :class:`LeaseHeld`.
        ``shared``: a reference-counted lease that other shared takers may hold too.
        ``owner``: the person this process acts for (default: this user on this host); a
        reservation of theirs (`labctl lease take`) does not refuse them: they go ahead under it.
        """
        check_resource(resource)
        check_ttl(ttl_s, self.max_ttl_s)
        if not wait_s >= 0:
            raise BadInputError(f"lease wait {wait_s!r} s must be 0 or more seconds")
        ref = self._new_ref(uuid.uuid4().hex, holder, ttl_s, bound_to_process=True)
        owner = owner or f"{this_user()}@{this_host()}"
        taken, ref = self._take_ref(resource, ref, shared, wait_s, owner=owner)
        lease = Lease(self, taken.record.info(), ref.token, ttl_s, first_user=taken.first_user)
        with self._held_lock:
            self._held.add(lease)
        return lease

    def take_all(
        self,
        resources: Sequence[str],
        holder: str,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        wait_s: float = 0,
        shared: bool = False,
        owner: str | None = None,
    ) -> list[Lease]:
        """Take every resource or none: in sorted order (so two takers never deadlock), each
        waiting within one deadline; on a refusal the ones already taken are released."""
        for r in resources:
            check_resource(r)
        deadline = time.monotonic() + max(0.0, wait_s)
        taken: list[Lease] = []
        try:
            for resource in sorted(set(resources)):
                left_s = max(0.0, deadline - time.monotonic())
                taken.append(
                    self.take(resource, holder, ttl_s=ttl_s, wait_s=left_s, shared=shared, owner=owner)
                )
        except BaseException:
            for lease in reversed(taken):
                with contextlib.suppress(LabctlError):
                    lease.release()
            raise
        return taken

    def _renew(self, resource: str, token: str) -> LeaseInfo | None:
        """Renew ``token``'s reference; the lease after, or None when it is no longer there."""

        def fn(record: LeaseRecord | None) -> tuple[LeaseRecord | _Keep, LeaseInfo | None]:
            now = time.time()
            live = self._live(record, now)
            mine = next((r for r in live if r.token == token), None)
            if record is None or mine is None:
                return KEEP, None
            refs = tuple(r.model_copy(update={"renewed_at": now}) if r is mine else r for r in live)
            new = record.model_copy(update={"refs": refs})
            return new, new.info()

        return self._transact(resource, fn)

    def _release(self, resource: str, token: str) -> bool:
        """Drop ``token``'s reference; True when no live holder is left (the last user)."""

        def fn(record: LeaseRecord | None) -> tuple[LeaseRecord | _Keep | None, bool]:
            live = self._live(record, time.time())
            others = tuple(r for r in live if r.token != token)
            if record is None or len(others) == len(record.refs):
                return KEEP, not others  # not ours (any more), nothing lapsed to tidy
            if not others:
                return None, True
            return record.model_copy(update={"refs": others}), False

        return self._transact(resource, fn)

    def list(self) -> list[LeaseInfo]:
        """The leased resources (live holders only), sorted by resource."""
        now = time.time()
        infos = []
        for record in self._records():
            live = self._live(record, now)
            if live:
                infos.append(record.model_copy(update={"refs": live}).info())
        return sorted(infos, key=lambda i: i.resource)

    def break_lease(self, resource: str) -> LeaseInfo | None:
        """Remove ``resource``'s lease whoever holds it (every reference of a shared one).
        What was broken, or None if it was not leased. Its holders see ``lost`` at their next
        renewal."""
        check_resource(resource)

        def fn(record: LeaseRecord | None) -> tuple[_Keep | None, LeaseInfo | None]:
            live = self._live(record, time.time())
            info = record.model_copy(update={"refs": live}).info() if record and live else None
            return None, info

        return self._transact(resource, fn, tolerate_corrupt=True)

    def reserve(
        self,
        resource: str,
        owner: str,
        holder: str,
        *,
        ttl_s: float,
        wait_s: float = 0,
        shared: bool = False,
        keep_holder: bool = False,
    ) -> LeaseInfo:
        """A lease for a person (``owner`` = ``user@host``), bound to no process and not renewed:
        it lasts ``ttl_s`` unless :meth:`unreserve` d; reserving again extends it (``keep_holder``:
        keeping the holder text, and so the note, it was first taken with)."""
        check_resource(resource)
        check_ttl(ttl_s, self.max_ttl_s)
        ref = self._new_ref(reservation_token(owner), holder, ttl_s, bound_to_process=False)
        taken, _ = self._take_ref(resource, ref, shared, wait_s, keep_holder=keep_holder)
        return taken.record.info()

    def unreserve(self, resource: str, owner: str) -> LeaseInfo | None:
        """Drop ``owner``'s reservation of ``resource``. What is left of the lease (None: free);
        LeaseHeld-style error when ``owner`` has no reservation there."""
        check_resource(resource)
        token = reservation_token(owner)

        def fn(
            record: LeaseRecord | None,
        ) -> tuple[LeaseRecord | _Keep | None, tuple[bool, LeaseInfo | None]]:
            live = self._live(record, time.time())
            others = tuple(r for r in live if r.token != token)
            rest = record.model_copy(update={"refs": others}).info() if record and others else None
            if len(others) == len(live):
                return KEEP, (False, rest)
            kept = record.model_copy(update={"refs": others}) if record is not None and others else None
            return kept, (True, rest)

        was_reserved, rest = self._transact(resource, fn)
        if not was_reserved:
            if rest is None:
                raise BadInputError(f"{resource} is not leased (nothing to release; see `labctl lease list`)")
            raise BadInputError(
                f"{resource} is leased by {rest.holder}, not reserved by {owner} "
                f"(`labctl lease break {resource}` takes it away)"
            )
        return rest

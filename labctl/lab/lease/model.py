"""The lab lease: one owner at a time for a lab, a group or a shared resource.

A run takes a lease on what it touches and a background thread renews it while the run lives; a
second run waits with a deadline or fails with one line naming the holder; a holder that dies stops
renewing and its lease expires on its own (its TTL; on the file store also as soon as its pid on
this host is gone). Two backends share this interface and the logic of
:mod:`labctl.lab.lease.record`:

- :class:`labctl.lab.lease.file.FileLeaseStore`: one machine, files under ``.labctl/leases``
  (no server needed);
- :class:`labctl.lab.lease.hub.NatsLeaseStore`: a JetStream key-value bucket on the hub, shared
  by every controller and agent of the site.

    store = lease_store_for(lab)                     # the lab's hub, $LABCTL_HUB, else the files
    with store.take("lab:sim-2007", holder_description("labctl run boot_storm"), wait_s=60) as lease:
        ...                                          # lease.lost is set if it was broken or lapsed
    leases = store.take_all(["lab:sim-2007", "switch:pc6248"], holder, shared=False)

Shared resources (a switch, an array used by several labs) are reference-counted: ``shared=True``
adds a reference when others hold it shared; ``lease.first_user`` says this taker was the first
(power it on), ``lease.last_user`` after :meth:`Lease.release` says nobody else holds it (power it
off). A reservation (:meth:`LeaseStore.reserve`, `labctl lease take`) is a lease a person takes
from the shell: bound to ``user@host`` rather than a process, kept for its TTL or until released;
that person's own runs, nightlies and power actions go ahead under it (``owner`` of a take).

Resources are flat keys: a lease on ``lab:X`` does not by itself conflict with one on
``group:X/first-25``. A run that leases parts of a lab should first take ``lab:X`` *shared* (runs
on parts coexist, while a whole-lab run's exclusive ``lab:X`` waits for all of them), then the
parts it touches exclusively (groups, or machines where groups overlap) with one
:meth:`LeaseStore.take_all`; every run taking ``lab:X`` first keeps the order deadlock-free.
"""

from __future__ import annotations

import getpass
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Protocol

from labctl.errors import BadInputError, LabctlError

log = logging.getLogger(__name__)

LEASE_DIR_VAR = "LABCTL_LEASE_DIR"
HUB_VAR = "LABCTL_HUB"
HUB_DOMAIN_VAR = "LABCTL_HUB_DOMAIN"  # the hub's JetStream domain, for a client behind a leaf node
LEASE_BUCKET_VAR = "LABCTL_LEASE_BUCKET"  # the hub's lease bucket (default labctl-leases)
DEFAULT_LEASE_DIR = Path(__file__).resolve().parents[3] / ".labctl" / "leases"

DEFAULT_TTL_S: Final = 30.0
# NATS per-message TTLs are whole seconds and at least one: the same floor on both backends, so a
# test or a plan behaves the same on either.
MIN_TTL_S: Final = 1.0
MAX_TTL_S: Final = 7 * 24 * 3600.0  # a week: the NATS bucket's max_age, the ceiling of every lease
RENEWALS_PER_TTL: Final = 3  # renew three times per TTL: two renewals may be late before it lapses

# kind:name, e.g. lab:sim-2007, group:sim-2007/first-25, array:unity-01, switch:pc6248. The name's
# parts are joined by "." or "/" and never empty: the NATS backend uses it as a subject (key).
_RESOURCE = re.compile(r"^[a-z][a-z0-9-]{0,31}:[A-Za-z0-9_=-]+(?:[./][A-Za-z0-9_=-]+)*$")
MAX_RESOURCE_LEN: Final = 200


@dataclass(frozen=True)
class LeaseInfo:
    """What a lease store says about one leased resource."""

    resource: str  # "lab:sim-2007", "group:sim-2007/first-25", "array:unity-01", "switch:pc6248"
    holder: str  # "user@host pid 1234 (labctl run boot_storm, run 2026...-a1b2)"
    holder_pid: int | None
    holder_host: str
    taken_at: float  # wall epoch seconds
    renewed_at: float
    ttl_s: float  # expires when not renewed for this long
    shared: bool = False
    refs: int = 1  # holders of a shared (reference-counted) resource
    holders: tuple[str, ...] = ()  # every holder of a shared resource, oldest first
    reserved_by: tuple[str, ...] = ()  # user@host of each reservation among the holders (lease take)

    @property
    def expires_at(self) -> float:
        return self.renewed_at + self.ttl_s

    def age_s(self, now: float | None = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.taken_at)


class LeaseHeld(BadInputError):
    """The resource is leased by someone else (after waiting, if asked to wait).

    The line names the holder, the time its lease has left, and the flag that waits for it
    (``wait_flag``: a run's and nightly's ``--lease-wait``; `labctl lease take` says ``--wait``)."""

    def __init__(self, info: LeaseInfo, waited_s: float = 0.0, *, wait_flag: str = "--lease-wait"):
        self.info = info
        self.waited_s = waited_s
        self.wait_flag = wait_flag
        others = f" and {info.refs - 1} other(s)" if info.refs > 1 else ""
        waited = f", still after waiting {format_duration(waited_s)}" if waited_s > 0 else ""
        left = format_duration(info.expires_at - time.time())
        renewed = ", renewed while its run lives" if info.holder_pid is not None else ""
        super().__init__(
            f"{info.resource} is leased by {clean_note(info.holder)}{others} ({left} left{renewed})"
            f"{waited} (wait for it with {wait_flag} S, or `labctl lease break {info.resource}`)"
        )

    def with_wait_flag(self, wait_flag: str) -> LeaseHeld:
        """The same refusal naming another command's wait flag."""
        return LeaseHeld(self.info, self.waited_s, wait_flag=wait_flag)


class LeaseLost(LabctlError):
    """A held lease was broken, taken over or not renewed in time: the lab may have another owner."""

    def __init__(self, resource: str, why: str):
        self.resource = resource
        super().__init__(
            f"{resource}: lease lost ({why}); another run may own it now (see `labctl lease list`)"
        )


class LeaseStoreError(LabctlError):
    """The lease store itself failed (unreadable record, lock never free, hub unreachable)."""


def check_resource(resource: str) -> str:
    """``resource`` if it is ``kind:name`` as leases spell them; else one line with the fix."""
    if len(resource) > MAX_RESOURCE_LEN or not _RESOURCE.fullmatch(resource):
        raise BadInputError(
            f"lease resource {resource[:80]!r} is not kind:name (e.g. lab:sim-2007, "
            f"group:sim-2007/first-25, switch:pc6248; letters, digits, - _ = joined by . or /)"
        )
    return resource


def lease_resource(kind: str, *names: str) -> str:
    """``lease_resource("group", "sim-2007", "first-25")`` -> ``group:sim-2007/first-25``, checked."""
    return check_resource(f"{kind}:{'/'.join(names)}")


def check_ttl(ttl_s: float, max_ttl_s: float = MAX_TTL_S) -> float:
    if not (MIN_TTL_S <= ttl_s <= max_ttl_s):  # also false for NaN
        raise BadInputError(
            f"lease TTL {ttl_s!r} s is out of range (between {MIN_TTL_S:g} s and "
            f"{format_duration(max_ttl_s)})"
        )
    return ttl_s


def format_duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 10 min``, ``3 d 4 h``: ages and TTLs for one-line messages."""
    s = round(max(0.0, seconds))
    if s < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} min {s} s" if s else f"{m} min"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h} h {m} min" if m else f"{h} h"
    d, h = divmod(h, 24)
    return f"{d} d {h} h" if h else f"{d} d"


MAX_NOTE_LEN: Final = 200  # characters of a lease note kept (and of a holder shown)
# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), and any other two-character ESC sequence
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def clean_note(text: str, limit: int = MAX_NOTE_LEN) -> str:
    """``text`` safe for a terminal and bounded: escape sequences and control characters removed
    (a note cannot recolour, retitle or clear the screen of whoever lists the leases), whitespace
    runs made one space, at most ``limit`` characters (the cut marked with ``...``)."""
    text = _CONTROL.sub(" ", _ESCAPES.sub("", text))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def this_host() -> str:
    return socket.gethostname()


def this_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return str(os.getuid())


def holder_description(what: str, pid: int | None = None) -> str:
    """``user@host pid 1234 (what)``: who holds a lease, for the one-line message another run sees."""
    return f"{this_user()}@{this_host()} pid {os.getpid() if pid is None else pid} ({what})"


# -- a held lease --------------------------------------------------------------------------------


class _LeaseBackend(Protocol):
    """What a :class:`Lease` needs from the store that took it."""

    call_timeout_s: float

    def _renew(self, resource: str, token: str) -> LeaseInfo | None: ...

    def _release(self, resource: str, token: str) -> bool: ...

    def _forget(self, lease: Lease) -> None: ...


class Lease:
    """A lease this process holds, renewed by a background thread until :meth:`release`.

    ``lost`` is set when a renewal finds the lease gone or taken over (broken by a person, or not
    renewed within its TTL, e.g. the hub was unreachable that long); check it (or call
    :meth:`raise_if_lost`) before trusting that the lab is still yours.
    """

    def __init__(
        self,
        backend: _LeaseBackend,
        info: LeaseInfo,
        token: str,
        ttl_s: float,
        *,
        first_user: bool,
        renew: bool = True,
    ):
        self._store = backend
        self._token = token
        self._ttl_s = ttl_s
        self.resource = info.resource
        self.info: LeaseInfo = info
        self.first_user = first_user  # the first holder of a shared resource (or any exclusive one)
        self.last_user = False  # set by release(): nobody else holds it now
        self.lost = threading.Event()
        self.lost_reason = ""
        self._released = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if renew:
            self._thread = threading.Thread(
                target=self._renew_loop, name=f"lease-renew {self.resource}", daemon=True
            )
            self._thread.start()

    @property
    def token(self) -> str:
        return self._token

    @property
    def released(self) -> bool:
        return self._released

    def _mark_lost(self, why: str) -> None:
        self.lost_reason = why
        self.lost.set()
        log.warning("%s: lease lost (%s)", self.resource, why)

    def _renew_loop(self) -> None:
        interval_s = self._ttl_s / RENEWALS_PER_TTL
        last_ok = time.monotonic()
        while not self._stop.wait(interval_s):
            try:
                info = self._store._renew(self.resource, self._token)
            except Exception as exc:  # this thread must not die quietly: the run would trust it
                # the store is unreachable: keep trying until the lease would have lapsed anyway
                if not isinstance(exc, LabctlError):
                    log.exception("%s: lease renewal failed", self.resource)
                if time.monotonic() - last_ok > self._ttl_s:
                    self._mark_lost(f"not renewed for {format_duration(self._ttl_s)}: {exc}")
                    return
                log.warning("%s: lease renewal failed, retrying: %s", self.resource, exc)
                continue
            if info is None:
                self._mark_lost("broken or expired, and no longer ours")
                return
            last_ok = time.monotonic()
            self.info = info

    def raise_if_lost(self) -> None:
        if self.lost.is_set():
            raise LeaseLost(self.resource, self.lost_reason)

    def release(self) -> None:
        """Give the lease back (drop this holder's reference). Idempotent; sets ``last_user``."""
        with self._lock:
            if self._released:
                return
            self._released = True
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._store.call_timeout_s + 1.0)
        try:
            self.last_user = self._store._release(self.resource, self._token)
        finally:  # unreachable store: the reference lapses by its TTL; nothing more to do here
            self._store._forget(self)

    def __enter__(self) -> Lease:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self._released else "lost" if self.lost.is_set() else "held"
        return f"<Lease {self.resource} {state} by {self.info.holder!r}>"


class LeaseStore(Protocol):
    """What a run, the pytest plugin and `labctl power` use; both backends provide it
    (:class:`labctl.lab.lease.record.RecordLeaseStore` documents each method)."""

    def take(
        self, resource: str, holder: str, *, ttl_s: float = DEFAULT_TTL_S, wait_s: float = 0,
        shared: bool = False, owner: str | None = None,
    ) -> Lease: ...  # fmt: skip

    def take_all(
        self, resources: Sequence[str], holder: str, *, ttl_s: float = DEFAULT_TTL_S, wait_s: float = 0,
        shared: bool = False, owner: str | None = None,
    ) -> list[Lease]: ...  # fmt: skip

    def list(self) -> list[LeaseInfo]: ...

    def break_lease(self, resource: str) -> LeaseInfo | None: ...

    def reserve(
        self, resource: str, owner: str, holder: str, *, ttl_s: float, wait_s: float = 0,
        shared: bool = False, keep_holder: bool = False,
    ) -> LeaseInfo: ...  # fmt: skip

    def unreserve(self, resource: str, owner: str) -> LeaseInfo | None: ...

    def close(self) -> None: ...

    @property
    def where(self) -> str: ...


RESERVATION_PREFIX: Final = "hand:"


def reservation_token(owner: str) -> str:
    return f"{RESERVATION_PREFIX}{owner}"


def default_lease_dir() -> Path:
    """``$LABCTL_LEASE_DIR`` if set, else the project's ``.labctl/leases``."""
    env = os.environ.get(LEASE_DIR_VAR)
    return Path(env).resolve() if env else DEFAULT_LEASE_DIR

"""The contract every power backend implements, and the burst helpers they share.

A backend carries one :class:`~labctl.inventory.model.PowerKind` for a batch of machines:

- :meth:`PowerBackend.act` **arms** (opens the sessions and plans the requests for every
  machine), passes the :class:`Gate` (every backend of the action arms before any fires), then
  **fires** the requests together and reports each machine once through ``report``, with its
  ``sent_wall`` and, where the backend can see it, ``delivered_wall``. It never raises for one
  machine: a machine that fails gets an outcome with the reason and the fix.
- :meth:`PowerBackend.states` reads the power state of a batch.

Adding a backend (a PDU, say): a module in this package with a class like these, its name in
:class:`labctl.inventory.model.PowerKind`, and one line in :mod:`labctl.lab.power.registry`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, ClassVar, Protocol, TypeVar

from labctl.clock import LabClock
from labctl.drivers.power_verbs import PowerVerb
from labctl.inventory.model import Machine, PowerKind
from labctl.lab.power.model import MachineState, PowerOutcome, lab_at

if TYPE_CHECKING:
    from labctl.lab.session import LabSession

Report = Callable[[PowerOutcome], None]
T = TypeVar("T")

GATE_WAIT_S = 120.0  # a backend still arming after this long no longer holds the others back


class Gate:
    """Where the backends of one action meet between arming and firing.

    Each backend passes it once (:meth:`pass_`); the last to arrive releases them all. A backend
    that ends without passing (it crashed, or had nothing to fire) is let through by
    :meth:`leave`, so the others are never held back by it.
    """

    def __init__(self, parties: int):
        self._barrier = threading.Barrier(max(1, parties))
        self._lock = threading.Lock()
        self._passed: set[str] = set()

    def pass_(self, backend: str) -> None:
        with self._lock:
            if backend in self._passed:
                return
            self._passed.add(backend)
        try:
            self._barrier.wait(GATE_WAIT_S)
        except threading.BrokenBarrierError:
            pass  # someone left or timed out: fire now rather than never

    def leave(self, backend: str) -> None:
        with self._lock:
            if backend in self._passed:
                return
            self._passed.add(backend)
        self._barrier.abort()


class PowerBackend(Protocol):
    kind: ClassVar[PowerKind]

    def __init__(self, session: LabSession) -> None: ...

    def act(self, verb: PowerVerb, machines: Sequence[Machine], gate: Gate, report: Report) -> None:
        """Arm every machine, pass ``gate``, fire together; ``report`` each machine exactly once."""

    def states(self, machines: Sequence[Machine]) -> dict[str, MachineState]:
        """The power state of each machine, read now."""


def outcome(
    clock: LabClock,
    kind: PowerKind,
    m: Machine,
    ok: bool,
    detail: str,
    fix: str = "",
    *,
    sent_wall: float | None = None,
    delivered_wall: float | None = None,
) -> PowerOutcome:
    """One machine's outcome, its wall stamps also on the lab clock."""
    return PowerOutcome(
        m.name,
        m.kind.value,
        ok,
        detail,
        fix,
        backend=kind.value,
        sent_wall=sent_wall,
        delivered_wall=delivered_wall,
        sent_lab=lab_at(clock, sent_wall) if sent_wall is not None else None,
        delivered_lab=lab_at(clock, delivered_wall) if delivered_wall is not None else None,
        seconds=(delivered_wall - sent_wall)
        if sent_wall is not None and delivered_wall is not None
        else None,
    )


def in_pool(fn: Callable[[T], None], items: Sequence[T], workers: int, name: str = "power") -> None:
    """``fn(item)`` for every item, at most ``workers`` at once; returns when all are done."""
    if not items:
        return
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(items))), thread_name_prefix=name) as pool:
        for f in [pool.submit(fn, i) for i in items]:
            f.result()


def together(fn: Callable[[T], None], items: Sequence[T], name: str = "fire") -> None:
    """``fn(item)`` for every item on its own thread, all released at once by a barrier.

    One thread per item so that nothing queues at the burst (a pool would send the second wave
    one round trip later); the work before the barrier has been done by the caller (arming).
    """
    if not items:
        return
    barrier = threading.Barrier(len(items))

    def run(item: T) -> None:
        try:
            barrier.wait(GATE_WAIT_S)
        except threading.BrokenBarrierError:
            pass
        fn(item)

    threads = [threading.Thread(target=run, args=(i,), name=f"{name}-{n}") for n, i in enumerate(items)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

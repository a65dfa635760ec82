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
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar, Protocol, TypeVar

from labctl.clock import LabClock
from labctl.drivers.power_verbs import PowerVerb
from labctl.errors import EndpointError
from labctl.inventory.model import Machine, PowerKind
from labctl.lab.context import LabContext
from labctl.lab.power.model import MachineState, PowerOutcome, State, lab_at

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


def sleep_until(wall_s: float) -> None:
    """Return at ``wall_s`` (``time.time()``), within a fraction of a millisecond: sleep most of
    the way, then spin the last stretch (a sleep alone overshoots by the scheduler's tick)."""
    while True:
        left = wall_s - time.time()
        if left <= 0:
            return
        if left > SPIN_S:
            time.sleep(left - SPIN_S)


SPIN_S = 0.0005  # the last this-many seconds before a timed fire are spun (a sleep overshoots by the tick)


class TimedGate(Gate):
    """A gate that opens at a wall-clock instant: every backend has armed *and* ``fire_at_wall``
    has come (a site agent's half of a timed fan-out: every agent opens at the same instant).

    ``armed_wall``: when the last backend had armed; ``fired_wall``: when the gate opened.
    """

    def __init__(self, parties: int, fire_at_wall: float):
        super().__init__(parties)
        self.fire_at_wall = fire_at_wall
        self.armed_wall: float | None = None
        self.fired_wall: float | None = None

    def pass_(self, backend: str) -> None:
        super().pass_(backend)
        armed = time.time()
        sleep_until(self.fire_at_wall)
        fired = time.time()
        with self._lock:
            self.armed_wall = max(self.armed_wall or armed, armed)
            self.fired_wall = min(self.fired_wall or fired, fired)


class PowerBackend(Protocol):
    kind: ClassVar[PowerKind]

    def __init__(self, ctx: LabContext) -> None: ...

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


def arm_then_fire(
    clock: LabClock,
    kind: PowerKind,
    machines: Sequence[Machine],
    gate: Gate,
    report: Report,
    *,
    arm: Callable[[Machine], T | None],
    fire: Callable[[Machine, T], str],
    workers: int,
) -> None:
    """The burst of a backend that speaks to each machine's own endpoint (a BMC).

    ``arm(m)`` opens what ``m`` needs and returns it, or None when it has reported ``m`` itself
    (e.g. already off); ``fire(m, armed)`` sends the request and returns one line saying what the
    endpoint did. Either raises :class:`EndpointError` for a machine that fails: it is reported
    with the reason and fix. Delivered = the endpoint's answer to the fired request.
    """
    armed: list[tuple[Machine, T]] = []
    lock = threading.Lock()

    def do_arm(m: Machine) -> None:
        try:
            handle = arm(m)
        except EndpointError as exc:
            report(outcome(clock, kind, m, False, exc.reason, exc.fix))
            return
        if handle is not None:
            with lock:
                armed.append((m, handle))

    try:
        in_pool(do_arm, machines, workers, f"{kind.value}-arm")
    except BaseException:
        gate.leave(kind.value)  # arming crashed: do not hold the other backends
        raise
    gate.pass_(kind.value)

    def do_fire(item: tuple[Machine, T]) -> None:
        m, handle = item
        sent = time.time()
        try:
            detail = fire(m, handle)
        except EndpointError as exc:
            report(outcome(clock, kind, m, False, exc.reason, exc.fix, sent_wall=sent))
            return
        report(outcome(clock, kind, m, True, detail, sent_wall=sent, delivered_wall=time.time()))

    together(do_fire, armed, kind.value)


def read_states(
    machines: Sequence[Machine], source: str, read: Callable[[Machine], tuple[State, str]], workers: int
) -> dict[str, MachineState]:
    """Each machine's state from ``read(m) -> (state, detail)``, ``workers`` at once; a machine
    whose endpoint fails is unknown, with the error as its detail."""
    out: dict[str, MachineState] = {}

    def one(m: Machine) -> None:
        try:
            st, detail = read(m)
        except EndpointError as exc:
            st, detail = State.UNKNOWN, str(exc)
        out[m.name] = MachineState(m.name, m.kind.value, st, detail, source)

    in_pool(one, machines, workers, f"{source}-state")
    return out

"""Which injected faults are active, asked by the simulated endpoints.

Faults come from the inventory (`lab.faults`) and from `labctl sim up --fault KIND:TARGET`.
"""

from __future__ import annotations

import random
import threading

from labctl.clock import LabClock
from labctl.inventory.faults import FaultKind, FaultSpec
from labctl.inventory.ranges import expand_names


class FaultBook:
    def __init__(self, faults: tuple[FaultSpec, ...] | list[FaultSpec], clock: LabClock, seed: int = 0):
        self._clock = clock
        self._start = clock.now()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._faults: list[tuple[FaultSpec, frozenset[str]]] = []
        for f in faults:
            self.add(f)

    def add(self, fault: FaultSpec) -> None:
        names = frozenset(n for t in fault.targets for n in expand_names(t))
        with self._lock:
            self._faults.append((fault, names))

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def spec(self, kind: FaultKind, target: str) -> FaultSpec | None:
        """The fault of ``kind`` that applies to ``target`` now, if any (honours after_s and probability)."""
        elapsed = self._clock.now() - self._start
        with self._lock:
            for f, names in self._faults:
                if f.kind is kind and target in names and elapsed >= f.after_s:
                    if f.probability >= 1.0 or self._rng.random() < f.probability:
                        return f
        return None

    def active(self, kind: FaultKind, target: str) -> bool:
        return self.spec(kind, target) is not None


def parse_fault_option(text: str) -> FaultSpec:
    """``KIND:TARGET[,TARGET...]`` as given to `labctl sim up --fault`."""
    kind, sep, targets = text.partition(":")
    if not sep or not targets:
        raise ValueError(f"--fault {text!r}: write KIND:TARGET, e.g. client_never_wakes:optiplex-007")
    try:
        fk = FaultKind(kind)
    except ValueError:
        raise ValueError(
            f"--fault {text!r}: unknown fault kind {kind!r} (one of: {', '.join(k.value for k in FaultKind)})"
        ) from None
    return FaultSpec(kind=fk, targets=tuple(t.strip() for t in targets.split(",") if t.strip()))

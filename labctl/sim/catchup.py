"""Counters at past lab times: how a starved simulated endpoint still emits every sample.

The lab twin answers only "now" (:class:`~labctl.sim.twin.interface.LabTwin` moves its model to
the clock's present on every query; it keeps no history). A simulated endpoint that samples on a
schedule (typeperf rows, Unity real-time queries, the BMC's power window) can be starved: its
thread or the event loop does not run for a while, and when it runs again several sample times
have passed. Instead of skipping them, it emits each one at its own lab time, with the raw
counters *interpolated* between the two twin readings that bound that time.

For cumulative counters (busy core-seconds, bytes, I/Os, the queue-length integral) this is exact
when the counter grew at a constant rate between the two readings, and otherwise gives each missed
interval the average rate of the whole gap: the total over the gap is always right, the shape
inside it is flat. Instantaneous values (available memory, watts) are interpolated linearly too.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any, TypeVar

T = TypeVar("T")


def boundaries(start_s: float, interval_s: float, after_s: float, until_s: float) -> Iterator[float]:
    """Sample times ``start_s + k * interval_s`` in ``(after_s, until_s]``, oldest first."""
    k = math.floor((after_s - start_s) / interval_s + 1e-9) + 1
    while (t := start_s + k * interval_s) <= until_s + 1e-9:
        if t > after_s + 1e-9:
            yield t
        k += 1


def fraction(t_older: float, t_newer: float, at: float) -> float:
    """Where ``at`` lies between two reading times, clipped to [0, 1] (1 when they coincide)."""
    span = t_newer - t_older
    if span <= 0:
        return 1.0
    return min(1.0, max(0.0, (at - t_older) / span))


def interpolate(older: T, newer: T, f: float) -> T:
    """``older + f * (newer - older)``, field by field, for frozen dataclasses of raw counters.

    Fields declared ``float`` are interpolated; the others (core counts, names, flags) are the
    newer reading's. Tuples of dataclasses (NICs, volumes, LUNs) are matched by their text fields
    (instance names); an instance the older reading lacks is taken from the newer one as it is.
    """
    if f >= 1.0 or older is newer:
        return newer
    return _lerp(older, newer, f)


def _lerp(a: Any, b: Any, f: float) -> Any:
    if isinstance(b, tuple) and isinstance(a, tuple):
        if not all(_is_instance(x) for x in (*a, *b)):
            return b
        by_key = {_key(x): x for x in a}
        return tuple(_lerp(by_key[_key(x)], x, f) if _key(x) in by_key else x for x in b)
    if not _is_instance(b) or type(a) is not type(b):
        return b
    changes = {}
    for fld in dataclasses.fields(b):
        va, vb = getattr(a, fld.name), getattr(b, fld.name)
        if fld.type in ("float", float) and _number(va) and _number(vb):
            changes[fld.name] = float(va) + f * (float(vb) - float(va))
        else:
            changes[fld.name] = _lerp(va, vb, f)
    return dataclasses.replace(b, **changes)


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _is_instance(x: Any) -> bool:
    return dataclasses.is_dataclass(x) and not isinstance(x, type)


def _key(x: Any) -> tuple[str, ...]:
    """What identifies an instance across readings: its text fields (``name``; ``lun`` and ``sp``)."""
    return tuple(v for f in dataclasses.fields(x) if isinstance(v := getattr(x, f.name), str))

"""Recorded series: one metric of one entity over time, how to select them, and lab timestamps as
text. Pure data, read by the criteria, the reports and the scenarios alike; the recorder fills them
and writes them to ``series.csv`` (see :mod:`labctl.recorder.series`).
"""

from __future__ import annotations

import fnmatch
import math
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from labctl.records.samples import Sample

SERIES_FILE = "series.csv"  # where a run folder keeps every sample (the evidence a series points to)


def iso_utc(ts: float) -> str:
    """Lab epoch seconds as ISO 8601 UTC with milliseconds, e.g. ``2007-11-05T10:00:01.250Z``.

    Rounded to the millisecond exactly as :func:`ts_s` rounds, so the two columns agree."""
    ms = round(ts * 1000)
    dt = datetime.fromtimestamp(ms // 1000, tz=UTC) + timedelta(milliseconds=ms % 1000)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ts_s(ts: float) -> str:
    """Lab epoch seconds with millisecond resolution, as written to ``source_ts_s``."""
    ms = round(ts * 1000)
    return f"{ms // 1000}.{ms % 1000:03d}"


@dataclass(frozen=True)
class Series:
    """One metric of one entity over time (in one cell): timestamps are the source's, lab seconds."""

    source: str
    entity: str
    metric: str
    unit: str
    cell: str = ""
    ts: tuple[float, ...] = ()
    values: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if len(self.ts) != len(self.values):
            raise ValueError("ts and values differ in length")

    def __len__(self) -> int:
        return len(self.ts)

    @property
    def key(self) -> str:
        return f"{self.source}/{self.entity}/{self.metric}"

    def window(self, start: float | None = None, end: float | None = None) -> Series:
        """The samples with ``start <= ts <= end`` (either bound may be open)."""
        lo = -math.inf if start is None else start
        hi = math.inf if end is None else end
        pairs = [(t, v) for t, v in zip(self.ts, self.values, strict=True) if lo <= t <= hi]
        return Series(
            self.source,
            self.entity,
            self.metric,
            self.unit,
            self.cell,
            tuple(t for t, _ in pairs),
            tuple(v for _, v in pairs),
        )

    def ref(self) -> dict[str, str]:
        """Where to find this series in the run folder (for evidence and reports)."""
        return {
            "file": SERIES_FILE,
            "cell": self.cell,
            "source": self.source,
            "entity": self.entity,
            "metric": self.metric,
        }


class SeriesProvider(Protocol):
    """Anything that hands out recorded series: a live :class:`Recorder` or a run folder on disk."""

    def series(
        self,
        *,
        cell: str | None = None,
        source: str | None = None,
        entity: str | None = None,
        metric: str | None = None,
    ) -> list[Series]: ...


def matches(value: str, pattern: str | None) -> bool:
    """``None`` matches anything; otherwise a shell-style pattern (``optiplex-*``, ``pvs-01/D:``)."""
    return pattern is None or value == pattern or fnmatch.fnmatchcase(value, pattern)


@dataclass
class _SeriesBuilder:
    unit: str
    ts: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)


class SeriesStore:
    """Samples grouped into series in memory, with the same selection as the files on disk."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str, str, str], _SeriesBuilder] = {}
        self._lock = threading.Lock()

    def add(self, cell: str, sample: Sample) -> None:
        key = (cell, sample.source, sample.entity, sample.metric)
        with self._lock:
            b = self._data.get(key)
            if b is None:
                b = self._data[key] = _SeriesBuilder(sample.unit)
            b.ts.append(float(sample.source_ts))
            b.values.append(float(sample.value))

    def series(
        self,
        *,
        cell: str | None = None,
        source: str | None = None,
        entity: str | None = None,
        metric: str | None = None,
    ) -> list[Series]:
        out = []
        with self._lock:
            items = [(k, b.unit, list(b.ts), list(b.values)) for k, b in self._data.items()]
        for (c, s, e, m), unit, ts, vals in items:
            if (
                (cell is None or c == cell)
                and matches(s, source)
                and matches(e, entity)
                and matches(m, metric)
            ):
                order = sorted(range(len(ts)), key=ts.__getitem__)
                out.append(
                    Series(s, e, m, unit, c, tuple(ts[i] for i in order), tuple(vals[i] for i in order))
                )
        out.sort(key=lambda x: (x.cell, x.source, x.entity, x.metric))
        return out

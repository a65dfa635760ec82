"""The columns ``labctl runs show`` gives a run's cells, per plan kind, from the cells' key figures
(:mod:`labctl.records.figures`: what the results store keeps of a cell).

A 2007 storm's cells show boot time, retries, clients never booted, copy time, the servers' CPU and
disk queue; a VDI storm's cells show the desktops logged on, logon time, the arrays' peak IOPS and
latency, the hosts' CPU and the response-time index read as VSImax is
(:func:`labctl.report.headline.headline_from_figures`). A run of both kinds gets the columns of
both; a cell shows "-" under the other kind's.

The CLI's wiring: ``columns(scenarios)`` for the header, ``row(columns, cell_figures)`` per cell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from labctl.records.figures import CellFigures, Figure
from labctl.report.headline import headline_from_figures
from labctl.report.run_view import ARRAY_SOURCES, VDI_HOST_SOURCES, VDI_SCENARIOS

Figures = Mapping[str, Figure]


def _num(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 100 or v == int(v) else f"{v:.1f}"


def _key(key: str) -> Callable[[Figures], str]:
    def get(figs: Figures) -> str:
        f = figs.get(key)
        return _num(f.value) if f is not None else "-"

    return get


def _most(
    kinds: Sequence[str], statistic: str, sources: Sequence[str] | None = None, whole: bool = False
) -> Callable[[Figures], str]:
    """The highest figure of these kinds and statistic (of these sources; ``whole``: entities that
    are not a part of another, an array and not its volumes)."""

    def get(figs: Figures) -> str:
        vals = [
            f.value
            for f in figs.values()
            if f.kind in kinds
            and f.statistic == statistic
            and (sources is None or f.source in sources)
            and not (whole and "/" in f.entity)
        ]
        return _num(max(vals)) if vals else "-"

    return get


def _logged_on(figs: Figures) -> str:
    logons = figs.get("login_s mean")
    rated = figs.get("desktops_rated count")
    if logons is None and rated is None:
        return "-"
    n = logons.n if logons is not None else 0
    return f"{n} of {int(rated.value)}" if rated is not None else str(n)


def _index(figs: Figures) -> str:
    head = headline_from_figures(figs)
    return head.short if head is not None else "-"


def _servers_cpu(figs: Figures) -> str:
    """A 2007 storm's CPU: its servers', never a VDI host's (a lab may have both)."""
    vals = [
        f.value
        for f in figs.values()
        if f.kind == "cpu_pct" and f.statistic == "peak" and f.source not in VDI_HOST_SOURCES
    ]
    return _num(max(vals)) if vals else "-"


@dataclass(frozen=True)
class Column:
    title: str
    value: Callable[[Figures], str]


STREAMING = (
    Column("boot mean s", _key("boot_time_s mean")),
    Column("boot max s", _key("boot_time_s max")),
    Column("retries mean", _key("retries mean")),
    Column("never booted", _key("never_booted count")),
    Column("copy mean s", _key("copy_s mean")),
    Column("CPU peak %", _servers_cpu),
    Column("queue peak", _most(("disk_queue_len",), "peak")),
)
VDI = (
    Column("logged on", _logged_on),
    Column("logon mean s", _key("login_s mean")),
    Column("logon max s", _key("login_s max")),
    Column("array IOPS peak", _most(("iops",), "peak", ARRAY_SOURCES, whole=True)),
    Column("latency peak ms", _most(("latency_ms",), "peak", ARRAY_SOURCES)),
    Column("host CPU peak %", _most(("cpu_pct", "cpu.usage.average"), "peak", VDI_HOST_SOURCES)),
    Column("response-time index", _index),
)


def columns(scenarios: Iterable[str]) -> list[Column]:
    """The figure columns for cells of these scenarios (2007 first, then VDI)."""
    kinds = set(scenarios)
    vdi = bool(kinds & set(VDI_SCENARIOS))
    streaming = bool(kinds - set(VDI_SCENARIOS)) or not kinds
    return (list(STREAMING) if streaming else []) + (list(VDI) if vdi else [])


def row(cols: Sequence[Column], cell: CellFigures) -> list[str]:
    """One cell's values under ``cols`` ("-" for a figure it does not have)."""
    return [c.value(cell.figures) for c in cols]


def clients(cell: CellFigures, stored_clients: int) -> str:
    """The "clients" column: a VDI cell's desktops (its arrays are no clients), else the store's count."""
    if cell.scenario in VDI_SCENARIOS:
        rated = cell.figures.get("desktops_rated count")
        logons = cell.figures.get("login_s mean")
        if rated is not None:
            return str(int(rated.value))
        return str(logons.n) if logons is not None else "-"
    return str(stored_clients)

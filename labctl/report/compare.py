"""Compare a run with a baseline run, cell by cell, with tolerances (nightly regression).

    result = compare_runs(Path("results/<tonight>"), Path("results/<baseline>"))
    print(result.text())
    sys.exit(1 if result.regressed else 0)

What is compared, per cell present in both runs (for every quantity here, higher is worse):

- from ``cells/<id>/summary.json``: boot time per client (mean and max), retries per client
  (mean and max), copy time (mean), clients that never booted;
- from ``series.csv``: peak and mean of the server counters (CPU, used memory, NIC utilisation,
  disk queue) per entity over the cell;
- from ``cells/<id>/verdicts.json``: the cell's verdict (pass < marginal < no_data < fail <
  lab_fault): a worse verdict is a regression.

A value regressed when ``run > baseline * (1 + rel) + abs`` (tolerances per quantity, defaults
below); improved when ``run < baseline * (1 - rel) - abs``. Cells only in the baseline are
*missing* (a regression: the run did less); cells only in the run are *new*.
Reads the two run folders only.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from labctl.recorder.cells import CELLS_DIR, VERDICTS_FILE, read_cell_summaries
from labctl.recorder.series import read_series
from labctl.records.series import Series

# quantity prefix -> (relative tolerance, absolute tolerance)
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "boot_time_s": (0.10, 2.0),
    "retries": (0.25, 2.0),
    "copy_s": (0.10, 2.0),
    "never_booted": (0.0, 0.0),
    "cpu_pct": (0.10, 5.0),
    "memory_used_mb": (0.10, 50.0),
    "nic_sent_util_pct": (0.10, 5.0),
    "disk_queue_len": (0.20, 1.0),
}
COUNTER_METRICS = ("cpu_pct", "memory_used_mb", "nic_sent_util_pct", "disk_queue_len")
_VERDICT_ORDER = {"pass": 0, "passed": 0, "marginal": 1, "no_data": 2, "fail": 3, "failed": 3, "lab_fault": 4}


@dataclass(frozen=True)
class Row:
    cell: str
    quantity: str  # e.g. "boot_time_s mean", "cpu_pct peak pvs-01", "verdict"
    baseline: float | str | None
    run: float | str | None
    status: str  # ok, regressed, improved, new, missing
    tolerance: str = ""

    @property
    def delta(self) -> float | None:
        if isinstance(self.baseline, int | float) and isinstance(self.run, int | float):
            return float(self.run) - float(self.baseline)
        return None


@dataclass
class Comparison:
    run: str
    baseline: str
    rows: list[Row] = field(default_factory=list)

    @property
    def regressed(self) -> list[Row]:
        return [r for r in self.rows if r.status in ("regressed", "missing")]

    @property
    def improved(self) -> list[Row]:
        return [r for r in self.rows if r.status == "improved"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "baseline": self.baseline,
            "regressed": len(self.regressed),
            "rows": [{**asdict(r), "delta": r.delta} for r in self.rows],
        }

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(self.as_dict(), indent=2) + "\n", encoding="utf-8")
        return path

    def text(self, all_rows: bool = False) -> str:
        shown = self.rows if all_rows else [r for r in self.rows if r.status != "ok"]
        head = f"{self.run} vs baseline {self.baseline}: {len(self.regressed)} regressed, {len(self.improved)} improved"
        if not shown:
            return head + ", everything within tolerance"
        w = max(len(r.cell) for r in shown)
        q = max(len(r.quantity) for r in shown)
        lines = [head]
        for r in shown:
            d = r.delta
            delta = f"{d:+.1f}" if d is not None else ""
            lines.append(
                f"  {r.status:<9} {r.cell:<{w}}  {r.quantity:<{q}}  {_fmt(r.baseline):>8} -> {_fmt(r.run):<8} "
                f"{delta:>7}  {r.tolerance}"
            )
        return "\n".join(lines)


def _fmt(v: float | str | None) -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.1f}" if abs(v) < 1000 else f"{v:.0f}"


def _tol(quantity: str, tolerances: Mapping[str, tuple[float, float]]) -> tuple[float, float]:
    key = quantity.split(" ")[0]
    return tolerances.get(key, (0.10, 0.0))


def _judge(base: float, value: float, rel: float, abs_: float) -> str:
    if value > base * (1 + rel) + abs_:
        return "regressed"
    if value < base * (1 - rel) - abs_:
        return "improved"
    return "ok"


def _counter_series(run: Path) -> dict[str, list[Series]]:
    """The server counters of a run by cell: ``series.csv`` read once, not once per cell and metric."""
    out: dict[str, list[Series]] = defaultdict(list)
    for s in read_series(run):
        if s.metric in COUNTER_METRICS:
            out[s.cell].append(s)
    return out


def _cell_quantities(summary: dict[str, Any], counters: Sequence[Series]) -> dict[str, float]:
    out: dict[str, float] = {}
    clients = summary.get("clients") if isinstance(summary.get("clients"), dict) else {}
    assert isinstance(clients, dict)
    matrix = summary.get("copy_path") is not None or summary.get("copiers") is not None
    for field_name, role in (
        ("boot_time_s", "rebooter" if matrix else None),
        ("retries", "rebooter" if matrix else None),
        ("copy_s", "copier"),
    ):
        vals = [
            float(c[field_name])
            for c in clients.values()
            if isinstance(c, dict)
            and (role is None or c.get("role") == role)
            and isinstance(c.get(field_name), int | float)
        ]
        if vals:
            out[f"{field_name} mean"] = statistics.fmean(vals)
            if field_name != "copy_s":
                out[f"{field_name} max"] = max(vals)
    expected = [
        c for c in clients.values() if isinstance(c, dict) and (not matrix or c.get("role") == "rebooter")
    ]
    if expected:
        out["never_booted"] = float(sum(1 for c in expected if "boot_time_s" not in c))
    for metric in COUNTER_METRICS:
        for s in counters:
            if s.metric == metric and len(s):
                out[f"{metric} peak {s.entity}"] = max(s.values)
                out[f"{metric} mean {s.entity}"] = statistics.fmean(s.values)
    return out


def _verdict(run: Path, cell: str, summary: dict[str, Any]) -> str | None:
    try:
        data = json.loads((run / CELLS_DIR / cell / VERDICTS_FILE).read_text(encoding="utf-8"))
        return str(data.get("outcome"))
    except (OSError, ValueError, AttributeError):
        out = summary.get("outcome")
        return str(out) if out else None


def compare_runs(
    run: Path,
    baseline: Path,
    *,
    tolerances: Mapping[str, tuple[float, float]] | None = None,
) -> Comparison:
    tol = {**DEFAULT_TOLERANCES, **(tolerances or {})}
    now = read_cell_summaries(run)
    base = read_cell_summaries(baseline)
    result = Comparison(run.name, baseline.name)
    counters_now, counters_base = _counter_series(run), _counter_series(baseline)
    for cell in sorted(set(now) | set(base)):
        if cell not in now:
            result.rows.append(Row(cell, "cell", "present", None, "missing"))
            continue
        if cell not in base:
            result.rows.append(Row(cell, "cell", None, "present", "new"))
            continue
        qb = _cell_quantities(base[cell], counters_base.get(cell, []))
        qr = _cell_quantities(now[cell], counters_now.get(cell, []))
        for q in sorted(set(qb) | set(qr)):
            if q not in qr:
                result.rows.append(Row(cell, q, qb[q], None, "missing"))
            elif q not in qb:
                result.rows.append(Row(cell, q, None, qr[q], "new"))
            else:
                rel, abs_ = _tol(q, tol)
                text = f"(±{rel:.0%} + {abs_:g})"
                result.rows.append(Row(cell, q, qb[q], qr[q], _judge(qb[q], qr[q], rel, abs_), text))
        vb, vr = _verdict(baseline, cell, base[cell]), _verdict(run, cell, now[cell])
        if vb is not None and vr is not None:
            ob, orun = _VERDICT_ORDER.get(vb, 0), _VERDICT_ORDER.get(vr, 0)
            status = "regressed" if orun > ob else ("improved" if orun < ob else "ok")
            result.rows.append(Row(cell, "verdict", vb, vr, status))
    return result

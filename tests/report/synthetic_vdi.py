"""Synthetic VDI storm run folders (plan ``vdi_storm``) written the way a run writes them: the
array's and the ESXi hosts' samples through the recorder, the cell judged by
:func:`labctl.recorder.judged_record` and handed to the run-folder and JUnit sinks
(:class:`tests.report.synthetic.Writer`).

One array (``ps-01``, read and write IOPS, latency), four hosts (CPU and memory), desktops with
their logon durations and a response-time index; ``saturate_at``: the index saturates at that many
sessions. ``steady_iops``: the steady-state IOPS per desktop the array sees (the criterion's pass
band is 6.5-8.5).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from labctl.criteria import Names, parse_criteria
from labctl.recorder import cell_id
from labctl.recorder.atomic import atomic_write_text
from labctl.records.run_record import (
    CellSummary,
    ClientOutcome,
    IndexPoint,
    Outcome,
    Phase,
    PhaseFigures,
    ResponseIndex,
    Window,
)
from labctl.records.samples import Sample
from tests.report.synthetic import Synth, Writer, _run

ARRAY = "ps-01"
HOSTS = ("esx-01", "esx-02", "esx-03", "esx-04")
STEP_S = 20.0
PHASES = (
    ("boot", 0.0, 300.0),
    ("login", 300.0, 900.0),
    ("steady", 900.0, 1500.0),
    ("logoff", 1500.0, 1560.0),
)

VDI_CRITERIA = parse_criteria(
    {
        "criteria": [
            {
                "name": "storage latency",
                "description": "Maintain less than 20 ms disk latency (4.4.1).",
                "select": {"source": "equallogic", "entity": ARRAY, "metric": "latency_ms"},
                "statistic": "mean",
                "unit": "ms",
                "pass": {"max": 20},
                "marginal": {"max": 30},
            },
            {
                "name": "steady IOPS per desktop (table 7)",
                "description": "Steady state 7-8 IOPS per desktop (2012 paper, table 7).",
                "select": {"result": "steady_iops_per_desktop", "role": "array"},
                "unit": "IO/s",
                "pass": {"min": 6.5, "max": 8.5},
                "marginal": {"min": 5.25, "max": 10},
                "required": False,
            },
            {
                "name": "host network",
                "select": {"source": "vcenter", "metric": "net_util_pct"},
                "statistic": "peak",
                "unit": "%",
                "pass": {"max": 90},
                "marginal": {"max": 100},
                "required": False,
            },
            {
                "name": "host CPU",
                "select": {"source": "vcenter", "metric": "cpu[._][pu]*"},
                "statistic": "peak",
                "unit": "%",
                "pass": {"max": 95},
                "marginal": {"max": 100},
            },
        ]
    }
)


LAUNCHER_PASSWORD = "secret:sim.launcher_password"  # a reference: the document never shows access
LAB: dict[str, Any] = {
    "name": "vdi-synthetic-100",
    "description": "100 task workers on 4 hosts and one array (synthetic).",
    "simulated": True,
    "vdi": {
        "hosts": {
            h: {"name": h, "cluster": "vdi", "model": "PowerEdge M610", "cpu_model": "Xeon X5687", "sockets": 2,
                "cores": 4, "ghz": 3.6, "ram_gb": 96, "nics": {"count": 4, "speed_gbps": 10}}
            for h in HOSTS
        },
        "arrays": {
            ARRAY: {"name": ARRAY, "kind": "equallogic", "model": "PS6010XVS", "controllers": ["cm0", "cm1"],
                    "controller_mode": "active_standby", "cache_gb": 2, "ports": {"count": 2, "speed_gbps": 10},
                    "tiers": [{"drive": "ssd", "count": 8, "capacity_gb": 100, "raid": 10},
                              {"drive": "15k", "count": 7, "capacity_gb": 450, "raid": 5, "spares": 1}]},
        },
        "datastores": {"VOL1": {"name": "VOL1", "array": ARRAY, "capacity_gb": 500}},
        "pools": {
            "task-pool": {"name": "task-pool", "desktops": [f"xd-{i:04d}" for i in range(100)], "os": "Windows 7",
                          "vcpus": 1, "ram_gb": 1, "workload": "task", "datastores": ["VOL1"],
                          "provisioning": {"kind": "pvs", "write_cache": "device_disk"}},
        },
        "launchers": [
            {"name": f"vsi-{i:02d}", "sessions": 25, "pool": "task-pool", "protocol": "ica", "kind": "ssh",
             "access": {"user": "vsi-launcher", "password": LAUNCHER_PASSWORD}}
            for i in range(1, 5)
        ],
    },
}  # fmt: skip


def _samples(t0: float, desktops: int, steady_iops: float, rng: random.Random) -> list[Sample]:
    out = []
    per = {"boot": 17.0, "login": 12.0, "steady": steady_iops, "logoff": 15.0}
    t = -60.0
    while t <= 1600.0:
        phase = next((p for p, a, b in PHASES if a <= t < b), None)
        iops = desktops * per[phase] if phase else 20.0
        ts = t0 + t
        out += [
            Sample(
                "equallogic", ARRAY, "read_iops", "IO/s", ts, 0.3 * iops * (1 + 0.05 * rng.uniform(-1, 1))
            ),
            Sample("equallogic", ARRAY, "write_iops", "IO/s", ts, 0.7 * iops),
            Sample("equallogic", ARRAY, "iops", "IO/s", ts, iops),
            Sample("equallogic", ARRAY, "latency_ms", "ms", ts, 2 + iops / 2000),
            Sample("equallogic", f"{ARRAY}/VOL1", "read_iops", "IO/s", ts, 0.3 * iops),
        ]
        for i, h in enumerate(HOSTS):
            load = 0.9 if phase in ("login", "steady") else 0.4 if phase else 0.05
            out += [
                Sample("vcenter", h, "cpu_pct", "%", ts, 5 + 70 * load + i),
                Sample("vcenter", h, "mem_usage_pct", "%", ts, 30 + 40 * load),
            ]
        t += STEP_S
    return out


def _index(desktops: int, saturate_at: int | None, t0: float) -> ResponseIndex:
    points = []
    for k in range(1, 21):
        sessions = desktops * k // 20
        value = 0.8 if saturate_at is None or sessions < saturate_at else 2.5
        points.append(IndexPoint(ts_s=t0 + 300 + 30 * k, sessions=sessions, value_s=value, ops=10))
    good = desktops if saturate_at is None else saturate_at
    return ResponseIndex(
        baseline_s=0.8,
        threshold_s=1.0,
        saturation_sessions=saturate_at,
        sessions_max=desktops,
        good=good,
        fair=desktops - good,
        poor=0,
        points=points,
    )


def _figures(desktops: int, steady_iops: float, t0: float) -> list[PhaseFigures]:
    out = []
    per = {"boot": 17.0, "login": 12.0, "steady": steady_iops, "logoff": 15.0}
    for name, a, b in PHASES:
        for array in ("", ARRAY):
            iops = desktops * per[name]
            out.append(
                PhaseFigures(
                    phase=name,
                    array=array,
                    desktops=desktops,
                    start_ts_s=t0 + a,
                    end_ts_s=t0 + b,
                    samples=int((b - a) / STEP_S),
                    iops_mean=iops,
                    iops_peak=iops * 1.05,
                    iops_per_desktop=per[name],
                    read_share_pct=30.0,
                    latency_mean_ms=2 + iops / 2000,
                    latency_peak_ms=2.2 + iops / 2000,
                )
            )
    return out


def make_vdi_run(
    root: Path,
    *,
    run_id: str = "20121105-100000-vdi_storm-0001",
    sizes: tuple[int, ...] = (50, 100),
    saturate_at: int | None = None,
    steady_iops: float = 7.5,
    seed: int = 2012,
) -> Path:
    run = _run(root, run_id, "vdi_storm", "", "2026-11-21T05:00:00.000Z")
    info = json.loads((run.path / "run.json").read_text())
    info["lab"] = LAB["name"]
    atomic_write_text(run.path / "run.json", json.dumps(info))
    run.info = run.info.model_copy(update={"lab": LAB["name"]})
    atomic_write_text(run.path / "inventory.resolved.yaml", json.dumps(LAB))  # JSON is YAML
    w = Writer(run, False, Synth(), seed)
    for n in sizes:
        t0 = w.next_t0() + 10_000 * n
        cid = cell_id("vdi_storm", "default", n)
        rng = random.Random(seed + n)
        clients = {
            f"xd-{i:04d}": ClientOutcome(
                name=f"xd-{i:04d}",
                role="desktop",
                outcome="logged_on",
                login_s=20 + rng.uniform(0, 15),
                operations=12,
                response_s=0.8,
                ux_level=0,
                ux_good=1,
            )
            for i in range(n)
        }
        clients[ARRAY] = ClientOutcome(
            name=ARRAY, role="array", outcome="measured", steady_iops_per_desktop=steady_iops
        )
        sat = saturate_at if saturate_at is not None and saturate_at <= n else None
        summary = CellSummary(
            cell=cid,
            plan="vdi_storm",
            scenario="vdi_storm",
            configuration=None,
            parameters={"desktops": n},
            outcome=Outcome.PASS,
            window=Window(start_ts_s=t0, end_ts_s=t0 + 1560),
            storm_start_ts_s=t0,
            entities={"pool": "task-pool", "array_1": ARRAY},
            clients=clients,
            phases=[Phase(name=p, start_ts_s=t0 + a, end_ts_s=t0 + b) for p, a, b in PHASES],
            phase_figures=_figures(n, steady_iops, t0),
            response_index=_index(n, sat, t0),
            extra={"desktops": n, "sessions": n, "steady_iops_per_desktop": steady_iops},
        )
        w.cell(summary, _samples(t0, n, steady_iops, rng), VDI_CRITERIA, Names({}), t0)
    w.finish()
    return run.path

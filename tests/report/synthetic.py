"""Synthetic run folders shaped like the 2007 paper's results, written the way a run writes them:
samples through the :class:`Recorder`, each cell judged by :func:`judged_record` /
:func:`broken_record` and handed to the run-folder, Allure and JUnit sinks.

Used by the report tests; ``python -m tests.report.synthetic OUT_DIR`` makes one to look at.
Nothing here is checked in as expected output: tests assert properties (lines per group size,
numbers from the summaries, gaps, marks), not bytes.

Every cell has a restore phase after its window in which the streaming server's CPU jumps to
:data:`RESTORE_CPU_PCT` (the clients shutting down): ``series.csv`` holds a higher CPU value than
any inside the window, so a report that takes its peaks from the series instead of the summary
shows the wrong number.
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labctl.clock import LabClock
from labctl.criteria import Names, parse_criteria
from labctl.recorder import Recorder, broken_record, cell_id, judged_record
from labctl.recorder.atomic import atomic_write_text, json_text
from labctl.recorder.cell_files import cell_outcomes
from labctl.recorder.redact import Redactor
from labctl.recorder.runfolder import RunFolder
from labctl.recorder.sinks import AllureSink, JUnitSink, RunFolderSink, SinkSet
from labctl.records.run_record import (
    CellSummary,
    ClientOutcome,
    Outcome,
    Phase,
    RunInfo,
    RunOutcome,
    Stamp,
    Window,
    run_outcome,
)
from labctl.records.samples import Event, Sample

T0 = 1_194_256_800.0  # 2007-11-05 10:00:00 UTC
STEP_S = 5.0  # typeperf's promised interval in these runs
WINDOW_S = 360.0
COPY_WINDOW_S = 700.0
RESTORE_S = 60.0
RESTORE_CPU_PCT = 99.0
COPY_PATHS = ("local_to_local", "local_to_share", "share_to_local", "share_to_share")
SPLITS = ((25, 25), (25, 50), (50, 25), (50, 50))

STORM_CRITERIA = parse_criteria(
    {
        "criteria": [
            {
                "name": "write-cache disk queue",
                "select": {"source": "typeperf", "entity": "{write_cache_disk}", "metric": "disk_queue_len"},
                "statistic": "peak",
                "unit": "requests",
                "pass": {"max": 8},
                "marginal": {"max": 40},
            },
            {
                "name": "CPU peak",
                "select": {"source": "typeperf", "entity": "{streaming_server}", "metric": "cpu_pct"},
                "statistic": "peak",
                "unit": "%",
                "pass": {"max": 95},
                "marginal": {"max": 100},
            },
            {
                "name": "boot time per client",
                "select": {"result": "boot_time_s", "role": "storm"},
                "unit": "s",
                "pass": {"max": 60},
                "marginal": {"max": 90},
            },
        ]
    }
)
MATRIX_CRITERIA = parse_criteria(
    {
        "criteria": [
            {
                "name": "rebooter boot time",
                "select": {"result": "boot_time_s", "role": "rebooter"},
                "unit": "s",
                "pass": {"max": 60},
                "marginal": {"max": 120},
            },
            {
                "name": "write-cache disk queue",
                "select": {"source": "typeperf", "entity": "{write_cache_disk}", "metric": "disk_queue_len"},
                "statistic": "mean",
                "unit": "requests",
                "pass": {"max": 8},
                "marginal": {"max": 40},
            },
        ]
    }
)


class SyntheticRecorder(Recorder):
    """A recorder fed with ready-made samples; the typeperf series keep the interval their source
    would promise, so the cell summaries carry gaps and coverage like a live run's."""

    def interval_of(self, source: str, entity: str, metric: str) -> float | None:
        return STEP_S if source == "typeperf" else None


def _shape(t: float, duration: float) -> float:
    """0 before the storm, up in 10 s, a plateau, then an exponential tail."""
    if t < 0:
        return 0.0
    if t < 10:
        return t / 10
    if t < duration:
        return 1.0
    return math.exp(-(t - duration) / 20)


def server_samples(
    load: float,
    t0: float,
    rng: random.Random,
    *,
    server: str = "pvs-01",
    disk: str | None = "pvs-01/D:",
    window_s: float = WINDOW_S,
    hole: tuple[float, float] | None = None,
    stop_at: float | None = None,
) -> list[Sample]:
    """A server's typeperf counters for a storm of ``load`` clients from 60 s before ``t0`` to the
    end of the restore after the window. ``hole``: no sample in that span (seconds after t0);
    ``stop_at``: none after it (a killed or interrupted cell)."""
    duration = 40 + 2.2 * load
    cpu_peak = min(92.0, 20 + 1.1 * load)
    nic_peak = min(88.0, 5 + 1.3 * load)
    dq_peak = 8 * (load / 50) ** 3 + 0.5
    out = []
    t = -60.0
    while t <= window_s + RESTORE_S:
        if (hole and hole[0] < t < hole[1]) or (stop_at is not None and t > stop_at):
            t += STEP_S
            continue
        f = _shape(t, duration)
        ts = t0 + t
        noise = rng.uniform(-1, 1)
        restoring = window_s + 10 <= t <= window_s + 20
        cpu = RESTORE_CPU_PCT if restoring else max(0.0, min(100.0, 3 + (cpu_peak - 3) * f + 2 * noise))
        out += [
            Sample("typeperf", server, "cpu_pct", "%", ts, cpu),
            Sample("typeperf", server, "memory_used_mb", "MB", ts, 620 + 3.2 * load * f + 5 * noise),
            Sample(
                "typeperf",
                f"{server}/NIC 1",
                "nic_sent_util_pct",
                "%",
                ts,
                max(0.0, 0.5 + nic_peak * f + noise),
            ),
            Sample(
                "typeperf",
                f"{server}/NIC 2",
                "nic_sent_util_pct",
                "%",
                ts,
                max(0.0, 0.4 + 0.9 * nic_peak * f),
            ),
            Sample("typeperf", f"{server}/C:", "disk_queue_len", "requests", ts, 0.1 + 0.8 * f),
        ]
        if disk is not None:
            out.append(
                Sample(
                    "typeperf",
                    disk,
                    "disk_queue_len",
                    "requests",
                    ts,
                    max(0.0, 0.2 + dq_peak * f * (1 + 0.2 * noise)),
                )
            )
        t += STEP_S
    return out


def disk_iops_samples(load: float, t0: float, disk: str) -> list[Sample]:
    """The write-cache volume's IOPS over a storm of ``load`` clients: a small group boots in a
    denser burst, so each client costs more IOPS than in a large one (load ** 0.8)."""
    duration = 40 + 2.2 * load
    return [
        Sample("typeperf", disk, "disk_iops", "IO/s", t0 + t, 2.0 + 12.0 * load**0.8 * _shape(t, duration))
        for t in range(-60, int(WINDOW_S + RESTORE_S) + 1, int(STEP_S))
    ]


# The lab the sizing reads (inventory.resolved.yaml): sim-2007's streaming server with its
# write-cache RAID set of 4 x 10K disks, and the clients
SIZING_LAB: dict[str, Any] = {
    "name": "sim-2007",
    "machines": {
        "pvs-01": {
            "name": "pvs-01",
            "kind": "server",
            "server_hardware": {
                "nics": {"count": 2, "speed_gbps": 1},
                "volumes": [
                    {"name": "cache", "drive": "D:", "purposes": ["write_cache"], "raid": 10, "disks": 4,
                     "disk_type": "sas", "rpm": 10000, "capacity_gb": 300},
                ],
            },
        },
        **{f"optiplex-{i:03d}": {"name": f"optiplex-{i:03d}", "kind": "client"} for i in range(1, 101)},
    },
}  # fmt: skip


@dataclass
class Synth:
    """How to break the synthetic run (all cells are whole and healthy by default)."""

    gaps: dict[str, tuple[float, float]] = field(default_factory=dict)  # cell -> hole (s after t0)
    interrupted: dict[str, float] = field(default_factory=dict)  # cell -> Ctrl-C at (s after t0)
    killed: str | None = None  # the run died in this cell (s after t0: KILLED_AT_S)
    vdi_hosts: tuple[str, ...] = ()  # idle ESXi hosts the lab also has (vCenter samples them)
    sizing: bool = False  # the write-cache volume's IOPS and the lab's inventory: what sizing reads


KILLED_AT_S = 120.0


def _configuration(cfg: str) -> tuple[list[str], str]:
    """(streaming servers, write-cache volume) of a configuration."""
    return (["pvs-01"], "pvs-01/D:") if cfg == "standalone" else (["pvs-01", "pvs-02"], "nas-01/E:")


def _run(root: Path, run_id: str, plan: str, configuration: str, started_wall: str) -> RunFolder:
    path = root / run_id
    path.mkdir(parents=True)
    start = T0 - 600
    info = RunInfo(
        run_id=run_id,
        plan=plan,
        lab="sim-2007",
        configuration=configuration,
        inventory_file="/labs/sim-2007.yaml",
        inventory_sha256="0" * 64,
        simulated=True,
        time_scale=1000.0,
        labctl_version="0.1.0",
        host="test",
        python="3.11",
        started=Stamp(wall_utc=started_wall, lab_time="2007-11-05T09:50:00.000Z", lab_ts=start),
    )
    atomic_write_text(path / "run.json", json_text(info.model_dump(mode="json")))
    return RunFolder(path, info, Redactor(), LabClock(scale=1000.0))


class Writer:
    def __init__(self, run: RunFolder, allure: bool, synth: Synth, seed: int):
        self.run = run
        self.rec = SyntheticRecorder(run, [], clock=LabClock(scale=1000.0))
        self.folder = RunFolderSink(run)
        sinks: list[Any] = [self.folder, JUnitSink(run)]
        if allure:
            from labctl.report.charts import evidence_png

            sinks.append(AllureSink(run, chart=evidence_png))
        self.sinks = SinkSet(run, sinks)
        self.synth = synth
        self.rng = random.Random(seed)
        self.k = 0
        self.killed = False

    def next_t0(self) -> float:
        t0 = T0 + 1000 * self.k
        self.k += 1
        return t0

    def cell(
        self,
        summary: CellSummary,
        samples: list[Sample],
        criteria: Any,
        names: Names,
        t0: float,
    ) -> None:
        cid = summary.cell
        cut = self.synth.interrupted.get(cid)
        if self.synth.killed == cid:
            self.folder.cell_started(
                CellSummary(
                    cell=cid,
                    plan=summary.plan,
                    scenario=summary.scenario,
                    configuration=summary.configuration,
                    parameters=summary.parameters,
                    outcome=Outcome.PASS,
                )
            )
            with self.rec.cell(cid):
                self.rec.record_event(Event(t0, "power.request", "group", {"action": "on", "machines": 1}))
                self.rec.record_samples([s for s in samples if s.source_ts <= t0 + KILLED_AT_S])
            self.killed = True
            return
        with self.rec.cell(cid):
            self.rec.record_event(Event(t0, "power.request", "group", {"action": "on", "machines": 1}))
            self.rec.record_samples([s for s in samples if cut is None or s.source_ts <= t0 + cut])
        if cut is not None:
            # Ctrl-C mid-window: half of the group (or of the rebooters) had booted
            role = "rebooter" if summary.scenario == "copy_reboot" else "storm"
            mine = [n for n, c in summary.clients.items() if c.role == role]
            late = set(mine[len(mine) // 2 :])
            booted = {
                n: c.model_copy(update={"outcome": "timeout", "boot_time_s": None, "retries": None})
                if n in late
                else c
                for n, c in summary.clients.items()
            }
            partial = summary.model_copy(
                update={"window": Window(start_ts_s=t0, end_ts_s=t0 + cut), "clients": booted}
            )
            record = broken_record(
                summary,
                self.rec,
                Outcome.INTERRUPTED,
                KeyboardInterrupt(),
                summary=partial,
                criteria=criteria,
                names=names,
            )
        else:
            record = judged_record(summary, self.rec, criteria, names)
        self.sinks.cell_finished(record, self.rec)

    def finish(self) -> None:
        self.rec.stop()
        if self.killed:
            return  # the process died: run.json stays `running`
        outcome = run_outcome(cell_outcomes(self.run))
        reason = "" if outcome is RunOutcome.PASSED else f"{outcome.value} (synthetic)"
        self.sinks.run_finished(self.run.finish(outcome, reason))


def _phases(t0: float, window_s: float) -> list[Phase]:
    return [
        Phase(name="prepare", start_ts_s=t0 - 60, end_ts_s=t0),
        Phase(name="window", start_ts_s=t0, end_ts_s=t0 + window_s),
        Phase(name="restore", start_ts_s=t0 + window_s, end_ts_s=t0 + window_s + RESTORE_S),
    ]


def _storm_cell(w: Writer, plan: str, cfg: str, n: int, never_boots: Sequence[str], last: bool) -> None:
    servers, wc = _configuration(cfg)
    speedup = 1.0 if cfg == "standalone" else 0.6  # HA: 8 spindles, two servers
    cid = cell_id(plan, cfg, n)
    t0 = w.next_t0()
    hole = w.synth.gaps.get(cid)
    samples = []
    for s in servers:
        disk = wc if wc.startswith(s + "/") else None
        samples += server_samples(n * speedup / len(servers), t0, w.rng, server=s, disk=disk, hole=hole)
    if not wc.startswith("pvs-"):  # the NAS holds the write caches
        samples += server_samples(n * speedup, t0, w.rng, server="nas-01", disk=wc, hole=hole)
    if w.synth.sizing:
        samples += disk_iops_samples(n * speedup, t0, wc)
    for h in w.synth.vdi_hosts:  # idle: the 2007 storm does not use them
        samples += [
            Sample("vcenter", h, metric, "%", t0 + t, 2.0)
            for t in range(-60, int(WINDOW_S), 20)
            for metric in ("cpu_pct", "mem_usage_pct")
        ]
    clients = {}
    for i in range(1, n + 1):
        name = f"optiplex-{i:03d}"
        if name in never_boots and last:
            clients[name] = ClientOutcome(name=name, outcome="timeout", detail="not ready by the deadline")
            continue
        bt = 27 + 0.15 * n * speedup + w.rng.uniform(0, 4)
        clients[name] = ClientOutcome(
            name=name,
            outcome="ready",
            boot_time_s=bt,
            retries=int(n * speedup / 20 + w.rng.uniform(0, 2)),
            time_to_ready_s=bt + 9,
        )
    summary = CellSummary(
        cell=cid,
        plan=plan,
        scenario="boot_storm",
        configuration=cfg,
        parameters={"group_size": n},
        outcome=Outcome.PASS,
        window=Window(start_ts_s=t0, end_ts_s=t0 + WINDOW_S),
        storm_start_ts_s=t0,
        entities={"streaming_server": servers[0], "write_cache_disk": wc},
        clients=clients,
        phases=_phases(t0, WINDOW_S),
    )
    names = Names({"streaming_server": servers[0], "write_cache_disk": wc})
    w.cell(summary, samples, STORM_CRITERIA, names, t0)


def _matrix_cell(w: Writer, plan: str, cfg: str, path: str, copiers: int, rebooters: int) -> None:
    servers, wc = _configuration(cfg)
    cid = cell_id(plan, cfg, copiers, rebooters, path)
    t0 = w.next_t0()
    writes = path.endswith("to_local")  # copies onto the vDisk land in the write cache
    reads = path.startswith("local")
    load = rebooters + (0.5 if writes else 0.1) * copiers + (0.2 if reads else 0.0) * copiers
    samples = server_samples(
        load,
        t0,
        w.rng,
        server=servers[0],
        disk=wc if cfg == "standalone" else None,
        window_s=COPY_WINDOW_S,
        hole=w.synth.gaps.get(cid),
    )
    if cfg != "standalone":
        samples += server_samples(load, t0, w.rng, server="nas-01", disk=wc, window_s=COPY_WINDOW_S)
    clients = {}
    for i in range(copiers):
        name = f"optiplex-{i + 1:03d}"
        clients[name] = ClientOutcome(
            name=name,
            role="copier",
            outcome="copied",
            copy_s=60 + 4 * load + w.rng.uniform(0, 40),
            retries=0 if path == "share_to_share" else int(w.rng.uniform(0, 3)),
        )
    for i in range(rebooters):
        name = f"optiplex-{copiers + i + 1:03d}"
        bt = 27 + 0.2 * load + w.rng.uniform(0, 4)
        clients[name] = ClientOutcome(
            name=name,
            role="rebooter",
            outcome="ready",
            boot_time_s=bt,
            retries=int(load / 15 + w.rng.uniform(0, 2)),
        )
    summary = CellSummary(
        cell=cid,
        plan=plan,
        scenario="copy_reboot",
        configuration=cfg,
        parameters={"copiers": copiers, "rebooters": rebooters, "copy_path": path},
        outcome=Outcome.PASS,
        window=Window(start_ts_s=t0, end_ts_s=t0 + COPY_WINDOW_S),
        storm_start_ts_s=t0,
        entities={"streaming_server": servers[0], "write_cache_disk": wc, "share_server": "nas-01"},
        clients=clients,
        phases=_phases(t0, COPY_WINDOW_S),
    )
    names = Names({"streaming_server": servers[0], "write_cache_disk": wc})
    w.cell(summary, samples, MATRIX_CRITERIA, names, t0)


def make_run(
    root: Path,
    *,
    run_id: str = "20071105-100000-boot_storm-0001",
    group_sizes: Sequence[int] = (1, 5, 10, 25, 50, 75, 100),
    configurations: Sequence[str] = ("standalone",),
    matrix: bool = False,
    matrix_configurations: Sequence[str] | None = None,
    never_boots: Sequence[str] = (),
    copy_paths: Sequence[str] = COPY_PATHS,
    splits: Sequence[tuple[int, int]] = SPLITS,
    synth: Synth | None = None,
    allure: bool = False,
    seed: int = 2007,
    started_wall: str = "2026-11-21T05:00:00.000Z",
) -> Path:
    """Write ``root/<run_id>/`` as a run would: run.json, series.csv, events.jsonl, junit.xml,
    cells/*/summary.json and verdicts.json (and allure-results/ with ``allure``). Cells run in
    order: every configuration's storm, then the matrix (``matrix_configurations``, default the
    first configuration)."""
    plan = "boot_storm" if group_sizes else "copy_reboot"
    run = _run(root, run_id, plan, configurations[0], started_wall)
    if synth is not None and synth.sizing:
        atomic_write_text(run.path / "inventory.resolved.yaml", json.dumps(SIZING_LAB))  # JSON is YAML
    w = Writer(run, allure, synth or Synth(), seed)
    for cfg in configurations:
        for n in group_sizes:
            if not w.killed:
                _storm_cell(w, "boot_storm", cfg, n, never_boots, n == max(group_sizes))
    if matrix:
        for cfg in matrix_configurations or configurations[:1]:
            for path in copy_paths:
                for copiers, rebooters in splits:
                    if not w.killed:
                        _matrix_cell(w, "copy_reboot", cfg, path, copiers, rebooters)
    w.finish()
    return run.path


def make_untyped_run(root: Path, *, run_id: str = "20071105-100000-boot_storm-old1", **kw: Any) -> Path:
    """A run folder as labctl wrote it before the typed record (format 1): the same samples, but a
    ``run.json`` without the fields the model needs and flat, untyped cell summaries. Readers that
    take only typed folders (the results store) skip it; ``labctl report`` upgrades what it can."""
    path = make_run(root, run_id=run_id, **kw)
    info = json.loads((path / "run.json").read_text())
    old = {k: info[k] for k in ("run_id", "plan", "lab", "configuration", "started", "outcome")}
    atomic_write_text(path / "run.json", json.dumps(old, indent=2))
    for folder in sorted((path / "cells").iterdir()):
        s = json.loads((folder / "summary.json").read_text())
        flat = {
            "cell": s["cell"],
            "plan": s["plan"],
            "scenario": s["scenario"],
            "configuration": s["configuration"],
            **s["parameters"],
            "storm_start_ts_s": s["storm_start_ts_s"],
            "window_s": WINDOW_S,
            "server": s["entities"].get("streaming_server"),
            "write_cache_disk": s["entities"].get("write_cache_disk"),
            "clients": {
                n: {
                    "boot_time_s": c["boot_time_s"],
                    "retries": c["retries"],
                    "ready": c["outcome"] == "ready",
                }
                for n, c in s["clients"].items()
            },
        }
        atomic_write_text(folder / "summary.json", json.dumps(flat, indent=2))
        (folder / "verdicts.json").unlink(missing_ok=True)
    return path


if __name__ == "__main__":
    out = make_run(
        Path(sys.argv[1]),
        configurations=("standalone", "ha"),
        matrix=True,
        matrix_configurations=("standalone", "ha"),
        never_boots=("optiplex-042",),
        synth=Synth(
            gaps={"boot_storm-standalone-100": (13.0, 160.0)},
            interrupted={"copy_reboot-ha-050-050-share_to_share": 300.0},
        ),
    )
    print(out)

"""A synthetic run folder shaped like the 2007 paper's results, written through labctl's own writers.

Used by the report tests; also ``python -m tests.report.synthetic OUT_DIR`` makes one to look at.
Nothing here is checked in as expected output: tests assert properties (lines per group size,
trends, no external references), not bytes.
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from labctl.clock import LabClock
from labctl.recorder import Recorder, cell_id, write_cell_summary
from labctl.records.samples import Event, Sample
from labctl.records.stats import summarize

T0 = 1_194_256_800.0  # 2007-11-05 10:00:00 UTC
STEP_S = 5.0
WINDOW_S = 360.0
COPY_PATHS = ("local-local", "local-remote", "remote-local", "remote-remote")


def _shape(t: float, duration: float) -> float:
    """0 before the storm, up in 10 s, a plateau, then an exponential tail."""
    if t < 0:
        return 0.0
    if t < 10:
        return t / 10
    if t < duration:
        return 1.0
    return math.exp(-(t - duration) / 20)


def storm_samples(
    n: int, t0: float, rng: random.Random, server: str = "pvs-01", disk: str = "D:"
) -> list[Sample]:
    duration = 40 + 2.2 * n
    cpu_peak = min(100.0, 20 + 1.1 * n)
    nic_peak = min(98.0, 5 + 1.3 * n)
    dq_peak = 8 * (n / 50) ** 3 + 0.5
    out = []
    t = -60.0
    while t <= WINDOW_S:
        f = _shape(t, duration)
        ts = t0 + t
        noise = rng.uniform(-1, 1)
        out += [
            Sample(
                "typeperf",
                server,
                "cpu_pct",
                "%",
                ts,
                max(0.0, min(100.0, 3 + (cpu_peak - 3) * f + 2 * noise)),
            ),
            Sample("typeperf", server, "memory_used_mb", "MB", ts, 620 + 3.2 * n * f + 5 * noise),
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
            Sample(
                "typeperf",
                f"{server}/{disk}",
                "disk_queue_len",
                "requests",
                ts,
                max(0.0, 0.2 + dq_peak * f * (1 + 0.2 * noise)),
            ),
            Sample("typeperf", f"{server}/C:", "disk_queue_len", "requests", ts, 0.1 + 0.8 * f),
        ]
        t += STEP_S
    return out


def make_run(
    root: Path,
    *,
    run_id: str = "20071105-100000-boot_storm-0001",
    group_sizes: Sequence[int] = (1, 5, 10, 25, 50, 75, 100),
    configurations: Sequence[str] = ("standalone",),
    matrix: bool = False,
    never_boots: Sequence[str] = (),
    copy_paths: Sequence[str] = COPY_PATHS,
    seed: int = 2007,
) -> Path:
    """Write ``root/<run_id>/`` with run.json, series.csv, events.jsonl and cells/*/summary.json."""
    rng = random.Random(seed)
    run = root / run_id
    run.mkdir(parents=True)
    plan = "copy_reboot" if matrix and not group_sizes else "boot_storm"
    info = {
        "run_id": run_id,
        "plan": plan,
        "lab": "sim-2007",
        "configuration": configurations[0],
        "started": {
            "wall_utc": "2026-11-21T05:00:00.000Z",
            "lab_time": "2007-11-05T10:00:00.000Z",
            "lab_ts": T0,
        },
        "outcome": "failed",
    }
    (run / "run.json").write_text(json.dumps(info, indent=2))
    rec = Recorder(run, [], clock=LabClock(scale=1000.0))
    k = 0
    with rec:
        for cfg in configurations:
            server, disk = ("pvs-01", "D:") if cfg == "standalone" else ("nas-01", "E:")
            speedup = 1.0 if cfg == "standalone" else 0.6  # HA: 8 spindles, two servers
            for n in group_sizes:
                cid = cell_id("boot_storm", cfg, n)
                t0 = T0 + 1000 * k
                k += 1
                clients = [f"optiplex-{i:03d}" for i in range(1, n + 1)]
                with rec.cell(cid):
                    rec.record_event(Event(t0, "power.action", "group", {"action": "wake", "machines": n}))
                    samples = storm_samples(round(n * speedup), t0, rng, server="pvs-01", disk="D:")
                    if cfg != "standalone":
                        samples = [
                            Sample(
                                s.source,
                                s.entity.replace("pvs-01/D:", f"{server}/{disk}"),
                                s.metric,
                                s.unit,
                                s.source_ts,
                                s.value,
                            )
                            for s in samples
                        ]
                    rec.record_samples(samples)
                    per_client: dict[str, dict[str, Any]] = {}
                    boots = []
                    for c in clients:
                        if c in never_boots and n == max(group_sizes):
                            per_client[c] = {"ready": False}
                            continue
                        bt = 27 + 0.15 * n * speedup + rng.uniform(0, 4)
                        rt = int(n * speedup / 20 + rng.uniform(0, 2))
                        per_client[c] = {
                            "boot_time_s": bt,
                            "retries": rt,
                            "ready": True,
                            "time_to_ready_s": bt + 9,
                        }
                        boots.append(Sample("pvs", c, "boot_time_s", "s", t0 + WINDOW_S, bt))
                        boots.append(Sample("pvs", c, "retries", "requests", t0 + WINDOW_S, float(rt)))
                    rec.record_samples(boots)
                metrics = {s.key: summarize(s) for s in rec.series(cell=cid, source="typeperf")}
                write_cell_summary(
                    run,
                    cid,
                    {
                        "plan": "boot_storm",
                        "scenario": "boot_storm",
                        "configuration": cfg,
                        "group_size": n,
                        "storm_start_ts_s": t0,
                        "window_s": WINDOW_S,
                        "server": "pvs-01",
                        "write_cache_disk": f"{server}/{disk}",
                        "clients": per_client,
                        "outcome": "fail" if n >= 75 and cfg == "standalone" else "pass",
                        "metrics": metrics,
                    },
                )
        if matrix:
            for path in copy_paths:
                for copiers, rebooters in ((25, 25), (25, 50), (50, 25), (50, 50)):
                    cid = cell_id("copy_reboot", "standalone", path, f"{copiers}x{rebooters}")
                    t0 = T0 + 1000 * k
                    k += 1
                    load = rebooters + (0.5 if "local" in path else 0.2) * copiers
                    with rec.cell(cid):
                        rec.record_samples(storm_samples(round(load), t0, rng))
                    per_client = {}
                    for i in range(copiers):
                        per_client[f"optiplex-{i + 1:03d}"] = {
                            "role": "copier",
                            "copy_s": 20 + 0.4 * load + rng.uniform(0, 5),
                        }
                    for i in range(rebooters):
                        per_client[f"optiplex-{copiers + i + 1:03d}"] = {
                            "role": "rebooter",
                            "boot_time_s": 27 + 0.2 * load + rng.uniform(0, 4),
                            "retries": int(load / 15 + rng.uniform(0, 2)),
                        }
                    write_cell_summary(
                        run,
                        cid,
                        {
                            "plan": "copy_reboot",
                            "scenario": "copy_reboot",
                            "configuration": "standalone",
                            "copiers": copiers,
                            "rebooters": rebooters,
                            "copy_path": path,
                            "storm_start_ts_s": t0,
                            "clients": per_client,
                            "outcome": "pass",
                        },
                    )
    return run


if __name__ == "__main__":
    out = make_run(
        Path(sys.argv[1]), matrix=True, configurations=("standalone", "ha"), never_boots=("optiplex-042",)
    )
    print(out)

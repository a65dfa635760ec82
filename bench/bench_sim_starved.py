"""A 100-client boot storm recorded while both cores are kept busy: are the series complete?

Starts the simulated 2007 lab (hardware/sim-2007.yaml placed on a loopback block of its own, so
it runs beside a `labctl sim up`), records every source of a plan at 5 lab s (typeperf on the
streaming server, BMC power, PVS status, the array, vCenter) while 100 clients boot and the
six-minute window runs, once on an otherwise idle machine and once with one busy process per core.
Prints, per run: the rows typeperf delivered against the rows the window holds, the longest gap
of each series, the rows the simulator had to catch up after being starved (from its log) and
the peaks, so a flattened peak (the twin itself lagging) would show next to a complete series.

    .venv/bin/python bench/bench_sim_starved.py [CLIENTS]
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WINDOW_S = 360.0
INTERVAL_S = 5.0
SETTLE_S = 20.0  # lab seconds recorded before the wake burst
DRAIN_WALL_S = 60.0  # how long to wait for the window's last rows after it ended


def run(clients: int, hogs: int, base: Path) -> dict[str, object]:
    from labctl.inventory import load_lab
    from labctl.inventory.credentials import SECRETS_FILE_VAR
    from labctl.lab.session import LabSession
    from labctl.recorder.recorder import Recorder
    from labctl.sim.simlab import SimulatedLab

    text = (ROOT / "hardware" / "sim-2007.yaml").read_text()
    text = text.replace("  seed: 2007\n", "  seed: 2007\n  loopback_block: auto\n")
    lab_file = base / "bench-storm.yaml"
    lab_file.write_text(text)
    state = base / f"state-{hogs}"
    busy = []
    with SimulatedLab(lab_file, state_dir=state) as sim:
        os.environ[SECRETS_FILE_VAR] = str(sim.secrets_file)
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(hogs)]
        try:
            with LabSession(load_lab(lab_file), sim.clock) as s:
                group = [m.name for m in s.lab.clients][:clients]
                rec = Recorder(
                    base / f"run-{hogs}",
                    s.sources.for_plan(interval_s=INTERVAL_S),  # type: ignore[arg-type]
                    clock=s.clock,
                    interval_s=INTERVAL_S,
                )
                rec.attach(s.timeline)
                with rec:
                    s.clock.sleep(SETTLE_S)
                    start = s.clock.now()
                    s.power.on(group)
                    s.clock.sleep(WINDOW_S)
                    end = s.clock.now()
                    # rows a starved simulator catches up come late, stamped with their own time:
                    # wait (bounded) for the row that closes the window before stopping
                    drain_until = time.monotonic() + DRAIN_WALL_S
                    while time.monotonic() < drain_until and not all(
                        any(x.ts and x.ts[-1] >= end - INTERVAL_S for x in rec.series(metric=metric))
                        for metric in ("cpu_pct", "iops")
                    ):
                        time.sleep(0.1)
                    late_wall_s = DRAIN_WALL_S - max(0.0, drain_until - time.monotonic())
                series = {x.key: x.window(start, end) for x in rec.series()}
                s.power.off(group)
        finally:
            for p in busy:
                p.kill()
                p.wait()
        log = (state / "simd.log").read_text(errors="replace")
    caught = [(int(n), float(span)) for n, span in re.findall(r"(\d+) rows caught up, (\d+) lab s", log)]

    def gap(key: str) -> float:
        ts = series[key].ts if key in series else ()
        edges = [start, *ts, end]
        return max(b - a for a, b in itertools.pairwise(edges))

    def peak(key: str) -> float:
        return max(series[key].values, default=float("nan")) if key in series else float("nan")

    cpu = "typeperf/pvs-01/cpu_pct"
    return {
        "rows": len(series[cpu]) if cpu in series else 0,
        "window_s": end - start,  # the window as the (possibly starved) orchestrator timed it
        "gap_cpu": gap(cpu),
        "gap_queue": gap("typeperf/pvs-01/D:/disk_queue_len"),
        "gap_power": gap("redfish/pvs-01/power_w"),
        "gap_array": gap("unity/unity-01/iops"),
        "caught_rows": sum(n for n, _ in caught),
        "caught_max_s": max((span for _, span in caught), default=0.0),
        "cpu_peak": peak(cpu),
        "queue_peak": peak("typeperf/pvs-01/D:/disk_queue_len"),
        "late_wall_s": late_wall_s,
    }


def main() -> int:
    clients = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    cores = os.cpu_count() or 2
    print(
        f"simulated lab under load: {clients}-client boot storm, {WINDOW_S:.0f} lab s window, "
        f"every source at {INTERVAL_S:g} lab s, {cores} cores here"
    )
    with tempfile.TemporaryDirectory(prefix="bench-starved-") as tmp:
        for hogs, label in ((0, "idle machine"), (cores, f"{cores} busy processes")):
            t0 = time.monotonic()
            r = run(clients, hogs, Path(tmp))
            print(
                f"  {label:>18}: typeperf {r['rows']} rows in {r['window_s']:.0f} lab s, longest gap cpu "
                f"{r['gap_cpu']:.1f} s / disk queue {r['gap_queue']:.1f} s / BMC power {r['gap_power']:.1f} s / "
                f"array {r['gap_array']:.1f} s; caught up {r['caught_rows']} rows (longest starved "
                f"span {r['caught_max_s']:.0f} lab s); peaks CPU {r['cpu_peak']:.0f} %, D: queue "
                f"{r['queue_peak']:.1f}; last row {r['late_wall_s']:.1f} s wall after the window  "
                f"[{time.monotonic() - t0:.0f} s wall]"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

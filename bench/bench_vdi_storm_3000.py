"""Wall time of a 3,000-desktop VDI storm on the simulated lab, as an engineer runs it.

`labctl run vdi_storm` on the 3,000-desktop Horizon example (hardware/vdi-horizon-unity680f-3000.yaml):
every desktop powered on through the simulated vCenter (one PowerOnMultiVM), users logging on one per
lab second through the launchers (SSH, labctl-launcher/1), an hour of steady state, logoff; arrays,
hosts and sessions recorded and judged. Prints the wall time (the target: under 15 minutes) beside the
lab time each phase took and what the cell measured, so a fast run that measured nothing shows.

    .venv/bin/python bench/bench_vdi_storm_3000.py [--lab FILE] [--steady-s 3600] [--results-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_WALL_S = 15 * 60.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lab", default=str(ROOT / "hardware" / "vdi-horizon-unity680f-3000.yaml"))
    ap.add_argument("--steady-s", type=float, default=3600.0)
    ap.add_argument("--results-dir", default=None, help="default: a temporary folder")
    args = ap.parse_args()
    results = Path(args.results_dir or tempfile.mkdtemp(prefix="bench-vdi-storm-"))
    argv = [
        str(ROOT / ".venv" / "bin" / "labctl"),
        "run",
        "vdi_storm",
        "--lab",
        args.lab,
        "--results-dir",
        str(results),
        "--no-report",
        "--param",
        "prebooted_pcts=100",
        "--param",
        "phases=[boot, login, steady, logoff]",
        "--param",
        "boot_mode=batched",
        "--param",
        "login_pace=rate",
        "--param",
        "login_interval_s=1",
        "--param",
        f"steady_s={args.steady_s:g}",
    ]
    print("$ " + " ".join(argv[1:]), flush=True)
    t0 = time.perf_counter()
    run = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=3 * 3600)
    wall_s = time.perf_counter() - t0
    folders = sorted(p for p in results.iterdir() if p.is_dir() and (p / "cells").is_dir())
    if not folders:
        sys.exit(
            f"no run folder in {results} (exit {run.returncode}):\n{run.stdout[-3000:]}{run.stderr[-2000:]}"
        )
    summaries = sorted((folders[-1] / "cells").glob("*/summary.json"))
    if not summaries:
        sys.exit(f"no cell summary in {folders[-1]}:\n{run.stdout[-3000:]}")
    s = json.loads(summaries[0].read_text())
    print(f"run folder: {folders[-1]}  (exit {run.returncode})")
    print(f"cell {s['cell']}: {s['outcome']}  {s.get('reason') or ''}"[:400])
    lab_s = 0.0
    print(f"{'phase':<10}{'lab s':>10}{'IOPS/desktop':>14}{'peak IOPS':>12}{'latency ms':>12}")
    figs = {f["phase"]: f for f in s.get("phase_figures", []) if not f.get("array")}
    for p in s["phases"]:
        span = (p["end_ts_s"] or p["start_ts_s"]) - p["start_ts_s"]
        lab_s += span
        f = figs.get(p["name"], {})
        per = f.get("iops_per_desktop")
        peak = f.get("iops_peak")
        lat = f.get("latency_mean_ms")
        print(
            f"{p['name']:<10}{span:>10.0f}"
            f"{(f'{per:.2f}' if per is not None else '-'):>14}"
            f"{(f'{peak:,.0f}' if peak is not None else '-'):>12}"
            f"{(f'{lat:.2f}' if lat is not None else '-'):>12}"
        )
    extra = s.get("extra", {})
    print(f"sessions {extra.get('sessions')}, failed {extra.get('failed_sessions')}")
    verdict = "PASS" if wall_s < TARGET_WALL_S else "FAIL"
    print(
        f"wall time {wall_s / 60:.1f} min for {lab_s / 60:.0f} lab min ({lab_s / wall_s:.0f}x): "
        f"target < {TARGET_WALL_S / 60:.0f} min: {verdict}"
    )


if __name__ == "__main__":
    main()

"""Speed of the VDI twin: boot storm, a 1-per-second login of 3,000 desktops, an hour of steady state.

Runs on the 3,000-desktop Horizon example (hardware/vdi-horizon-unity680f-3000.yaml) in
fast-forward on one core and prints lab seconds, wall seconds and the speed-up over real time per
phase (the target: 60x or faster), with the figures each phase produced so a slow run that computes
nonsense does not pass unnoticed.

    .venv/bin/python bench/bench_vdi_twin.py [--lab FILE] [--steady-s 3600]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from labctl.inventory import load_lab
from labctl.sim.twin.vdi.model import VdiModel
from labctl.sim.twin.vdi.phases import Phase
from labctl.sim.twin.vdi.scenarios import Sampler, login_storm

ROOT = Path(__file__).resolve().parents[1]
TARGET_X = 60.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lab", default=str(ROOT / "hardware" / "vdi-horizon-unity680f-3000.yaml"))
    ap.add_argument("--steady-s", type=float, default=3600.0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    lab = load_lab(args.lab)
    assert lab.vdi is not None, f"{args.lab} has no vdi: section"
    print(f"inventory: {len(lab.vms)} desktops validated in {time.perf_counter() - t0:.2f} s")
    rows = []

    # boot storm: every desktop powered on, paced as vCenter does
    m = VdiModel(lab.vdi, 0.0)
    s = Sampler(m)
    rate = lab.vdi.twin.vcenter_power_ops_per_s
    w0 = time.perf_counter()
    started = 0
    while not (started == m.n and (m.phase == Phase.IDLE).all()):
        due = min(m.n, int(m.t * rate) + 1)
        if due > started:
            m.power_on(np.arange(started, due))
            started = due
        m.advance_to(m.t + 2.0)
        s.maybe_sample()
    rows.append(("boot storm", m.t, time.perf_counter() - w0, f"peak {max(s.series.iops):,.0f} IOPS"))

    # login at one session per second, then the steady hour (the desktops stay up from the storm)
    r = login_storm(lab.vdi, prebooted_share=1.0, rate_per_s=1.0, steady_s=args.steady_s, model=m)
    logon_end = r.marks["last_logon"]
    wall_login = r.wall_s
    rows.append(
        (
            "login 1/s",
            logon_end,
            None,
            f"peak {r.peak_iops(0, logon_end + 60):,.0f} IOPS, mean logon {np.mean(r.login_s):.0f} s",
        )
    )
    steady = r.mean_iops(logon_end + 600, r.marks["end"]) / r.desktops
    rows.append(
        (
            f"steady {args.steady_s / 60:.0f} min",
            r.marks["end"] - logon_end,
            None,
            f"{steady:.1f} IOPS per desktop",
        )
    )
    total_lab = sum(x[1] for x in rows)
    total_wall = (rows[0][2] or 0.0) + wall_login
    print(f"{'phase':<14} {'lab s':>8} {'wall s':>8} {'x real time':>12}  figures")
    print(
        f"{rows[0][0]:<14} {rows[0][1]:>8.0f} {rows[0][2]:>8.1f} {rows[0][1] / rows[0][2]:>11.0f}x  {rows[0][3]}"
    )
    lab_ls = rows[1][1] + rows[2][1]
    print(
        f"{'login+steady':<14} {lab_ls:>8.0f} {wall_login:>8.1f} {lab_ls / wall_login:>11.0f}x  {rows[1][3]}; {rows[2][3]}"
    )
    x = total_lab / total_wall
    print(
        f"{'total':<14} {total_lab:>8.0f} {total_wall:>8.1f} {x:>11.0f}x  (target {TARGET_X:.0f}x: {'met' if x >= TARGET_X else 'NOT met'})"
    )
    print(f"model steps: {m.steps}, {1e3 * total_wall / max(m.steps, 1):.2f} ms each, {m.n} desktops")


if __name__ == "__main__":
    main()

"""vCenter at 1,000 VMs: labctl's vSphere driver side by side with govc, same vcsim, same run.

1. Inventory: every VM with name, power state, host, guest tools, IP and boot time.
   labctl: ContainerView + RetrievePropertiesEx paged (VCenterClient.inventory).
   govc:   `govc object.collect -type m / <the same properties>`.
2. Power-on of all 1,000 VMs, waiting until every task has finished.
   labctl: one Datacenter.PowerOnMultiVM_Task, then one property-collector filter over the
           per-VM tasks (VCenterClient.power_on).
   govc:   `govc vm.power -on -M <all VMs>` (PowerOnMultiVM as well; govc waits for the tasks).
Printed as ratios labctl/govc (below 1: labctl is faster). Each figure is the median of 3 runs;
the labctl figures include its login, govc's include process start and login.

    .venv/bin/python bench/bench_vcenter.py [VMS_PER_POOL]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labctl.drivers.vsphere import VM_PROPERTIES, VCenterClient  # noqa: E402
from tests.drivers.vcsim import GOVC, run_vcsim  # noqa: E402

PROPS = list(VM_PROPERTIES)  # govc collects exactly what the driver's inventory reads


def govc(sim, *args: str) -> subprocess.CompletedProcess[str]:
    env = sim.govc_env()
    env["GOVC_PERSIST_SESSION"] = "false"
    p = subprocess.run([str(GOVC), *args], env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"govc {args[0]} failed: {p.stderr[-400:]}")
    return p


def all_off(sim, names: list[str]) -> None:
    govc(sim, "vm.power", "-off", "-force", *names)


def main() -> None:
    per_pool = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    if not GOVC.exists():
        raise SystemExit(f"govc not found at {GOVC} (make install)")
    with run_vcsim("-vm", str(per_pool), "-host", "2", "-autostart=false", timeout_s=120) as sim:
        os.environ["LABCTL_TEST_VC_PASSWORD"] = sim.password
        vc = sim.vcenter()
        with VCenterClient(vc, timeout_s=120, page_size=500) as c:
            names = sorted(c.inventory())
        n = len(names)
        print(f"vCenter with {n} VMs (vcsim {sim.url}); medians of 3 runs")

        lab_inv, govc_inv = [], []
        for _ in range(3):
            t = time.monotonic()
            with VCenterClient(vc, timeout_s=120, page_size=500) as c:
                got = c.inventory(PROPS)
            lab_inv.append(time.monotonic() - t)
            assert len(got) == n
            t = time.monotonic()
            out = govc(sim, "object.collect", "-type", "m", "/", *PROPS)
            govc_inv.append(time.monotonic() - t)
            assert out.stdout.count("runtime.powerState") >= n
        li, gi = statistics.median(lab_inv), statistics.median(govc_inv)
        print(f"  inventory of {n} VMs:  labctl {li:6.2f} s   govc {gi:6.2f} s   labctl/govc {li / gi:5.2f}")

        lab_on, govc_on = [], []
        for _ in range(3):
            all_off(sim, names)
            t = time.monotonic()
            with VCenterClient(vc, timeout_s=120) as c:
                res = c.power_on(names, timeout_s=600)
            lab_on.append(time.monotonic() - t)
            bad = [k for k, o in res.outcomes.items() if not o.ok]
            assert not bad, bad[:3]
            all_off(sim, names)
            t = time.monotonic()
            govc(sim, "vm.power", "-on", "-M", *names)
            govc_on.append(time.monotonic() - t)
        lo, go = statistics.median(lab_on), statistics.median(govc_on)
        print(f"  power-on of {n} VMs:   labctl {lo:6.2f} s   govc {go:6.2f} s   labctl/govc {lo / go:5.2f}")
        with VCenterClient(vc, timeout_s=120) as c:
            on = sum(v.power_state == "poweredOn" for v in c.inventory(["runtime.powerState"]).values())
        print(f"  check: {on}/{n} VMs powered on after the last run")


if __name__ == "__main__":
    main()

"""The 3,000-desktop lab (hardware/vdi-horizon-unity680f-3000.yaml) on the simulated vCenter: labctl
next to govc on the same simulator.

1. `labctl sim up` of the lab (vCenter with 20 hosts, 8 datastores, 3,000 desktops; the twin; Unity).
2. Inventory of 3,000 VMs (name, power, host, Tools, IP, boot time).
   labctl: ContainerView + RetrievePropertiesEx paged;  govc: `object.collect -type m /` of the same.
3. Power-on of 3,000 VMs, paced as the twin's vcenter_power_ops_per_s says (3 per lab second: a
   1,000 lab-second storm, 16.7 s of wall time at 60x), and again on a copy of the lab with pacing
   off (what the API calls themselves cost).
   labctl: one PowerOnMultiVM, then one property-collector filter over the 3,000 tasks until all
   have finished;  govc: `vm.power -on -M` (returns when the batched task has started every VM;
   its figure "+ done" adds the wait until every VM reports poweredOn).
4. QueryPerf of 3,000 VMs x 4 counters (cpu.usage, mem.usage, cpu.usagemhz, mem.active), one 20 s
   sample each: labctl's chunked QueryPerf (wall and client CPU);  govc `metric.sample -n 1`.
   And a whole VCenterPerfSource round: 20 hosts, 8 datastores and the 3,000 VMs.
Medians of 3 (QueryPerf: 5). The lab runs on a free loopback block; the machine's load is printed
with the figures (the simulators and the client share its cores).

    .venv/bin/python bench/bench_vcenter_3000.py
"""

from __future__ import annotations

import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labctl.drivers import vsphere_perf as perf  # noqa: E402
from labctl.drivers.vsphere import VM_PROPERTIES, VCenterClient  # noqa: E402
from labctl.inventory import load_lab  # noqa: E402
from labctl.inventory.credentials import SECRETS_FILE_VAR, resolve_credential  # noqa: E402
from labctl.sim.certs import CA_FILE  # noqa: E402
from tests.labfiles import _free_block  # noqa: E402

LAB = ROOT / "hardware" / "vdi-horizon-unity680f-3000.yaml"
GOVC = ROOT / ".labctl" / "bin" / "govc"
LABCTL = ROOT / ".venv" / "bin" / "labctl"
PERF_COUNTERS = ("cpu.usage.average", "mem.usage.average", "cpu.usagemhz.average", "mem.active.average")


def lab_copy(folder: Path, block: int, unpaced: bool) -> Path:
    text = re.sub(r"127\.26\.", f"127.{block}.", LAB.read_text())
    if unpaced:  # vdi: is the file's last section
        text += "  twin:\n    vcenter_power_ops_per_s: 1000000\n"
    path = folder / ("vdi-3000-unpaced.yaml" if unpaced else "vdi-3000.yaml")
    path.write_text(text)
    return path


class Sim:
    """`labctl sim up` / `down` of one lab file, with its own state folder."""

    def __init__(self, lab_file: Path, folder: Path):
        self.lab_file = lab_file
        self.state = folder / f"state-{lab_file.stem}"
        self.env = dict(os.environ, LABCTL_STATE_DIR=str(self.state))

    def up(self) -> float:
        t = time.monotonic()
        p = subprocess.run(
            [str(LABCTL), "sim", "up", "--lab", str(self.lab_file)],
            env=self.env,
            capture_output=True,
            text=True,
        )
        took = time.monotonic() - t
        if p.returncode != 0:
            raise SystemExit(f"labctl sim up failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        os.environ[SECRETS_FILE_VAR] = str(self.state / "secrets.yaml")
        return took

    def down(self) -> None:
        subprocess.run([str(LABCTL), "sim", "down"], env=self.env, capture_output=True, timeout=60)

    def govc(self, *args: str) -> subprocess.CompletedProcess[str]:
        lab = load_lab(self.lab_file)
        vc = lab.vcenters["vc-01"]
        env = dict(
            os.environ,
            GOVC_URL=vc.url,
            GOVC_USERNAME=vc.user,
            GOVC_PASSWORD=resolve_credential(vc.password, "vc-01"),
            GOVC_TLS_CA_CERTS=str(self.state / CA_FILE),
            GOVC_PERSIST_SESSION="false",
        )
        p = subprocess.run([str(GOVC), *args], env=env, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise RuntimeError(f"govc {args[0]} failed: {p.stderr[-400:]}")
        return p


def median_of(n: int, fn: Callable[[], float]) -> float:
    return statistics.median(fn() for _ in range(n))


def client(sim: Sim) -> VCenterClient:
    return VCenterClient(load_lab(sim.lab_file).vcenters["vc-01"], timeout_s=600, page_size=1000).open()


def all_off(sim: Sim, names: list[str]) -> None:
    with client(sim) as c:
        c.power_off(names, timeout_s=600)
        deadline = time.monotonic() + 120
        while any(v.power_state != "poweredOff" for v in c.inventory(["runtime.powerState"]).values()):
            if time.monotonic() > deadline:
                raise SystemExit("VMs still on 120 s after the power-off")
            time.sleep(0.2)


def wait_all_on(sim: Sim, n: int) -> None:
    with client(sim) as c:
        while sum(v.power_state == "poweredOn" for v in c.inventory(["runtime.powerState"]).values()) < n:
            time.sleep(0.05)


def ratio(label: str, lab: float, govc: float, unit: str = "s") -> None:
    print(f"  {label:<34} labctl {lab:7.2f} {unit}   govc {govc:7.2f} {unit}   labctl/govc {lab / govc:5.2f}")


def power_on(sim: Sim, names: list[str], what: str) -> None:
    n = len(names)
    lab_on, lab_spread, govc_on, govc_done = [], [], [], []
    for _ in range(3):
        all_off(sim, names)
        t = time.monotonic()
        with client(sim) as c:
            res = c.power_on(names, timeout_s=900)
        lab_on.append(time.monotonic() - t)
        lab_spread.append(res.dispatch_spread_s)
        bad = [k for k, o in res.outcomes.items() if not o.ok]
        if bad:
            raise SystemExit(f"labctl power-on: {len(bad)} failed, e.g. {res.outcomes[bad[0]]}")
        all_off(sim, names)
        t = time.monotonic()
        sim.govc("vm.power", "-on", "-M", "/DC0/vm/*")
        govc_on.append(time.monotonic() - t)
        wait_all_on(sim, n)
        govc_done.append(time.monotonic() - t)
    lo = statistics.median(lab_on)
    ratio(f"power-on of {n} VMs, {what}", lo, statistics.median(govc_done))
    print(
        f"  {'':<34} (labctl: 1 call, {statistics.median(lab_spread):.2f} s to dispatch; govc -M returns"
        f" after {statistics.median(govc_on):.2f} s, before the VMs are on)"
    )


def main() -> None:
    if not GOVC.exists():
        raise SystemExit(f"govc not found at {GOVC} (make install)")
    folder = Path(tempfile.mkdtemp(prefix="bench-vcenter-3000-"))
    block = _free_block(random.Random())
    paced = Sim(lab_copy(folder, block, unpaced=False), folder)
    print(f"3,000-desktop lab {LAB.name} on 127.{block}.0.0/16; medians of 3 (QueryPerf: 5)")
    up_s = paced.up()
    try:
        ready = (paced.state / "vcenter" / "vc-01.ready.json").read_text()
        build = re.search(r'"build_s":([0-9.]+)', ready)
        print(
            f"  labctl sim up                      {up_s:7.2f} s   (vCenter inventory built in {float(build.group(1)) if build else 0:.2f} s)"
        )
        props = list(VM_PROPERTIES)
        with client(paced) as c:
            names = sorted(c.inventory())
        n = len(names)

        def lab_inv() -> float:
            t = time.monotonic()
            with client(paced) as c:
                assert len(c.inventory(props)) == n
            return time.monotonic() - t

        def govc_inv() -> float:
            t = time.monotonic()
            out = paced.govc("object.collect", "-type", "m", "/", *props)
            assert out.stdout.count("runtime.powerState") >= n
            return time.monotonic() - t

        ratio(f"inventory of {n} VMs", median_of(3, lab_inv), median_of(3, govc_inv))
        power_on(paced, names, "paced")

        with client(paced) as c:
            c.wait_ready(names, timeout_s=600)
            refs, _ = c.vm_refs(names)
            target = [perf.PerfTarget(refs, tuple((x, "") for x in PERF_COUNTERS))]
            perf.query(c, target)  # warm: counter table, connections
            walls, cpus = [], []
            for _ in range(5):
                t, p = time.monotonic(), time.process_time()
                values = perf.query(c, target, max_sample=1)
                walls.append(time.monotonic() - t)
                cpus.append(time.process_time() - p)
            assert len(values) == 4 * n, len(values)
            reader = perf.PerfReader(c, vms=names, vm_counters=PERF_COUNTERS)
            reader.read()
            t = time.monotonic()
            round_ = reader.read()
            round_s = time.monotonic() - t

        def govc_perf() -> float:
            t = time.monotonic()
            out = paced.govc("metric.sample", "-n", "1", "-instance", "-", "/DC0/vm/*", *PERF_COUNTERS)
            assert out.stdout.count("cpu.usage.average") >= n
            return time.monotonic() - t

        ratio(
            f"QueryPerf {n} VMs x {len(PERF_COUNTERS)} counters",
            statistics.median(walls),
            median_of(3, govc_perf),
        )
        print(
            f"  {'':<34} (labctl client CPU {statistics.median(cpus):.2f} s of it; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
        )
        print(f"  one source round: 20 hosts, 8 datastores, {n} VMs: {round_s:.2f} s, {len(round_)} readings")
    finally:
        paced.down()

    unpaced = Sim(lab_copy(folder, block, unpaced=True), folder)
    unpaced.up()
    try:
        power_on(unpaced, names, "unpaced")
    finally:
        unpaced.down()


if __name__ == "__main__":
    main()

"""Every example VDI lab starts (`labctl sim up`) and passes its vCenter preflight (`labctl check`):
the inventory's desktops, hosts and datastores, the counters plans read, served from the twin; and
every session launcher answers `labctl check`'s hello from the simulator."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from labctl.drivers.vsphere import HOST_COUNTERS, VM_COUNTERS, VCenterClient
from labctl.drivers.vsphere_perf import PerfReader
from labctl.inventory import load_lab
from labctl.inventory.credentials import SECRETS_FILE_VAR
from labctl.lab.preflight import Preflight
from labctl.lab.session import LabSession
from labctl.sim.simlab import SimulatedLab
from tests.labfiles import _free_block

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "hardware").glob("vdi-*.yaml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_lab_starts_and_passes_its_vcenter_checks(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    block = _free_block(random.Random())
    lab_file = tmp_path / example.name  # the example on a free loopback block (127.24-28 may be in use)
    lab_file.write_text(re.sub(r"127\.2[4-8]\.", f"127.{block}.", example.read_text()))
    with SimulatedLab(lab_file, state_dir=tmp_path / "state") as sim:
        monkeypatch.setenv(SECRETS_FILE_VAR, str(sim.secrets_file))
        lab = load_lab(lab_file)
        assert lab.vdi is not None
        with LabSession(lab, sim.clock) as s:
            checked = Preflight(s, kinds=("vcenter", "launcher")).run()
        results = {r.kind: r for r in checked if r.kind == "vcenter"}
        vc = results["vcenter"]
        assert vc.ok, f"{vc.reason} ({vc.fix})"
        # every launcher answers hello from the simulator (labctl check greets them)
        greeted = {r.endpoint: r for r in checked if r.kind == "launcher"}
        assert set(greeted) == {f"{ln.name} launcher" for ln in lab.vdi.launchers}
        for ln in lab.vdi.launchers:
            r = greeted[f"{ln.name} launcher"]
            assert r.ok, r.line
            assert r.version.endswith("labctl-launcher/1")
            assert r.capabilities == f"connector simulated; sessions 0/{ln.sessions}"
        n = len(lab.vdi.placement)
        k = len(set(HOST_COUNTERS) | set(VM_COUNTERS))
        assert f"{n}/{n} inventory VMs" in vc.capabilities and f"perf {k}/{k} counters" in vc.capabilities
        with VCenterClient(lab.vcenters["vc-01"], timeout_s=60) as c:
            assert set(c.hosts()) == set(lab.vdi.hosts)
            stores = c.datastores()
            # the desktops' datastores and those of an ESXi cluster (not a PVS server's own vDisk store)
            mounted = {p[2] for p in lab.vdi.placement.values()}
            mounted |= {n for n, d in lab.vdi.datastores.items() if d.cluster is not None}
            assert set(stores) == mounted
            for name in mounted:
                ds = lab.vdi.datastores[name]
                assert stores[name].capacity_bytes == round(ds.capacity_gb * 1024**3)
                assert 0 < stores[name].free_bytes <= stores[name].capacity_bytes
            readings = PerfReader(c).read()
        metrics = {(r.entity, r.metric) for r in readings}
        assert {(h, "cpu_pct") for h in lab.vdi.hosts} <= metrics
        assert {(d, "ds_write_iops") for d in mounted} <= metrics

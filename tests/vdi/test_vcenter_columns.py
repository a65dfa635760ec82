"""The twin's side of the simulated vCenter without processes: the twin read as columns, what a push
carries, and journal events applied to the twin."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from labctl.inventory.model import Lab
from labctl.sim.faults import FaultBook
from labctl.sim.twin import FastForwardClock, PhysicalTwin, build_twin
from labctl.sim.twin.interface import DesktopPhase, PowerAction, PowerState
from labctl.sim.vcenter.columns import DS_FIELDS, HOST_FIELDS, VM_FIELDS, TwinReader
from labctl.sim.vcenter.guest import GuestUpdater
from labctl.sim.vcenter.link import JournalEvent
from labctl.sim.vcenter.push import REALTIME_INTERVAL_S, StatePusher, boundary_of, perf_body, zero_body
from labctl.sim.vcenter.topology import topology, volume_uuid
from tests.vdi.labs import load, vdi_yaml


def make(lab: Lab) -> tuple[PhysicalTwin, FastForwardClock]:
    clock = FastForwardClock(scale=60.0)
    twin = build_twin(lab, clock, FaultBook(lab.faults, clock))
    assert isinstance(twin, PhysicalTwin)
    return twin, clock


class InterfaceOnly:
    """The twin through VdiTwin's methods only (no model arrays to read)."""

    def __init__(self, twin: PhysicalTwin):
        self._t = twin
        self.clock = twin.clock

    def __getattr__(self, name: str) -> Any:
        if name in ("vdi", "_lock", "_desktop_ips", "advance"):
            raise AttributeError(name)
        return getattr(self._t, name)


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return load(tmp_path, vdi_yaml(desktops=12, hosts=3, arrays=2))


def test_topology_places_desktops_as_the_twin_does(lab: Lab) -> None:
    twin, _ = make(lab)
    topo = topology(lab, lab.vcenters["vc-01"])
    placed = {d.name: (d.host, d.datastore) for d in twin.desktops()}
    assert {v.name: (v.host, v.datastore) for v in topo.vms} == placed
    v = topo.vms[0]
    assert (v.vcpus, v.memory_mb) == (1, 1024)  # the pool's
    h = topo.host_specs[0]
    assert (h.name, h.cores, h.mhz_per_core, h.ram_mb) == ("esx-vdi-01", 8, 3000, 96 * 1024)
    stores = {d.name: d for d in topo.datastores}
    assert set(stores) >= {"ds-1", "ds-2"}
    assert stores["ds-1"].capacity_bytes == 1000 * 1024**3
    assert stores["ds-1"].hosts == ("esx-vdi-01", "esx-vdi-02", "esx-vdi-03")
    assert stores["ds-1"].uuid == volume_uuid("vc-01", "ds-1") != volume_uuid("vc-01", "ds-2")


def test_model_columns_equal_the_interface_records(lab: Lab) -> None:
    """The fast path reads the model's arrays; it must say exactly what VdiTwin's records say."""
    twin, clock = make(lab)
    topo = topology(lab, lab.vcenters["vc-01"])
    names = [v.name for v in topo.vms]
    twin.power_many(names[:9], PowerAction.ON)
    clock.advance(240)
    twin.set_host_maintenance("esx-vdi-02", True)  # its desktops move: hosts must follow
    clock.advance(60)
    fast, slow = TwinReader(twin, topo), TwinReader(InterfaceOnly(twin), topo)  # type: ignore[arg-type]
    assert (fast.kind, slow.kind) == ("model", "vdi")
    g1, g2 = fast.guest(), slow.guest()
    assert g1.lab_time_s == g2.lab_time_s
    for f in ("power_on", "tools", "stunned", "host", "maintenance", "ds_capacity_bytes", "ds_free_bytes"):
        assert np.array_equal(getattr(g1, f), getattr(g2, f)), f
    assert g1.power_on.sum() == 9 and g1.tools.sum() > 0 and g1.maintenance is not None
    assert g1.maintenance.tolist() == [False, True, False]
    assert 1 not in g1.host[g1.power_on].tolist()  # nobody runs on the host in maintenance
    up = np.flatnonzero(g1.tools)
    assert [g1.ips[i] for i in up] == [g2.ips[i] for i in up]
    p1, p2 = fast.perf(), slow.perf()
    assert p1.lab_time_s == p2.lab_time_s
    for f in VM_FIELDS:
        assert np.allclose(p1.vm[f], p2.vm[f]), f
    for f in HOST_FIELDS:
        assert np.allclose(p1.host[f], p2.host[f]), f
    for f in DS_FIELDS:
        assert np.allclose(p1.host_datastore[f], p2.host_datastore[f]), f
    assert np.array_equal(p1.vm_on, p2.vm_on) and np.array_equal(p1.vm_host, p2.vm_host)
    assert p1.vm["cpu_used_mhz_s"].sum() > 0 and p1.host_datastore["writes"].sum() > 0


def test_pushes_carry_only_what_changed(lab: Lab) -> None:
    twin, clock = make(lab)
    topo = topology(lab, lab.vcenters["vc-01"])
    reader, pusher = TwinReader(twin, topo), StatePusher(topo)
    first = pusher.build(reader.guest(), 0, None, clock, True)  # vcsim starts with empty datastores
    assert first is not None and not first.body["vms"] and not first.body["hosts"]
    assert [d["name"] for d in first.body["datastores"]] == ["ds-1", "ds-2"]
    assert all(d["free_bytes"] < d["capacity_bytes"] for d in first.body["datastores"])  # the desktops' disks
    pusher.taken(first, ())
    assert pusher.build(reader.guest(), 0, None, clock, True) is None  # nothing changed since
    twin.power_many([topo.vms[0].name, topo.vms[1].name], PowerAction.ON)
    p = pusher.build(reader.guest(), 2, None, clock, True)
    assert p is not None and [v["name"] for v in p.body["vms"]] == [topo.vms[0].name, topo.vms[1].name]
    assert p.body["vms"][0] | {"host": ""} == {
        "name": topo.vms[0].name,
        "power": "on",
        "tools": False,
        "ip": "",
        "host": "",
        "stunned": False,
    }
    pusher.taken(p, ignored=(topo.vms[1].name,))  # vcsim ignored vm 1: its state predated a power op
    again = pusher.build(reader.guest(), 2, None, clock, True)
    assert again is not None and [v["name"] for v in again.body["vms"]] == [topo.vms[1].name]
    pusher.taken(again, ())
    clock.advance(300)  # both boot: Tools and an IP
    up = pusher.build(reader.guest(), 2, None, clock, True)
    assert up is not None and {v["name"] for v in up.body["vms"]} == {topo.vms[0].name, topo.vms[1].name}
    assert all(v["tools"] and v["ip"] for v in up.body["vms"])


def test_perf_snapshots_are_columns_at_20_s_boundaries(lab: Lab) -> None:
    twin, clock = make(lab)
    topo = topology(lab, lab.vcenters["vc-01"])
    reader, pusher = TwinReader(twin, topo), StatePusher(topo)
    t0 = clock.now()
    twin.power_many([v.name for v in topo.vms], PowerAction.ON)
    clock.advance(125)
    perf = reader.perf()
    assert pusher.due(perf.lab_time_s)
    p = pusher.build(reader.guest(), 0, perf, clock, True)
    assert (
        p is not None and p.boundary == boundary_of(t0 + 125) == t0 + 120 == p.body["perf"]["boundary_lab_s"]
    )
    body = p.body["perf"]
    cpu = np.frombuffer(base64.b64decode(body["vm"]["cpu_used_mhz_s"]), dtype="<f8")
    assert np.allclose(cpu, [x.cpu_used_mhz_s for x in twin.vm_perf([v.name for v in topo.vms])])
    assert len(base64.b64decode(body["host_datastore"]["writes"])) == 8 * 3 * len(topo.datastores)
    # stamped with the wall time at which the lab clock reads the boundary
    assert clock.anchor_wall_s + (body["stamp_wall_s"] - clock.anchor_wall_s) * clock.scale == pytest.approx(
        t0 + 120, abs=1e-3
    )
    pusher.taken(p, ())
    assert not pusher.due(t0 + 139) and pusher.due(t0 + 140)
    zero = zero_body(perf, t0, clock)
    # at the start's boundary (vCenter fills the boundaries up to the first snapshot), and never at the
    # first snapshot's own boundary
    assert zero["boundary_lab_s"] == t0 and zero["lab_time_s"] == t0
    late = zero_body(perf, t0 + 110, clock)
    assert late["boundary_lab_s"] == t0 + 120 - REALTIME_INTERVAL_S
    assert not np.frombuffer(base64.b64decode(zero["vm"]["cpu_used_mhz_s"]), dtype="<f8").any()
    assert perf_body(perf, t0 + 120, clock)["vm"]["vcpus"] == zero["vm"]["vcpus"]  # static columns kept


def test_journal_events_reach_the_twin_in_order_and_batched(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    twin, clock = make(lab)
    topo = topology(lab, lab.vcenters["vc-01"])
    u = GuestUpdater(lab.vcenters["vc-01"], topo, password="p", twin=twin, clock=clock, ca_file=None)
    calls: list[tuple[int, str]] = []
    real = twin.power_many
    monkeypatch.setattr(twin, "power_many", lambda vms, a: (calls.append((len(vms), a.value)), real(vms, a)))
    a, b, c = (v.name for v in topo.vms[:3])
    u._apply(
        (
            JournalEvent(1, "powerOn", a),
            JournalEvent(2, "powerOn", b),
            JournalEvent(3, "powerOn", c),
            JournalEvent(4, "powerOff", c),
            JournalEvent(5, "enterMaintenance", host="esx-vdi-03"),
        ),
        last=5,
    )
    assert calls == [(3, "on"), (1, "force_off")]  # three power-ons in one call, then the power-off
    assert twin.desktop_state(a).power is PowerState.ON and twin.desktop_state(c).power is PowerState.OFF
    assert twin.host_perf("esx-vdi-03").in_maintenance and u._applied == 5
    u._apply((JournalEvent(5, "powerOff", a),), last=5)  # already applied: not again
    assert twin.desktop_state(a).power is PowerState.ON
    clock.advance(120)
    u._apply((JournalEvent(6, "rebootGuest", a),), last=6)
    assert twin.desktop_state(a).phase is DesktopPhase.SHUTTING_DOWN  # a guest reboot, not a reset

"""The lab twin read as columns, in the simulated vCenter's order of VMs, hosts and datastores.

What labctl-vcsim needs every tick (guest state of every VM) and every 20 lab seconds (the
cumulative performance counters of every VM, host and host/datastore pair) for thousands of
desktops. Three ways to read it, chosen once:

- ``model``: the physical twin's VDI model, read as numpy arrays under the twin's lock (the
  interface's records cost ~60-80 ms per 3,000 desktops; this costs well under a millisecond).
  It reads the same arrays :mod:`labctl.sim.twin.vdi.views` turns into records, and
  tests/vdi/test_vcenter_columns.py checks the two agree value for value.
- ``vdi``: any other :class:`~labctl.sim.twin.interface.VdiTwin`, through its records.
- ``plain``: a :class:`~labctl.sim.twin.interface.LabTwin` without desktops (the placeholder
  twin): power and OS state per VM; its counters stay at zero (idle hosts and VMs).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from labctl.sim.twin.interface import LabTwin, PowerState
from labctl.sim.twin.vdi.model import VdiModel
from labctl.sim.twin.vdi.phases import Phase
from labctl.sim.twin.vdi.views import datastore_used_gb, generated_ip
from labctl.sim.vcenter.topology import Topology

# Cumulative counters pushed to labctl-vcsim, named as the interface's VmPerf / HostPerf /
# DatastorePerf fields (vcsimlab/perf.go lists the same names in the same order).
VM_FIELDS = (
    "cpu_used_mhz_s",
    "mem_active_kb_s",
    "mem_consumed_kb_s",
    "mem_balloon_kb_s",
    "net_bytes_rx",
    "net_bytes_tx",
    "disk_reads",
    "disk_writes",
    "disk_bytes_read",
    "disk_bytes_written",
    "disk_read_latency_sum_s",
    "disk_write_latency_sum_s",
    "vcpus",
    "mem_configured_kb",
)
HOST_FIELDS = (
    "cpu_used_mhz_s",
    "mem_consumed_kb_s",
    "mem_active_kb_s",
    "mem_balloon_kb_s",
    "net_bytes_rx",
    "net_bytes_tx",
    "cpu_capacity_mhz",
    "cpu_mhz_per_core",
    "mem_total_kb",
)
DS_FIELDS = ("reads", "writes", "bytes_read", "bytes_written", "read_latency_sum_s", "write_latency_sum_s")
GB = 1024.0**3
# the model's arrays behind each field (as labctl.sim.twin.vdi.views reads them)
_MODEL_VM = {
    "cpu_used_mhz_s": "vm_cpu",
    "mem_active_kb_s": "vm_mem_active",
    "mem_consumed_kb_s": "vm_mem_consumed",
    "mem_balloon_kb_s": "vm_balloon",
    "net_bytes_rx": "vm_rx",
    "net_bytes_tx": "vm_tx",
    "disk_reads": "vm_reads",
    "disk_writes": "vm_writes",
    "disk_bytes_read": "vm_rbytes",
    "disk_bytes_written": "vm_wbytes",
    "disk_read_latency_sum_s": "vm_rlat",
    "disk_write_latency_sum_s": "vm_wlat",
}
_MODEL_HOST = {
    "cpu_used_mhz_s": "host_cpu",
    "mem_consumed_kb_s": "host_mem_consumed",
    "mem_active_kb_s": "host_mem_active",
    "mem_balloon_kb_s": "host_balloon",
    "net_bytes_rx": "host_rx",
    "net_bytes_tx": "host_tx",
}
_MODEL_DS = {
    "reads": "reads",
    "writes": "writes",
    "bytes_read": "rbytes",
    "bytes_written": "wbytes",
    "read_latency_sum_s": "rlat",
    "write_latency_sum_s": "wlat",
}


@dataclass(frozen=True)
class GuestColumns:
    """Every VM's state as vCenter shows it, in topology order."""

    lab_time_s: float
    power_on: np.ndarray  # bool: runtime.powerState poweredOn
    tools: np.ndarray  # bool: VMware Tools running
    stunned: np.ndarray  # bool: ESXi stunned it (its datastore is full)
    host: np.ndarray  # int: index into the topology's hosts
    ips: tuple[str | None, ...]  # guest IP while Tools run
    maintenance: np.ndarray | None  # bool per topology host; None: the twin has no hosts
    ds_capacity_bytes: np.ndarray | None  # per topology datastore
    ds_free_bytes: np.ndarray | None


@dataclass(frozen=True)
class PerfColumns:
    """Cumulative counters at ``lab_time_s``, in topology order."""

    lab_time_s: float
    vm: dict[str, np.ndarray]  # VM_FIELDS
    vm_on: np.ndarray  # bool
    vm_host: np.ndarray  # int32 index into the topology's hosts
    host: dict[str, np.ndarray]  # HOST_FIELDS
    host_datastore: dict[str, np.ndarray]  # DS_FIELDS, [host * n_datastores + datastore]


class TwinReader:
    def __init__(self, twin: LabTwin, topo: Topology):
        self.twin = twin
        self.topo = topo
        self.vm_names = [v.name for v in topo.vms]
        self.host_names = [h.name for h in topo.host_specs] or list(topo.hosts)
        self.ds_names = [d.name for d in topo.datastores]
        self._host_pos = {n: i for i, n in enumerate(self.host_names)}
        model = getattr(twin, "vdi", None)
        self.start_lab_s: float | None = None  # when the twin's counters started from zero, if known
        if isinstance(model, VdiModel) and all(n in model.topo.index for n in self.vm_names):
            self.kind = "model"
            self._init_model(model)
            self.start_lab_s = float(model.t0)
        elif self._has_desktops():
            self.kind = "vdi"
        else:
            self.kind = "plain"
            self.start_lab_s = twin.clock.now()

    def _has_desktops(self) -> bool:
        desktops = getattr(self.twin, "desktops", None)
        if not callable(desktops):
            return False
        try:
            names = {d.name for d in desktops()}
        except KeyError:  # a physical twin of a lab without desktops
            return False
        return all(n in names for n in self.vm_names)

    def _lock(self) -> Any:
        lock = getattr(self.twin, "_lock", None)
        return lock if lock is not None else contextlib.nullcontext()

    # --- the VDI model's arrays ----------------------------------------------------------------
    def _init_model(self, m: VdiModel) -> None:
        t = m.topo
        self._m = m
        self._vm_idx = np.array([t.index[n] for n in self.vm_names], dtype=np.int64)
        model_hosts = [h.name for h in t.hosts]
        # model host index -> topology host index (-1: a host this vCenter does not have)
        self._host_to_topo = np.array([self._host_pos.get(n, -1) for n in model_hosts], dtype=np.int64)
        m_host = {n: i for i, n in enumerate(model_hosts)}
        self._topo_to_host = np.array([m_host.get(n, -1) for n in self.host_names], dtype=np.int64)
        m_ds = {d.name: j for j, d in enumerate(t.datastores)}
        self._topo_to_ds = np.array([m_ds.get(n, -1) for n in self.ds_names], dtype=np.int64)
        self._nd_model = len(t.datastores)
        ips = getattr(self.twin, "_desktop_ips", None) or [None] * len(t.names)
        self._ips = tuple(ips[i] or generated_ip(int(i)) for i in self._vm_idx)
        cap = np.array([d.capacity_gb * GB for d in t.datastores])
        self._ds_cap = self._pick(cap, self._topo_to_ds)
        self._ds_used = self._pick(datastore_used_gb(m) * GB, self._topo_to_ds)
        hosts = t.hosts
        self._host_static = {
            "cpu_capacity_mhz": self._pick(np.array([h.cpu_mhz for h in hosts]), self._topo_to_host),
            "cpu_mhz_per_core": self._pick(np.array([h.ghz * 1000.0 for h in hosts]), self._topo_to_host),
            "mem_total_kb": self._pick(
                np.array([h.ram_gb * 1024.0 * 1024.0 for h in hosts]), self._topo_to_host
            ),
        }

    @staticmethod
    def _pick(values: np.ndarray, index: np.ndarray, fill: float = 0.0) -> np.ndarray:
        out = np.full(index.shape, fill, dtype=float)
        ok = index >= 0
        out[ok] = values[index[ok]]
        return out

    def _model_guest(self) -> GuestColumns:
        m = self._m
        with self._lock():
            self.twin.advance()  # type: ignore[attr-defined]
            idx = self._vm_idx
            phase = m.phase[idx]
            power_on = phase != Phase.OFF
            tools = m.os_up()[idx]
            stunned = m.stunned[idx].copy()
            host = self._host_to_topo[m.topo.host_of[idx]]
            maint = np.zeros(len(self.host_names), dtype=bool)
            ok = self._topo_to_host >= 0
            maint[ok] = m.host_maint[self._topo_to_host[ok]]
            full = np.zeros(len(self.ds_names), dtype=bool)
            okd = self._topo_to_ds >= 0
            full[okd] = m.ds_full[self._topo_to_ds[okd]]
            t = float(m.t)
        free = np.where(full, 0.0, np.maximum(0.0, self._ds_cap - self._ds_used))
        return GuestColumns(t, power_on, tools, stunned, host, self._ips, maint, self._ds_cap, free)

    def _model_perf(self) -> PerfColumns:
        m = self._m
        nh, nd = len(self.host_names), len(self.ds_names)
        with self._lock():
            self.twin.advance()  # type: ignore[attr-defined]
            idx = self._vm_idx
            vm = {f: np.asarray(getattr(m, a), dtype=float)[idx].copy() for f, a in _MODEL_VM.items()}
            vm["vcpus"] = np.asarray(m.vcpus, dtype=float)[idx].copy()
            vm["mem_configured_kb"] = np.asarray(m.ram_mb, dtype=float)[idx] * 1024.0
            on = m.phase[idx] != Phase.OFF
            vm_host = self._host_to_topo[m.topo.host_of[idx]].astype(np.int32)
            host = {
                f: self._pick(np.asarray(getattr(m, a), dtype=float), self._topo_to_host)
                for f, a in _MODEL_HOST.items()
            }
            # (topology host, topology datastore) -> the model's h * nd + d
            hh = np.repeat(self._topo_to_host, nd)
            dd = np.tile(self._topo_to_ds, nh)
            flat = np.where((hh >= 0) & (dd >= 0), hh * self._nd_model + dd, -1)
            hd = {f: self._pick(np.asarray(m.hd[a], dtype=float), flat) for f, a in _MODEL_DS.items()}
            t = float(m.t)
        host.update(self._host_static)
        return PerfColumns(t, vm, on, vm_host, host, hd)

    # --- through the VdiTwin interface -------------------------------------------------------------
    def _vdi_guest(self) -> GuestColumns:
        tw: Any = self.twin
        states = {d.name: d for d in tw.desktops()}
        rows = [states[n] for n in self.vm_names]
        host = np.array([self._host_pos.get(d.host, -1) for d in rows], dtype=np.int64)
        maint = np.array([bool(tw.host_perf(h).in_maintenance) for h in self.host_names])
        ds = {d.datastore: d for d in tw.datastore_perf()}
        cap = np.array([ds[n].capacity_bytes if n in ds else 0.0 for n in self.ds_names])
        free = np.array([ds[n].free_bytes if n in ds else 0.0 for n in self.ds_names])
        return GuestColumns(
            tw.clock.now(),
            np.array([d.power == PowerState.ON for d in rows], dtype=bool),
            np.array([d.tools_running for d in rows], dtype=bool),
            np.array([d.stunned for d in rows], dtype=bool),
            host,
            tuple(d.ip for d in rows),
            maint,
            cap,
            free,
        )

    def _vdi_perf(self) -> PerfColumns:
        tw: Any = self.twin
        perfs = tw.vm_perf(self.vm_names)
        states = {d.name: d for d in tw.desktops()}
        vm = {f: np.array([float(getattr(p, f)) for p in perfs]) for f in VM_FIELDS}
        hosts = [tw.host_perf(h) for h in self.host_names]
        host = {f: np.array([float(getattr(h, f)) for h in hosts]) for f in HOST_FIELDS}
        nd = len(self.ds_names)
        hd = {f: np.zeros(len(self.host_names) * nd) for f in DS_FIELDS}
        for hi, h in enumerate(self.host_names):
            for d in tw.datastore_perf(h):
                if d.datastore in self.ds_names:
                    k = hi * nd + self.ds_names.index(d.datastore)
                    for f in DS_FIELDS:
                        hd[f][k] = float(getattr(d, f))
        return PerfColumns(
            max(p.lab_time_s for p in perfs) if perfs else tw.clock.now(),
            vm,
            np.array([states[n].power == PowerState.ON for n in self.vm_names], dtype=bool),
            np.array([self._host_pos.get(p.host, -1) for p in perfs], dtype=np.int32),
            host,
            hd,
        )

    # --- a twin without desktops ------------------------------------------------------------------
    def _plain_guest(self) -> GuestColumns:
        tw = self.twin
        power = np.array([tw.power_state(n) == PowerState.ON for n in self.vm_names], dtype=bool)
        tools = np.array([tw.is_os_up(n) for n in self.vm_names], dtype=bool)
        host = np.array([self._host_pos.get(v.host, -1) for v in self.topo.vms], dtype=np.int64)
        ips = tuple(v.guest_ip for v in self.topo.vms)
        return GuestColumns(
            tw.clock.now(), power, tools, np.zeros(len(power), dtype=bool), host, ips, None, None, None
        )

    def _plain_perf(self) -> PerfColumns:
        """A twin that models no desktops: every counter stays at zero (idle hosts, idle VMs)."""
        g = self._plain_guest()
        n, nh, nd = len(self.vm_names), len(self.host_names), len(self.ds_names)
        vm = {f: np.zeros(n) for f in VM_FIELDS}
        vm["vcpus"] = np.array([float(v.vcpus) for v in self.topo.vms])
        vm["mem_configured_kb"] = np.array([v.memory_mb * 1024.0 for v in self.topo.vms])
        host = {f: np.zeros(nh) for f in HOST_FIELDS}
        specs = {h.name: h for h in self.topo.host_specs}
        for i, name in enumerate(self.host_names):
            h = specs.get(name)
            if h is not None:
                host["cpu_capacity_mhz"][i] = h.cores * h.mhz_per_core
                host["cpu_mhz_per_core"][i] = h.mhz_per_core
                host["mem_total_kb"][i] = h.ram_mb * 1024.0
        hd = {f: np.zeros(nh * nd) for f in DS_FIELDS}
        return PerfColumns(g.lab_time_s, vm, g.power_on, g.host.astype(np.int32), host, hd)

    # --- public ---------------------------------------------------------------------------------------
    def guest(self) -> GuestColumns:
        if self.kind == "model":
            return self._model_guest()
        if self.kind == "vdi":
            return self._vdi_guest()
        return self._plain_guest()

    def perf(self) -> PerfColumns:
        if self.kind == "model":
            return self._model_perf()
        if self.kind == "vdi":
            return self._vdi_perf()
        return self._plain_perf()

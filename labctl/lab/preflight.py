"""Preflight: is every endpoint of the lab reachable, trusted, accepting our credentials, and able
to give what the plans need? One :class:`CheckResult` per endpoint, all checked concurrently.

Per endpoint kind:
- **BMC** (Redfish): TLS as the inventory says, session login, model and iDRAC firmware, and the
  reset types power actions use (On, and ForceOff or GracefulShutdown).
- **IPMI BMC**: RMCP+ login, Get Device ID (firmware revision), chassis power status.

Versions (iDRAC firmware, IPMI firmware revision, vCenter version and build) are named with
whether the conformance suite checked them (:mod:`labctl.drivers.versions`).
- **SSH** of each server: login and ``hostname``; on the servers the plans measure, ``typeperf -q``
  lists every counter the plans read; on streaming servers the device-status command answers.
- **Wake-on-LAN**, per network with clients: a broadcast socket to its address and port opens
  (no packet is sent: preflight wakes nothing); a relay host answers over SSH.
- **vCenter**: TLS, login, API version, every inventory VM exists, the perf counters resolve.
- **Storage array**: TLS, login, software version, the real-time metric paths exist, the
  inventory's LUNs exist.
- **Session launcher** (a VDI lab's ``vdi.launchers``): ``labctl-launcher/1``'s ``hello`` through
  its transport (SSH, or the site agent it is placed at) within a deadline: its labctl version and
  protocol, its connector, its live sessions and capacity (:mod:`labctl.lab.launchers.greet`).

Nothing here powers anything on or off.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

import wakeonlan

from labctl import __version__
from labctl.drivers import typeperf as tp
from labctl.drivers.ipmi import IpmiClient
from labctl.drivers.pvs import DEVICE_INFO_COMMAND, PvsError, parse_device_info
from labctl.drivers.redfish import RedfishClient
from labctl.drivers.ssh import SshTarget
from labctl.drivers.storage import open_storage
from labctl.drivers.versions import check_version
from labctl.drivers.vsphere import HOST_COUNTERS, VM_COUNTERS, VCenterClient
from labctl.errors import EndpointError, MissingCredentialError
from labctl.inventory.model import Lab, Machine, Tls, TlsMode
from labctl.inventory.vdi import Launcher
from labctl.lab.context import HasContext, LabContext, context_of
from labctl.lab.launchers import greet
from labctl.lab.launchers.agent import LauncherRelay
from labctl.lab.launchers.registry import backend_for

KINDS = ("redfish", "ipmi", "ssh", "wol", "vcenter", "storage", "launcher")


@dataclass
class CheckResult:
    endpoint: str  # e.g. "pvs-01 BMC"
    kind: str  # one of KINDS
    address: str
    ok: bool = False
    version: str = ""
    capabilities: str = ""
    tls: str = ""
    reason: str = ""
    fix: str = ""
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def line(self) -> str:
        """One line saying what failed and what to do (the endpoint, the action, the reason)."""
        fix = f" -- fix: {self.fix}" if self.fix else ""
        return f"{self.endpoint} [{self.kind} {self.address}]: {self.reason}{fix}"


def _tls_label(tls: Tls) -> str:
    if tls.mode is TlsMode.INSECURE:
        return "not verified (insecure in inventory)"
    return f"verified ({tls.ca_file})" if tls.ca_file else "verified"


def _version_verdict(r: CheckResult, kind: str, found: str) -> None:
    """Name whether the version found is one the conformance suite checked (a note when not)."""
    verdict = check_version(kind, found)
    r.version += f" [{verdict.tag}]"
    if verdict.note:
        r.notes.append(verdict.note)


def _fail(r: CheckResult, exc: Exception) -> CheckResult:
    r.ok = False
    if isinstance(exc, EndpointError):
        r.reason = f"{exc.action}: {exc.reason}"
        r.fix = exc.fix
    elif isinstance(exc, MissingCredentialError):
        r.reason = str(exc).split(": ", 1)[-1]
        r.fix = "set the credential, then run labctl check again"
    else:
        r.reason = f"{type(exc).__name__}: {exc}"
    return r


class Preflight:
    """Built with the lab context (or a session carrying one: launchers placed at a site agent are
    greeted through its link to the agents, ``session.sites``)."""

    def __init__(
        self,
        ctx: LabContext | HasContext,
        *,
        workers: int = 32,
        launcher_timeout_s: float = greet.GREETING_TIMEOUT_S,
        kinds: Collection[str] = (),
    ):
        self.ctx = context_of(ctx)
        self.lab: Lab = self.ctx.lab
        self.workers = workers
        self.launcher_timeout_s = launcher_timeout_s
        self.kinds = frozenset(kinds)  # only these kinds of endpoint (empty: every one)
        sites = getattr(ctx, "sites", None)  # a LabSession's Sites; a bare context has none
        self.relay: LauncherRelay | None = sites if isinstance(sites, LauncherRelay) else None

    def checks(self) -> list[tuple[CheckResult, Callable[[CheckResult], None]]]:
        lab = self.lab
        out: list[tuple[CheckResult, Callable[[CheckResult], None]]] = []
        measured = {m.name for m in self.ctx.streaming_servers}
        if lab.configuration is not None:
            measured |= {lab.configuration.vdisk_server, lab.configuration.write_cache_server}
        streaming = {m.name for m in self.ctx.streaming_servers}
        for m in lab.servers:
            if m.bmc is not None:
                out.append(
                    (
                        CheckResult(f"{m.name} BMC", "redfish", m.bmc.url, tls=_tls_label(m.bmc.tls)),
                        partial(self._bmc, m=m),
                    )
                )
            if m.ssh is not None:
                addr = f"{m.ssh_host}:{m.ssh.port}"
                out.append(
                    (
                        CheckResult(
                            f"{m.name} SSH", "ssh", addr, tls="host key: " + m.ssh.host_key_policy.value
                        ),
                        partial(
                            self._server_ssh, m=m, measured=m.name in measured, streaming=m.name in streaming
                        ),
                    )
                )
        for m in lab.machines.values():
            if m.ipmi is not None:
                addr = f"{m.ipmi.host}:{m.ipmi.port}"
                out.append(
                    (CheckResult(f"{m.name} IPMI", "ipmi", addr, tls="RMCP+"), partial(self._ipmi, m=m))
                )
        nets = {m.network for m in lab.clients if m.network}
        for net_name in sorted(nets):
            net = lab.networks[net_name]
            out.append(
                (
                    CheckResult(f"{net.name} Wake-on-LAN", "wol", f"{net.broadcast}:{net.wol_port}"),
                    partial(self._wol, net_name=net_name),
                )
            )
        for vc in lab.vcenters.values():
            out.append(
                (
                    CheckResult(vc.name, "vcenter", vc.url, tls=_tls_label(vc.tls)),
                    partial(self._vcenter, name=vc.name),
                )
            )
        for arr in lab.storage.values():
            out.append(
                (
                    CheckResult(arr.name, "storage", arr.url, tls=_tls_label(arr.tls)),
                    partial(self._storage, name=arr.name),
                )
            )
        for ln in self.lab.vdi.launchers if self.lab.vdi is not None else ():
            how = (
                f"via site agent {ln.agent}"
                if ln.transport == "agent"
                else f"host key: {ln.access.host_key_policy}"
                if ln.access is not None
                else ""
            )
            out.append(
                (
                    CheckResult(f"{ln.name} launcher", "launcher", greet.address(ln), tls=how),
                    partial(self._launcher, ln=ln),
                )
            )
        return [item for item in out if not self.kinds or item[0].kind in self.kinds]

    def run(self, progress: Callable[[CheckResult], object] | None = None) -> list[CheckResult]:
        """Every check, concurrently; results in inventory order."""
        items = self.checks()

        def one(item: tuple[CheckResult, Callable[[CheckResult], None]]) -> CheckResult:
            r, fn = item
            t0 = time.monotonic()
            try:
                fn(r)
            except Exception as exc:
                _fail(r, exc)
            r.seconds = time.monotonic() - t0
            if progress is not None:
                progress(r)
            return r

        if not items:
            return []
        with ThreadPoolExecutor(
            max_workers=min(self.workers, len(items)), thread_name_prefix="check"
        ) as pool:
            return list(pool.map(one, items))

    # --- the checks ----------------------------------------------------------------------------
    def _bmc(self, r: CheckResult, m: Machine) -> None:
        assert m.bmc is not None
        st = self.ctx.settings
        with RedfishClient(m.name, m.bmc, timeout_s=st.redfish_timeout_s, backoff=st.redfish_backoff) as rf:
            inv = rf.inventory()
            r.version = f"{inv.bmc_model or 'BMC'} {inv.bmc_firmware}, Redfish {inv.redfish_version}".strip()
            _version_verdict(r, "redfish", inv.bmc_firmware)
            _, allowed = rf.allowed_reset_types()
            needed = ["On"]
            off = [t for t in ("GracefulShutdown", "ForceOff") if t in allowed]
            missing = [t for t in needed if allowed and t not in allowed]
            caps = [f"model {inv.model}", f"power {inv.power_state}", f"auth {rf.auth_mode}"]
            if allowed:
                caps.append(
                    "reset "
                    + ",".join(
                        t for t in ("On", "ForceOff", "GracefulShutdown", "ForceRestart") if t in allowed
                    )
                )
            r.capabilities = "; ".join(caps)
            if missing or (allowed and not off):
                r.reason = f"the system does not offer ResetType {', '.join(missing or ['ForceOff/GracefulShutdown'])}"
                r.fix = f"it offers: {', '.join(allowed)}; power actions on {m.name} will fail"
                return
            if rf.auth_mode.startswith("basic"):
                r.notes.append(f"session login not possible ({rf.auth_mode}); basic auth works")
        r.ok = True

    def _ipmi(self, r: CheckResult, m: Machine) -> None:
        assert m.ipmi is not None
        with IpmiClient(m.name, m.ipmi, timeout_s=self.ctx.settings.ipmi_timeout_s) as bmc:
            dev = bmc.device_id()
            r.version = f"firmware {dev.firmware}, IPMI {dev.ipmi_version}"
            _version_verdict(r, "ipmi", dev.firmware)
            r.capabilities = f"manufacturer {dev.manufacturer_id}; chassis power {bmc.power_reading().value}"
        r.ok = True

    def _server_ssh(self, r: CheckResult, m: Machine, measured: bool, streaming: bool) -> None:
        target = SshTarget.for_machine(m)
        pool = self.ctx.ssh
        host = pool.run(target, ["hostname"], timeout_s=30, action="log in and run hostname", check=True)
        caps = [f"hostname {host.stdout.strip()}"]
        if measured:
            listed: set[str] = set()
            for obj in tp.query_objects(tp.SERVER_COUNTERS):
                res = pool.run(
                    target, tp.query_argv(obj), timeout_s=30, action=f"list counters of {obj} (typeperf -q)"
                )
                listed |= tp.parse_query(res.stdout)
            missing = tp.missing_counters(tp.SERVER_COUNTERS, listed)
            caps.append(
                f"typeperf {len(tp.SERVER_COUNTERS) - len(missing)}/{len(tp.SERVER_COUNTERS)} counters"
            )
            if missing:
                r.capabilities = "; ".join(caps)
                r.reason = f"typeperf -q does not list: {', '.join(missing)}"
                r.fix = (
                    "enable the performance counters (lodctr /r) or install the NIC/disk counter providers"
                )
                return
        if streaming:
            res = pool.run(
                target, DEVICE_INFO_COMMAND, timeout_s=60, action="read device status (Get-PvsDeviceInfo)"
            )
            if res.exit_status != 0:
                err = (res.stderr or res.stdout).strip().splitlines()
                r.capabilities = "; ".join(caps)
                r.reason = f"device status: exit {res.exit_status}: {err[0] if err else ''}"
                r.fix = (
                    "install the Citrix PVS PowerShell snap-in (Citrix.PVS.SnapIn) on the streaming server"
                )
                return
            try:
                devices = parse_device_info(res.stdout)
            except PvsError as exc:
                r.capabilities = "; ".join(caps)
                r.reason = f"device status: {exc}"
                return
            caps.append(f"PVS status {len(devices)} devices")
        r.capabilities = "; ".join(caps)
        r.ok = True

    def _wol(self, r: CheckResult, net_name: str) -> None:
        net = self.lab.networks[net_name]
        clients = [m for m in self.lab.clients if m.network == net_name]
        no_mac = [m.name for m in clients if not m.mac]
        if net.wol_relay:
            relay = self.lab.machines.get(net.wol_relay)
            if relay is None or relay.ssh is None:
                r.reason = f"relay {net.wol_relay!r} is not a machine with ssh access in this configuration"
                r.fix = "name a machine of that subnet with ssh: as wol_relay"
                return
            target = SshTarget.for_machine(relay)
            self.ctx.ssh.run(target, ["hostname"], timeout_s=30, action="reach the WoL relay", check=True)
            # which wakeonlan the relay has (Debian's takes -i, the PyPI script -o), or that it has none
            command = " ".join(self.ctx.wol.relay_command_for(target))
            r.capabilities = f"relay {relay.name} answers, sends with `{command}`; {len(clients)} clients"
        else:
            try:
                sock = wakeonlan.create_socket(host=net.broadcast, port=net.wol_port, family=socket.AF_INET)
                sock.close()
            except OSError as exc:
                r.reason = (
                    f"cannot open a broadcast socket to {net.broadcast}:{net.wol_port}: {exc.strerror or exc}"
                )
                r.fix = "check networks[].broadcast and wol_port in the inventory, and that this host is on that subnet"
                return
            r.capabilities = f"broadcast socket opens; {len(clients)} clients (no packet sent)"
        if no_mac:
            r.reason = f"clients without a MAC address: {', '.join(no_mac[:5])}"
            r.fix = "add mac: to them"
            return
        r.ok = True

    def _vcenter(self, r: CheckResult, name: str) -> None:
        st = self.ctx.settings
        with VCenterClient(self.lab.vcenters[name], timeout_s=st.vcenter_timeout_s) as vc:
            r.version = f"{vc.about.get('name', '')} (API {vc.about.get('api_version', '')})"
            _version_verdict(r, "vcenter", f"{vc.about.get('version', '')} build-{vc.about.get('build', '')}")
            inv = vc.inventory(properties=("name",))
            wanted = [m.name for m in self.lab.vms if m.vcenter == name]
            absent = [n for n in wanted if n not in inv]
            counters = list(dict.fromkeys([*HOST_COUNTERS, *VM_COUNTERS]))
            _, missing = vc.resolve_counters(counters)
            r.capabilities = (
                f"{len(wanted) - len(absent)}/{len(wanted)} inventory VMs; "
                f"perf {len(counters) - len(missing)}/{len(counters)} counters"
            )
            problems = []
            shared = [n for n in absent if n in vc.ambiguous]
            absent = [n for n in absent if n not in shared]
            if absent:
                problems.append(f"VMs not found: {', '.join(absent[:5])}{' ...' if len(absent) > 5 else ''}")
            if shared:  # vCenter names are unique per folder only; labctl finds VMs by name
                problems.append(f"VM names more than one VM has: {', '.join(shared[:5])}")
            if missing:
                problems.append(f"perf counters not found: {', '.join(missing)}")
            if problems:
                r.reason = "; ".join(problems)
                r.fix = "check the VM names in the inventory and the vCenter statistics level (counters need level 1-2)"
                return
        r.ok = True

    def _storage(self, r: CheckResult, name: str) -> None:
        arr = self.lab.storage[name]
        with open_storage(arr, timeout_s=self.ctx.settings.storage_timeout_s) as drv:
            info = drv.info()
            r.version = f"{info.model} {info.software_version} (API {info.api_version})".strip()
            missing = drv.missing_metrics()
            luns = set(getattr(drv, "lun_names", lambda: {})().values())
            absent = [lun for lun in arr.luns if luns and lun not in luns]
            r.capabilities = (
                f"real-time metric paths {'all present' if not missing else 'missing ' + str(len(missing))}"
            )
            if arr.luns:
                r.capabilities += f"; {len(arr.luns) - len(absent)}/{len(arr.luns)} LUNs"
            if missing:
                r.reason = f"metric paths not available in real time: {', '.join(missing)}"
                r.fix = "upgrade the array's software or choose an account with metrics access"
                return
            if absent:
                r.reason = f"LUNs not found: {', '.join(absent)}"
                r.fix = "check storage[].luns in the inventory against the array"
                return
        r.ok = True

    def _launcher(self, r: CheckResult, ln: Launcher) -> None:
        sent_s = self.ctx.clock.now()
        hello = greet.greet(backend_for(ln.transport, self.ctx, self.relay), ln, self.launcher_timeout_s)
        offset_s = greet.clock_offset_s(hello.clock_ts, sent_s, self.ctx.clock.now())
        # a simulated lab's launchers answer in the simulator's lab time, which this check does not keep
        if not self.lab.simulated and abs(offset_s) > greet.CLOCK_TOLERANCE_S:
            r.notes.append(
                f"its clock is {offset_s:+.1f} s off this controller's: its sessions and logons land that "
                "far off on the run's timeline (sync both with NTP)"
            )
        r.version = hello.version_text
        r.capabilities = hello.load_text
        if hello.max_sessions is not None and hello.max_sessions < ln.sessions:
            r.notes.append(
                f"the inventory gives it {ln.sessions} sessions, it holds at most {hello.max_sessions}: "
                "starts beyond that are refused (raise its max_sessions or lower vdi.launchers[].sessions)"
            )
        if hello.labctl_version and hello.labctl_version != __version__:
            r.notes.append(f"it runs labctl {hello.labctl_version}, this controller {__version__}")
        r.ok = True

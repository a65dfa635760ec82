"""vCenter with pyVmomi: one reused session, paged inventory, batched power, update-driven waits.

- Inventory of thousands of VMs: a ContainerView per datacenter and ``RetrievePropertiesEx``
  with ``maxObjects`` paging (``ContinueRetrievePropertiesEx``), only the properties asked for.
- Mass power-on: ``Datacenter.PowerOnMultiVM_Task`` with the real list of VMs (one call per
  datacenter); reset, power-off: one task per VM; ``RebootGuest``/``ShutdownGuest`` are calls
  without tasks. Dispatch runs in a bounded pool and the dispatch spread is measured.
- Waiting: a private property collector with one filter over all the tasks (or all the VMs),
  read with ``WaitForUpdatesEx`` and a ``maxWaitSeconds``, never one poll per task. (pyVim's
  ``WaitForTask`` reads ``info.name``, which breaks on vcsim's task names; only ``info.state``,
  ``info.error`` and ``info.result`` are collected here.)
- Performance: counters resolved by ``group.name.rollup`` (the numeric keys differ between
  vCenter and ESX, and between versions), one ``QueryPerf`` with many specs (chunked), ``maxSample``
  always set (without it the service may return a whole year of samples); normalised metrics of
  hosts, VMs and datastores in :mod:`labctl.drivers.vsphere_perf`.

Every method raises :class:`~labctl.errors.EndpointError` naming the vCenter and the action.
"""

from __future__ import annotations

import functools
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

import requests
from pyVim.connect import Disconnect, SmartConnect
from pyVmomi import vim, vmodl

from labctl.drivers import vsphere_perf as perf
from labctl.drivers.base import TlsAdapter, requests_verify, ssl_context, tls_fix
from labctl.drivers.power_verbs import PowerReading, PowerVerb
from labctl.drivers.readings import Reading
from labctl.errors import EndpointError, EndpointTimeout
from labctl.inventory.credentials import resolve_credential
from labctl.inventory.model import VCenter

VM_PROPERTIES = (
    "name",
    "runtime.powerState",
    "runtime.connectionState",
    "runtime.host",
    "guest.toolsRunningStatus",
    "guest.ipAddress",
    "summary.runtime.bootTime",
)
READY_PROPERTIES = (
    "runtime.powerState",
    "runtime.connectionState",
    "guest.toolsRunningStatus",
    "guest.ipAddress",
    "summary.runtime.bootTime",
)
TERMINAL = ("success", "error")

# What plans read from vCenter (host CPU, memory, ballooning, network; VM and datastore I/O); `check`
# resolves them. Normalisation and batching: labctl.drivers.vsphere_perf.
HOST_COUNTERS = perf.HOST_COUNTERS
VM_COUNTERS = perf.VM_COUNTERS
DATASTORE_COUNTERS = perf.DATASTORE_COUNTERS


class VSphereError(EndpointError):
    pass


class VSphereTimeout(EndpointTimeout):
    pass


_READINGS = {
    "poweredOn": PowerReading.ON,
    "poweredOff": PowerReading.OFF,
    "suspended": PowerReading.OFF,  # no CPU running: as good as off for a storm
}


@dataclass(frozen=True)
class VmInfo:
    name: str
    moid: str
    datacenter: str
    power_state: str = ""
    tools_running: bool = False
    ip: str | None = None
    boot_time: float | None = None  # epoch seconds, as vCenter reports it
    host: str | None = None  # host moid
    # runtime.connectionState: anything but "connected" (the host is not responding, the VM is
    # orphaned or inaccessible) means power_state is the last one vCenter knew, not the VM's now
    connection_state: str = "connected"

    @property
    def reading(self) -> PowerReading:
        if self.connection_state != "connected":
            return PowerReading.UNKNOWN
        return _READINGS.get(self.power_state, PowerReading.UNKNOWN)


@dataclass(frozen=True)
class DatastoreInfo:
    name: str
    moid: str
    url: str  # summary.url: ds:///vmfs/volumes/<volume id>/
    capacity_bytes: int
    free_bytes: int
    accessible: bool
    # overallStatus: the worst triggered alarm (green, yellow, red, gray). vCenter's default usage
    # alarm is yellow at 75 % used, red at 85 %, but any alarm counts: a recorded vSAN datastore is
    # yellow at 36 % used. Fullness is read from capacity and free space, never from this.
    status: str

    @property
    def volume(self) -> str:
        """The instance of its datastore.* performance counters."""
        return perf.volume_id(self.url)


@dataclass(frozen=True)
class TaskOutcome:
    state: str  # "success", "error", "timeout", "not_attempted", "dispatch_error"
    error: str | None = None
    finished_wall: float | None = None  # time.time() when the collector reported the end
    started_wall: float | None = None  # when vCenter started it (TaskInfo.startTime), or the call time

    @property
    def ok(self) -> bool:
        return self.state == "success"


@dataclass(frozen=True)
class BatchResult:
    outcomes: dict[str, TaskOutcome]  # VM name -> outcome
    dispatch_first_wall: float | None
    dispatch_last_wall: float | None
    calls: int  # SOAP calls that started the work (1 per datacenter for PowerOnMultiVM)

    @property
    def dispatch_spread_s(self) -> float:
        if self.dispatch_first_wall is None or self.dispatch_last_wall is None:
            return 0.0
        return self.dispatch_last_wall - self.dispatch_first_wall


@dataclass(frozen=True)
class ReadyOutcome:
    state: str  # "ready", "timeout", "error"
    at_wall: float | None = None
    detail: str = ""
    last_seen: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CounterInfo:
    key: int
    name: str  # group.name.rollup
    unit: str  # vSphere unit key: percent, kiloBytes, kiloBytesPerSecond, millisecond, number, ...
    stats_type: str


def fault_message(fault: Any) -> str:
    """A readable line from a vmodl fault or a LocalizedMethodFault."""
    if fault is None:
        return ""
    msg = getattr(fault, "localizedMessage", None) or ""
    inner = getattr(fault, "fault", None)
    if not msg and inner is not None:
        msg = getattr(inner, "msg", "") or ""
    if not msg:
        msg = getattr(fault, "msg", "") or ""
    f = inner if inner is not None else fault
    kind = type(f).__name__.split(".")[-1]
    msg = msg.strip()
    if msg.startswith("*types."):
        msg = ""
    if not msg and getattr(f, "reason", None):
        msg = str(f.reason)
    if not msg:
        msgs = [getattr(m, "message", "") for m in getattr(f, "faultMessage", None) or []]
        msg = "; ".join(m for m in msgs if m)
    if not msg and getattr(f, "existingState", None):
        msg = f"the VM is {f.existingState}"
    return f"{kind}: {msg}" if msg else kind


def routable_ip(value: Any) -> str | None:
    """The guest's address, or None when it has none a controller can reach: VMware Tools report
    a link-local address (IPv6 fe80::/10, or IPv4 169.254/16 after a failed DHCP) as
    ``guest.ipAddress`` while the guest has no other (a recorded vCenter's guests do)."""
    text = str(value or "").strip()
    if not text:
        return None
    try:
        if ipaddress.ip_address(text.split("%", 1)[0]).is_link_local:
            return None
    except ValueError:
        pass  # not an address: kept as the guest reported it
    return text


def _epoch(value: Any) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp()
    return None


def unit_scale(unit: str) -> tuple[str, float]:
    """vSphere perf units to labctl units: percent comes in hundredths, KB in 1024 bytes."""
    return {
        "percent": ("%", 0.01),
        "kiloBytes": ("KB", 1.0),
        "kiloBytesPerSecond": ("KB/s", 1.0),
        "megaBytes": ("MB", 1.0),
        "millisecond": ("ms", 1.0),
        "megaHertz": ("MHz", 1.0),
        "number": ("", 1.0),
        "watt": ("W", 1.0),
    }.get(unit, (unit, 1.0))


class VCenterClient:
    """One session with one vCenter, reused by every call; thread-safe for concurrent calls."""

    def __init__(
        self,
        vc: VCenter,
        *,
        timeout_s: float = 60.0,
        page_size: int = 500,
        dispatch_workers: int = 16,
        max_wait_s: int = 5,
    ):
        self.vc = vc
        self.timeout_s = timeout_s
        self.page_size = page_size
        self.dispatch_workers = dispatch_workers
        self.max_wait_s = max(1, int(min(max_wait_s, timeout_s - 1))) if timeout_s > 2 else 1
        self.endpoint = f"{vc.name} (vCenter {vc.url})"
        u = urlparse(vc.url)
        self.host = u.hostname or ""
        self.port = u.port or 443
        self.path = u.path or "/sdk"
        self._si: Any = None
        self._lock = threading.RLock()
        self._vms: dict[str, VmInfo] = {}
        self._refs: dict[str, Any] = {}  # name -> vim.VirtualMachine
        self._dcs: dict[str, Any] = {}  # dc moid -> vim.Datacenter
        self._ambiguous: dict[str, tuple[str, ...]] = {}  # a name more than one VM has -> their moids
        self._counters: dict[str, CounterInfo] | None = None
        self.about: dict[str, str] = {}

    # --- session -------------------------------------------------------------------------------
    def __enter__(self) -> VCenterClient:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> VCenterClient:
        with self._lock:
            if self._si is not None:
                return self
            action = "log in"
            self._probe(action)
            password = resolve_credential(self.vc.password, self.endpoint)
            try:
                si = SmartConnect(
                    protocol="https",
                    host=self.host,
                    port=self.port,
                    path=self.path,
                    user=self.vc.user,
                    pwd=password,
                    sslContext=ssl_context(self.vc.tls),
                    httpConnectionTimeout=self.timeout_s,
                )
            except vim.fault.InvalidLogin:
                raise VSphereError(
                    self.endpoint,
                    action,
                    f"credentials rejected for user {self.vc.user!r}",
                    f"check the user and the credential {self.vc.password}",
                ) from None
            except Exception as exc:
                raise self._error(action, exc) from None
            try:  # a property read is a call on the wire: vCenter can go away between the two
                about = si.content.about
                self.about = {
                    "name": str(about.fullName),
                    "version": str(about.version),
                    "api_version": str(about.apiVersion),
                    "api_type": str(about.apiType),
                    "build": str(about.build),
                }
            except Exception as exc:
                raise self._error(action, exc) from None
            self._si = si
            return self

    def _probe(self, action: str) -> None:
        """Reach the service with a timeout before pyVmomi does (its version probe has none)."""
        url = f"https://{self.host}:{self.port}{self.path.rstrip('/')}/vimServiceVersions.xml"
        try:
            with requests.Session() as s:
                s.trust_env = False
                s.mount("https://", TlsAdapter(self.vc.tls, self.endpoint))
                s.get(url, timeout=min(self.timeout_s, 15.0), verify=requests_verify(self.vc.tls))
        except requests.exceptions.SSLError as exc:
            raise VSphereError(
                self.endpoint,
                action,
                f"TLS verification failed: {_short(exc)}",
                tls_fix(self.vc.tls, "vCenter"),
            ) from None
        except requests.exceptions.Timeout:
            raise VSphereTimeout(
                self.endpoint,
                action,
                f"no answer within {min(self.timeout_s, 15.0):g} s",
                "check that vCenter is up",
            ) from None
        except requests.RequestException as exc:
            raise VSphereError(
                self.endpoint,
                action,
                f"cannot connect: {_short(exc)}",
                "check the vCenter URL in the inventory and that the service is running",
            ) from None

    def close(self) -> None:
        with self._lock:
            si, self._si = self._si, None
        if si is not None:
            try:
                Disconnect(si)
            except Exception:
                pass

    @property
    def si(self) -> Any:
        if self._si is None:
            self.open()
        return self._si

    @property
    def content(self) -> Any:
        """The service content. pyVmomi reads a managed object's property on the wire each time,
        so this is a call like any other: a vCenter that died since the last one is an
        :class:`EndpointError` naming it, never a bare ``ConnectionRefusedError`` or ``SSLError``."""
        return self._call("read the service content", lambda: self.si.content)

    def _error(self, action: str, exc: BaseException) -> EndpointError:
        if isinstance(exc, vim.fault.NotAuthenticated):
            return VSphereError(self.endpoint, action, "the session is no longer valid", "log in again")
        if isinstance(exc, vmodl.MethodFault):
            return VSphereError(self.endpoint, action, fault_message(exc))
        if isinstance(
            exc, ssl.SSLEOFError | ssl.SSLZeroReturnError
        ):  # the peer went away, not its certificate
            return VSphereError(
                self.endpoint, action, f"connection closed: {exc}", "check that vCenter is up"
            )
        if isinstance(exc, ssl.SSLError):
            return VSphereError(self.endpoint, action, f"TLS: {exc}", tls_fix(self.vc.tls, "vCenter"))
        if isinstance(exc, TimeoutError | socket.timeout):
            return VSphereTimeout(self.endpoint, action, f"no answer within {self.timeout_s:g} s")
        if isinstance(exc, ConnectionError | http.client.HTTPException | OSError):
            return VSphereError(
                self.endpoint, action, f"connection failed: {exc}", "check that vCenter is up"
            )
        return VSphereError(self.endpoint, action, f"{type(exc).__name__}: {exc}")

    def _call(self, action: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except EndpointError:
            raise
        except Exception as exc:
            if isinstance(exc, vim.fault.NotAuthenticated):
                # the session expired: log in again once, then retry
                self.close()
                self.open()
                try:
                    return fn()
                except Exception as exc2:
                    raise self._error(action, exc2) from None
            raise self._error(action, exc) from None

    # --- inventory -----------------------------------------------------------------------------
    def datacenters(self) -> list[Any]:
        def run() -> list[Any]:
            view = self.content.viewManager.CreateContainerView(
                self.content.rootFolder, [vim.Datacenter], True
            )
            try:
                return list(view.view)
            finally:
                view.Destroy()

        dcs = self._call("list datacenters", run)
        self._dcs = {dc._moId: dc for dc in dcs}
        return dcs

    def retrieve(
        self, container: Any, obj_type: Any, paths: Sequence[str], action: str
    ) -> list[tuple[Any, dict]]:
        """Every object of ``obj_type`` under ``container`` with ``paths``, paged by ``page_size``.
        ``container`` may be a function returning it (``partial(getattr, dc, "vmFolder")``): reading
        a managed object's property is a call on the wire, so it is made inside the call's mapping."""
        pc = self.content.propertyCollector

        def run() -> list[tuple[Any, dict]]:
            root = container() if callable(container) else container
            view = self.content.viewManager.CreateContainerView(root, [obj_type], True)
            token = None
            try:
                traversal = vmodl.query.PropertyCollector.TraversalSpec(
                    name="view", path="view", skip=False, type=vim.view.ContainerView
                )
                spec = vmodl.query.PropertyCollector.FilterSpec(
                    objectSet=[
                        vmodl.query.PropertyCollector.ObjectSpec(obj=view, skip=True, selectSet=[traversal])
                    ],
                    propSet=[
                        vmodl.query.PropertyCollector.PropertySpec(
                            type=obj_type, pathSet=list(paths), all=False
                        )
                    ],
                )
                out: list[tuple[Any, dict]] = []
                result = pc.RetrievePropertiesEx(
                    specSet=[spec],
                    options=vmodl.query.PropertyCollector.RetrieveOptions(maxObjects=self.page_size),
                )
                while result is not None:
                    for oc in result.objects or []:
                        out.append((oc.obj, {p.name: p.val for p in oc.propSet or []}))
                    token = result.token
                    if not token:
                        break
                    result = pc.ContinueRetrievePropertiesEx(token=token)
                    token = None
                return out
            finally:
                if token:
                    try:
                        pc.CancelRetrievePropertiesEx(token=token)
                    except Exception:
                        pass
                view.Destroy()

        return self._call(action, run)

    def inventory(self, properties: Sequence[str] = VM_PROPERTIES) -> dict[str, VmInfo]:
        """Every VM by name with its power and guest state (a few calls whatever the count).

        vCenter names are unique per folder, not per vCenter: a name two VMs share is left out
        (acting on one of them by name could hit the other) and :meth:`why_missing` says why."""
        props = list(dict.fromkeys(["name", *properties]))
        vms: dict[str, VmInfo] = {}
        refs: dict[str, Any] = {}
        moids: dict[str, list[str]] = {}
        for dc in self.datacenters():
            for obj, p in self.retrieve(
                functools.partial(getattr, dc, "vmFolder"), vim.VirtualMachine, props, "read the VM inventory"
            ):
                name = str(p.get("name", obj._moId))
                host = p.get("runtime.host")
                moids.setdefault(name, []).append(obj._moId)
                vms[name] = VmInfo(
                    name=name,
                    moid=obj._moId,
                    datacenter=dc._moId,
                    power_state=str(p.get("runtime.powerState", "")),
                    tools_running=p.get("guest.toolsRunningStatus") == "guestToolsRunning",
                    ip=routable_ip(p.get("guest.ipAddress")),
                    boot_time=_epoch(p.get("summary.runtime.bootTime")),
                    host=host._moId if host is not None else None,
                    connection_state=str(p.get("runtime.connectionState") or "connected"),
                )
                refs[name] = obj
        ambiguous = {n: tuple(sorted(ids)) for n, ids in moids.items() if len(ids) > 1}
        for n in ambiguous:
            del vms[n], refs[n]
        with self._lock:
            self._vms, self._refs, self._ambiguous = vms, refs, ambiguous
        return vms

    @property
    def ambiguous(self) -> dict[str, tuple[str, ...]]:
        """Names more than one VM has (left out of :meth:`inventory`), with their moids."""
        return dict(self._ambiguous)

    def why_missing(self, name: str) -> str:
        """Why ``name`` is not in the inventory: no such VM, or more than one VM has it."""
        ids = self._ambiguous.get(name)
        if ids:
            return (
                f"{len(ids)} VMs are named {name} in vCenter ({', '.join(ids)}); "
                "rename them so the name is one VM's"
            )
        return "no such VM in vCenter"

    def hosts(self) -> dict[str, Any]:
        """ESXi hosts by name."""
        out = {}
        for dc in self._dcs.values() or self.datacenters():
            for obj, p in self.retrieve(
                functools.partial(getattr, dc, "hostFolder"), vim.HostSystem, ["name"], "list hosts"
            ):
                out[str(p.get("name", obj._moId))] = obj
        return out

    def hosts_in_maintenance(self) -> list[str]:
        """The ESXi hosts in maintenance mode (``runtime.inMaintenanceMode``), by name."""
        out = []
        for dc in self._dcs.values() or self.datacenters():
            paths = ["name", "runtime.inMaintenanceMode"]
            for obj, p in self.retrieve(
                functools.partial(getattr, dc, "hostFolder"), vim.HostSystem, paths, "read host states"
            ):
                if p.get("runtime.inMaintenanceMode"):
                    out.append(str(p.get("name", obj._moId)))
        return sorted(out)

    def vm_questions(self) -> dict[str, str]:
        """VM name -> the question it waits on (``runtime.question``: ESXi stuns a VM whose
        datastore is full and asks what to do), for every VM that has one."""
        out = {}
        for dc in self._dcs.values() or self.datacenters():
            paths = ["name", "runtime.question"]
            for obj, p in self.retrieve(
                functools.partial(getattr, dc, "vmFolder"), vim.VirtualMachine, paths, "read VM questions"
            ):
                q = p.get("runtime.question")
                if q is not None:
                    out[str(p.get("name", obj._moId))] = " ".join(str(getattr(q, "text", "") or "").split())
        return out

    def datastores(self) -> dict[str, DatastoreInfo]:
        """Datastores by name with their volume id, capacity and free space."""
        out = {}
        paths = [
            "name",
            "summary.url",
            "summary.capacity",
            "summary.freeSpace",
            "summary.accessible",
            "overallStatus",
        ]
        for dc in self._dcs.values() or self.datacenters():
            for obj, p in self.retrieve(
                functools.partial(getattr, dc, "datastoreFolder"), vim.Datastore, paths, "list datastores"
            ):
                name = str(p.get("name", obj._moId))
                out[name] = DatastoreInfo(
                    name,
                    obj._moId,
                    str(p.get("summary.url", "")),
                    int(p.get("summary.capacity") or 0),
                    int(p.get("summary.freeSpace") or 0),
                    bool(p.get("summary.accessible", True)),
                    str(p.get("overallStatus", "gray")),
                )
        return out

    def vm_refs(self, names: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
        """(name -> VM object, unknown names), refreshing the inventory once if some are missing."""
        names = list(names)
        if any(n not in self._refs for n in names):
            self.inventory()
        found = {n: self._refs[n] for n in names if n in self._refs}
        return found, [n for n in names if n not in self._refs]

    # --- power ---------------------------------------------------------------------------------
    def act(self, verb: PowerVerb, names: Sequence[str]) -> BatchResult:
        """Carry out ``verb`` on many VMs: on = one PowerOnMultiVM per datacenter, off = PowerOff
        (graceful or not: ShutdownGuest needs VMware Tools and returns before the VM is off),
        reset = ResetVM, reboot = RebootGuest."""
        if verb is PowerVerb.ON:
            return self.power_on(names)
        if verb in (PowerVerb.GRACEFUL_OFF, PowerVerb.FORCE_OFF):
            return self.power_off(names)
        if verb is PowerVerb.RESET:
            return self.reset(names)
        return self.reboot_guest(names)

    def power_on(self, names: Sequence[str], *, timeout_s: float = 300.0) -> BatchResult:
        """Power on many VMs with one ``PowerOnMultiVM_Task`` per datacenter, then wait for every task."""
        refs, unknown = self.vm_refs(names)
        outcomes: dict[str, TaskOutcome] = {
            n: TaskOutcome("dispatch_error", self.why_missing(n)) for n in unknown
        }
        by_dc: dict[str, list[str]] = {}
        for n in refs:
            by_dc.setdefault(self._vms[n].datacenter, []).append(n)
        multi: dict[str, Any] = {}
        first = last = None
        for dc_id, members in by_dc.items():
            dc = self._dcs[dc_id]
            first = first or time.time()
            try:
                multi[dc_id] = self._call(
                    f"power on {len(members)} VMs",
                    functools.partial(
                        dc.PowerOnMultiVM_Task,
                        vm=[refs[n] for n in members],
                        option=[
                            vim.option.OptionValue(key="OverrideAutomationLevel", value="fullyAutomated")
                        ],
                    ),
                )
            except EndpointError as exc:
                for n in members:
                    outcomes[n] = TaskOutcome("dispatch_error", exc.reason)
            last = time.time()
        deadline = time.monotonic() + timeout_s
        multi_out = self.wait_tasks(multi, timeout_s=timeout_s, with_result=True)
        vm_tasks: dict[str, Any] = {}
        moid_to_name = {refs[n]._moId: n for n in refs}
        for dc_id, (outcome, result) in multi_out.items():
            members = by_dc[dc_id]
            if not outcome.ok or result is None:
                for n in members:
                    outcomes[n] = TaskOutcome(
                        outcome.state, outcome.error, outcome.finished_wall, outcome.started_wall
                    )
                continue
            seen = set()
            for att in result.attempted or []:
                name = moid_to_name.get(att.vm._moId)
                if name is None:
                    continue
                seen.add(name)
                if att.task is not None:
                    vm_tasks[name] = att.task
                else:
                    outcomes[name] = TaskOutcome("success", None, outcome.finished_wall, outcome.started_wall)
            for na in result.notAttempted or []:
                name = moid_to_name.get(na.vm._moId) if na.vm is not None else None
                if name is not None:
                    seen.add(name)
                    outcomes[name] = TaskOutcome("not_attempted", fault_message(na.fault))
            for n in members:
                if n not in seen:
                    outcomes[n] = TaskOutcome("not_attempted", "vCenter did not attempt it")
        remaining = max(1.0, deadline - time.monotonic())
        for name, (outcome, _) in self.wait_tasks(vm_tasks, timeout_s=remaining).items():
            outcomes[name] = outcome
        return BatchResult(outcomes, first, last, len(multi))

    def _per_vm_tasks(
        self, names: Sequence[str], method: str, verb: str, timeout_s: float, wait: bool = True
    ) -> BatchResult:
        refs, unknown = self.vm_refs(names)
        outcomes: dict[str, TaskOutcome] = {
            n: TaskOutcome("dispatch_error", self.why_missing(n)) for n in unknown
        }
        tasks: dict[str, Any] = {}
        stamps: list[float] = []
        called: dict[str, float] = {}
        lock = threading.Lock()

        def start(name: str) -> None:
            vm = refs[name]
            try:
                res = self._call(f"{verb} {name}", lambda: getattr(vm, method)())
            except EndpointError as exc:
                with lock:
                    outcomes[name] = TaskOutcome("dispatch_error", exc.reason)
                return
            now = time.time()
            with lock:
                stamps.append(now)
                called[name] = now
                if res is None:  # guest operations are calls, not tasks
                    outcomes[name] = TaskOutcome("success", None, now, now)
                else:
                    tasks[name] = res

        with ThreadPoolExecutor(max_workers=max(1, min(self.dispatch_workers, len(refs)))) as pool:
            list(pool.map(start, list(refs)))
        if wait and tasks:
            for name, (outcome, _) in self.wait_tasks(tasks, timeout_s=timeout_s).items():
                outcomes[name] = outcome
        else:
            for name in tasks:
                outcomes[name] = TaskOutcome("success", None, None, called.get(name))
        return BatchResult(
            outcomes, min(stamps) if stamps else None, max(stamps) if stamps else None, len(refs)
        )

    def power_off(self, names: Sequence[str], *, timeout_s: float = 300.0) -> BatchResult:
        return self._per_vm_tasks(names, "PowerOffVM_Task", "power off", timeout_s)

    def reset(self, names: Sequence[str], *, timeout_s: float = 300.0) -> BatchResult:
        return self._per_vm_tasks(names, "ResetVM_Task", "reset", timeout_s)

    def shutdown_guest(self, names: Sequence[str]) -> BatchResult:
        return self._per_vm_tasks(names, "ShutdownGuest", "shut down the guest of", 0, wait=False)

    def reboot_guest(self, names: Sequence[str]) -> BatchResult:
        return self._per_vm_tasks(names, "RebootGuest", "reboot the guest of", 0, wait=False)

    # --- waiting through the property collector --------------------------------------------------
    def _collector(self) -> Any:
        return self.content.propertyCollector.CreatePropertyCollector()

    def wait_tasks(
        self, tasks: dict[str, Any], *, timeout_s: float, with_result: bool = False
    ) -> dict[str, tuple[TaskOutcome, Any]]:
        """Wait for many tasks with one filter and ``WaitForUpdatesEx``; per key (outcome, result)."""
        if not tasks:
            return {}
        paths = ["info.state", "info.error", "info.startTime"] + (["info.result"] if with_result else [])
        by_moid = {t._moId: k for k, t in tasks.items()}
        state: dict[str, dict[str, Any]] = {k: {} for k in tasks}
        done: dict[str, float] = {}

        def on_change(moid: str, changes: dict[str, Any]) -> None:
            key = by_moid.get(moid)
            if key is None:
                return
            state[key].update(changes)
            if state[key].get("info.state") in TERMINAL and key not in done:
                done[key] = time.time()

        self._watch(
            list(tasks.values()),
            vim.Task,
            paths,
            on_change,
            lambda: len(done) == len(tasks),
            timeout_s,
            "wait for tasks",
        )
        out: dict[str, tuple[TaskOutcome, Any]] = {}
        for key in tasks:
            s = state[key]
            st = s.get("info.state")
            started = _epoch(s.get("info.startTime"))
            if st == "success":
                out[key] = (TaskOutcome("success", None, done.get(key), started), s.get("info.result"))
            elif st == "error":
                out[key] = (
                    TaskOutcome("error", fault_message(s.get("info.error")), done.get(key), started),
                    None,
                )
            else:
                out[key] = (
                    TaskOutcome("timeout", f"still {st or 'queued'} after {timeout_s:g} s", None, started),
                    None,
                )
        return out

    def _watch(
        self,
        objects: list[Any],
        obj_type: Any,
        paths: list[str],
        on_change: Callable[[str, dict[str, Any]], None],
        finished: Callable[[], bool],
        timeout_s: float,
        action: str,
    ) -> None:
        """Feed property changes of ``objects`` to ``on_change`` until ``finished()`` or the timeout."""
        deadline = time.monotonic() + timeout_s

        def run() -> None:
            pc = self._collector()
            try:
                spec = vmodl.query.PropertyCollector.FilterSpec(
                    objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=o, skip=False) for o in objects],
                    propSet=[
                        vmodl.query.PropertyCollector.PropertySpec(type=obj_type, pathSet=paths, all=False)
                    ],
                )
                pc.CreateFilter(spec, partialUpdates=False)
                version = ""
                while not finished():
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    wait = max(1, min(self.max_wait_s, int(remaining + 0.999)))
                    update = pc.WaitForUpdatesEx(
                        version=version,
                        options=vmodl.query.PropertyCollector.WaitOptions(maxWaitSeconds=wait),
                    )
                    if update is None:
                        continue
                    version = update.version
                    for fs in update.filterSet or []:
                        for oc in fs.objectSet or []:
                            changes = {}
                            for ch in oc.changeSet or []:
                                changes[ch.name] = None if ch.op == "remove" else ch.val
                            on_change(oc.obj._moId, changes)
            finally:
                try:
                    pc.Destroy()
                except Exception:
                    pass

        self._call(action, run)

    def wait_ready(
        self,
        names: Sequence[str],
        *,
        timeout_s: float,
        require_tools: bool = True,
        require_ip: bool = True,
        on_ready: Callable[[str, float], None] | None = None,
    ) -> dict[str, ReadyOutcome]:
        """Wait until each VM is on with its guest up (tools running, an IP) or the timeout ends."""
        refs, unknown = self.vm_refs(names)
        out: dict[str, ReadyOutcome] = {n: ReadyOutcome("error", detail=self.why_missing(n)) for n in unknown}
        seen: dict[str, dict[str, Any]] = {n: {} for n in refs}
        ready: dict[str, float] = {}
        by_moid = {v._moId: n for n, v in refs.items()}

        def is_ready(p: dict[str, Any]) -> bool:
            if p.get("runtime.powerState") != "poweredOn":
                return False
            if (p.get("runtime.connectionState") or "connected") != "connected":
                return False  # the power and guest state are the last vCenter knew
            if require_tools and p.get("guest.toolsRunningStatus") != "guestToolsRunning":
                return False
            return not require_ip or routable_ip(p.get("guest.ipAddress")) is not None

        def on_change(moid: str, changes: dict[str, Any]) -> None:
            name = by_moid.get(moid)
            if name is None:
                return
            seen[name].update(changes)
            if name not in ready and is_ready(seen[name]):
                ready[name] = time.time()
                if on_ready is not None:
                    on_ready(name, ready[name])

        if refs:
            self._watch(
                list(refs.values()),
                vim.VirtualMachine,
                list(READY_PROPERTIES),
                on_change,
                lambda: len(ready) == len(refs),
                timeout_s,
                "wait for guests",
            )
        for n in refs:
            if n in ready:
                out[n] = ReadyOutcome("ready", ready[n], last_seen=dict(seen[n]))
            else:
                s = seen[n]
                ip = s.get("guest.ipAddress")
                detail = (
                    f"power {s.get('runtime.powerState', '?')}, tools {s.get('guest.toolsRunningStatus', '?')}, "
                    f"ip {ip or 'none'}{' (link-local)' if ip and routable_ip(ip) is None else ''}"
                )
                if (s.get("runtime.connectionState") or "connected") != "connected":
                    detail = f"connection {s['runtime.connectionState']}, so vCenter's last known: {detail}"
                out[n] = ReadyOutcome("timeout", None, detail, dict(s))
        return out

    # --- performance ---------------------------------------------------------------------------
    def perf_counters(self) -> dict[str, CounterInfo]:
        """Every counter by ``group.name.rollup``; the keys are this server's own."""
        if self._counters is None:
            pm = self.content.perfManager
            counters = self._call("read performance counters", lambda: list(pm.perfCounter))
            table = {}
            for c in counters:
                name = f"{c.groupInfo.key}.{c.nameInfo.key}.{c.rollupType}"
                table[name] = CounterInfo(c.key, name, str(c.unitInfo.key), str(c.statsType))
            self._counters = table
        return self._counters

    def resolve_counters(self, names: Iterable[str]) -> tuple[dict[str, CounterInfo], list[str]]:
        """(resolved, missing) for ``group.name.rollup`` names."""
        table = self.perf_counters()
        names = list(names)
        return {n: table[n] for n in names if n in table}, [n for n in names if n not in table]

    def query_perf(
        self,
        entities: dict[str, Any],
        counters: Sequence[str],
        *,
        interval_id: int = 20,
        max_sample: int = 1,
        instance: str = "",
        batch: int = 5000,
        workers: int = 2,
    ) -> list[Reading]:
        """Latest ``max_sample`` samples of ``counters`` for many entities in few ``QueryPerf`` calls.

        ``entities`` maps a display name to a managed object (VM or host). Values come back in
        labctl units (``%`` for percent counters) under the counters' own names, one reading per
        instance (entity ``name/instance`` for instance-level counters); timestamps are the samples'
        own. Normalised metrics: :class:`labctl.drivers.vsphere_perf.PerfReader`.
        """
        target = perf.PerfTarget(dict(entities), tuple((c, instance) for c in counters))
        values = perf.query(
            self, [target], interval_id=interval_id, max_sample=max_sample, batch=batch, workers=workers
        )
        units = {c.name: unit_scale(c.unit) for c in self.resolve_counters(counters)[0].values()}
        out = []
        for v in values:
            unit, scale = units[v.counter]
            entity = f"{v.entity}/{v.instance}" if v.instance else v.entity
            out.append(Reading(entity, v.counter, unit, v.ts, v.value * scale))
        return out


def _short(exc: BaseException) -> str:
    text = str(exc)
    if "Caused by" in text:
        text = text.split("Caused by", 1)[1].strip(" ()")
    return text[:200]

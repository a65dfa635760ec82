"""Start, find and stop the simulated lab from Python (what `labctl sim up/status/down` call).

    with SimulatedLab("hardware/sim-2007.yaml") as sim:
        sim.lab        # the Lab, every machine of the file
        sim.clock      # a LabClock with the simulator's anchor and scale
        sim.endpoints  # every endpoint: kind, name, host, port, protocol
        ...            # drive it with labctl (LABCTL_SECRETS_FILE=sim.secrets_file)

Two processes per lab: the simulator process (:mod:`labctl.sim.simd`: twin, faults, WoL, Redfish,
SSH, Unity endpoints) and one `labctl-vcsim` per vCenter. Both run detached in their own session
and write their logs to the state dir, so a `labctl sim up` outlives its command; the state file
records them for `status` and `down`. ``SimulatedLab.attach()`` finds a running one.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlparse

from labctl.clock import LabClock
from labctl.errors import BadInputError, LabctlError
from labctl.inventory.credentials import SECRETS_FILE_VAR
from labctl.inventory.faults import FaultSpec
from labctl.inventory.load import default_lab_file, display_path, load_lab
from labctl.inventory.model import Lab
from labctl.sim.endpoint import EndpointInfo, PortInUseError, check_address_free
from labctl.sim.faults import parse_fault_option
from labctl.sim.secrets import SimSecrets, sim_secrets
from labctl.sim.state import (
    SIMD_LOG,
    SIMD_READY_FILE,
    ProcessRecord,
    SimState,
    SkippedKind,
    cmdline,
    ensure_state_dir,
    is_running,
    read_state,
    remove_state,
    resolve_state_dir,
    stop_processes,
    tie_to_parent,
    up_lock,
    write_state,
)
from labctl.sim.vcenter.launcher import VcsimLaunch, launch_vcenter

DEFAULT_STARTUP_TIMEOUT_S = 60.0
HEALTH_TIMEOUT_S = 1.0


class SimAlreadyRunningError(BadInputError):
    def __init__(self, state: SimState):
        pids = ", ".join(f"{p.role} {p.pid}" for p in state.processes)
        super().__init__(
            f"a simulated lab is already running: {state.lab_name} from {state.lab_file} "
            f"(state dir {state.state_dir}; {pids}); run `labctl sim status`, or `labctl sim down` first"
        )
        self.state = state


class SimNotRunningError(LabctlError):
    def __init__(self, state_dir: Path):
        super().__init__(
            f"no simulated lab is running (state dir {state_dir}); start one with `labctl sim up`"
        )
        self.state_dir = state_dir


class SimStartError(LabctlError):
    pass


class SimLabMismatchError(BadInputError):
    """The simulated lab that runs is not the one a command asked for (another file, or another
    configuration of it): one line, exit 2, saying how to get the one wanted."""

    def __init__(
        self,
        state: SimState,
        running_cfg: str | None,
        wanted_file: Path,
        wanted_cfg: str | None,
        given_cfg: str | None = None,
    ):
        running = display_path(state.lab_file) + (f" (configuration {running_cfg})" if running_cfg else "")
        wanted = display_path(wanted_file) + (f" (configuration {wanted_cfg})" if wanted_cfg else "")
        same_file = Path(state.lab_file).resolve() == wanted_file.resolve()
        up = f"labctl sim up --lab {display_path(wanted_file)}" + (
            f" --config {given_cfg}" if given_cfg else ""
        )
        if same_file:
            other = f", or use --config {running_cfg}" if running_cfg else ""
        else:
            other = f", or use --lab {display_path(state.lab_file)}"
        super().__init__(
            f"a simulated lab is already running: {running}, not {wanted}; stop it with `labctl sim down` "
            f"and start yours with `{up}`{other} (state dir {display_path(state.state_dir)})"
        )
        self.state = state


@dataclass(frozen=True)
class EndpointHealth:
    info: EndpointInfo
    state: str  # "answers", "off" (its machine is off, as the twin says: no answer expected), "down"
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.state in ("answers", "off")


# --- helpers ------------------------------------------------------------------------------------


def _expected_ports(lab: Lab) -> list[tuple[str, str, str, int, str]]:
    """(kind, name, host, port, protocol) of every endpoint the lab will have, to check up front."""
    out: list[tuple[str, str, str, int, str]] = []
    seen: set[tuple[str, int, str]] = set()

    def add(kind: str, name: str, host: str, port: int, proto: str) -> None:
        key = (host, port, "udp" if proto == "udp" else "tcp")
        if key not in seen:
            seen.add(key)
            out.append((kind, name, host, port, proto))

    def url_addr(url: str) -> tuple[str, int]:
        u = urlparse(url)
        return u.hostname or "127.0.0.1", u.port or (443 if u.scheme == "https" else 80)

    for net in lab.networks.values():
        add("wol", net.name, net.broadcast, net.wol_port, "udp")
    for vc in lab.vcenters.values():
        if any(m.vcenter == vc.name for m in lab.vms):
            add("vcenter", vc.name, *url_addr(vc.url), "https")
    if _module_exists("labctl.sim.redfish"):
        for m in lab.machines.values():
            if m.bmc is not None:
                add("redfish", m.name, *url_addr(m.bmc.url), "https")
    if _module_exists("labctl.sim.unity"):
        for arr in lab.storage.values():
            add("unity", arr.name, *url_addr(arr.url), "https")
    if _module_exists("labctl.sim.ssh"):
        for m in lab.machines.values():
            if m.ssh is not None and m.ssh_host:
                add("ssh", m.name, m.ssh_host, m.ssh.port, "ssh")
    return out


def _module_exists(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def check_ports(lab: Lab) -> None:
    """Raise PortInUseError naming the first address the lab needs that something else holds."""
    for kind, name, host, port, proto in _expected_ports(lab):
        check_address_free(kind, name, host, port, udp=proto == "udp")


def tcp_answers(host: str, port: int, timeout_s: float = HEALTH_TIMEOUT_S) -> str:
    """'' if a TCP connection to host:port succeeds, else why not."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return ""
    except OSError as exc:
        return exc.strerror or str(exc)


def _fault_arg(f: FaultSpec | str) -> str:
    if isinstance(f, str):
        parse_fault_option(f)  # validate here, with the CLI's message
        return f
    return f.model_dump_json()


def _fault_spec(f: FaultSpec | str) -> FaultSpec:
    return parse_fault_option(f) if isinstance(f, str) else f


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


# --- the handle ----------------------------------------------------------------------------------


class SimulatedLab:
    """The simulated lab's processes for one lab file. A context manager: stops everything on exit.

    ``faults`` are added to the lab file's own (``lab.faults``): FaultSpec objects or
    ``"KIND:TARGET[,TARGET]"`` strings as `labctl sim up --fault` takes them. ``state_dir`` defaults
    to ``$LABCTL_STATE_DIR`` or the project's `.labctl/sim/`. ``twin`` is ``auto`` (the physical
    twin if built, else the placeholder), ``placeholder`` or ``physical``.

    The processes live and die with the process that starts them (``prctl(PR_SET_PDEATHSIG)``:
    a run that is SIGKILLed leaves no simulator behind), unless ``detach`` (`labctl sim up`: the
    lab outlives the command, until `labctl sim down`).
    """

    def __init__(
        self,
        lab_file: str | os.PathLike[str] | None = None,
        configuration: str | None = None,
        faults: Iterable[FaultSpec | str] = (),
        state_dir: str | os.PathLike[str] | None = None,
        *,
        twin: str = "auto",
        startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
        detach: bool = False,
    ):
        self.detach = detach
        self.lab_file = Path(lab_file) if lab_file is not None else default_lab_file()
        self.configuration = configuration
        self.faults: list[FaultSpec | str] = list(faults)
        for f in self.faults:
            _fault_arg(f)
        self.state_dir = resolve_state_dir(state_dir)
        self.twin = twin
        self.startup_timeout_s = startup_timeout_s
        self.warnings: list[str] = []
        self._lab: Lab | None = None
        self._state: SimState | None = None
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._records: list[ProcessRecord] = []
        self._owner = False

    # --- finding a running one -----------------------------------------------------------------
    @classmethod
    def attach(cls, state_dir: str | os.PathLike[str] | None = None) -> SimulatedLab:
        """A handle on the simulated lab already running for ``state_dir`` (``up`` by another process).

        Leaving a ``with`` block of an attached handle does not stop the lab; :meth:`stop` does.
        """
        sd = resolve_state_dir(state_dir)
        state = read_state(sd)
        if state is None:
            raise SimNotRunningError(sd)
        sim = cls(state.lab_file, state.configuration, state_dir=sd, twin=state.twin or "auto")
        sim._state = state
        return sim

    # --- properties ------------------------------------------------------------------------------
    @property
    def state(self) -> SimState:
        if self._state is None:
            raise SimNotRunningError(self.state_dir)
        return self._state

    @property
    def lab(self) -> Lab:
        if self._lab is None:
            self._lab = load_lab(self.lab_file, self.configuration, every_machine=True)
        return self._lab

    @property
    def clock(self) -> LabClock:
        """The lab clock, with the simulator's anchor and scale: it agrees with the simulated devices."""
        return self.state.clock

    @property
    def endpoints(self) -> list[EndpointInfo]:
        return list(self.state.endpoints)

    @property
    def secrets_file(self) -> Path:
        """The YAML file holding the credentials the simulated endpoints accept (for LABCTL_SECRETS_FILE)."""
        return Path(self.state.secrets_file) if self._state else self.state_dir / "secrets.yaml"

    @property
    def env(self) -> dict[str, str]:
        """Environment for a labctl process that should talk to this simulated lab."""
        env = {SECRETS_FILE_VAR: str(self.secrets_file), "LABCTL_LAB": str(self.lab_file)}
        if self.configuration:
            env["LABCTL_CONFIG"] = self.configuration
        return env

    def endpoint(self, kind: str, name: str) -> EndpointInfo:
        for e in self.state.endpoints:
            if e.kind == kind and e.name == name:
                return e
        known = sorted({e.kind for e in self.state.endpoints})
        raise LabctlError(
            f"the simulated lab has no {kind} endpoint for {name!r} (kinds: {', '.join(known)})"
        )

    @property
    def running(self) -> bool:
        return self._state is not None and all(is_running(p) for p in self._state.processes)

    # --- start ---------------------------------------------------------------------------------
    def __enter__(self) -> SimulatedLab:
        if self._state is None:
            self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._owner:
            self.stop()

    def start(self) -> SimulatedLab:
        """Start every process, wait until each endpoint answers, write the state file."""
        t0 = time.monotonic()
        ensure_state_dir(self.state_dir)
        with up_lock(self.state_dir):
            existing = read_state(self.state_dir)
            if existing is not None:
                if any(is_running(p) for p in existing.processes) and not existing.orphaned:
                    raise SimAlreadyRunningError(existing)
                # a stale state file (crashed, rebooted), or a lab whose run was killed: stop it all
                stop_processes(existing.processes)
                remove_state(self.state_dir)
            lab = self.lab
            secrets = sim_secrets(lab, self.state_dir)
            self.warnings.extend(secrets.warnings)
            check_ports(lab)
            self._owner = True
            try:
                self._state = self._launch(lab, secrets, t0)
                write_state(self._state)
            except BaseException:
                self._cleanup_launch()
                raise
        return self

    def _launch(self, lab: Lab, secrets: SimSecrets, t0: float) -> SimState:
        specs = [*lab.faults, *(_fault_spec(f) for f in self.faults)]
        anchor = time.time()
        marker = str(self.state_dir)
        self._records = []
        ready_file = self.state_dir / SIMD_READY_FILE
        ready_file.unlink(missing_ok=True)

        # tied to this process's life unless detached (one preexec_fn for both kinds of process)
        tie = None if self.detach else tie_to_parent()
        # the vCenter simulators first (they take ~0.1 s), then the simulator process
        vcsims: list[VcsimLaunch] = []
        for vc in lab.vcenters.values():
            if not any(m.vcenter == vc.name for m in lab.vms):
                continue
            launch = launch_vcenter(
                lab,
                vc,
                password=secrets.values.get(vc.password, ""),
                state_dir=self.state_dir,
                faults=specs,
                preexec_fn=tie,
            )
            self._children[launch.process.pid] = launch.process
            self._records.append(
                ProcessRecord(f"vcsim:{vc.name}", launch.process.pid, marker, str(launch.log_file))
            )
            vcsims.append(launch)

        cmd = [
            sys.executable,
            "-m",
            "labctl.sim.simd",
            "--state-dir",
            marker,
            "--lab",
            str(Path(lab.source_file)),
            "--anchor",
            repr(anchor),
            "--twin",
            self.twin,
        ]
        if self.configuration:
            cmd += ["--config", self.configuration]
        for f in self.faults:
            cmd += ["--fault", _fault_arg(f)]
        log_path = self.state_dir / SIMD_LOG
        with open(log_path, "wb") as log:  # a fresh log per start
            simd = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                cwd=self.state_dir,
                preexec_fn=tie,  # only prctl and getppid after the fork
            )
        self._children[simd.pid] = simd
        self._records.insert(0, ProcessRecord("simd", simd.pid, marker, str(log_path)))

        # wait for every ready report
        deadline = time.monotonic() + self.startup_timeout_s
        vc_ready: dict[str, dict[str, Any]] = {}
        report: dict[str, Any] | None = None
        while True:
            for launch in vcsims:
                if launch.vcenter.name not in vc_ready:
                    r = launch.poll_ready()
                    if r is not None:
                        vc_ready[launch.vcenter.name] = r
            if report is None:
                report = self._poll_simd(simd, ready_file, log_path)
            if report is not None and len(vc_ready) == len(vcsims):
                break
            if time.monotonic() > deadline:
                waiting = [f"vCenter {v.vcenter.name}" for v in vcsims if v.vcenter.name not in vc_ready]
                if report is None:
                    waiting.insert(0, "the simulator process")
                raise SimStartError(
                    f"the simulated lab did not start within {self.startup_timeout_s:g} s "
                    f"(waiting for {', '.join(waiting)}); see {log_path}:\n{_log_tail(log_path)}"
                )
            time.sleep(0.02)

        endpoints = [EndpointInfo(**e) for e in report["endpoints"]] + [v.info for v in vcsims]
        state = SimState(
            lab_file=str(Path(lab.source_file)),
            configuration=self.configuration,
            lab_name=lab.name,
            state_dir=marker,
            anchor_wall_s=float(report["anchor_wall_s"]),
            time_scale=float(report["time_scale"]),
            processes=list(self._records),
            endpoints=endpoints,
            skipped=[SkippedKind(**s) for s in report.get("skipped", [])],
            secrets_file=str(secrets.file),
            twin=str(report.get("twin", self.twin)),
            faults=[f.model_dump_json() if isinstance(f, FaultSpec) else f for f in self.faults],
            control=dict(report.get("control", {})),
            started_at=anchor,
            owner_pid=0 if self.detach else os.getpid(),
        )
        self._state = state
        bad = [h for h in self.health() if not h.ok]
        if bad:
            h = bad[0]
            raise SimStartError(
                f"{len(bad)} endpoint(s) do not answer after start, e.g. {h.info.kind} {h.info.name} at "
                f"{h.info.host}:{h.info.port}: {h.detail} (see {log_path})"
            )
        state.startup_s = round(time.monotonic() - t0, 3)
        return state

    def _poll_simd(
        self, simd: subprocess.Popen[bytes], ready_file: Path, log_path: Path
    ) -> dict[str, Any] | None:
        report = None
        if ready_file.exists():
            with contextlib.suppress(ValueError, OSError):
                report = json.loads(ready_file.read_text())
        if report is not None and report.get("state") == "failed":
            with contextlib.suppress(subprocess.TimeoutExpired):
                simd.wait(timeout=5)
            if report.get("error_kind") == "port_in_use":
                raise PortInUseError(report["kind"], report["name"], report["host"], int(report["port"]))
            raise SimStartError(
                f"the simulator process failed to start: {report.get('error')} (see {log_path})"
            )
        if report is None and simd.poll() is not None:
            raise SimStartError(
                f"the simulator process exited with status {simd.returncode} before it was ready; "
                f"see {log_path}:\n{_log_tail(log_path)}"
            )
        return report

    def _cleanup_launch(self) -> None:
        stop_processes(self._records, children=self._children)
        for child in self._children.values():
            with contextlib.suppress(Exception):
                child.wait(timeout=1)
        self._children.clear()
        self._state = None
        self._owner = False
        (self.state_dir / SIMD_READY_FILE).unlink(missing_ok=True)

    # --- status --------------------------------------------------------------------------------
    def control_status(self, timeout_s: float = 5.0) -> dict[str, Any]:
        """The simulator process's own view: endpoints, twin state of their machines, stats."""
        return self._control("GET", "/status", timeout_s=timeout_s)

    def add_fault(self, fault: FaultSpec | str, timeout_s: float = 5.0) -> None:
        """Inject a fault into the running simulator (Python endpoints; the vCenter takes faults at start)."""
        spec = _fault_spec(fault)
        body = {
            "fault": f"{spec.kind.value}:{','.join(spec.targets)}",
            "after_s": spec.after_s,
            "probability": spec.probability,
        }
        self._control("POST", "/faults", body, timeout_s)

    def clear_faults(self, timeout_s: float = 5.0) -> None:
        self._control("DELETE", "/faults", None, timeout_s)

    def _control(self, method: str, path: str, body: Any = None, timeout_s: float = 5.0) -> dict[str, Any]:
        c = self.state.control
        if not c:
            raise LabctlError("the simulator process has no control port")
        req = urllib.request.Request(
            f"http://{c['host']}:{c['port']}{path}",
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"X-Labctl-Token": c["token"], "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                return dict(json.loads(resp.read()))
        except OSError as exc:
            raise LabctlError(f"the simulator process does not answer on its control port: {exc}") from None

    def health(self, timeout_s: float = HEALTH_TIMEOUT_S) -> list[EndpointHealth]:
        """Which endpoints answer: TCP connect for TCP endpoints, simd's report for UDP (WoL)."""
        state = self.state
        simd = next((p for p in state.processes if p.role == "simd"), None)
        twin_view: dict[tuple[str, str], dict[str, Any]] = {}
        simd_error = ""
        try:
            status = self.control_status(timeout_s=max(timeout_s, 2.0))
            twin_view = {(e["kind"], e["name"]): e for e in status.get("endpoints", [])}
        except LabctlError as exc:
            simd_error = str(exc)

        def check(info: EndpointInfo) -> EndpointHealth:
            if info.protocol == "udp":
                if simd_error:
                    return EndpointHealth(info, "down", simd_error)
                if (info.kind, info.name) in twin_view:
                    return EndpointHealth(info, "answers", "bound")
                return EndpointHealth(info, "down", "the simulator process does not report it")
            why = tcp_answers(info.host, info.port, timeout_s)
            if not why:
                return EndpointHealth(info, "answers")
            view = twin_view.get((info.kind, info.name), {})
            if view.get("machine_up") is False and info.kind == "ssh":
                return EndpointHealth(info, "off", f"power {view.get('power', 'Off')} (twin)")
            return EndpointHealth(info, "down", why)

        with ThreadPoolExecutor(max_workers=32) as pool:
            out = list(pool.map(check, state.endpoints))
        if simd is not None and not is_running(simd):
            out = [
                h
                if h.info.kind == "vcenter"
                else EndpointHealth(h.info, "down", "simulator process not running")
                for h in out
            ]
        return out

    def process_status(self) -> list[tuple[ProcessRecord, bool]]:
        return [(p, is_running(p)) for p in self.state.processes]

    # --- stop ----------------------------------------------------------------------------------
    def stop(self, timeout_s: float = 5.0) -> list[ProcessRecord]:
        """Stop every process this lab's `up` started (by pid), remove the state file.

        Returns the processes that would not die (an empty list: SIGKILL follows SIGTERM)."""
        with up_lock(self.state_dir):
            state = self._state or read_state(self.state_dir)
            if state is None:
                return []
            left = stop_processes(state.processes, term_timeout_s=timeout_s, children=self._children)
            for child in self._children.values():
                with contextlib.suppress(Exception):
                    child.wait(timeout=1)
            self._children.clear()
            if not left:
                remove_state(self.state_dir)
                (self.state_dir / SIMD_READY_FILE).unlink(missing_ok=True)
            self._state = None
            self._owner = False
            return left


def serving(
    lab_file: str | os.PathLike[str],
    configuration: str | None = None,
    state_dir: str | os.PathLike[str] | None = None,
) -> SimulatedLab | None:
    """The running simulated lab of ``state_dir`` if it serves ``lab_file`` in ``configuration``
    (None: the file's default); None when none runs; :class:`SimLabMismatchError` when the one
    that runs is another file or configuration."""
    try:
        sim = SimulatedLab.attach(state_dir)
    except SimNotRunningError:
        return None
    if not sim.running:
        return None
    state = sim.state
    wanted_file = Path(lab_file).resolve()
    wanted_cfg = configuration or _default_configuration(wanted_file)
    running_cfg = state.configuration or _default_configuration(Path(state.lab_file))
    if Path(state.lab_file).resolve() != wanted_file or running_cfg != wanted_cfg:
        raise SimLabMismatchError(state, running_cfg, wanted_file, wanted_cfg, configuration)
    return sim


def _default_configuration(lab_file: Path) -> str | None:
    try:
        conf = load_lab(lab_file).configuration
    except LabctlError:
        return None
    return conf.name if conf else None


def leftover_processes(state_dir: Path) -> list[int]:
    """Pids of live processes whose command line names ``state_dir`` (there should be none after down)."""
    marker = str(state_dir)
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            cl = cmdline(int(entry.name))
            if marker in cl:
                out.append(int(entry.name))
    return out


def describe_faults(faults: Sequence[str]) -> list[str]:
    out = []
    for f in faults:
        if f.startswith("{"):
            spec = FaultSpec.model_validate_json(f)
            out.append(f"{spec.kind.value}:{','.join(spec.targets)}")
        else:
            out.append(f)
    return out

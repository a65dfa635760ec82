"""The simulated lab's run-time folder and state file (`.labctl/sim/state.json`).

`labctl sim up` (or :class:`labctl.sim.simlab.SimulatedLab`) writes the state file once every
process answers; `status`, `down` and :meth:`SimulatedLab.attach` read it. It records what a later
command needs to find and stop what `up` started: the processes (pid plus a marker string that is
on their command line, so a recycled pid is never signalled), the lab file and configuration, the
lab clock's anchor and scale, and every endpoint with kind/name/host/port.

The folder is the project's `.labctl/sim/` (git-ignored, next to the generated `secrets.yaml`
that :mod:`labctl.inventory.credentials` falls back to), or `$LABCTL_STATE_DIR` (tests use tmp
dirs).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from labctl import lifetime
from labctl.clock import LabClock
from labctl.errors import LabctlError
from labctl.inventory.credentials import SIM_SECRETS_FILE
from labctl.sim.endpoint import EndpointInfo

STATE_DIR_VAR = "LABCTL_STATE_DIR"
STATE_FILE = "state.json"
LOCK_FILE = "up.lock"
SIMD_READY_FILE = "simd.ready.json"
SIMD_LOG = "simd.log"
STATE_VERSION = 1
# how long `up`/`down` wait for another one on the same state dir: longer than a start may take
# (DEFAULT_STARTUP_TIMEOUT_S of labctl.sim.simlab, the health check, the clean-up of a failed start)
LOCK_TIMEOUT_S = 180.0


def default_state_dir() -> Path:
    """The project's run-time folder for the simulated lab (where `secrets.yaml` lands too)."""
    return SIM_SECRETS_FILE.parent


def resolve_state_dir(state_dir: str | os.PathLike[str] | None = None) -> Path:
    """``state_dir`` if given, else ``$LABCTL_STATE_DIR``, else the project's `.labctl/sim/`."""
    if state_dir is not None:
        return Path(state_dir).resolve()
    env = os.environ.get(STATE_DIR_VAR)
    if env:
        return Path(env).resolve()
    return default_state_dir()


@dataclass(frozen=True)
class ProcessRecord:
    role: str  # "simd", "vcsim:<vcenter name>"
    pid: int
    marker: str  # a string on the process's command line (the state dir): guards against pid reuse
    log: str = ""


@dataclass(frozen=True)
class SkippedKind:
    kind: str
    reason: str


@dataclass
class SimState:
    lab_file: str
    configuration: str | None
    lab_name: str
    state_dir: str
    anchor_wall_s: float
    time_scale: float
    processes: list[ProcessRecord]
    endpoints: list[EndpointInfo]
    skipped: list[SkippedKind] = field(default_factory=list)
    secrets_file: str = ""
    twin: str = ""
    faults: list[str] = field(default_factory=list)  # KIND:TARGET[,TARGET] (after_s/probability in notes)
    control: dict[str, Any] = field(default_factory=dict)  # simd's control port: host, port, token
    started_at: float = 0.0
    startup_s: float = 0.0
    # the process the simulator lives and dies with (a `labctl run` that started it; its processes
    # get SIGTERM when it dies); 0: detached (`labctl sim up`), it runs until `labctl sim down`
    owner_pid: int = 0
    version: int = STATE_VERSION

    @property
    def orphaned(self) -> bool:
        """Started by a process that is gone (killed before it could stop it): nobody owns it."""
        return self.owner_pid > 0 and not pid_alive(self.owner_pid)

    @property
    def clock(self) -> LabClock:
        return LabClock(scale=self.time_scale, anchor_wall_s=self.anchor_wall_s)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimState:
        data = dict(data)
        data["processes"] = [ProcessRecord(**p) for p in data.get("processes", [])]
        data["endpoints"] = [EndpointInfo(**e) for e in data.get("endpoints", [])]
        data["skipped"] = [SkippedKind(**s) for s in data.get("skipped", [])]
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def state_path(state_dir: Path) -> Path:
    return state_dir / STATE_FILE


def read_state(state_dir: Path) -> SimState | None:
    """The state file, or None if there is none (or it is unreadable: a crashed `up`)."""
    path = state_path(state_dir)
    try:
        return SimState.from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError):
        return None


def write_text_atomic(path: Path, data: str, mode: int = 0o600) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def write_state(state: SimState) -> None:
    write_text_atomic(state_path(Path(state.state_dir)), state.to_json())


def remove_state(state_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        state_path(state_dir).unlink()


def ensure_state_dir(state_dir: Path) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        state_dir.chmod(0o700)  # secrets, keys and certificates live here


@contextlib.contextmanager
def up_lock(state_dir: Path, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Serialise `up`/`down` on one state dir (two `labctl sim up` at once).

    Waits at most ``timeout_s`` for another holder (an `up` holds it while its lab starts), then
    raises LabctlError."""
    ensure_state_dir(state_dir)
    path = state_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LabctlError(
                        f"another `labctl sim up` or `down` has held {path} for {timeout_s:g} s;"
                        " let it finish, or see `labctl sim status`"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# --- processes -----------------------------------------------------------------------------------


def _proc_state(pid: int) -> str | None:
    """The process state letter from /proc (``Z`` for a zombie), or None if there is no process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:
        return "?"
    # "pid (comm) S ..." -- comm may hold spaces and parentheses
    return stat.rsplit(")", 1)[-1].split()[0]


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def pid_alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    st = _proc_state(pid)
    return st is not None and st not in ("Z", "X")


def tie_to_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that ties a simulator to this process's life (SIGTERM when the thread that
    started it ends), so a simulator started by a run is stopped with it even when the run is
    SIGKILLed; where there is no such call, the state file's ``owner_pid`` tells a later run."""
    return lifetime.tie_to_parent(signal.SIGTERM)


def is_running(proc: ProcessRecord) -> bool:
    """The process is alive (not a zombie) and still the one we started (marker on its cmdline)."""
    st = _proc_state(proc.pid)
    if st is None or st in ("Z", "X"):
        return False
    return proc.marker in cmdline(proc.pid)


def _signal(proc: ProcessRecord, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        # Our processes lead their own process group (start_new_session): signal the group so
        # anything they started goes too -- but only if the pid still leads that group.
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)


def stop_processes(
    procs: list[ProcessRecord],
    term_timeout_s: float = 5.0,
    kill_timeout_s: float = 3.0,
    children: Mapping[int, subprocess.Popen[bytes]] | None = None,
) -> list[ProcessRecord]:
    """SIGTERM each process we started, SIGKILL after ``term_timeout_s``. Returns survivors (none).

    ``children`` are the Popen objects when this process started them (a SimulatedLab): they are
    polled so no zombie is left behind. A zombie counts as stopped either way.
    """
    children = children or {}
    live = [p for p in procs if is_running(p)]
    for sig, timeout_s in ((signal.SIGTERM, term_timeout_s), (signal.SIGKILL, kill_timeout_s)):
        for p in live:
            _signal(p, sig)
        live = _wait_gone(live, timeout_s, children)
    for child in children.values():  # reap any that had already exited before we began
        child.poll()
    return live


def _wait_gone(
    live: list[ProcessRecord], timeout_s: float, children: Mapping[int, subprocess.Popen[bytes]]
) -> list[ProcessRecord]:
    """Those of ``live`` still running after ``timeout_s`` (reaping our own children meanwhile)."""

    def alive(p: ProcessRecord) -> bool:
        # our own child: waitpid is exact and reaps it. /proc is not: an exiting process loses its
        # command line (so its marker) before it becomes a zombie that waitpid can collect.
        child = children.get(p.pid)
        return child.poll() is None if child is not None else is_running(p)

    deadline = time.monotonic() + timeout_s
    while live and time.monotonic() < deadline:
        live = [p for p in live if alive(p)]
        if live:
            time.sleep(0.05)
    return live

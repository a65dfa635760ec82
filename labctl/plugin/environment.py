"""The lab a plan session drives: a LabSession per configuration, the simulator when the lab is
simulated, and the promise that the clients end in the power state they started in.

For a simulated lab it attaches to a running ``labctl sim up`` of the same file and configuration,
or starts one for the session (and restarts its own one when a plan asks for another
configuration, e.g. the HA comparison). Real labs are used as they are.

The end-of-session restore is the lab's strategy (:mod:`labctl.lab.strategy`) returning the
clients to the snapshot taken when the configuration was first used; it waits unless ``abort`` is
set (a second interrupt), and then says which clients it left on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from labctl.clock import LabClock
from labctl.errors import BadInputError, LabctlError
from labctl.inventory.load import load_lab
from labctl.inventory.model import Lab
from labctl.lab.power import State
from labctl.lab.session import DriverSettings, LabSession
from labctl.lab.strategy import StrategyResult

log = logging.getLogger(__name__)


class LabEnvironment:
    def __init__(
        self,
        lab_file: Path | None,
        base_lab: Lab,
        *,
        restore_timeout_s: float = 300.0,
        abort: threading.Event | None = None,
        say: Callable[[str], None] = lambda _: None,
    ):
        self.lab_file = lab_file
        self.base_lab = base_lab
        self.restore_timeout_s = restore_timeout_s
        self.abort = abort or threading.Event()  # a second interrupt: stop waiting for the restore
        self.say = say  # one-line messages a person must see (what a restore left on)
        self._config: str | None = None
        self._session: LabSession | None = None
        self._sim: object | None = (
            None  # labctl.sim.simlab.SimulatedLab (imported lazily: real labs need no sim)
        )
        self._owned_sim = False
        self._snapshots: dict[str, dict[str, State]] = {}  # configuration -> clients' states at first use
        self.versions: dict[str, str] = {}
        self.sim_startups_s: list[float] = []
        self.last_restore: StrategyResult | None = None

    @property
    def configuration(self) -> str | None:
        return self._config

    @property
    def active(self) -> LabSession | None:
        return self._session

    def default_configuration(self) -> str | None:
        return self.base_lab.configuration.name if self.base_lab.configuration else None

    def session(self, configuration: str | None = None) -> LabSession:
        """The lab session for ``configuration`` (default: the session's), starting what it needs."""
        cfg = configuration or self.default_configuration()
        if self._session is not None and cfg == self._config:
            return self._session
        if self._session is not None:
            self._restore()
            self._session.close()
            self._session = None
        lab = load_lab(self.lab_file, cfg)
        clock = self._ensure_sim(cfg) if lab.simulated else LabClock(scale=lab.time_scale)
        self._session = LabSession(lab, clock, settings=driver_settings(lab))
        self._config = cfg
        key = cfg or ""
        if key not in self._snapshots:
            self._snapshots[key] = self._session.strategy.snapshot(lab.clients)
            on = sorted(n for n, st in self._snapshots[key].items() if st in (State.ON, State.BOOTING))
            if on:  # a dirty lab is said, not silently used: each cell turns its clients off first
                self.say(
                    f"found {len(on)} client(s) on before the run ({_selector(on)}): each cell turns "
                    "its clients off first, and the run turns these on again at its end"
                )
        if not self.versions:
            self.versions = read_versions(self._session)
        return self._session

    def _ensure_sim(self, cfg: str | None) -> LabClock:
        from labctl.sim.simlab import SimNotRunningError, SimulatedLab  # the simulator: only simulated labs

        lab_file = (self.lab_file or Path(self.base_lab.source_file)).resolve()
        if self._sim is not None and self._owned_sim:
            sim = self._sim
            assert isinstance(sim, SimulatedLab)
            if sim.configuration == cfg:
                return sim.clock
            log.info("restarting the simulated lab in configuration %s", cfg)
            sim.stop()
            self._sim = None
        if self._sim is None:
            try:
                running = SimulatedLab.attach()
            except SimNotRunningError:
                running = None
            if running is not None and running.running and running.state.orphaned:
                self.say(  # a dirty lab is said, and never attached to
                    f"found a simulated lab left running by a run that ended without stopping it "
                    f"(pid {running.state.owner_pid}): stopping it and starting a fresh one"
                )
                running.stop()
                running = None
            if running is not None and running.running:
                state = running.state
                same_file = Path(state.lab_file).resolve() == lab_file
                file_default = load_lab(lab_file).configuration
                running_cfg = state.configuration or (file_default.name if file_default else None)
                if same_file and running_cfg == cfg:
                    self._sim, self._owned_sim = running, False
                    return running.clock
                raise BadInputError(
                    f"a simulated lab is already running ({state.lab_file}, configuration "
                    f"{state.configuration}) but this run needs {lab_file.name} in configuration {cfg}: "
                    "stop it with `labctl sim down`, or run the plan with --lab-config "
                    f"{state.configuration}"
                )
            sim = SimulatedLab(lab_file, cfg).start()  # tied to this run: stopped with it, even if killed
            self.sim_startups_s.append(sim.state.startup_s)
            self._sim, self._owned_sim = sim, True
        assert isinstance(self._sim, SimulatedLab)
        return self._sim.clock

    def _restore(self) -> None:
        """Return the clients to the power state they had when this configuration was first used.

        Bounded by ``restore_timeout_s`` lab seconds; a failure is logged and said, never raised,
        because it runs on the way out (teardown, an interrupt) where what was measured is kept."""
        s = self._session
        if s is None:
            return
        snapshot = self._snapshots.get(self._config or "", {})
        try:
            res = s.strategy.restore(snapshot, timeout_s=self.restore_timeout_s, stop=self.abort)
        except (LabctlError, OSError) as exc:
            log.warning("could not restore the clients' power state: %s", exc)
            s.timeline.append("restore.failed", "clients", reason=str(exc))
            self.say(f"restore failed: {exc} (check the clients with `labctl power status clients`)")
            return
        self.last_restore = res
        if not res.ok:
            left = sorted(res.failed)
            self.say(
                f"restore {'abandoned' if res.stopped else 'incomplete'}: {len(left)} client(s) not back "
                f"to their state before the run: {', '.join(left[:20])}{' ...' if len(left) > 20 else ''} "
                f"(see `labctl power status clients`; `labctl power off {_selector(left)}`)"
            )

    def close(self) -> None:
        """Restore power, close the session, stop a simulator this environment started."""
        try:
            self._restore()
        finally:
            if self._session is not None:
                self._session.close()
                self._session = None
            if self._sim is not None and self._owned_sim:
                from labctl.sim.simlab import SimulatedLab  # the simulator: only simulated labs

                assert isinstance(self._sim, SimulatedLab)
                self._sim.stop()
            self._sim = None


def _selector(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ",".join(names[:5]) + (",..." if len(names) > 5 else "")


def driver_settings(lab: Lab) -> DriverSettings:
    """Room for every machine's SSH session at once: a copy/reboot cell holds one per copier for
    the whole copy while the rebooters' shutdown commands must go out at the same moment."""
    default = DriverSettings()
    with_ssh = sum(1 for m in lab.machines.values() if m.ssh is not None)
    return DriverSettings(ssh_max_parallel=max(default.ssh_max_parallel, with_ssh + 16))


def read_versions(session: LabSession) -> dict[str, str]:
    """Firmware and software versions read from the endpoints, for the report's environment."""
    from labctl.lab.preflight import Preflight  # only for the report's environment page

    versions: dict[str, str] = {}
    try:
        for r in Preflight(session).run():
            if r.ok and r.version and r.kind in ("redfish", "vcenter", "storage"):
                versions[r.endpoint] = r.version
    except (LabctlError, OSError) as exc:  # versions are nice to have; the run goes on
        log.warning("could not read endpoint versions: %s", exc)
    return versions

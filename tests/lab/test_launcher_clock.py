"""Launcher clocks on the controller's timeline (labctl.lab.launchers.clock): the times a launcher
reports are its own machine's clock, and the controller moves them onto its own before they reach
the run, so a logon sits where it happened against the arrays and hosts.

The end-to-end test runs a real `labctl launcher` daemon whose clock is 40 s ahead: a few lines
started in its place shift ``time.time`` (the one clock the daemon reads) and then run ``labctl
launcher serve`` unchanged; the sessions' workloads keep this machine's clock, which the daemon
places on its own as it does a desktop's. (Debian's libfaketime was tried first: under it Python
3.11's ``time.sleep`` fails with EINVAL when the monotonic clock is left alone, and timed waits
hang when it is not.) The controller reaches it over
a real OpenSSH server (tests/realsessions/conftest.py's sshd) with the ``custom`` connector starting
`labctl workload` per session, and a session storm of one session runs through it all. Every time
the cell recorded (session states, the logon waterfall, the workload's operations) must fall inside
the controller's own before/after window, within the correction's uncertainty; uncorrected they
would sit 40 s later.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from labctl.clock import LabClock
from labctl.errors import EndpointError
from labctl.inventory.load import load_lab
from labctl.lab.launchers import open_launchers
from labctl.lab.launchers.clock import MAX_OFFSET_S, ClockReading, Clocks
from labctl.lab.launchers.model import LogonPhase, LogonWaterfall, OperationTime, SessionEvent, SessionState
from labctl.lab.session import LabSession
from labctl.records.samples import Sample
from labctl.records.series import Series
from labctl.scenarios.base import Progress
from labctl.scenarios.session_storm import SessionStorm, SessionStormSettings
from labctl.workload import zipapp_build
from tests.realsessions.conftest import lab_file
from tests.realsessions.conftest import sshd as sshd  # a module-scoped fixture, here for this module
from tests.realsessions.xrdp_server import free_port

AHEAD_S = 40.0  # the shifted launcher's clock, ahead of this machine's
LAUNCHER = "launcher-ssh"  # the name lab_file gives its launcher
FAST_PROFILES = {"task": {"think_s": 0.3, "operations": [{"name": "cpu", "kind": "cpu", "work_mb": 1}]}}
REPO = Path(__file__).resolve().parents[2]


# -- the arithmetic, on readings given by hand -------------------------------------------------


def test_a_reading_gives_offset_uncertainty_and_the_smallest_correction_it_allows() -> None:
    r = ClockReading(sent_s=100.0, launcher_ts=141.5, answered_s=102.0)
    assert r.rtt_s == 2.0 and r.uncertainty_s == 1.0
    assert r.offset_s == 40.5  # the middle of the call
    assert r.correction_s == 39.5  # the launcher read its clock at the call's end at the latest
    inside = ClockReading(sent_s=100.0, launcher_ts=101.2, answered_s=102.0)
    assert inside.correction_s == 0.0  # a clock inside the call's window is not moved
    behind = ClockReading(sent_s=100.0, launcher_ts=70.0, answered_s=102.0)
    assert behind.correction_s == -30.0 and behind.offset_s == -31.0


def test_the_shortest_round_trip_of_the_window_is_kept_and_old_readings_give_way() -> None:
    c = Clocks(window_s=60.0)
    c.saw("l1", ClockReading(0.0, 45.0, 10.0))  # offset in [35, 45]: a queued call
    c.saw("l1", ClockReading(20.0, 60.5, 21.0))  # [39.5, 40.5]: the best
    c.saw("l1", ClockReading(30.0, 74.0, 34.0))
    assert c.correction_s("l1") == 39.5
    rec = c.record()["l1"]
    assert (rec.offset_s, rec.uncertainty_s, rec.readings) == (40.0, 0.5, 3)
    c.saw("l1", ClockReading(100.0, 143.0, 102.0))  # 80 s later: only this one is in the window
    assert c.correction_s("l1") == 41.0
    assert c.correction_s("other") == 0.0  # never measured: not moved
    extra = c.extra()
    assert extra["launcher_clock_offset_s.l1"] == 42.0
    assert extra["launcher_clock_uncertainty_s.l1"] == 1.0
    assert extra["launcher_clock_correction_s.l1"] == 41.0


def test_every_time_of_a_report_moves_and_nothing_else() -> None:
    c = Clocks()
    c.saw("l1", ClockReading(1000.0, 1040.0, 1000.0))
    ev = c.to_controller(SessionEvent("l1", "s1", "d1", "u1", SessionState.ACTIVE, 1050.0, login_s=7.0))
    assert (ev.ts, ev.login_s) == (1010.0, 7.0)  # durations are the launcher's own: unchanged
    op = c.to_controller(OperationTime("l1", "s1", 0, "cpu", 1060.0, 0.25))
    assert (op.start_ts, op.response_s) == (1020.0, 0.25)
    w = c.to_controller(
        LogonWaterfall(
            "l1",
            "s1",
            "d1",
            "u1",
            "custom",
            1045.0,
            5.0,
            (LogonPhase("shell_ready", True, 2.0, 1047.0), LogonPhase("brokering", False, why="not seen")),
        )
    )
    assert w.launch_ts == 1005.0 and w.total_s == 5.0
    assert [p.start_ts for p in w.phases] == [1007.0, None]
    other = SessionEvent("l2", "s2", "d2", "u2", SessionState.ACTIVE, 1050.0)
    assert c.to_controller(other) is other


def test_a_clock_beyond_the_bound_is_a_fault_naming_the_launcher_never_shifted() -> None:
    c = Clocks()
    with pytest.raises(EndpointError) as err:
        c.saw("vsi-07", ClockReading(1000.0, 1412.0, 1000.4))
    text = str(err.value)
    assert text.startswith("vsi-07: launcher clock: clock 412 s ahead of the controller")
    assert f"more than {MAX_OFFSET_S:g} s" in text and "set up NTP" in text
    assert c.record() == {}  # not kept: nothing is moved by it
    with pytest.raises(EndpointError, match="clock 400 s behind the controller"):
        c.saw("vsi-08", ClockReading(1000.0, 600.0, 1000.2))


# -- a real launcher 40 s ahead -----------------------------------------------------------------


# `labctl launcher ... serve` with the process's wall clock AHEAD_S ahead (argv: the shift, then
# labctl's own arguments); only this test starts it
SHIFTED_MAIN = """\
import runpy, sys, time

ahead_s = float(sys.argv.pop(1))
wall, wall_ns = time.time, time.time_ns
time.time = lambda: wall() + ahead_s
time.time_ns = lambda: wall_ns() + int(ahead_s * 1e9)
sys.argv[0] = "labctl"
runpy.run_module("labctl", run_name="__main__", alter_sys=True)
"""


@dataclass
class ShiftedLauncher:
    config: Path
    lab_file: Path
    key: Path


def _config(work: Path, pyz: Path) -> Path:
    profiles = work / "profiles.json"
    profiles.write_text(json.dumps(FAST_PROFILES))
    collector = free_port()
    cfg = {
        "name": LAUNCHER,
        "state_dir": str(work / LAUNCHER),
        "control": {"host": "127.0.0.1", "port": 0},
        "collector": {"bind": "127.0.0.1", "port": collector},
        "max_sessions": 4,
        "logon_timeout_s": 60,
        "logoff_timeout_s": 15,
        "connector": {
            "kind": "custom",
            # the session's client is the workload itself: on when it reports in, off when told
            "command": [
                sys.executable,
                str(pyz),
                "--report",
                f"http://127.0.0.1:{collector}",
                "--user",
                "{user}",
                "--session",
                "{session}",
                "--profiles",
                str(profiles),
                "--workdir",
                str(work / "desktops" / "{session}"),
            ],
        },
    }
    path = work / f"{LAUNCHER}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _fast_script(config: Path) -> str:
    """The protocol's client without the CLI's imports (`labctl launcher <verb>` is the same
    verbs.run behind click: about 2.5 s of Python per call on this machine, this under 1 s)."""
    client = config.parent / "launcher-client.py"
    client.write_text(
        "import pathlib, sys\n"
        "from labctl.launcher import config, verbs\n"
        "sys.exit(verbs.run(config.load(pathlib.Path(sys.argv[1])), sys.argv[2:]))\n"
    )
    return f"env PYTHONPATH={REPO} {sys.executable} {client} {config}"


class ShiftedDaemon:
    """`labctl launcher serve` on ``config`` with its wall clock ``ahead_s`` ahead; stopped by pid."""

    def __init__(self, config: Path, ahead_s: float):
        work = config.parent
        main = work / "shifted_main.py"
        main.write_text(SHIFTED_MAIN)
        self.log = work / f"{config.stem}-daemon.log"
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(main), f"{ahead_s:g}", "launcher", "--config", str(config), "serve"],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # {"event": "serving", ...} once both servers listen
        if not line:
            self.stop()
            raise AssertionError(f"launcher did not start: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _shifted_lab(work: Path, sshd: tuple[int, Path]) -> ShiftedLauncher:
    """A launcher configuration in ``work`` and a lab file reaching it over ``sshd``."""
    port, key = sshd
    cfg = _config(work, zipapp_build.build(work / "labctl-workload.pyz"))
    lab = lab_file(work, port, cfg)
    text = lab.read_text()
    script = f"env PYTHONPATH={REPO} {sys.executable} -m labctl launcher --config {cfg}"
    assert script in text
    lab.write_text(text.replace(script, _fast_script(cfg)))
    return ShiftedLauncher(cfg, lab, key)


@pytest.fixture(scope="module")
def shifted(sshd: tuple[int, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShiftedLauncher]:
    """A launcher AHEAD_S ahead, reached over sshd (one daemon for the module's tests)."""
    s = _shifted_lab(tmp_path_factory.mktemp("clock"), sshd)
    daemon = ShiftedDaemon(s.config, AHEAD_S)
    try:
        yield s
    finally:
        daemon.stop()


@dataclass
class Cell:
    """The cell runner's side of a scenario (labctl.scenarios.base.CellContext), in memory."""

    cell_id: str = "session_storm-clock-001"
    stop: threading.Event = field(default_factory=threading.Event)
    abort: threading.Event = field(default_factory=threading.Event)
    samples: list[Sample] = field(default_factory=list)
    on_progress: Callable[[Progress], None] | None = None

    def progress(self, p: Progress) -> None:
        if self.on_progress is not None:
            self.on_progress(p)

    @contextlib.contextmanager
    def step(self, title: str) -> Iterator[None]:
        yield

    def series(
        self, *, source: str | None = None, entity: str | None = None, metric: str | None = None
    ) -> list[Series]:
        return []

    def record(self, samples: Iterable[Sample]) -> None:
        self.samples.extend(samples)


def _session(s: ShiftedLauncher, monkeypatch: pytest.MonkeyPatch) -> LabSession:
    monkeypatch.setenv("LABCTL_TEST_LAUNCHER_KEY", str(s.key))
    return LabSession(load_lab(s.lab_file), LabClock(scale=1.0))


def _settings(**over: object) -> SessionStormSettings:
    base: dict[str, object] = {
        "user_format": "user{n}",
        "record_sources": [],
        "login_interval_s": 0.0,
        "login_timeout_s": 90.0,
        "login_poll_s": 1.0,
        "session_poll_s": 1.0,
        "steady_s": 1.0,
        "logoff_timeout_s": 30.0,
    }
    return SessionStormSettings.model_validate({**base, **over})


@pytest.mark.integration
def test_a_storm_through_a_launcher_40_s_ahead_lands_on_the_controllers_timeline(
    shifted: ShiftedLauncher, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _session(shifted, monkeypatch) as lab:
        before = lab.clock.now()
        result = SessionStorm(1, _settings()).run(lab, Cell())
        after = lab.clock.now()
    assert result.lab_faults() == [], result.lab_faults()
    extra = result.extra()
    offset = extra[f"launcher_clock_offset_s.{LAUNCHER}"]
    u = extra[f"launcher_clock_uncertainty_s.{LAUNCHER}"]
    correction = extra[f"launcher_clock_correction_s.{LAUNCHER}"]
    assert isinstance(offset, float) and isinstance(u, float) and isinstance(correction, float)
    assert u < 10.0, f"calls too slow to place the launcher's clock ({u} s): the test cannot tell 40 s"
    assert abs(offset - AHEAD_S) <= u + 0.5, (offset, u)  # libfaketime's shift, measured
    assert abs(correction - AHEAD_S) <= 2 * u + 0.5, (correction, u)
    # every time the cell keeps is the controller's: inside the storm's before/after, within the
    # correction's own error (at most the kept call's round trip); uncorrected, 40 s later
    slack = 2 * u + 0.5
    book = result.book
    assert book is not None and len(book.logons) == 1 and book.operations
    times = {
        **{f"session {e.session} {e.state}": e.ts for e in book.latest.values()},
        **{f"logon {w.session}": w.launch_ts for w in book.logons.values()},
        **{
            f"logon {w.session} {p.name}": p.start_ts
            for w in book.logons.values()
            for p in w.phases
            if p.start_ts is not None
        },
        **{f"operation {o.session} #{o.index}": o.start_ts for o in book.operations},
        **{f"active {sid}": ts for sid, ts in book.logged_on.items()},
    }
    outside = {k: round(t - before, 2) for k, t in times.items() if not before - slack <= t <= after + slack}
    assert not outside, f"outside the storm's {after - before:.1f} s (±{slack:.1f}): {outside}"
    assert {e.state for e in book.latest.values()} == {SessionState.ENDED}


@pytest.mark.integration
def test_a_launcher_clock_beyond_the_bound_fails_the_greeting_with_its_name(
    shifted: ShiftedLauncher, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _session(shifted, monkeypatch) as lab:
        ls = open_launchers(lab, pool="pool")
        try:
            ls.clocks.max_offset_s = 30.0  # this launcher's 40 s is beyond it
            errors = ls.hello()
        finally:
            ls.close()
    assert list(errors) == [LAUNCHER]
    assert f"{LAUNCHER}: launcher clock: clock 4" in errors[LAUNCHER], errors
    assert "s ahead of the controller (more than 30 s" in errors[LAUNCHER]
    assert "set up NTP" in errors[LAUNCHER]
    assert ls.clock_record() == {}  # nothing was shifted by it


@pytest.mark.integration
def test_session_storm_breaks_off_after_its_own_launcher_unreadable_s(
    sshd: tuple[int, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """session_storm's own ``launcher_unreadable_s`` (it used to fall back to the 120 s default):
    its launcher killed in the steady phase, the cell breaks off after the 2 s it was given, naming
    the launcher, with what the launcher told before kept."""
    s = _shifted_lab(tmp_path, sshd)
    daemon = ShiftedDaemon(s.config, 0.0)
    killed = threading.Event()
    cell = Cell()

    def kill_in_steady(p: Progress) -> None:  # once the user is on and working
        if p.phase == "steady" and not killed.is_set():
            daemon.proc.kill()
            daemon.proc.wait(timeout=10)
            killed.set()
        if p.phase == "restore":  # its sessions cannot be logged off: do not wait out the 300 s
            cell.abort.set()

    cell.on_progress = kill_in_steady

    try:
        settings = _settings(steady_s=600.0, logoff_timeout_s=2.0, launcher_unreadable_s=2.0)
        with _session(s, monkeypatch) as lab:
            result = SessionStorm(1, settings).run(lab, cell)
    finally:
        daemon.stop()
    assert killed.is_set()
    assert result.broke_off.startswith(f"steady broke off: launcher {LAUNCHER} unreadable for "), (
        result.broke_off
    )
    assert "(more than 2 s)" in result.broke_off, result.broke_off
    assert result.window is not None and result.book is not None and result.book.operations
    assert f"launcher_clock_correction_s.{LAUNCHER}" in result.extra()

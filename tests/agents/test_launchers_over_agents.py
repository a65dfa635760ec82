"""Session launchers behind a site agent (issue 24): the controller speaks ``labctl-launcher/1``
to a launcher through the agent the inventory places it at, over NATS, and the scenarios do not
know it.

Everything is real: a nats-server hub on loopback (tests/nats_server.py), a `labctl agent`
process that starts the `labctl launcher` daemon it hosts (``kind: local``), the daemon's
``custom`` connector starting `labctl workload` (the desktop image's zipapp) per session, which
reports in to the launcher's collector, and the `session_storm` scenario driving it all through the
lab layer. The launcher has no SSH access: the agent is its only way in. Then the agent is killed
mid-storm: the cell is a lab fault naming the agent and its launcher, the sessions it held are
named (never replaced), and the launcher and the sessions' clients die with the agent (started
again, the launcher reports them failed: tests/realsessions/test_rdp_launcher.py).

The module shares one hub and one agent (restarted when a test finds it dead): each start of an
agent and its launcher is seconds of Python on a busy machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from labctl import __version__
from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.clock import LabClock
from labctl.errors import EXIT_FAILED, InventoryError
from labctl.inventory.load import load_lab
from labctl.lab.launchers import open_launchers
from labctl.lab.launchers.model import SessionState
from labctl.lab.session import LabSession
from labctl.lab.sites import AgentDown, require_agents
from labctl.records.samples import Sample
from labctl.records.series import Series
from labctl.scenarios.base import Progress
from labctl.scenarios.session_storm import SessionStorm, SessionStormSettings
from labctl.workload import zipapp_build
from tests.agents.labs import AgentProcess, start_agent
from tests.nats_server import start_hub

AGENT = "site-l"
LAUNCHER = "launcher-a"
# the workload's profile for these tests: one cheap timed operation, short think time
FAST_PROFILES = {"task": {"think_s": 0.3, "operations": [{"name": "cpu", "kind": "cpu", "work_mb": 1}]}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LauncherSite:
    lab_file: Path
    work: Path
    leaf_url: str  # the agent dials out to the hub as a leaf node, as a site's agent does
    agents: list[AgentProcess] = field(default_factory=list)

    def agent(self) -> AgentProcess:
        """The agent, started (again) if it is not running: tests of this module share it."""
        if not self.agents or self.agents[-1].proc.poll() is not None:
            return self.start_agent()
        return self.agents[-1]

    def start_agent(self) -> AgentProcess:
        # a folder per start: its log says "serves" only once this process does
        where = self.work / f"agent-{len(self.agents) + 1}"
        a = start_agent(self.lab_file, AGENT, where, hub=self.leaf_url, ready_timeout_s=150)
        self.agents.append(a)
        return a

    def stop_leaves(self) -> None:
        """The leaf nodes of agents that were killed (a stopped agent stops its own), by pid."""
        for ports in self.work.glob(f"agent-*/{AGENT}/leaf/*.ports"):
            with contextlib.suppress(ValueError, ProcessLookupError):
                os.kill(int(ports.stem.rsplit("_", 1)[-1]), signal.SIGTERM)

    def session(self) -> LabSession:
        return LabSession(load_lab(self.lab_file), LabClock(scale=1.0))

    def daemon_pid(self) -> int:
        return int(json.loads((self.work / LAUNCHER / "ports.json").read_text())["pid"])


def _write_lab(work: Path, hub_url: str, pyz: Path) -> Path:
    profiles = work / "profiles.json"
    profiles.write_text(json.dumps(FAST_PROFILES))
    collector = _free_port()
    config = work / f"{LAUNCHER}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": LAUNCHER,
                "state_dir": str(work / LAUNCHER),
                "control": {"host": "127.0.0.1", "port": 0},
                "collector": {"bind": "127.0.0.1", "port": collector},
                "max_sessions": 4,
                "logon_timeout_s": 60,
                "logoff_timeout_s": 15,
                "connector": {
                    "kind": "custom",
                    # the session's "display client" is the workload itself, as on a desktop whose
                    # logon starts it: it logs on when it reports in, ends when told to log off
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
        )
    )
    text = f"""
lab: {{name: launchers-at-sites, time_scale: 1}}
networks:
  - {{name: net, subnet: 127.0.0.0/8, broadcast: 127.255.255.255, speed_gbps: 10}}
vcenters:
  - {{name: vc-01, url: 'https://127.0.0.1:1/sdk', user: administrator@vsphere.local, password: 'env:LABCTL_TEST_NO_VC'}}
storage:
  - {{name: arr-1, kind: unity, url: 'https://127.0.3.1:2', user: admin, password: 'env:LABCTL_TEST_NO_ARRAY'}}
vdi:
  clusters:
    - name: vdi
      vcenter: vc-01
      hosts:
        - {{name: esx-01, sockets: 1, cores: 2, ghz: 2.0, ram_gb: 8, nics: {{count: 1, speed_gbps: 1}}, ip: 127.0.2.1}}
  arrays:
    - {{array: arr-1, model: test, cache_gb: 2, ports: {{count: 2, speed_gbps: 10}}, tiers: [{{drive: ssd, count: 4, capacity_gb: 400, raid: 10}}]}}
  datastores:
    - {{name: ds-1, array: arr-1, capacity_gb: 500}}
  pools:
    - {{name: pool, desktops: "desk[1-4]", cluster: vdi, datastores: [ds-1], vcpus: 1, ram_gb: 1, workload: task, ip: 127.0.1.1,
       provisioning: {{kind: full_clone}}}}
  launchers:
    - {{name: {LAUNCHER}, sessions: 4, pool: pool, kind: local, local: {{config: '{config}'}}}}
agents:
  hub: {hub_url}
  heartbeat_s: 0.5
  missed_beats: 3
  sites:
    - {{name: {AGENT}, launchers: [{LAUNCHER}]}}
"""
    path = work / "lab.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LauncherSite]:
    """A hub, the workload zipapp a desktop image would carry, the lab file and (on first use)
    its agent, for the module (each start of the agent costs seconds of Python)."""
    base = tmp_path_factory.mktemp("launcher-site")
    hub = start_hub(base / "hub")
    try:
        pyz = zipapp_build.build(base / "labctl-workload.pyz")
        s = LauncherSite(_write_lab(base, hub.url, pyz), base, hub.leaf_url)
        try:
            yield s
        finally:
            for a in s.agents:
                a.stop()
            s.stop_leaves()
    finally:
        hub.stop()


@dataclass
class Cell:
    """The cell runner's side of a scenario (labctl.scenarios.base.CellContext), kept in memory."""

    cell_id: str = "session_storm-agent-002"
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
        return []  # nothing recorded around the cell here (record_sources: [])

    def record(self, samples: Iterable[Sample]) -> None:
        self.samples.extend(samples)


def _settings(**over: object) -> SessionStormSettings:
    base: dict[str, object] = {
        "user_format": "user{n}",
        "record_sources": [],
        "login_interval_s": 0.0,
        "login_timeout_s": 90.0,
        "login_poll_s": 1.0,
        "session_poll_s": 1.0,
        "steady_s": 3.0,
        "logoff_timeout_s": 30.0,
    }
    return SessionStormSettings.model_validate({**base, **over})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie still answers kill(0): read its state
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    return True


def _running(sessions: list[str]) -> list[str]:
    """The sessions whose client (the workload, started with --session ID) still runs."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        out += [sid for sid in sessions if sid.encode() in argv and _alive(int(proc.name))]
    return out


def test_a_session_storm_runs_through_launchers_behind_a_site_agent(site: LauncherSite) -> None:
    site.agent()
    with site.session() as lab:
        assert [ln.transport for ln in lab.lab.vdi.launchers] == ["agent"]  # type: ignore[union-attr]
        result = SessionStorm(2, _settings()).run(lab, Cell())
        assert lab.sites._link is not None  # the calls went over the hub (the launcher has no SSH)
    assert result.lab_faults() == [], result.lab_faults()
    desktops = sorted(result.clients.values(), key=lambda c: c.name)
    assert [c.name for c in desktops] == ["desk1", "desk2"]
    # logged on only once each session's workload reported in, then worked and logged off
    assert all(c.outcome == "logged_on" and c.login_s and c.login_s > 0 and c.operations for c in desktops)
    book = result.book
    assert book is not None
    assert {e.state for e in book.latest.values()} == {SessionState.ENDED}
    assert {e.launcher for e in book.latest.values()} == {LAUNCHER}
    # the launcher's logon waterfall came back through the agent, in the protocol's words
    assert {w.connector for w in book.logons.values()} == {"custom"} and len(book.logons) == 2
    for w in book.logons.values():
        by = {ph.name: ph for ph in w.phases}
        assert by["first_operation"].measured and not by["protocol_connect"].measured


def test_an_agent_killed_mid_storm_is_a_lab_fault_naming_it_and_its_launchers_sessions(
    site: LauncherSite,
) -> None:
    agent = site.agent()
    daemon = site.daemon_pid()
    killed = threading.Event()

    def kill_in_steady(p: Progress) -> None:  # once both users are on and working
        if p.phase == "steady" and not killed.is_set():
            agent.kill()
            killed.set()

    with site.session() as lab:
        cell = Cell(on_progress=kill_in_steady)
        result = SessionStorm(2, _settings(steady_s=4.0, logoff_timeout_s=3.0)).run(lab, cell)
    assert killed.is_set()
    faults = "; ".join(result.lab_faults())
    # the fault names the launcher, the agent it sat behind, and the sessions it held
    assert f"launcher {LAUNCHER} could not be read" in faults and f"site agent {AGENT}" in faults, faults
    book = result.book
    assert book is not None and len(book.latest) == 2
    held = sorted(book.latest)
    assert all(sid in faults for sid in held), faults
    # never silently replaced: the cell counts the same two sessions, none started elsewhere
    assert book.refusals == 0 and {e.launcher for e in book.latest.values()} == {LAUNCHER}
    # the launcher died with its agent, and the sessions' clients with it: no session runs on
    # behind the controller's back
    deadline = time.monotonic() + 15
    while (_alive(daemon) or _running(held)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(daemon) and _running(held) == []
    # and the next run refuses to start while the agent its launcher sits behind is down
    with pytest.raises(AgentDown, match=AGENT):
        require_agents(load_lab(site.lab_file))


def test_a_hosted_launcher_that_died_is_named_with_its_agent_while_the_agent_lives_on(
    site: LauncherSite,
) -> None:
    agent = site.agent()
    daemon = site.daemon_pid()
    os.kill(daemon, signal.SIGKILL)
    try:
        with site.session() as lab:
            ls = open_launchers(lab, "pool")
            errors = ls.hello()
            ls.close()
        why = errors[LAUNCHER]
        assert f"through site agent {AGENT}" in why and "its daemon exited (-9)" in why, why
        assert agent.proc.poll() is None  # the agent carries on (its power orders are not the launcher's)
    finally:
        agent.stop()  # the next test that needs it starts it, and with it the launcher, again


def test_a_local_launcher_placed_at_no_agent_is_refused_in_one_line(site: LauncherSite) -> None:
    text = site.lab_file.read_text().replace(f"launchers: [{LAUNCHER}]", "networks: [net]")
    bad = site.work / "bad.yaml"
    bad.write_text(text.replace("local: {config: '", "local: {config: 'relative/"))
    with pytest.raises(InventoryError) as err:
        load_lab(bad)
    lines = str(err.value).splitlines()
    assert any(f"local launcher '{LAUNCHER}' is placed at no site agent" in ln for ln in lines), lines
    assert any("is not an absolute path" in ln for ln in lines), lines
    twice = site.work / "twice.yaml"
    twice.write_text(
        site.lab_file.read_text().replace(
            f"    - {{name: {AGENT}, launchers: [{LAUNCHER}]}}",
            f"    - {{name: {AGENT}, launchers: [{LAUNCHER}]}}\n    - {{name: site-m, launchers: [{LAUNCHER}, nope]}}",
        )
    )
    with pytest.raises(InventoryError) as err:
        load_lab(twice)
    lines = str(err.value).splitlines()
    assert any(f"launcher '{LAUNCHER}' is placed at agents '{AGENT}' and 'site-m'" in ln for ln in lines), (
        lines
    )
    assert any("names unknown session launcher 'nope'" in ln for ln in lines), lines


def test_labctl_check_greets_a_launcher_through_its_site_agent(
    site: LauncherSite, capsys: pytest.CaptureFixture[str]
) -> None:
    """`labctl check` greets a launcher placed at an agent through that agent (it has no SSH);
    one placed at an agent that is not running fails the check with one line naming the agent."""
    site.agent()
    text = site.lab_file.read_text().replace(
        "  launchers:\n",
        "  launchers:\n    - {name: launcher-b, sessions: 4, pool: pool, kind: local, "
        "local: {config: '/nonexistent/launcher-b.yaml'}}\n",
    )
    text = text.replace(
        f"    - {{name: {AGENT}, launchers: [{LAUNCHER}]}}",
        f"    - {{name: {AGENT}, launchers: [{LAUNCHER}]}}\n    - {{name: site-gone, launchers: [launcher-b]}}",
    )
    lab = site.work / "check.yaml"
    lab.write_text(text)
    code = run_cli(cli, ["check", "--lab", str(lab), "--kind", "launcher", "--timeout", "5", "--json"])
    out = capsys.readouterr()
    assert code == EXIT_FAILED, out.err
    got = {e["endpoint"]: e for e in json.loads(out.out)["endpoints"]}
    a, b = got[f"{LAUNCHER} launcher"], got["launcher-b launcher"]
    assert a["ok"], a
    assert a["address"] == f"agent {AGENT}" and a["tls"] == f"via site agent {AGENT}"
    assert a["version"] == f"labctl {__version__}, labctl-launcher/1"
    assert re.fullmatch(r"connector custom; sessions \d/4", a["capabilities"]), a
    assert not b["ok"] and "site-gone" in b["reason"], b
    failed = [ln for ln in out.err.splitlines() if ln.startswith("FAILED ")]
    assert len(failed) == 1 and failed[0].startswith("FAILED launcher-b launcher [launcher agent site-gone]")

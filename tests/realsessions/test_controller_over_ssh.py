"""The controller's side of a real storm: the lab's launchers (labctl.lab.launchers) reach
`labctl launcher` over a real OpenSSH server, start real RDP sessions on xrdp and read back their
states, operations and logon waterfalls in labctl's words."""

from __future__ import annotations

import time

from labctl.clock import LabClock
from labctl.inventory.load import load_lab
from labctl.lab.launchers import wire
from labctl.lab.launchers.facade import open_launchers
from labctl.lab.launchers.model import SessionState
from labctl.lab.session import LabSession
from tests.realsessions.conftest import GOOD_USERS, lab_file


def test_the_lab_drives_a_real_launcher_over_ssh(rdp_lab, daemon_factory, sshd, tmp_path, monkeypatch):
    port, key = sshd
    cfg = rdp_lab.launcher_config("launcher-ssh")
    daemon_factory(cfg)
    monkeypatch.setenv("LABCTL_TEST_LAUNCHER_KEY", str(key))
    lab = load_lab(lab_file(tmp_path, port, cfg))
    with LabSession(lab, LabClock(scale=1.0)) as s:
        ls = open_launchers(s, pool="pool")
        assert ls.hello() == {}
        started = ls.start(list(zip(("desk1", "desk2"), GOOD_USERS[:2], strict=True)), workload="task")
        ids = [e.session for e in started if hasattr(e, "session")]
        assert len(ids) == 2
        states: dict[str, SessionState] = {}
        logons, ops = [], []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
            len(logons) >= 2 and all(states.get(i) == SessionState.ACTIVE for i in ids)
        ):
            p = ls.poll()
            assert p.errors == {}
            states.update({e.session: e.state for e in p.sessions})
            logons += p.logons
            ops += p.operations
            time.sleep(1.0)
        assert all(states[i] == SessionState.ACTIVE for i in ids), states
        assert {w.session for w in logons} == set(ids)
        for w in logons:
            by = {ph.name: ph for ph in w.phases}
            assert by["protocol_connect"].measured and by["protocol_connect"].duration_s is not None
            assert not by["profile_load"].measured and by["profile_load"].why
        assert ops and all(o.response_s > 0 for o in ops)
        assert ls.logoff(ids) == {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(states.get(i) == SessionState.ENDED for i in ids):
            states.update({e.session: e.state for e in ls.poll().sessions})
            time.sleep(1.0)
        assert all(states[i] == SessionState.ENDED for i in ids), states
        ls.close()


def test_the_wire_speaks_posix_to_labctl_launcher_and_powershell_to_scripts():
    assert wire.command("/opt/labctl/bin/labctl launcher --config /etc/l.yaml", "events", after=3) == [
        "/opt/labctl/bin/labctl",
        "launcher",
        "--config",
        "/etc/l.yaml",
        "events",
        "-After",
        "3",
    ]
    assert wire.command(r"C:\labctl\launcher.ps1", "hello")[:1] == ["powershell"]
    batch = wire.events(
        "l1",
        '{"event":"logon","session":"s1","desktop":"d","user":"u","connector":"rdp","launch_ts":1.0,"total_s":2.5,'
        '"phases":[{"name":"protocol_connect","measured":true,"duration_s":1.5,"start_ts":1.0},'
        '{"name":"profile_load","measured":false,"why":"not read"}]}\n{"event":"cursor","seq":4,"ts":9.0}\n',
        0,
    )
    assert (
        batch.logons[0].phases[1].why == "not read" and batch.logons[0].total_s == 2.5 and batch.cursor == 4
    )

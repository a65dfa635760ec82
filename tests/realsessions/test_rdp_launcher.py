"""Real sessions over a real display protocol: `labctl launcher` logs users on to xrdp desktops with
FreeRDP, each session's logon runs `labctl workload`, and the launcher's journal carries the logon
waterfall and real operation timings from this machine. Failure paths are real too: a wrong
password, a desktop that refuses the connection, a workload that never reports, a launcher killed.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import time

from tests.realsessions.conftest import (
    GOOD_USERS,
    REFUSED_USER,
    SILENT_USER,
    WRONG_PW_USER,
    labctl,
    poll_until,
)

PHASES = (
    "brokering",
    "machine_ready",
    "protocol_connect",
    "authentication",
    "profile_load",
    "group_policy",
    "shell_ready",
    "first_operation",
    "unaccounted",
)


def _final(lines, state_of):
    last = {}
    for e in lines:
        if e["event"] == "session":
            last[e["session"]] = e
    return {sid: e for sid, e in last.items() if state_of(e)}


def _clients_of(pid: int) -> list[int]:
    """xfreerdp processes still running that the launcher started (by their parent-death lineage)."""
    out = subprocess.run(
        ["pgrep", "-f", "xfreerdp /v:127.0.0.1"], capture_output=True, text=True, check=False
    )
    return [int(p) for p in out.stdout.split()]


def test_storm_of_real_rdp_sessions(rdp_lab, daemon_factory):
    d = daemon_factory(rdp_lab.launcher_config("launcher01"))
    hello = d.verb("hello")[0]
    assert hello["protocol"] == "labctl-launcher/1" and hello["connector"] == "rdp"
    desktops = [f"desk{i}" for i in range(1, 5)] + ["desk5", "desk6", "refusing-desktop", "desk8"]
    users = [*GOOD_USERS, SILENT_USER, WRONG_PW_USER, REFUSED_USER, "lcrdp1b"]
    started = d.verb("start", "-Workload", "task", "-Desktop", ",".join(desktops), "-User", ",".join(users))
    # lcrdp1b has no password in the launcher's credentials file: refused at once, with the reason.
    refused = [s for s in started if s["event"] == "refused"]
    assert [r["user"] for r in refused] == ["lcrdp1b"] and "credentials" in refused[0]["reason"]
    ids = {s["user"]: s["session"] for s in started if s["event"] == "session"}
    assert set(ids) == {*GOOD_USERS, SILENT_USER, WRONG_PW_USER, REFUSED_USER}

    def settled(lines):
        ops = {}
        for e in lines:
            if e["event"] == "operation":
                ops[e["session"]] = ops.get(e["session"], 0) + 1
        failed = _final(lines, lambda e: e["state"] == "failed")
        logons = {e["session"] for e in lines if e["event"] == "logon"}
        return (
            all(ops.get(ids[u], 0) >= 3 for u in GOOD_USERS)
            and len(failed) == 3
            and logons >= {ids[u] for u in GOOD_USERS}
        )

    lines, _cursor = poll_until(d, settled, deadline_s=150)

    # Logged on only when the workload reported in: each good session went active with its login time.
    active = {e["session"]: e for e in lines if e["event"] == "session" and e["state"] == "active"}
    for u in GOOD_USERS:
        assert 0 < active[ids[u]]["login_s"] < 45
    # The failures carry their reasons; none was counted as logged on.
    failed = _final(lines, lambda e: e["state"] == "failed")
    assert ids[SILENT_USER] not in active and ids[WRONG_PW_USER] not in active
    assert "no workload reported in" in failed[ids[SILENT_USER]]["reason"]
    assert "connection was up" in failed[ids[SILENT_USER]]["reason"]
    assert "no workload reported in" in failed[ids[WRONG_PW_USER]]["reason"]
    # The refusing desktop never came up and failed at once with FreeRDP's reason.
    refusing = [e for e in lines if e["event"] == "session" and e["desktop"] == "refusing-desktop"]
    assert refusing[-1]["state"] == "failed" and "refused" in refusing[-1]["reason"]

    # Real operation timings from this machine, named by the task profile.
    ops = [e for e in lines if e["event"] == "operation"]
    assert {o["name"] for o in ops} >= {"app_start", "file_write_seq", "file_read_seq"}
    assert all(o["response_s"] > 0 for o in ops)
    # The waterfall: every phase named; what RDP to xrdp can time is timed, the rest says why.
    for w in (e for e in lines if e["event"] == "logon"):
        phases = {p["name"]: p for p in w["phases"]}
        assert tuple(phases) == PHASES
        for name in ("protocol_connect", "authentication", "shell_ready", "first_operation"):
            assert phases[name]["measured"] and phases[name]["duration_s"] >= 0, (name, phases[name])
        for name in ("brokering", "machine_ready", "profile_load", "group_policy"):
            assert not phases[name]["measured"] and phases[name]["why"], name
        # Phases run in order (each starts where or after the one before ends) within launch..first op.
        timed = [phases[n] for n in ("protocol_connect", "authentication", "shell_ready", "first_operation")]
        assert w["launch_ts"] <= timed[0]["start_ts"]
        for a, b in itertools.pairwise(timed):
            assert a["end_ts"] <= b["start_ts"] + 0.001, (a, b)
        covered = sum(p["duration_s"] for p in timed)
        assert abs(covered + phases["unaccounted"]["duration_s"] - w["total_s"]) < 0.01
        assert w["security"] in ("TLS", "RDP")

    # Logoff: the workloads end their sessions; the launcher sees them end.
    d.verb("logoff", "-Session", ",".join(ids[u] for u in GOOD_USERS))
    lines2, _ = poll_until(
        d, lambda ls: len(_final(ls, lambda e: e["state"] == "ended")) == len(GOOD_USERS), 60
    )
    ended = _final(lines2, lambda e: e["state"] == "ended")
    assert all("forced" not in e.get("reason", "") for e in ended.values())
    assert d.verb("hello")[0]["sessions"] == 0


def test_a_launcher_killed_mid_storm_leaves_no_client_and_says_so(rdp_lab, daemon_factory):
    cfg = rdp_lab.launcher_config("launcher02")
    d = daemon_factory(cfg)
    started = d.verb("start", "-Workload", "task", "-Desktop", "desk1,desk2", "-User", "lcrdp1,lcrdp2")
    ids = [s["session"] for s in started]
    poll_until(d, lambda ls: sum(e["event"] == "session" and e["state"] == "active" for e in ls) == 2, 90)
    assert _clients_of(d.proc.pid)
    os.kill(d.proc.pid, signal.SIGKILL)
    d.proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _clients_of(d.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _clients_of(d.proc.pid) == []  # the clients died with their launcher
    r = labctl("launcher", "--config", str(cfg), "events", "-After", "0")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
    assert "does not answer" in r.stderr or "no daemon" in r.stderr
    # Restarted, the launcher reports the sessions of its previous run as failed, not as its own.
    d2 = daemon_factory(cfg)
    lines = d2.verb("events", "-After", "0")
    final = _final(lines[:-1], lambda e: True)
    assert all(final[i]["state"] == "failed" and "restarted" in final[i]["reason"] for i in ids)


def test_verbs_refuse_bad_input_with_one_line(rdp_lab, daemon_factory):
    cfg = rdp_lab.launcher_config("launcher03")
    daemon_factory(cfg)
    for args, code in (
        (("start", "-Workload", "task", "-Desktop", "a,b", "-User", "u1"), 2),
        (("events", "-After", "x"), 2),
        (("frobnicate",), 2),
        (("start", "-Desktop", "a"), 2),
        (("logoff", "-Session", "nope"), 2),
    ):
        r = labctl("launcher", "--config", str(cfg), *args)
        assert r.returncode == code, (args, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr

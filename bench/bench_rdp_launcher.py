"""How many RDP sessions one Linux launcher holds on this machine, what each costs it, and the
logon waterfall at 1, 4 and that many sessions.

Real sessions end to end, as tests/realsessions runs them: Debian's xrdp serves Xvnc desktops on
loopback (the desktops live on this machine too, so the figures are a floor: a real launcher's
desktops are elsewhere), `labctl launcher` starts them with FreeRDP under its Xvfb, and each
session's logon runs the `labctl workload` zipapp.

1. **Ramp**: steps of ``--step`` sessions are added until a logon fails, the median logon of a step
   exceeds ``--max-logon-s`` or ``--max`` is reached. Per step: sessions held, the launcher's CPU
   (itself and its FreeRDP clients, % of one core, from the protocol's cursor line) and per session,
   its resident memory, the step's median and p95 logon. Then every session logs off.
2. **Logon storms** of 1, 4 and the most sessions the ramp held, each launched at once on an empty
   launcher: per phase of the waterfall (labctl/launcher/waterfall.py) n, p50, p95 and max, computed as
   the reports do (labctl.report.waterfall: linear between ranks), the phases RDP cannot time named
   with the reason. Each storm logs off before the next.

Beside them, Login Enterprise's published limit of 30 sessions per launcher (the peer figure; its
launchers are Windows machines with their own sizing). Needs root (desktop users) and the Debian
packages of `make install`. Prints figures only.

    sudo flock /tmp/labctl-heavy.lock .venv/bin/python bench/bench_rdp_launcher.py [--step 4] [--max 32]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from labctl.records.rt_index import quantile  # noqa: E402
from labctl.report import waterfall as wf  # noqa: E402
from labctl.workload import zipapp_build  # noqa: E402
from tests.realsessions.xrdp_server import XrdpServer, free_port, missing  # noqa: E402

LOGIN_ENTERPRISE_SESSIONS_PER_LAUNCHER = 30  # Login Enterprise's documented per-launcher maximum
TERMINAL = ("ended", "failed")
SESMAN_PORT = 3350  # xrdp-sesman's port, fixed for every xrdp on the machine
DISPLAY_HEADROOM = 100  # X displays beyond --max for sesman to pick from (others' Xvfb, stale locks)
SETTLE_S = 10.0  # after a step's logons, before the launcher's load is read: steady work


def verb(cfg: Path, *args: str) -> list[dict[str, Any]]:
    r = subprocess.run(
        [sys.executable, "-m", "labctl", "launcher", "--config", str(cfg), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [json.loads(x) for x in r.stdout.splitlines() if x.strip()]


class Launcher:
    """The launcher's verbs, with the events cursor kept."""

    def __init__(self, cfg: Path):
        self.cfg = cfg
        self.cursor = 0
        self.done: set[str] = set()  # sessions seen ended or failed
        self.why: dict[str, str] = {}  # their reasons

    def events(self) -> list[dict[str, Any]]:
        lines = verb(self.cfg, "events", "-After", str(self.cursor))
        self.cursor = lines[-1]["seq"]
        for e in lines:
            if e["event"] == "session" and e["state"] in TERMINAL:
                self.done.add(e["session"])
                self.why.setdefault(e["session"], str(e.get("reason") or e["state"]))
        return lines

    def start(self, first: int, users: list[str]) -> list[str]:
        desktops = ",".join(f"d{first + i}" for i in range(len(users)))
        lines = verb(self.cfg, "start", "-Workload", "task", "-Desktop", desktops, "-User", ",".join(users))
        return [e["session"] for e in lines if e.get("event") == "session"]

    def await_logons(
        self, ids: list[str], deadline_s: float
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The logon waterfalls of ``ids`` and their failures, until each has one or the deadline."""
        want = set(ids)
        logons: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        deadline = time.monotonic() + deadline_s
        while len(logons) + len(failed) < len(want) and time.monotonic() < deadline:
            for e in self.events():
                if e.get("session") not in want:
                    continue
                if e["event"] == "logon":
                    logons.append(e)
                elif e["event"] == "session" and e["state"] == "failed":
                    failed.append(e)
            time.sleep(1.0)
        return logons, failed

    def log_off(self, ids: list[str], deadline_s: float = 120.0) -> int:
        """Every session of ``ids`` logged off and ended; the number still not ended at the deadline."""
        if ids:
            verb(self.cfg, "logoff", "-Session", ",".join(ids))
        deadline = time.monotonic() + deadline_s
        while not set(ids) <= self.done and time.monotonic() < deadline:
            self.events()
            time.sleep(1.0)
        return len(set(ids) - self.done)

    def load(self) -> dict[str, Any]:
        verb(self.cfg, "hello")  # the CPU figure is over the time since the previous hello
        time.sleep(5.0)
        return verb(self.cfg, "hello")[0]


def start_alone(server: XrdpServer, deadline_s: float = 600.0) -> None:
    """Start xrdp once no other xrdp-sesman holds its fixed port (3350; xrdp 0.9 reaches its sesman
    there whatever the config says): a second sesman cannot bind it, our xrdp would log on through
    the other's sesman, and that one's end would end our sessions at once (ERRINFO 12, logged off)."""
    deadline = time.monotonic() + deadline_s
    while True:
        with socket.socket() as probe:
            busy = probe.connect_ex(("127.0.0.1", SESMAN_PORT)) == 0
        if not busy:
            try:
                server.start()
                if server.procs and server.procs[0].poll() is None:  # our sesman holds the port
                    return
            except Exception as exc:  # lost the race for the port: wait and try again
                print(f"xrdp did not start: {exc}", flush=True)
            server.stop()
        if time.monotonic() > deadline:
            raise SystemExit(
                f"another xrdp-sesman kept port {SESMAN_PORT} for {deadline_s:.0f} s: run again later"
            )
        print(
            f"waiting: another xrdp-sesman holds port {SESMAN_PORT} (a test's xrdp on this machine)",
            flush=True,
        )
        time.sleep(10.0)


def phase_rows(logons: list[dict[str, Any]]) -> list[wf.PhaseStats]:
    """The waterfall's rows as the reports compute them, from the launcher's logon events."""
    values: dict[str, list[float]] = {}
    why: dict[str, str] = {}
    for w in logons:
        values.setdefault(wf.TOTAL, []).append(float(w["total_s"]))
        for ph in w["phases"]:
            if ph.get("measured") and ph.get("duration_s") is not None:
                values.setdefault(ph["name"], []).append(float(ph["duration_s"]))
            else:
                why.setdefault(ph["name"], str(ph.get("why") or ""))
    names = [n for n in wf.ORDER if n in values or n in why]
    rows = [wf.stats(n, values.get(n, []), why.get(n, ""), "rdp") for n in names]
    return [*rows, wf.stats(wf.TOTAL, values.get(wf.TOTAL, []), "no logon", "rdp")]


def print_storm(k: int, logons: list[dict[str, Any]], failed: list[dict[str, Any]], seconds: float) -> None:
    print(
        f"\nlogon storm of {k} at once: {len(logons)} logged on, {len(failed)} failed, seen by the bench within {seconds:.1f} s"
    )
    if failed:
        print(f"  first failure: {failed[0].get('reason', '')}")
    print(f"  {'phase':<34} {'n':>3} {'p50 s':>7} {'p95 s':>7} {'max s':>7}")
    for r in phase_rows(logons):
        if r.measured:
            print(f"  {wf.words(r.name):<34} {r.n:>3} {r.p50_s:>7.2f} {r.p95_s:>7.2f} {r.max_s:>7.2f}")
        else:
            print(f"  {wf.words(r.name):<34} {r.unmeasured}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", type=int, default=4)
    ap.add_argument("--max", type=int, default=32)
    ap.add_argument("--max-logon-s", type=float, default=60.0)
    a = ap.parse_args()
    why = missing()
    if why:
        print(f"cannot run: {why}")
        return 2
    # SIGTERM unwinds like Ctrl-C, so the finally below stops xrdp and the launcher and removes the users
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="bench-rdp-"))
    work.chmod(0o755)
    pyz = zipapp_build.build(work / "labctl-workload.pyz")
    collector = free_port()
    # sesman's MaxSessions is also its X display range (:10 to :10 + MaxSessions): displays other X
    # servers on the machine hold, or their stale locks, count against it ("no display in range")
    server = XrdpServer(work, max_sessions=a.max + DISPLAY_HEADROOM)
    daemon = None
    try:
        start_alone(server)
        users = []
        for i in range(1, a.max + 1):
            name = f"lcbench{i}"
            u = server.add_user(
                name,
                # its files in its own home: /tmp/labctl-workload-<user> may be a deleted earlier user's
                f'cd "$HOME"\nexec /usr/bin/python3 "$HOME/{pyz.name}" --report http://127.0.0.1:{collector} '
                '--workdir "$HOME/labctl-work"\n',
            )
            shutil.copy(pyz, u.home / pyz.name)
            shutil.chown(u.home / pyz.name, name, name)
            users.append(u)
        creds = work / "users.yaml"
        creds.write_text(yaml.safe_dump({u.name: u.password for u in users}))
        creds.chmod(0o600)
        cfg = work / "launcher.yaml"
        cfg.write_text(
            yaml.safe_dump(
                {
                    "name": "bench",
                    "state_dir": str(work / "state"),
                    "control": {"host": "127.0.0.1", "port": 0},
                    "collector": {"bind": "127.0.0.1", "port": collector},
                    "max_sessions": a.max,
                    "logon_timeout_s": 180,
                    "credentials_file": str(creds),
                    "connector": {
                        "kind": "rdp",
                        "server": "127.0.0.1",
                        "port": server.port,
                        "certificate": "ignore",
                        "size": "1024x768",
                    },
                }
            )
        )
        daemon = subprocess.Popen(
            [sys.executable, "-m", "labctl", "launcher", "--config", str(cfg), "serve"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert daemon.stdout is not None
        daemon.stdout.readline()
        launcher = Launcher(cfg)
        names = [u.name for u in users]
        print("ramp: sessions added in steps, the launcher's load once each step works")
        print(
            f"{'sessions':>8} {'cpu %':>7} {'cpu %/s':>8} {'rss MB':>7} {'MB/s':>6} {'logon p50':>9} {'p95':>6}"
        )
        held: list[str] = []
        while len(held) < a.max:
            n = min(a.step, a.max - len(held))
            ids = launcher.start(len(held), names[len(held) : len(held) + n])
            held += ids
            logons, failed = launcher.await_logons(ids, a.max_logon_s * 3)
            time.sleep(SETTLE_S)
            load = launcher.load()
            totals = [float(w["total_s"]) for w in logons]
            med = statistics.median(totals) if totals else float("nan")
            p95 = quantile(totals, 0.95) if totals else float("nan")
            cpu, rss, on = (
                load.get("launcher_cpu_pct", float("nan")),
                load.get("launcher_rss_mb", 0.0),
                load["sessions"],
            )
            print(
                f"{on:>8} {cpu:>7.1f} {cpu / max(1, on):>8.2f} {rss:>7.0f} {rss / max(1, on):>6.0f} "
                f"{med:>9.2f} {p95:>6.2f}",
                flush=True,
            )
            gone = [sid for sid in held if sid in launcher.done]
            if gone and not failed:  # logged on, then ended on their own: no longer held
                print(f"stopped: {len(gone)} session(s) ended on their own ({launcher.why[gone[0]]})")
                break
            if failed or (totals and med > a.max_logon_s):
                print(
                    f"stopped: {len(failed)} logon(s) failed"
                    + (f" ({failed[0].get('reason', '')})" if failed else "")
                    + f"; median logon {med:.1f} s"
                )
                break
        most = launcher.load()["sessions"]
        print(
            f"held at once: {most} sessions on this machine "
            f"(Login Enterprise: {LOGIN_ENTERPRISE_SESSIONS_PER_LAUNCHER} per launcher)"
        )
        stuck = launcher.log_off(held)
        if stuck:
            print(f"{stuck} session(s) did not end within the logoff deadline; the storms below may see them")
        for k in sorted({1, min(4, most), most} - {0}):
            t = time.monotonic()
            ids = launcher.start(0, names[:k])
            logons, failed = launcher.await_logons(ids, a.max_logon_s * 3)
            print_storm(k, logons, failed, time.monotonic() - t)
            launcher.log_off(ids)
        return 0
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(timeout=60)
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

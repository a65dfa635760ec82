"""How many RDP sessions one Linux launcher holds on this machine, and what each costs it.

Real sessions end to end, as tests/realsessions runs them: Debian's xrdp serves Xvnc desktops on
loopback (the desktops live on this machine too, so the figures are a floor: a real launcher's
desktops are elsewhere), `labctl launcher` starts them with FreeRDP under its Xvfb, and each
session's logon runs the `labctl workload` zipapp. Steps of ``--step`` sessions are added until a
logon fails, the median logon of a step exceeds ``--max-logon-s`` or ``--max`` is reached.

Figures per step: sessions held, the launcher's CPU (itself and its FreeRDP clients, % of one core,
from the protocol's cursor line) and per session, its resident memory, the median and p95 logon,
and the median of each waterfall phase. Beside them, Login Enterprise's published limit of 30
sessions per launcher (the peer figure; its launchers are Windows machines with their own sizing).
Needs root (desktop users) and the Debian packages of `make install`. Prints figures only.

    sudo .venv/bin/python bench/bench_rdp_launcher.py [--step 4] [--max 32] [--max-logon-s 60]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from labctl.workload import zipapp_build  # noqa: E402
from tests.realsessions.xrdp_server import XrdpServer, free_port, missing  # noqa: E402

LOGIN_ENTERPRISE_SESSIONS_PER_LAUNCHER = 30  # Login Enterprise's documented per-launcher maximum
PHASES = ("protocol_connect", "authentication", "shell_ready", "first_operation", "unaccounted")


def verb(cfg: Path, *args: str) -> list[dict]:
    r = subprocess.run(
        [sys.executable, "-m", "labctl", "launcher", "--config", str(cfg), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [json.loads(x) for x in r.stdout.splitlines() if x.strip()]


def p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, round(0.95 * len(xs)) - 1)] if xs else float("nan")


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
    work = Path(tempfile.mkdtemp(prefix="bench-rdp-"))
    work.chmod(0o755)
    pyz = zipapp_build.build(work / "labctl-workload.pyz")
    collector = free_port()
    server = XrdpServer(work, max_sessions=a.max + 4)
    daemon = None
    try:
        server.start()
        users = []
        for i in range(1, a.max + 1):
            name = f"lcbench{i}"
            u = server.add_user(
                name,
                f'cd "$HOME"\nexec /usr/bin/python3 "$HOME/{pyz.name}" --report http://127.0.0.1:{collector}\n',
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
        print(
            f"{'sessions':>8} {'cpu %':>7} {'cpu %/s':>8} {'rss MB':>7} {'logon p50':>9} {'p95':>6}  "
            + " ".join(f"{p[:12]:>12}" for p in PHASES)
        )
        cursor, held, logons = 0, 0, []
        while held < a.max:
            n = min(a.step, a.max - held)
            batch = users[held : held + n]
            verb(
                cfg,
                "start",
                "-Workload",
                "task",
                "-Desktop",
                ",".join(f"d{held + i}" for i in range(n)),
                "-User",
                ",".join(u.name for u in batch),
            )
            held += n
            step_logons, failed, deadline = [], [], time.monotonic() + a.max_logon_s * 3
            while len(step_logons) + len(failed) < n and time.monotonic() < deadline:
                lines = verb(cfg, "events", "-After", str(cursor))
                cursor = lines[-1]["seq"]
                step_logons += [e for e in lines if e["event"] == "logon"]
                failed += [e for e in lines if e["event"] == "session" and e["state"] == "failed"]
                time.sleep(1.0)
            logons += step_logons
            time.sleep(10.0)  # let the step settle into steady work before reading the launcher's load
            verb(cfg, "hello")
            time.sleep(5.0)
            load = verb(cfg, "hello")[0]
            totals = [w["total_s"] for w in step_logons]
            med = statistics.median(totals) if totals else float("nan")
            ph = {
                p: statistics.median(
                    [
                        x["duration_s"]
                        for w in step_logons
                        for x in w["phases"]
                        if x["name"] == p and x.get("measured")
                    ]
                    or [float("nan")]
                )
                for p in PHASES
            }
            cpu = load.get("launcher_cpu_pct", float("nan"))
            print(
                f"{load['sessions']:>8} {cpu:>7.1f} {cpu / max(1, load['sessions']):>8.2f} "
                f"{load.get('launcher_rss_mb', float('nan')):>7.0f} {med:>9.2f} {p95(totals):>6.2f}  "
                + " ".join(f"{ph[p]:>12.2f}" for p in PHASES),
                flush=True,
            )
            if failed or (totals and med > a.max_logon_s):
                print(
                    f"stopped: {len(failed)} logon(s) failed"
                    + (f" ({failed[0]['reason']})" if failed else "")
                    + f"; median logon {med:.1f} s"
                )
                break
        print(
            f"held at once: {verb(cfg, 'hello')[0]['sessions']} sessions on this machine "
            f"(Login Enterprise: {LOGIN_ENTERPRISE_SESSIONS_PER_LAUNCHER} per launcher)"
        )
        return 0
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(timeout=60)
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

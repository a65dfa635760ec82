"""The in-session workload: timed operations inside a desktop session, reported to its launcher.

`labctl workload` runs inside each desktop session a storm logs on (started by the desktop
image's logon script, or by the session's window-manager script on Linux). It says hello to its
launcher (which is when the launcher counts the session as logged on: never because a client
process started), then runs its profile's operations with think time, timing each one, and posts
every response time to the launcher as it happens (and to ``--out`` as JSON lines). When the
launcher answers a post with ``logoff``, the workload ends, and with it the session it runs in.

This file uses the Python standard library only, so it is installable into a desktop image as one
file (``labctl workload --zipapp labctl-workload.pyz`` writes it, with the profiles, as a zipapp;
``python labctl-workload.pyz --help``). Windows and Linux.
"""

from __future__ import annotations

import argparse
import getpass
import hashlib
import json
import os
import pkgutil
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROTOCOL = "labctl-workload/1"
POST_TIMEOUT_S = 5.0  # one report to the launcher; a slow launcher never stops the timers
MB = 1024 * 1024
IDLE_POLL_S = 5.0  # after its profile, the workload asks this often whether to log off


@dataclass
class Op:
    name: str
    kind: str
    args: dict[str, Any]


@dataclass
class Profile:
    name: str
    think_s: float
    operations: list[Op]


def load_profiles(path: str | None = None) -> dict[str, Profile]:
    """The profiles: ``--profiles FILE`` or the ``profiles.json`` shipped beside this module."""
    if path:
        raw = Path(path).read_bytes()
    else:
        # pkgutil reads beside the module whether it is a file or inside a zipapp.
        data = pkgutil.get_data(__name__, "profiles.json")
        if data is None:
            raise SystemExit("workload: profiles.json is missing beside the workload module")
        raw = data
    doc = json.loads(raw)
    out = {}
    for name, p in doc.items():
        if name.startswith("_"):
            continue
        ops = [
            Op(o["name"], o["kind"], {k: v for k, v in o.items() if k not in ("name", "kind")})
            for o in p["operations"]
        ]
        for op in ops:
            if op.kind not in OPERATIONS:
                raise SystemExit(
                    f"workload: profile {name}: operation {op.name} has unknown kind {op.kind!r}"
                )
        out[name] = Profile(name, float(p.get("think_s", 5.0)), ops)
    return out


# --- the timed operations ------------------------------------------------------------------------


@dataclass
class Folder:
    """The user's folder the file operations work in (their own files, as a user's would be)."""

    root: Path
    blob: bytes = field(default=b"", repr=False)

    def data(self, size: int) -> bytes:
        # Incompressible-ish but cheap: a repeated random block, so compress has real work to do.
        if len(self.blob) < MB:
            rnd = random.Random(7)
            text = " ".join(rnd.choice(WORDS) for _ in range(MB // 5))
            self.blob = text.encode()[:MB]
        reps, rest = divmod(size, len(self.blob))
        return self.blob * reps + self.blob[:rest]


WORDS = (
    "storm",
    "desktop",
    "latency",
    "array",
    "write",
    "cache",
    "session",
    "logon",
    "profile",
    "the",
    "a",
    "of",
)


def op_file_write_seq(f: Folder, size_mb: float = 4) -> None:
    path = f.root / "seq.bin"
    with open(path, "wb") as fh:
        data = f.data(int(size_mb * MB))
        for i in range(0, len(data), MB):
            fh.write(data[i : i + MB])
        fh.flush()
        os.fsync(fh.fileno())


def op_file_read_seq(f: Folder, size_mb: float = 4) -> None:
    path = f.root / "seq.bin"
    if not path.exists() or path.stat().st_size < size_mb * MB:
        op_file_write_seq(f, size_mb)
    with open(path, "rb") as fh:
        while fh.read(MB):
            pass


def op_file_random(f: Folder, ops: int = 64, block_kb: int = 4, file_mb: float = 8) -> None:
    path = f.root / "random.bin"
    size = int(file_mb * MB)
    if not path.exists() or path.stat().st_size != size:
        path.write_bytes(f.data(size))
    block = block_kb * 1024
    rnd = random.Random()
    with open(path, "r+b") as fh:
        for i in range(ops):
            fh.seek(rnd.randrange(0, max(1, size - block)))
            if i % 3 == 0:
                fh.write(f.data(block))
            else:
                fh.read(block)
        fh.flush()
        os.fsync(fh.fileno())


def op_cpu(f: Folder, work_mb: float = 8) -> None:
    h = hashlib.sha256()
    chunk = f.data(MB)
    for _ in range(int(work_mb)):
        h.update(chunk)


def op_compress(f: Folder, size_mb: float = 8) -> None:
    (f.root / "doc.z").write_bytes(zlib.compress(f.data(int(size_mb * MB)), 6))


def op_decompress(f: Folder, size_mb: float = 8) -> None:
    path = f.root / "doc.z"
    if not path.exists():
        op_compress(f, size_mb)
    zlib.decompress(path.read_bytes())


def op_app_start(f: Folder, command: list[str] | None = None) -> None:
    """Start an application and wait until it is up and gone (default: a Python interpreter)."""
    argv = command or [sys.executable, "-c", "import json, zlib, hashlib"]
    subprocess.run(argv, check=True, timeout=120, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


OPERATIONS: dict[str, Callable[..., None]] = {
    "file_write_seq": op_file_write_seq,
    "file_read_seq": op_file_read_seq,
    "file_random": op_file_random,
    "cpu": op_cpu,
    "compress": op_compress,
    "decompress": op_decompress,
    "app_start": op_app_start,
}

# What this agent cannot time on its own, said once in its hello (the report shows it as unmeasured).
UNMEASURED = {
    "input_latency": "input-to-screen latency needs the display protocol's own timer (not in this agent)",
}


# --- the session's own times ---------------------------------------------------------------------


def session_start_ts() -> tuple[float | None, str]:
    """When this session's logon script handed over to us (epoch s), or None and why not.

    The logon script (``startwm.sh`` on xrdp, the desktop image's logon script elsewhere) execs the
    workload, so this process's own start time is when the session's shell started. Read from
    /proc against /proc/uptime (10 ms ticks; /proc/stat's btime has whole seconds only).
    """
    if sys.platform.startswith("linux"):
        try:
            stat = Path("/proc/self/stat").read_text()
            start_ticks = int(stat.rsplit(")", 1)[1].split()[19])
            uptime_s = float(Path("/proc/uptime").read_text().split()[0])
            return time.time() - (uptime_s - start_ticks / os.sysconf("SC_CLK_TCK")), ""
        except (OSError, ValueError, IndexError) as exc:
            return None, f"this process's start time could not be read ({exc})"
    return None, "the shell's start time is read on Linux only (on Windows: the logon events, not yet read)"


# --- reporting -----------------------------------------------------------------------------------


class Reporter:
    """Posts each event to the launcher (bounded by a timeout) and keeps a JSON-lines copy."""

    def __init__(self, url: str | None, out: str | None, ident: dict[str, Any]):
        self.url = url.rstrip("/") + "/report" if url and not url.rstrip("/").endswith("/report") else url
        self.out = open(out, "a", encoding="utf-8") if out else None  # noqa: SIM115 (closed in close())
        self.ident = ident
        self.logoff = threading.Event()
        self.unsent: list[dict[str, Any]] = []
        self.errors = 0

    def send(self, event: dict[str, Any]) -> dict[str, Any]:
        """Post one event (with any kept from failed posts); the launcher's answer, or {}."""
        obj = {**self.ident, **event}
        if self.out:
            self.out.write(json.dumps(obj) + "\n")
            self.out.flush()
        if not self.url:
            return {}
        self.unsent.append(obj)
        try:
            req = urllib.request.Request(
                self.url,
                data=("\n".join(json.dumps(o) for o in self.unsent)).encode(),
                headers={"Content-Type": "application/x-ndjson"},
                method="POST",
            )
            with urllib.request.urlopen(req, timeout=POST_TIMEOUT_S) as resp:
                answer = json.loads(resp.read() or b"{}")
            self.unsent.clear()
            if answer.get("logoff"):
                self.logoff.set()
            return answer if isinstance(answer, dict) else {}
        except (OSError, urllib.error.URLError, ValueError) as exc:
            # Kept and sent with the next event: the launcher's journal gets every operation once.
            self.errors += 1
            if self.errors in (1, 10, 100):
                print(
                    f"workload: cannot report to {self.url}: {exc} (keeping {len(self.unsent)} events)",
                    file=sys.stderr,
                )
            return {}

    def close(self) -> None:
        if self.out:
            self.out.close()


def run(args: argparse.Namespace) -> int:
    profiles = load_profiles(args.profiles)
    if args.profile not in profiles:
        print(f"workload: no profile {args.profile!r} (have: {', '.join(sorted(profiles))})", file=sys.stderr)
        return 2
    profile = profiles[args.profile]
    started = time.time()
    shell_ts, shell_why = session_start_ts()
    ident = {"protocol": PROTOCOL, "user": args.user or getpass.getuser(), "host": socket.gethostname()}
    if args.session:
        ident["session"] = args.session
    rep = Reporter(args.report, args.out, ident)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    root = Path(args.workdir) if args.workdir else default_workdir(ident["user"])
    root.mkdir(parents=True, exist_ok=True)
    folder = Folder(root)
    unmeasured = dict(UNMEASURED)
    if shell_ts is None:
        unmeasured["shell_ready"] = shell_why
    answer = rep.send(
        {
            "event": "hello",
            "profile": profile.name,
            "ts": time.time(),
            "workload_start_ts": started,
            "shell_start_ts": shell_ts,
            "unmeasured": unmeasured,
        }
    )
    # The launcher names the profile its controller asked for (start -Workload); ours is the default.
    if answer.get("profile") in profiles:
        profile = profiles[answer["profile"]]
    index = 0
    end = started + args.duration_s if args.duration_s else None
    try:
        while not stop.is_set() and not rep.logoff.is_set():
            for op in profile.operations:
                if stop.is_set() or rep.logoff.is_set() or (end and time.time() >= end):
                    break
                if args.max_ops and index >= args.max_ops:
                    break
                t0 = time.time()
                p0 = time.perf_counter()
                ok, why = True, ""
                try:
                    OPERATIONS[op.kind](folder, **op.args)
                except Exception as exc:  # an operation that fails is reported, not fatal
                    ok, why = False, f"{type(exc).__name__}: {exc}"
                response_s = time.perf_counter() - p0
                ev = {
                    "event": "operation",
                    "index": index,
                    "name": op.name,
                    "start_ts": t0,
                    "response_s": round(response_s, 6),
                }
                if not ok:
                    ev["error"] = why
                rep.send(ev)
                index += 1
                # Think time, waking early for a logoff (asked in the answer to the next post).
                if stop.wait(profile.think_s * (0.5 + random.random())):
                    break
            if (end and time.time() >= end) or (args.max_ops and index >= args.max_ops):
                # Done: stay logged on (idle) until the launcher logs us off; alone, just end.
                while rep.url and not stop.is_set() and not rep.logoff.is_set():
                    stop.wait(IDLE_POLL_S)
                    rep.send({"event": "idle", "ts": time.time()})
                break
    finally:
        rep.send(
            {"event": "bye", "ts": time.time(), "reason": "logoff" if rep.logoff.is_set() else "stopped"}
        )
        rep.close()
        if not args.keep_files:
            shutil.rmtree(root, ignore_errors=True)
    if rep.logoff.is_set() and args.logoff_command:
        subprocess.run(args.logoff_command, shell=True, timeout=60)
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="labctl workload",
        description="Run a workload profile inside a desktop session and report each operation's "
        "response time to the session's launcher (labctl-workload/1).",
    )
    p.add_argument("--profile", default="task", help="task, knowledge or power (or one of --profiles)")
    p.add_argument("--report", metavar="URL", help="the launcher's collector, e.g. http://launcher01:8473")
    p.add_argument("--out", metavar="FILE", help="also append every event to FILE as JSON lines")
    p.add_argument("--user", help="the user this session belongs to (default: the logged-on user)")
    p.add_argument("--session", help="the launcher's session id, when the launcher passed one")
    p.add_argument(
        "--duration-s", type=float, default=0.0, help="stop timing after this long (0: until logoff)"
    )
    p.add_argument(
        "--max-ops", type=int, default=0, help="stop timing after this many operations (0: no limit)"
    )
    p.add_argument(
        "--workdir",
        help="the folder the file operations use (default: ~/.labctl-workload, else a new private folder in TEMP)",
    )
    p.add_argument("--profiles", metavar="FILE", help="a profiles JSON file instead of the shipped one")
    p.add_argument(
        "--logoff-command", help="run this when the launcher asks for a logoff (Windows: 'logoff')"
    )
    p.add_argument("--keep-files", action="store_true", help="keep the operations' files")
    return p


def default_workdir(user: str) -> Path:
    """The user's own folder for the file operations: ``~/.labctl-workload`` (the user's profile,
    where a real user's files are), else a fresh private folder in TEMP. Never a fixed name in
    TEMP: one left by a deleted user belongs to whoever gets that uid next, and every file
    operation would then fail with permission denied."""
    try:
        home = Path.home() / ".labctl-workload"
        home.mkdir(parents=True, exist_ok=True)
        if os.access(home, os.W_OK | os.X_OK):
            return home
    except (OSError, RuntimeError, KeyError):  # no home, or one this user cannot write
        pass
    return Path(tempfile.mkdtemp(prefix=f"labctl-workload-{user}-"))


def main(argv: list[str] | None = None) -> int:
    return run(parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

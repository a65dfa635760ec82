"""The launcher daemon: sessions, their clients, the workloads' collector and the journal.

Two small HTTP servers: the control side (loopback; the protocol's verbs, with a token only the
launcher's own account can read) and the collector the in-session workloads post to. A session is
*logging_in* from its start until its workload says hello, *active* from then (never because a
client process started), *failed* with the reason when its client gives up, refuses or never brings
up a workload in ``logon_timeout_s``, and *ended* once logged off. Client processes die with the
daemon (a parent-death signal), so a killed launcher leaves no sessions running behind it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from labctl import __version__
from labctl.launcher import resources, waterfall
from labctl.launcher.config import TOKEN_FILE, LauncherConfig, credentials
from labctl.launcher.connectors import Connector, connector
from labctl.launcher.journal import Journal
from labctl.launcher.session import Session
from labctl.lifetime import tie_to_parent

PROTOCOL = "labctl-launcher/1"
MAX_BODY_BYTES = 1024 * 1024  # one post of a workload's events, or one verb's arguments


class Launcher:
    def __init__(self, cfg: LauncherConfig):
        self.cfg = cfg
        cfg.state_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            cfg.state_dir.chmod(0o700)
        self.journal = Journal(cfg.state_dir / "journal.jsonl")
        self.passwords = credentials(cfg)
        self.connector: Connector = connector(cfg.connector)
        self.sessions: dict[str, Session] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.counter = int(time.time())
        self.display: subprocess.Popen[bytes] | None = None
        self.display_name = cfg.connector.display
        self.usage = resources.Usage()
        self._orphans()

    # --- start-up -------------------------------------------------------------------------------

    def _orphans(self) -> None:
        """Sessions a previous run of this daemon left unfinished are gone now: say so."""
        last: dict[str, dict[str, Any]] = {}
        for e in self.journal.after(0):
            if e.get("event") == "session":
                last[e["session"]] = e
        for _sid, e in last.items():
            if e.get("state") in ("logging_in", "active", "logging_off"):
                self.journal.add(
                    {
                        **_strip(e),
                        "state": "failed",
                        "ts": time.time(),
                        "reason": "the launcher restarted: this session ended with its previous run",
                    }
                )

    def start_display(self) -> None:
        """Linux clients draw on an X display: the launcher's own Xvfb unless one is configured."""
        if (
            self.display_name
            or not sys.platform.startswith("linux")
            or self.cfg.connector.kind not in ("rdp", "citrix", "horizon")
        ):
            return
        r, w = os.pipe()
        self.display = subprocess.Popen(
            ["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
            pass_fds=(w,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=tie_to_parent(signal.SIGKILL),
        )
        os.close(w)
        with os.fdopen(r) as fh:
            number = fh.readline().strip()
        if not number:
            raise RuntimeError("Xvfb did not start (is Debian's xvfb installed?)")
        self.display_name = f":{number}"

    # --- the verbs ------------------------------------------------------------------------------

    def hello(self) -> list[dict[str, Any]]:
        return [
            {
                "event": "hello",
                "protocol": PROTOCOL,
                "launcher": self.cfg.name,
                "clock_ts": time.time(),
                "seq": self.journal.seq,
                "labctl_version": __version__,  # labctl check prints it next to the controller's
                "connector": self.connector.kind,
                "max_sessions": self.cfg.max_sessions,
                **self._load(),
            }
        ]

    def _load(self) -> dict[str, Any]:
        with self.lock:
            live = [s for s in self.sessions.values() if s.live]
            pids = [s.proc.pid for s in live if s.proc is not None and s.proc.poll() is None]
        return {"sessions": len(live), **self.usage.sample(pids)}

    def start(self, workload: str, desktops: list[str], users: list[str]) -> list[dict[str, Any]]:
        if len(desktops) != len(users):
            raise UsageError(
                f"start: {len(desktops)} desktops but {len(users)} users; give one user per desktop"
            )
        out = []
        for desktop, user in zip(desktops, users, strict=True):
            now = time.time()
            with self.lock:
                live = [s for s in self.sessions.values() if s.live]
                busy = next((s for s in live if s.user == user or s.desktop == desktop), None)
                if self.stopping.is_set():
                    reason = "the launcher is stopping"
                elif len(live) >= self.cfg.max_sessions:
                    reason = f"the launcher holds its most sessions ({self.cfg.max_sessions}, max_sessions)"
                elif busy is not None:
                    reason = f"session {busy.id} of {busy.user} on {busy.desktop} is still {busy.state}"
                elif self.passwords and user not in self.passwords:
                    reason = f"no password for {user} in the launcher's credentials file"
                else:
                    reason = ""
                if reason:
                    out.append(
                        {"event": "refused", "desktop": desktop, "user": user, "reason": reason, "ts": now}
                    )
                    continue
                self.counter += 1
                s = Session(f"{self.cfg.name}-{self.counter}", desktop, user, workload, now)
                self.sessions[s.id] = s
            out.append(self._state(s, "logging_in"))
            threading.Thread(target=self._run, args=(s,), name=f"session-{s.id}", daemon=True).start()
        return out

    def events(self, after: int) -> list[dict[str, Any]]:
        lines = self.journal.after(after)
        seq = lines[-1]["seq"] if lines else after  # nothing new: the cursor stays where it was
        return [*lines, {"event": "cursor", "seq": seq, "ts": time.time(), **self._load()}]

    def logoff(self, ids: list[str]) -> list[dict[str, Any]]:
        out = []
        for sid in ids:
            s = self.sessions.get(sid)
            if s is None:
                raise UsageError(f"logoff: no session {sid} on launcher {self.cfg.name}")
            if s.live and s.logoff_ts is None:
                s.logoff_ts = time.time()
                out.append(self._state(s, "logging_off"))
            else:
                out.append(_strip(self._session_line(s, s.state)))
        return out

    # --- one session ----------------------------------------------------------------------------

    def _state(self, s: Session, state: str, **extra: Any) -> dict[str, Any]:
        s.state = state
        return self.journal.add(self._session_line(s, state, **extra))

    def _session_line(self, s: Session, state: str, **extra: Any) -> dict[str, Any]:
        line = {
            "event": "session",
            "session": s.id,
            "desktop": s.desktop,
            "user": s.user,
            "state": state,
            "ts": time.time(),
        }
        line.update({k: v for k, v in extra.items() if v is not None})
        return line

    def _run(self, s: Session) -> None:
        try:
            self._connect(s)
            self._await_logon(s)
            if s.state == "active" or s.state == "logging_off":
                self._await_end(s)
        except Exception as exc:  # a session's failure is reported, never the launcher's end
            if s.live:
                self._kill(s)
                self._state(s, "failed", reason=f"launcher error: {type(exc).__name__}: {exc}")
        finally:
            if s.launch is not None:
                for p in s.launch.cleanup:
                    with contextlib.suppress(OSError):
                        p.unlink()
            s.done.set()

    def _connect(self, s: Session) -> None:
        workdir = self.cfg.state_dir / "sessions"
        workdir.mkdir(exist_ok=True)
        s.launch = self.connector.launch(s.desktop, s.user, self.passwords.get(s.user, ""), s.id, workdir)
        env = {**os.environ, **s.launch.env}
        if self.display_name:
            env["DISPLAY"] = self.display_name
        s.proc = subprocess.Popen(
            s.launch.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=tie_to_parent(signal.SIGKILL),
        )
        s.client_ts = time.time()
        assert s.proc.stdin is not None
        with contextlib.suppress(OSError):
            s.proc.stdin.write(s.launch.stdin.encode())
            s.proc.stdin.close()
        threading.Thread(target=self._read_client, args=(s,), daemon=True).start()

    def _read_client(self, s: Session) -> None:
        assert s.proc is not None and s.proc.stdout is not None
        for raw in s.proc.stdout:
            line = raw.decode(errors="replace").rstrip()
            s.tail.append(line)
            p = self.connector.progress(line)
            if p is None:
                continue
            if p.marker == "error":
                s.error = s.error or p.detail
            else:
                s.marks.setdefault(p.marker, time.time())
                if p.marker == "security":
                    s.security = p.detail

    def _await_logon(self, s: Session) -> None:
        assert s.proc is not None
        deadline = s.launch_ts + self.cfg.logon_timeout_s
        while s.state == "logging_in":
            if s.proc.poll() is not None:
                time.sleep(0.2)  # the reader's last lines
                self._state(
                    s, "failed", reason=s.error or self.connector.failure(s.proc.returncode, list(s.tail))
                )
                return
            if time.time() >= deadline or s.logoff_ts is not None or self.stopping.is_set():
                why = (
                    "logged off before it logged on"
                    if s.logoff_ts is not None
                    else "the launcher stopped"
                    if self.stopping.is_set()
                    else self._no_workload(s)
                )
                self._kill(s)
                self._state(s, "failed", reason=why)
                return
            time.sleep(0.1)

    def _no_workload(self, s: Session) -> str:
        if s.error:
            return s.error
        up = "active" in s.marks
        return f"no workload reported in within {self.cfg.logon_timeout_s:g} s" + (
            " although the display connection was up (wrong password on a server whose logon screen keeps the "
            "connection, or the desktop's logon script did not start `labctl workload`)"
            if up
            else " and the display connection never came up"
        )

    def _await_end(self, s: Session) -> None:
        assert s.proc is not None
        while s.proc.poll() is None:
            if s.logoff_ts is not None and time.time() >= s.logoff_ts + self.cfg.logoff_timeout_s:
                self._kill(s)
                self._state(
                    s,
                    "ended",
                    reason=f"forced: the session did not end within {self.cfg.logoff_timeout_s:g} s of its logoff",
                )
                return
            if self.stopping.is_set():
                self._kill(s)
                self._state(s, "failed", reason="the launcher stopped")
                return
            time.sleep(0.1)
        if s.logoff_ts is not None:
            self._state(s, "ended")
        else:
            self._state(
                s,
                "failed",
                reason="the session ended without a logoff: "
                + (s.error or self.connector.failure(s.proc.returncode, list(s.tail))),
            )

    def _kill(self, s: Session) -> None:
        if s.proc is not None and s.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(s.proc.pid, signal.SIGTERM)
            try:
                s.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(s.proc.pid, signal.SIGKILL)
                s.proc.wait(timeout=5)

    # --- the collector --------------------------------------------------------------------------

    def report(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        """Events a workload posted; the answer tells it its profile and whether to log off."""
        now = time.time()
        s: Session | None = None
        for ev in events:
            user, sid = str(ev.get("user", "")), ev.get("session")
            with self.lock:
                cands = [
                    x for x in self.sessions.values() if (sid and x.id == sid) or (not sid and x.user == user)
                ]
                s = next((x for x in reversed(cands) if x.live), None)
            if s is None:
                # A workload of a session this launcher did not start (or no longer holds): log it off.
                return {"ok": True, "logoff": True, "why": "this launcher holds no session for this user"}
            kind = ev.get("event")
            if kind == "hello" and s.hello is None:
                s.hello, s.hello_ts = ev, now
                s.clock_offset_s = now - float(ev.get("ts", now))
                if s.state == "logging_in":
                    self._state(s, "active", login_s=round(now - s.launch_ts, 3))
            elif kind == "operation":
                start = float(ev["start_ts"]) + s.clock_offset_s
                self.journal.add(
                    {
                        "event": "operation",
                        "session": s.id,
                        "index": int(ev["index"]),
                        "name": str(ev["name"]),
                        "start_ts": start,
                        "response_s": float(ev["response_s"]),
                        **({"error": str(ev["error"])} if ev.get("error") else {}),
                    }
                )
                s.ops += 1
                if not s.waterfall_sent:
                    s.waterfall_sent = True
                    self._waterfall(s, start + float(ev["response_s"]))
        assert s is not None
        return {
            "ok": True,
            "logoff": s.logoff_ts is not None or self.stopping.is_set(),
            "profile": s.workload,
        }

    def _waterfall(self, s: Session, first_op_end_ts: float) -> None:
        """Journal the logon's waterfall. A broker's API may take seconds to answer: that lookup runs
        beside the collector, never inside a workload's report (the workload re-sends after 5 s)."""
        if self.connector.cfg.broker_api is None:
            self.journal.add(waterfall.event(s, self.connector, first_op_end_ts))
            return
        threading.Thread(
            target=lambda: self.journal.add(waterfall.event(s, self.connector, first_op_end_ts)),
            name=f"waterfall-{s.id}",
            daemon=True,
        ).start()

    # --- the servers ----------------------------------------------------------------------------

    def serve(self) -> None:
        self.start_display()
        token = secrets.token_hex(16)
        tpath = self.cfg.state_dir / TOKEN_FILE
        tpath.write_text(token)
        tpath.chmod(0o600)
        control = _server(self.cfg.control.host, self.cfg.control.port, self, token, control=True)
        collector = _server(self.cfg.collector.bind, self.cfg.collector.port, self, token, control=False)
        (self.cfg.state_dir / "ports.json").write_text(
            json.dumps(
                {
                    "control": control.server_address[1],
                    "collector": collector.server_address[1],
                    "pid": os.getpid(),
                }
            )
        )
        threads = [threading.Thread(target=srv.serve_forever, daemon=True) for srv in (control, collector)]
        for t in threads:
            t.start()
        signal.signal(signal.SIGTERM, lambda *_: self.stopping.set())
        signal.signal(signal.SIGINT, lambda *_: self.stopping.set())
        print(
            json.dumps(
                {
                    "event": "serving",
                    "launcher": self.cfg.name,
                    "control": control.server_address[1],
                    "collector": collector.server_address[1],
                    "display": self.display_name,
                }
            ),
            flush=True,
        )
        try:
            while not self.stopping.wait(0.5):
                pass
            for s in list(self.sessions.values()):
                s.done.wait(timeout=10)
        finally:
            control.shutdown()
            collector.shutdown()
            if self.display is not None:
                self.display.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.display.wait(timeout=5)
            self.journal.close()
            with contextlib.suppress(OSError):
                tpath.unlink()


class UsageError(ValueError):
    """A verb's arguments are wrong (exit 2, one line)."""


def _strip(e: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in e.items() if k not in ("seq", "reason", "login_s")}


def _server(host: str, port: int, launcher: Launcher, token: str, *, control: bool) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        server_version = "labctl-launcher/1"

        def log_message(self, fmt: str, *args: Any) -> None:  # the journal is the log
            pass

        def _answer(self, code: int, body: dict[str, Any] | list[dict[str, Any]]) -> None:
            data = (
                json.dumps(body) if isinstance(body, dict) else "\n".join(json.dumps(b) for b in body)
            ).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            if n > MAX_BODY_BYTES:
                self._answer(413, {"error": f"body of {n} bytes is more than {MAX_BODY_BYTES}"})
                return
            try:
                text = self.rfile.read(n).decode()
                items = [json.loads(line) for line in text.splitlines() if line.strip()]
                if not all(isinstance(i, dict) for i in items):
                    raise ValueError("every line must be a JSON object")
            except (ValueError, UnicodeDecodeError) as exc:
                self._answer(400, {"error": f"not JSON lines: {exc}"})
                return
            if not control:
                if self.path.rstrip("/") != "/report":
                    self._answer(404, {"error": "post workload events to /report"})
                    return
                self._answer(200, launcher.report(items))
                return
            if not secrets.compare_digest(self.headers.get("X-Labctl-Token", ""), token):
                self._answer(403, {"error": "wrong or missing control token"})
                return
            args = items[0] if items else {}
            verb = self.path.strip("/").removeprefix("v1/")
            try:
                if verb == "hello":
                    out = launcher.hello()
                elif verb == "start":
                    out = launcher.start(
                        str(args.get("workload", "task")),
                        list(args.get("desktop", [])),
                        list(args.get("user", [])),
                    )
                elif verb == "events":
                    out = launcher.events(int(args.get("after", 0)))
                elif verb == "logoff":
                    out = launcher.logoff(list(args.get("session", [])))
                else:
                    self._answer(404, {"error": f"no verb {verb!r} (hello, start, events, logoff)"})
                    return
            except UsageError as exc:
                self._answer(400, {"error": str(exc)})
                return
            self._answer(200, out)

    return ThreadingHTTPServer((host, port), Handler)

"""The session launchers a site agent hosts or reaches, and the relay of the controller's
``labctl-launcher/1`` calls to them (request/reply on ``labctl.launcher.<lab>.<agent>``).

A launcher the inventory places at this agent (``agents.sites[].launchers``) is reached by its kind:

- ``local``: on this machine. With ``local.serve`` (the default) the agent starts
  ``labctl launcher --config <config> serve`` as its own child when it starts and stops it when it
  stops; the daemon dies with the agent (a parent-death signal), and its display clients die with
  the daemon, so an agent killed mid-storm leaves no session running behind the controller's back:
  the controller's next call finds no agent (a lab fault naming the agent and the launcher), and
  the launcher, started again with the agent, reports those sessions ``failed`` ("the launcher
  restarted"). Each call goes to the daemon's control endpoint through
  :func:`labctl.launcher.verbs.call`, the very client ``labctl launcher <verb>`` runs, so the answer
  is the protocol's text without a Python start per call (seconds on a busy launcher machine).
- ``ssh``: from here over OpenSSH, the lab layer's own backend
  (:class:`labctl.lab.launchers.ssh.SshLauncherBackend`), as the agent runs power's own backends.

The launcher is a process of its own, not a part of the agent: a display client that hangs or a
connector that crashes costs the launcher, never the agent's power orders.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Final

from labctl.drivers.hub.protocol import ClockSpec, LauncherAnswer, LauncherCall
from labctl.errors import LabctlError
from labctl.inventory.model import Lab
from labctl.inventory.vdi import Launcher
from labctl.lab.context import LabContext
from labctl.lab.launchers.ssh import SshLauncherBackend
from labctl.launcher import verbs
from labctl.launcher.config import ConfigError, LauncherConfig
from labctl.launcher.config import load as load_config
from labctl.lifetime import tie_to_parent

log = logging.getLogger(__name__)

SERVE_DEADLINE_S: Final = 120.0  # a launcher daemon says it serves within this long (a cold Python start)
STOP_DEADLINE_S: Final = 20.0  # it ends its sessions and exits within this long of SIGTERM


class HostedLauncher:
    """A ``local`` launcher: its configuration and, when the agent serves it, its daemon process."""

    def __init__(self, launcher: Launcher, state_dir: Path):
        assert launcher.local is not None
        self.launcher = launcher
        self.config_path = Path(launcher.local.config)
        self.log_path = state_dir / f"launcher-{launcher.name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.config: LauncherConfig | None = None
        self.error = ""  # why it cannot answer (its configuration, its daemon), one line
        self.settled = threading.Event()  # it serves, or it will not (error)

    def start(self) -> None:
        """Read its configuration and start its daemon (returns at once: :meth:`wait`)."""
        try:
            self.config = load_config(self.config_path)
        except ConfigError as exc:
            self.error = str(exc)
            self.settled.set()
            return
        if self.launcher.local is None or not self.launcher.local.serve:
            self.settled.set()  # a service on this machine runs the daemon
            return
        argv = [sys.executable, "-m", "labctl.agents.launcher_serve", str(self.config_path)]
        with self.log_path.open("ab") as err:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                preexec_fn=tie_to_parent(signal.SIGKILL),
            )
        threading.Thread(
            target=self._await_serving, name=f"launcher-{self.launcher.name}", daemon=True
        ).start()

    def _await_serving(self) -> None:
        p = self.proc
        assert p is not None
        line = _first_line(p.stdout, SERVE_DEADLINE_S)
        if line.startswith('{"event": "serving"'):
            log.info("launcher %s serves: %s", self.launcher.name, line.strip())
            # anything it prints later goes to its log, never into a pipe that fills and blocks it
            threading.Thread(target=self._drain, args=(p,), daemon=True).start()
        else:
            self.error = (
                f"its daemon did not start within {SERVE_DEADLINE_S:g} s: {self._tail() or 'no output'} "
                f"(see {self.log_path})"
            )
            self.stop()
        self.settled.set()

    def _drain(self, p: subprocess.Popen[bytes]) -> None:
        assert p.stdout is not None
        with self.log_path.open("ab") as out:
            for raw in p.stdout:
                out.write(raw)
                out.flush()

    def wait(self, timeout_s: float) -> bool:
        """Until it serves or will not (False: still starting after ``timeout_s``)."""
        return self.settled.wait(timeout_s)

    def _tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1][:200] if lines else ""

    def why_not(self) -> str:
        """Why a call did not get through, when the daemon is the reason (it died, it never started)."""
        if self.error:
            return self.error
        p = self.proc
        if p is not None and p.poll() is not None:
            return f"its daemon exited ({p.returncode}): {self._tail() or 'no output'} (see {self.log_path})"
        return ""

    def stop(self) -> None:
        p, self.proc = self.proc, None
        if p is None or p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


def _first_line(stream: IO[bytes] | None, timeout_s: float) -> str:
    """The first line of ``stream`` within ``timeout_s`` ('' if none came)."""
    got: list[bytes] = []
    if stream is None:
        return ""
    reader = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout_s)
    return got[0].decode(errors="replace") if got else ""


class LauncherHost:
    """Answers the controller's launcher calls for the launchers placed at agent ``name``."""

    def __init__(self, lab: Lab, name: str, state_dir: Path, context_for: Callable[[ClockSpec], LabContext]):
        self.name = name
        placed = [ln for ln in (lab.vdi.launchers if lab.vdi is not None else ()) if ln.agent == name]
        # as the agent acts on them: reached by their own kind, never sent on to an agent
        self.launchers = {ln.name: ln.model_copy(update={"agent": None}) for ln in placed}
        self.hosted = {
            n: HostedLauncher(ln, state_dir) for n, ln in self.launchers.items() if ln.kind == "local"
        }
        self.context_for = context_for

    def start(self) -> None:
        """Start the daemons of the launchers this agent serves (returns at once)."""
        for h in self.hosted.values():
            h.start()

    def wait(self, timeout_s: float = SERVE_DEADLINE_S) -> None:
        """Until every daemon serves or will not (said in the log): the agent says it serves after."""
        for h in self.hosted.values():
            h.wait(timeout_s)
            if h.error:
                log.warning("launcher %s: %s", h.launcher.name, h.error)

    def close(self) -> None:
        for h in self.hosted.values():
            h.stop()

    def answer(self, call: LauncherCall) -> LauncherAnswer:
        """The launcher's text for ``call``, or why there is none (one line and its fix)."""
        ln = self.launchers.get(call.launcher)
        if ln is None:
            return self._no(
                call,
                f"no launcher {call.launcher!r} is placed at agent {self.name} "
                f"(it has: {', '.join(self.launchers) or 'none'})",
                "check the agents: section of the inventory the controller and the agent read",
            )
        try:
            if ln.kind == "local":
                return self._local(call)
            ctx = self.context_for(call.clock)
            text = SshLauncherBackend(ctx).call(ln, call.verb, call.args)
            return LauncherAnswer(launcher=ln.name, agent=self.name, ok=True, stdout=text)
        except LabctlError as exc:
            return self._no(call, str(exc), "")
        except Exception as exc:  # the agent carries on; the controller gets the one line
            log.exception("launcher call %s %s", call.launcher, call.verb)
            return self._no(call, f"{type(exc).__name__}: {exc}", "see the agent's log")

    def _local(self, call: LauncherCall) -> LauncherAnswer:
        h = self.hosted[call.launcher]
        if not h.wait(call.timeout_s):
            return self._no(call, f"launcher {call.launcher}: its daemon is still starting", "ask again")
        if h.config is None:
            return self._no(call, h.why_not(), "fix the launcher's configuration and restart the agent")
        try:
            objs = verbs.call(h.config, call.verb, dict(call.args))
        except verbs.VerbError as exc:
            why = h.why_not() or str(exc)
            fix = "restart the agent (it starts the launcher)" if h.proc is not None or h.error else ""
            return self._no(call, f"launcher {call.launcher}: {why}", fix)
        text = "".join(json.dumps(o) + "\n" for o in objs)
        return LauncherAnswer(launcher=call.launcher, agent=self.name, ok=True, stdout=text)

    def _no(self, call: LauncherCall, why: str, fix: str) -> LauncherAnswer:
        return LauncherAnswer(launcher=call.launcher, agent=self.name, ok=False, error=why, fix=fix)


def too_big(answer: LauncherAnswer, max_payload: int) -> LauncherAnswer:
    """An answer the hub would refuse (over its ``max_payload``) becomes one saying so."""
    size = len(answer.to_bytes())
    if size <= max_payload:
        return answer
    log.warning("launcher %s: answer of %d bytes over max_payload %d", answer.launcher, size, max_payload)
    return answer.model_copy(
        update={
            "ok": False,
            "stdout": "",
            "error": f"its answer of {size} bytes is more than the hub's max_payload ({max_payload})",
            "fix": "poll the launchers more often, or raise max_payload in the hub's nats-server configuration",
        }
    )

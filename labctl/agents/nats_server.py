"""Start and stop a pinned ``nats-server``: a hub with JetStream, and leaf nodes dialling out to it.

The Makefile builds the server into ``.labctl/bin/nats-server`` from the Go module proxy (the
version is pinned there). Tests and the agents' set-up use this module so that every server they
start listens on loopback only (unless told otherwise), keeps its JetStream store where it is told,
and is stopped by its process id:

    hub = start_nats_server(tmp_path / "hub", name="hub", js_domain="hub", leaf_listen=True)
    leaf = start_nats_server(tmp_path / "site-a", name="site-a", leaf_remotes=[hub.leaf_url])
    ...
    leaf.stop(); hub.stop()

Ports are chosen by the server (``-1``: a free port) and read back from its ports file and its
monitoring endpoint, so concurrent test sessions never collide; once known they are written into
the server's config, so :meth:`NatsServer.restart` comes back on the same ports (a hub that goes
away and returns, as the agents' reconnect tests need).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from labctl.errors import LabctlError
from labctl.lifetime import tie_to_parent

NATS_SERVER_VAR = "LABCTL_NATS_SERVER"  # a nats-server binary to use instead of the project's
PROJECT_BIN = Path(__file__).resolve().parents[2] / ".labctl" / "bin"
READY_TIMEOUT_S: Final = 15.0
STOP_TIMEOUT_S: Final = 5.0
_HTTP_TIMEOUT_S: Final = 1.0
_POLL_S: Final = 0.05


class NatsServerError(LabctlError):
    pass


def nats_server_binary() -> Path:
    """``$LABCTL_NATS_SERVER``, else the project's ``.labctl/bin/nats-server``, else one on PATH."""
    env = os.environ.get(NATS_SERVER_VAR)
    if env:
        return Path(env)
    local = PROJECT_BIN / "nats-server"
    if local.exists():
        return local
    found = shutil.which("nats-server")
    if found:
        return Path(found)
    raise NatsServerError(f"{local}: nats-server is not installed (run `make install`)")


@dataclass
class NatsServer:
    """A nats-server this process started (stop it with :meth:`stop`)."""

    name: str
    workdir: Path
    config_file: Path
    log_file: Path
    host: str
    port: int  # clients
    monitor_port: int
    leaf_port: int | None  # where leaf nodes dial in (a hub), else None
    js_domain: str | None
    jetstream: bool
    leaf_remotes: list[str] = field(default_factory=list)  # hubs this leaf node dials out to
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    leaf_host: str | None = None  # where leaf nodes dial in, when not ``host``
    tied: bool = False  # stopped by the kernel when the thread that started it ends

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    @property
    def leaf_url(self) -> str:
        if self.leaf_port is None:
            raise NatsServerError(f"{self.name}: accepts no leaf nodes (start it with leaf_listen=True)")
        return f"nats-leaf://{self.leaf_host or self.host}:{self.leaf_port}"

    @property
    def monitor_url(self) -> str:
        return f"http://{self.host}:{self.monitor_port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def monitor(self, path: str) -> Any:
        """A monitoring endpoint's JSON (``varz``, ``leafz``, ``jsz`` ...)."""
        with urllib.request.urlopen(f"{self.monitor_url}/{path}", timeout=_HTTP_TIMEOUT_S) as resp:
            return json.loads(resp.read())

    def leaf_connections(self) -> int:
        """Leaf-node connections of this server (in, for a hub; out, for a leaf)."""
        return int(self.monitor("leafz").get("leafnodes", 0))

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s``; reaps the process. Idempotent."""
        self._signal_and_wait(signal.SIGTERM, timeout_s)

    def kill(self) -> None:
        """SIGKILL: the server dies as in a crash (its JetStream store stays for a restart)."""
        self._signal_and_wait(signal.SIGKILL, STOP_TIMEOUT_S)

    def _signal_and_wait(self, sig: int, timeout_s: float) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=STOP_TIMEOUT_S)

    def restart(self, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        """Stop (if running) and start again on the same ports with the same store."""
        self.stop()
        self.proc = _launch(self.config_file, self.log_file, self.workdir, tied=self.tied)
        _wait_ready(self, ready_timeout_s)


def _config_text(
    *,
    name: str,
    host: str,
    port: int,
    monitor_port: int,
    store_dir: Path | None,
    js_domain: str | None,
    leaf_port: int | None,
    leaf_remotes: Sequence[str],
    leaf_host: str | None = None,
) -> str:
    lines = [
        f'server_name: "{name}"',
        f'listen: "{host}:{port}"',
        f'http: "{host}:{monitor_port}"',
    ]
    if store_dir is not None:
        domain = f', domain: "{js_domain}"' if js_domain else ""
        lines.append(f'jetstream {{ store_dir: "{store_dir}"{domain} }}')
    leaf: list[str] = []
    if leaf_port is not None:
        leaf.append(f'listen: "{leaf_host or host}:{leaf_port}"')
    if leaf_remotes:
        remotes = ", ".join(f'{{ url: "{u}" }}' for u in leaf_remotes)
        # dial again soon after the hub comes back (the default waits longer)
        leaf.append(f"reconnect: 1s, remotes: [ {remotes} ]")
    if leaf:
        lines.append("leafnodes { " + ", ".join(leaf) + " }")
    return "\n".join(lines) + "\n"


def _launch(
    config_file: Path, log_file: Path, workdir: Path, *, tied: bool = False
) -> subprocess.Popen[bytes]:
    for old in workdir.glob("*.ports"):
        old.unlink()
    with log_file.open("ab") as log:
        return subprocess.Popen(
            [str(nats_server_binary()), "-c", str(config_file), "--ports_file_dir", str(workdir)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            start_new_session=True,  # a Ctrl-C to the test run is not delivered to it
            preexec_fn=tie_to_parent(signal.SIGTERM) if tied else None,  # see start_nats_server
        )


def _log_tail(log_file: Path, lines: int = 3) -> str:
    try:
        return " | ".join(log_file.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait_ready(server: NatsServer, timeout_s: float) -> None:
    """Until the server answers its health check (JetStream too, when enabled) and each leaf
    remote is connected; else stop it and raise with the end of its log."""
    deadline = time.monotonic() + timeout_s
    assert server.proc is not None
    health = "healthz?js-enabled-only=true" if server.jetstream else "healthz"
    while True:
        if server.proc.poll() is not None:
            raise NatsServerError(
                f"{server.config_file}: nats-server {server.name} exited with {server.proc.returncode}: "
                f"{_log_tail(server.log_file)}"
            )
        with contextlib.suppress(OSError, ValueError, urllib.error.URLError):
            if server.monitor(health).get("status") == "ok" and (
                not server.leaf_remotes or server.leaf_connections() >= len(server.leaf_remotes)
            ):
                return
        if time.monotonic() > deadline:
            server.stop()
            raise NatsServerError(
                f"{server.config_file}: nats-server {server.name} not ready after {timeout_s:g} s: "
                f"{_log_tail(server.log_file)}"
            )
        time.sleep(_POLL_S)


def _read_ports(workdir: Path, proc: subprocess.Popen[bytes], deadline: float) -> dict[str, list[str]]:
    ports_file = workdir / f"{nats_server_binary().name}_{proc.pid}.ports"
    while True:
        with contextlib.suppress(OSError, ValueError):
            ports: dict[str, list[str]] = json.loads(ports_file.read_text())
            if ports.get("nats") and ports.get("monitoring"):
                return ports
        if proc.poll() is not None or time.monotonic() > deadline:
            raise NatsServerError(f"{ports_file}: nats-server wrote no ports file")
        time.sleep(_POLL_S)


def start_nats_server(
    workdir: Path,
    *,
    name: str = "hub",
    host: str = "127.0.0.1",
    jetstream: bool = True,
    js_domain: str | None = None,
    leaf_listen: bool = False,
    leaf_remotes: Sequence[str] = (),
    ready_timeout_s: float = READY_TIMEOUT_S,
    leaf_host: str | None = None,
    die_with_starter: bool = False,
) -> NatsServer:
    """Start nats-server with its config, store and log in ``workdir``; return it when ready.

    ``jetstream``: with a JetStream store (``workdir/js``) in domain ``js_domain``;
    ``leaf_listen``: accept leaf nodes (a hub); ``leaf_remotes``: hubs to dial out to (a leaf node,
    e.g. ``[hub.leaf_url]``); ``leaf_host``: accept leaf nodes on this address instead of ``host``
    (e.g. a bridge that only the tests' network namespaces reach). Every port is a free one the
    server picks. ``die_with_starter``: the kernel stops the server when the thread that started
    it ends (a site agent's own leaf node: an agent that is SIGKILLed leaves no server behind).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    config_file = workdir / f"{name}.conf"
    log_file = workdir / f"{name}.log"
    store_dir = workdir / "js" if jetstream else None
    common: dict[str, Any] = dict(
        name=name,
        host=host,
        store_dir=store_dir,
        js_domain=js_domain,
        leaf_remotes=leaf_remotes,
        leaf_host=leaf_host,
    )
    config_file.write_text(
        _config_text(port=-1, monitor_port=-1, leaf_port=-1 if leaf_listen else None, **common)
    )
    deadline = time.monotonic() + ready_timeout_s
    proc = _launch(config_file, log_file, workdir, tied=die_with_starter)
    server = NatsServer(
        name=name,
        workdir=workdir,
        config_file=config_file,
        log_file=log_file,
        host=host,
        port=0,
        monitor_port=0,
        leaf_port=None,
        js_domain=js_domain,
        jetstream=jetstream,
        leaf_remotes=list(leaf_remotes),
        proc=proc,
        leaf_host=leaf_host,
        tied=die_with_starter,
    )
    try:
        ports = _read_ports(workdir, proc, deadline)
        server.port = int(ports["nats"][0].rsplit(":", 1)[1])
        server.monitor_port = int(ports["monitoring"][0].rsplit(":", 1)[1])
        _wait_ready(server, max(0.1, deadline - time.monotonic()))
        if leaf_listen:
            server.leaf_port = int(server.monitor("varz")["leaf"]["port"])
    except BaseException:
        server.stop()
        raise
    # the ports are known now: a restart must come back on the same ones
    config_file.write_text(
        _config_text(port=server.port, monitor_port=server.monitor_port, leaf_port=server.leaf_port, **common)
    )
    return server


def start_hub_and_leaf(
    workdir: Path,
    *,
    hub_domain: str = "hub",
    leaf_name: str = "site-a",
    leaf_jetstream: bool = True,
    ready_timeout_s: float = READY_TIMEOUT_S,
) -> tuple[NatsServer, NatsServer]:
    """A hub (JetStream domain ``hub_domain``, accepting leaf nodes) and one leaf node dialling out
    to it, as a site agent's server would; the leaf's own JetStream (domain ``leaf_name``) when
    ``leaf_jetstream``. Returned once the leaf connection is up. Stop the leaf first."""
    hub = start_nats_server(
        workdir / "hub", name="hub", js_domain=hub_domain, leaf_listen=True, ready_timeout_s=ready_timeout_s
    )
    try:
        leaf = start_nats_server(
            workdir / leaf_name,
            name=leaf_name,
            jetstream=leaf_jetstream,
            js_domain=leaf_name if leaf_jetstream else None,
            leaf_remotes=[hub.leaf_url],
            ready_timeout_s=ready_timeout_s,
        )
    except BaseException:
        hub.stop()
        raise
    return hub, leaf

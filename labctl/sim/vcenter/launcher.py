"""Launch the simulated vCenter: govmomi's simulator (v0.46.3) as the `labctl-vcsim` program.

`labctl-vcsim` (source in ``vcsimlab/``, built by `make install` into ``.labctl/bin/``) is vcsim's
own simulator library with the inventory's topology, VM names, task latency with jitter and the
``vcenter_task_fails`` fault; plain `vcsim`'s flags cannot express those (see vcsimlab/main.go).
If the binary is missing or older than its source and Go is installed, it is built on first use
(about 3 s, offline from the module cache `make install` filled).

The process runs detached in its own session, configured by a JSON file (mode 0600, it holds the
password) under ``<state_dir>/vcenter/``, and reports readiness by writing a ready file there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labctl.errors import LabctlError
from labctl.inventory.faults import FaultSpec
from labctl.inventory.model import Lab, VCenter
from labctl.sim.certs import server_cert
from labctl.sim.endpoint import EndpointInfo, PortInUseError
from labctl.sim.state import write_text_atomic
from labctl.sim.vcenter.topology import Topology, simulator_config, topology

PROJECT_ROOT = Path(__file__).resolve().parents[3]
BIN_DIR = PROJECT_ROOT / ".labctl" / "bin"
BINARY = BIN_DIR / "labctl-vcsim"
GO_SOURCE = Path(__file__).resolve().parent / "vcsimlab"
GOVMOMI_VERSION = "v0.46.3"
EXIT_PORT_IN_USE = 3


class VcsimUnavailable(LabctlError):
    pass


def _sources() -> list[Path]:
    return [p for p in GO_SOURCE.iterdir() if p.suffix in (".go", ".mod", ".sum")]


def go_env() -> dict[str, str]:
    """The Makefile's GOENV: a project-local GOPATH and module cache, no toolchain download."""
    go_root = PROJECT_ROOT / ".labctl" / "go"
    env = dict(os.environ)
    env.update(
        GOPATH=str(go_root),
        GOMODCACHE=str(go_root / "pkg" / "mod"),
        GOFLAGS="-modcacherw",
        GOTOOLCHAIN="local",
    )
    return env


def ensure_binary(timeout_s: float = 300.0) -> Path:
    """The labctl-vcsim binary, built from ``vcsimlab/`` if missing or out of date."""
    if BINARY.exists() and BINARY.stat().st_mtime >= max(p.stat().st_mtime for p in _sources()):
        return BINARY
    go = shutil.which("go")
    if go is None:
        if BINARY.exists():
            return BINARY  # older than its source, but nothing to rebuild it with
        raise VcsimUnavailable(
            f"the simulated vCenter needs {BINARY} (run `make install`, which builds it with Go)"
        )
    BIN_DIR.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run(
            [go, "build", "-o", str(BINARY), "."],
            cwd=GO_SOURCE,
            env=go_env(),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        raise VcsimUnavailable(f"building {BINARY} took longer than {timeout_s:g} s") from None
    if proc.returncode != 0:
        raise VcsimUnavailable(
            f"building {BINARY} failed (run `make install`):\n{proc.stderr.strip()[-2000:]}"
        )
    return BINARY


def safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def faults_file(state_dir: Path, vc: VCenter) -> Path:
    """Where the simulator process puts run-time faults for this vCenter (labctl-vcsim re-reads it)."""
    return state_dir / "vcenter" / f"{safe_name(vc.name)}.faults.json"


def write_faults_file(state_dir: Path, vc: VCenter, entries: list[dict[str, Any]]) -> None:
    write_text_atomic(faults_file(state_dir, vc), json.dumps(entries), mode=0o600)


@dataclass
class VcsimLaunch:
    """One running labctl-vcsim process (one per vCenter of the lab)."""

    vcenter: VCenter
    topology: Topology
    process: subprocess.Popen[bytes]
    ready_file: Path
    log_file: Path
    ca_file: Path  # the CA that signed its certificate

    @property
    def info(self) -> EndpointInfo:
        return EndpointInfo("vcenter", self.vcenter.name, self.topology.host, self.topology.port, "https")

    def poll_ready(self) -> dict[str, Any] | None:
        """The ready report once written; raises if the process failed."""
        report = None
        if self.ready_file.exists():
            try:
                report = json.loads(self.ready_file.read_text())
            except ValueError:
                report = None  # being written
        if report is not None and report.get("state") == "failed":
            # it exits right after writing the report; its exit status only refines the error
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
            self._raise(report)
        if report is None and self.process.poll() is not None:
            self._raise({"error": f"exited with status {self.process.returncode}"})
        return report

    def _raise(self, report: dict[str, Any]) -> None:
        if report.get("error_kind") == "port_in_use" or self.process.returncode == EXIT_PORT_IN_USE:
            raise PortInUseError("vcenter", self.vcenter.name, self.topology.host, self.topology.port)
        raise LabctlError(
            f"simulated vCenter {self.vcenter.name} failed to start: {report.get('error', '?')}"
            f" (log: {self.log_file})"
        )

    def wait_ready(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            report = self.poll_ready()
            if report is not None:
                return report
            time.sleep(0.02)
        raise LabctlError(
            f"simulated vCenter {self.vcenter.name} did not start within {timeout_s:g} s (log: {self.log_file})"
        )


def launch_vcenter(
    lab: Lab,
    vc: VCenter,
    *,
    password: str,
    state_dir: Path,
    faults: list[FaultSpec],
    preexec_fn: Callable[[], None] | None = None,
) -> VcsimLaunch:
    """Start labctl-vcsim for ``vc`` (detached, its own session); returns at once. ``preexec_fn``
    runs in the child before exec (:func:`labctl.sim.state.tie_to_parent`)."""
    binary = ensure_binary()
    topo = topology(lab, vc)
    folder = state_dir / "vcenter"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    safe = safe_name(vc.name)
    # a certificate from the state folder's CA (labctl.sim.certs), like every simulated endpoint
    tls = server_cert(state_dir, topo.host, vc.name)
    ready = folder / f"{safe}.ready.json"
    ready.unlink(missing_ok=True)
    ds_dir = folder / f"{safe}.datastores"
    shutil.rmtree(ds_dir, ignore_errors=True)
    config = simulator_config(
        topo,
        username=vc.user,
        password=password,
        time_scale=lab.time_scale,
        faults=faults,
        seed=lab.seed,
        ready_file=str(ready),
        datastore_dir=str(ds_dir),
        tls_cert=str(tls.cert_file),
        tls_key=str(tls.key_file),
        faults_file=str(faults_file(state_dir, vc)),
    )
    write_faults_file(state_dir, vc, config["faults"])
    config_file = folder / f"{safe}.json"
    write_text_atomic(config_file, json.dumps(config, indent=1), mode=0o600)
    log_file = state_dir / f"vcsim-{safe}.log"
    out = open(log_file, "wb")  # noqa: SIM115 - a fresh log per start, handed to the child, closed below
    try:
        proc = subprocess.Popen(
            [str(binary), "-config", str(config_file)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            preexec_fn=preexec_fn,  # only prctl and getppid after the fork
        )
    finally:
        out.close()
    return VcsimLaunch(vc, topo, proc, ready, log_file, tls.ca_file)

"""The simulator process: one twin, one FaultBook, every Python endpoint of the lab.

    python -m labctl.sim.simd --state-dir DIR --lab FILE [--config C] [--fault KIND:TARGET ...]
                              [--twin auto|placeholder|physical] [--anchor WALL_S]

Started (detached) by :class:`labctl.sim.simlab.SimulatedLab` / `labctl sim up`; logs to stderr,
which `up` sends to ``<state_dir>/simd.log``. All endpoints (WoL, Redfish, SSH, Unity) and the
vCenter guest updater live in this one process so they share one lab twin. The simulated vCenter
itself is a separate program (`labctl-vcsim`) that `up` starts next to this one.

Readiness is reported in ``<state_dir>/simd.ready.json``: ``{"state": "ready", endpoints, skipped,
control, ...}`` once every endpoint listens, or ``{"state": "failed", "error_kind": "port_in_use",
kind, name, host, port, ...}`` (exit status 2) / ``{"state": "failed", "error": ...}`` (exit status 1).

While it runs, a small HTTP control port on 127.0.0.1 (token in the ready file and the state file)
answers ``GET /status`` (endpoints, twin view of each endpoint's machine, per-endpoint stats such
as WoL malformed-packet counts) and ``POST /faults`` (``{"fault": "KIND:TARGET", "after_s": 0,
"probability": 1}``) / ``DELETE /faults`` to change injected faults at run time.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import json
import logging
import os
import secrets
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from labctl.clock import LabClock
from labctl.errors import LabctlError
from labctl.inventory.fault_targets import FaultOptionError, check_faults
from labctl.inventory.faults import FaultSpec
from labctl.inventory.load import load_lab
from labctl.inventory.model import Lab
from labctl.sim.certs import CA_FILE
from labctl.sim.endpoint import PortInUseError, SimContext, SimEndpoint
from labctl.sim.faults import FaultBook, parse_fault_option
from labctl.sim.secrets import sim_secrets
from labctl.sim.state import SIMD_READY_FILE, write_text_atomic
from labctl.sim.twin.interface import LabTwin
from labctl.sim.twin.placeholder import PlaceholderTwin
from labctl.sim.vcenter.guest import GuestUpdater
from labctl.sim.vcenter.launcher import write_faults_file
from labctl.sim.vcenter.topology import fault_entries, topology

log = logging.getLogger("labctl.sim.simd")

# Endpoint kinds and the module whose build_endpoints(ctx) makes them.
BUILDERS: tuple[tuple[str, str], ...] = (
    ("wol", "labctl.sim.wol"),
    ("redfish", "labctl.sim.redfish"),
    ("unity", "labctl.sim.unity"),
    ("powerstore", "labctl.sim.powerstore"),
    ("sc", "labctl.sim.sc"),
    ("equallogic", "labctl.sim.equallogic"),
    ("ssh", "labctl.sim.ssh"),
    ("ipmi", "labctl.sim.ipmi"),
    ("launcher", "labctl.sim.sessions"),
)
EXIT_PORT_IN_USE = 2
START_WORKERS = 16


# --- twin --------------------------------------------------------------------------------------


def make_twin(kind: str, lab: Lab, clock: LabClock, faults: FaultBook) -> tuple[LabTwin, str]:
    """The lab twin: ``physical`` (labctl.sim.twin.build_twin), ``placeholder``, or ``auto``."""
    if kind in ("auto", "physical"):
        import labctl.sim.twin as twin_pkg  # a broken physical twin fails loudly, not silently

        build_twin = getattr(twin_pkg, "build_twin", None)
        if build_twin is not None:
            return build_twin(lab, clock, faults), "physical"
        if kind == "physical":
            raise LabctlError(
                "--twin physical: the physical lab twin (labctl.sim.twin.build_twin) is not built yet;"
                " use --twin placeholder"
            )

    # client_never_wakes is applied by the WoL listener through the FaultBook (after_s, probability)
    return PlaceholderTwin(lab, clock), "placeholder"


# --- control port --------------------------------------------------------------------------------


class Simulator:
    """Everything the simulator process hosts."""

    def __init__(self, args: argparse.Namespace):
        self.state_dir = Path(args.state_dir).resolve()
        self.ready_file = self.state_dir / SIMD_READY_FILE
        self.lab = load_lab(args.lab, args.config, every_machine=True)
        anchor = args.anchor if args.anchor is not None else time.time()
        self.clock = LabClock(scale=self.lab.time_scale, anchor_wall_s=anchor)
        self.fault_specs = [*self.lab.faults, *(_parse_fault(f) for f in args.fault)]
        self.faults = FaultBook(self.fault_specs, self.clock, seed=self.lab.seed)
        self.twin, self.twin_kind = make_twin(args.twin, self.lab, self.clock, self.faults)

        self.secrets = sim_secrets(self.lab, self.state_dir, generate=False).values
        self.ctx = SimContext(self.lab, self.twin, self.faults, self.clock, self.state_dir, self.secrets)
        self.endpoints: list[SimEndpoint] = []
        self.started: list[SimEndpoint] = []
        self.skipped: list[dict[str, str]] = []
        self.updaters: list[Any] = []
        self.token = secrets.token_urlsafe(16)
        self.control: ThreadingHTTPServer | None = None
        self.stopping = threading.Event()

    # --- start ---------------------------------------------------------------------------------
    def build(self) -> None:
        for kind, module in BUILDERS:
            mod = importlib.import_module(module)
            eps = list(mod.build_endpoints(self.ctx))
            log.info("%s: %d endpoint(s)", kind, len(eps))
            self.endpoints.extend(eps)

    def start_endpoints(self) -> None:
        lock = threading.Lock()

        def start(ep: SimEndpoint) -> None:
            if self.stopping.is_set():
                return
            try:
                ep.start()
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    i = ep.info
                    raise PortInUseError(i.kind, i.name, i.host, i.port) from None
                raise
            with lock:
                self.started.append(ep)

        with ThreadPoolExecutor(max_workers=START_WORKERS, thread_name_prefix="start") as pool:
            futures = [pool.submit(start, ep) for ep in self.endpoints]
            first_error: BaseException | None = None
            for fut in futures:
                exc = fut.exception()
                if exc is not None and first_error is None:
                    first_error = exc
                    self.stopping.set()  # start no more
            if first_error is not None:
                raise first_error

    def start_updaters(self, timeout_s: float) -> None:
        vcenters = [
            vc for vc in self.lab.vcenters.values() if any(m.vcenter == vc.name for m in self.lab.vms)
        ]
        if not vcenters:
            return

        for vc in vcenters:
            ca = self.state_dir / CA_FILE  # labctl-vcsim's certificate is from the lab's CA
            updater = GuestUpdater(
                vc,
                topology(self.lab, vc),
                password=self.secrets.get(vc.password, ""),
                twin=self.twin,
                clock=self.clock,
                ca_file=str(ca) if ca.exists() else None,
            )
            updater.start(connect_timeout_s=timeout_s)
            self.updaters.append(updater)

    def start_control(self) -> None:
        sim = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                log.debug("control: " + format, *args)

            def _reply(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _accept(self, path: str) -> bool:
                """The request has the token and is for ``path``; else the error reply is sent."""
                if self.headers.get("X-Labctl-Token") != sim.token:
                    self._reply(401, {"error": "missing or wrong X-Labctl-Token"})
                    return False
                if self.path != path:
                    self._reply(404, {"error": f"no such resource {self.path}"})
                    return False
                return True

            def do_GET(self) -> None:
                if self._accept("/status"):
                    self._reply(200, sim.status())

            def do_POST(self) -> None:
                if not self._accept("/faults"):
                    return
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                    spec = check_faults([str(body["fault"])], sim.lab)[0]
                    spec = spec.model_copy(
                        update={
                            "after_s": float(body.get("after_s", 0.0)),
                            "probability": float(body.get("probability", 1.0)),
                        }
                    )
                    FaultSpec.model_validate(spec.model_dump())
                except (ValueError, KeyError, TypeError, FaultOptionError) as exc:
                    self._reply(400, {"error": str(exc)})
                    return
                sim.faults.add(spec)
                sim.fault_specs.append(spec)
                sim.publish_vcenter_faults()
                log.info("fault added at run time: %s", spec)
                self._reply(200, {"faults": [f.model_dump(mode="json") for f in sim.fault_specs]})

            def do_DELETE(self) -> None:
                if not self._accept("/faults"):
                    return
                sim.faults.clear()
                sim.fault_specs.clear()
                sim.publish_vcenter_faults()
                log.info("faults cleared at run time")
                self._reply(200, {"faults": []})

        self.control = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.control.daemon_threads = True
        threading.Thread(target=self.control.serve_forever, name="control", daemon=True).start()

    def publish_vcenter_faults(self) -> None:
        """Hand vcenter_task_fails faults to the labctl-vcsim processes (they re-read this file)."""
        for vc in self.lab.vcenters.values():
            if (self.state_dir / "vcenter").is_dir() and any(m.vcenter == vc.name for m in self.lab.vms):
                entries = fault_entries(topology(self.lab, vc), self.fault_specs, self.clock.scale)
                write_faults_file(self.state_dir, vc, entries)

    # --- reporting -----------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        eps = []
        for ep in self.started:
            entry: dict[str, Any] = asdict(ep.info)
            if ep.info.name in self.lab.machines:
                try:
                    entry["machine_up"] = self.twin.is_os_up(ep.info.name)
                    entry["power"] = str(self.twin.power_state(ep.info.name))
                except Exception as exc:
                    entry["twin_error"] = str(exc)
            stats = getattr(ep, "stats", None)
            if callable(stats):
                try:
                    entry["stats"] = stats()
                except Exception as exc:
                    entry["stats_error"] = str(exc)
            eps.append(entry)
        return {
            "pid": os.getpid(),
            "lab": self.lab.name,
            "anchor_wall_s": self.clock.anchor_wall_s,
            "time_scale": self.clock.scale,
            "lab_now": self.clock.now(),
            "twin": self.twin_kind,
            "endpoints": eps,
            "skipped": self.skipped,
            "faults": [f.model_dump(mode="json") for f in self.fault_specs],
            "vcenter": {u.vc.name: u.stats() for u in self.updaters},
        }

    def ready_report(self) -> dict[str, Any]:
        assert self.control is not None
        return {
            "state": "ready",
            "pid": os.getpid(),
            "anchor_wall_s": self.clock.anchor_wall_s,
            "time_scale": self.clock.scale,
            "twin": self.twin_kind,
            "endpoints": [asdict(ep.info) for ep in self.started],
            "skipped": self.skipped,
            "control": {"host": "127.0.0.1", "port": self.control.server_address[1], "token": self.token},
        }

    # --- stop ----------------------------------------------------------------------------------
    def stop(self) -> None:
        self.stopping.set()
        for u in self.updaters:
            try:
                u.stop()
            except Exception:
                log.exception("stopping the vCenter guest updater")
        with ThreadPoolExecutor(max_workers=START_WORKERS, thread_name_prefix="stop") as pool:
            for ep, fut in [(ep, pool.submit(ep.stop)) for ep in self.started]:
                exc = fut.exception()
                if exc is not None:
                    log.warning("stopping %s %s: %s", ep.info.kind, ep.info.name, exc)
        self.started.clear()
        if self.control is not None:
            self.control.shutdown()
            self.control.server_close()


def _parse_fault(text: str) -> FaultSpec:
    """``KIND:TARGET[,TARGET]`` as on the command line, or a FaultSpec as JSON (with after_s...)."""
    if text.lstrip().startswith("{"):
        return FaultSpec.model_validate_json(text)
    return parse_fault_option(text)


def _write_ready(path: Path, report: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(report), mode=0o600)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labctl.sim.simd", description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--lab", required=True)
    parser.add_argument("--config", default=None)
    parser.add_argument("--fault", action="append", default=[])
    parser.add_argument("--twin", choices=("auto", "placeholder", "physical"), default="auto")
    parser.add_argument("--anchor", type=float, default=None, help="lab clock anchor, wall seconds")
    parser.add_argument("--vcenter-timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("LABCTL_SIM_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("asyncssh").setLevel(logging.WARNING)  # a line per connection otherwise
    ready_file = Path(args.state_dir).resolve() / SIMD_READY_FILE
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("signal %d: stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    t0 = time.monotonic()
    sim: Simulator | None = None
    try:
        sim = Simulator(args)
        sim.build()
        sim.start_endpoints()
        sim.start_updaters(args.vcenter_timeout)
        sim.start_control()
    except PortInUseError as exc:
        log.error("%s", exc)
        if sim is not None:
            sim.stop()
        _write_ready(
            ready_file,
            {
                "state": "failed",
                "error_kind": "port_in_use",
                "error": str(exc),
                "kind": exc.kind,
                "name": exc.name,
                "host": exc.host,
                "port": exc.port,
            },
        )
        return EXIT_PORT_IN_USE
    except BaseException as exc:
        log.exception("simulator failed to start")
        if sim is not None:
            sim.stop()
        _write_ready(ready_file, {"state": "failed", "error_kind": type(exc).__name__, "error": str(exc)})
        return 1
    report = sim.ready_report()
    report["startup_s"] = round(time.monotonic() - t0, 3)
    _write_ready(ready_file, report)
    log.info(
        "ready in %.2f s: %d endpoint(s), twin %s%s",
        report["startup_s"],
        len(sim.started),
        sim.twin_kind,
        "".join(f"; skipped {s['kind']} ({s['reason']})" for s in sim.skipped),
    )
    while not stop.wait(0.1):
        pass
    sim.stop()
    ready_file.unlink(missing_ok=True)
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Redfish power-on of 100 BMCs: total time of labctl's power layer vs the slowest single call.

Starts 100 simulated iDRACs (labctl.sim.redfish with the placeholder twin) in a child process on
loopback, powers every server off, then times `LabSession.power.on(...)`: per server a TLS
session login, one read of the system (reset types) and the ComputerSystem.Reset POST, with at
most `redfish_workers` BMCs at a time and each BMC's own session/request limit. Prints figures.

    .venv/bin/python bench/bench_redfish.py [N]
"""

from __future__ import annotations

import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

PASSWORD = "bench-calvin"
SECRET_REF = "secret:bench.bmc_password"


def lab_yaml(n: int, block: int) -> str:
    servers = [
        {
            "name": f"srv-{i:03d}",
            "role": "infrastructure",
            "model": "PowerEdge R640",
            "network": "lab-net",
            "ip": f"127.{block}.0.{i}",
            "bmc": {
                "url": f"https://127.{block + 1}.{i // 250}.{i % 250 + 1}:8443",
                "user": "root",
                "password": SECRET_REF,
                "tls": {"mode": "insecure"},
            },
        }
        for i in range(1, n + 1)
    ]
    doc = {
        "lab": {"name": "bench-redfish", "time_scale": 60, "simulated": True},
        "networks": [
            {"name": "lab-net", "subnet": f"127.{block}.0.0/16", "broadcast": f"127.{block}.255.255"}
        ],
        "servers": servers,
        "groups": {"servers": {"kind": "server"}},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def serve(lab_file: str, state_dir: str, ready: mp.Event, stop: mp.Event) -> None:  # type: ignore[valid-type]
    """The simulated BMCs, in their own process (so they do not share the orchestrator's GIL)."""
    sys.path.insert(0, str(ROOT))
    from labctl.clock import LabClock
    from labctl.inventory import load_lab
    from labctl.sim.endpoint import SimContext
    from labctl.sim.faults import FaultBook
    from labctl.sim.redfish import build_endpoints
    from labctl.sim.twin.placeholder import PlaceholderTwin

    lab = load_lab(lab_file, every_machine=True)
    clock = LabClock(scale=lab.time_scale)
    ctx = SimContext(
        lab, PlaceholderTwin(lab, clock), FaultBook((), clock), clock, Path(state_dir), {SECRET_REF: PASSWORD}
    )
    eps = build_endpoints(ctx)
    for e in eps:
        e.start()
    ready.set()  # type: ignore[attr-defined]
    stop.wait()  # type: ignore[attr-defined]
    for e in eps:
        e.stop()


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    tmp = Path(tempfile.mkdtemp(prefix="bench-redfish-"))
    lab_file = tmp / "lab.yaml"
    lab_file.write_text(lab_yaml(n, 240))
    (tmp / "secrets.yaml").write_text(yaml.safe_dump({"bench.bmc_password": PASSWORD}))

    from labctl.inventory import load_lab
    from labctl.inventory.credentials import SECRETS_FILE_VAR
    from labctl.lab.session import DriverSettings, LabSession

    os.environ[SECRETS_FILE_VAR] = str(tmp / "secrets.yaml")
    lab = load_lab(lab_file)
    ctx = mp.get_context("spawn")
    ready, stop = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=serve, args=(str(lab_file), str(tmp / "state"), ready, stop), daemon=True)
    t0 = time.monotonic()
    proc.start()
    if not ready.wait(120):
        raise SystemExit("the simulated BMCs did not start")
    print(
        f"Redfish power-on of {n} BMCs (simulated iDRACs in a child process, up in {time.monotonic() - t0:.1f} s)"
    )
    try:
        for workers in (8, 32, 100):
            with LabSession(lab, settings=DriverSettings(redfish_workers=workers)) as s:
                off = s.power.off("servers", force=True)
                assert off.ok, off.failed
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    if all(st.state.value == "off" for st in s.power.state("servers").values()):
                        break
                    time.sleep(0.2)
            with LabSession(lab, settings=DriverSettings(redfish_workers=workers)) as s:  # cold: new sessions
                t = time.monotonic()
                report = s.power.on("servers")
                total = time.monotonic() - t
                calls = [o.seconds for o in report.outcomes.values() if o.seconds is not None]
            print(
                f"  workers {workers:>3}: total {total:5.2f} s | slowest single call {max(calls):5.2f} s, "
                f"median {statistics.median(calls):5.2f} s | total/slowest {total / max(calls):5.2f} | "
                f"sum of calls {sum(calls):6.2f} s | dispatch spread {report.send_spread_wall_s:5.2f} s | "
                f"{len(report.outcomes) - len(report.failed)}/{n} accepted"
            )
    finally:
        stop.set()
        proc.join(30)


if __name__ == "__main__":
    main()

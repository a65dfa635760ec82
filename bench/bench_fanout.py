"""Simultaneous SSH reboot and shutdown of N clients: send spread and delivery spread, wall ms.

Starts a simulated lab (tests/labfiles.make_test_lab, placeholder twin, 60x) with N clients,
wakes them all and waits until they are up, then for each action (reboot, shutdown):

- **after** (labctl now): ``session.power.reboot/off(clients)``: every SSH session opened first,
  then all commands sent at once; delivery = the moment each session dropped.
- **before** (the fan-out labctl had until now, kept here to compare): a pool of
  ``ssh_max_parallel`` workers, each connecting, authenticating and running ``shutdown`` in
  turn; sent = when a worker started on the machine, delivered = when its session dropped.

Each action starts from every client up, with no SSH connection cached. Prints one line per
(mode, action, N). Target: send and delivery spread under 100 ms of wall time.

    .venv/bin/python bench/bench_fanout.py [N ...]        # default: 50 100
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labctl.drivers.os_power import shutdown_argv  # noqa: E402
from labctl.drivers.power_verbs import PowerVerb  # noqa: E402
from labctl.inventory import load_lab  # noqa: E402
from labctl.inventory.credentials import SECRETS_FILE_VAR  # noqa: E402
from labctl.lab.power import tcp_open  # noqa: E402
from labctl.lab.session import DriverSettings, LabSession  # noqa: E402
from labctl.sim.simlab import SimulatedLab  # noqa: E402
from tests.labfiles import make_test_lab  # noqa: E402

READY_TIMEOUT_LAB_S = 600.0


def spread_ms(stamps: list[float]) -> float:
    return (max(stamps) - min(stamps)) * 1000 if stamps else float("nan")


def all_up(s: LabSession, names: list[str]) -> None:
    """Wake whoever is off and wait until every client answers."""
    s.power.on(names)
    ready = s.wait_ready(names, timeout_s=READY_TIMEOUT_LAB_S)
    late = [n for n, r in ready.items() if not r.ready]
    # the streaming server calls a client ready when its agent starts; its sshd may come a moment
    # later, and a client that refuses SSH would count as "already off"
    deadline = time.monotonic() + 60
    while not late:
        late = [n for n in names if not answers_ssh(s, n)]
        if not late:
            return
        if time.monotonic() > deadline:
            break
        late = []
        time.sleep(0.1)
    raise SystemExit(f"bench: {len(late)} client(s) not up: {late[:5]}")


def answers_ssh(s: LabSession, name: str) -> bool:
    m = s.lab.machine(name)
    return m.ssh is not None and tcp_open(m.ssh_host or "", m.ssh.port, 1.0)


def all_down(s: LabSession, names: list[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if all(st.state.value == "off" for st in s.power.state(names).values()):
            return
        time.sleep(0.2)
    raise SystemExit("bench: clients did not go off")


def before(s: LabSession, names: list[str], verb: PowerVerb) -> tuple[float, float, int]:
    """The previous fan-out: a worker pool, each connecting and running the command in turn."""
    sent: list[float] = []
    delivered: list[float] = []

    def one(name: str) -> None:
        target = s.ssh_target(s.lab.machine(name))
        t = time.time()
        res = s.ssh.run(target, shutdown_argv(verb, target.shell), expect_drop=True, timeout_s=60)
        if res.dropped:
            sent.append(t)
            delivered.append(time.time())
        s.ssh.forget(target)

    with ThreadPoolExecutor(max_workers=s.settings.ssh_max_parallel) as pool:
        list(pool.map(one, names))
    return spread_ms(sent), spread_ms(delivered), len(delivered)


def after(s: LabSession, names: list[str], verb: PowerVerb) -> tuple[float, float, int]:
    report = s.power.reboot(names) if verb is PowerVerb.REBOOT else s.power.off(names)
    if not report.ok:
        raise SystemExit(f"bench: {len(report.failed)} failed: {list(report.failed.values())[:3]}")
    sent = [o.sent_wall for o in report.outcomes.values() if o.sent_wall is not None]
    delivered = [o.delivered_wall for o in report.outcomes.values() if o.delivered_wall is not None]
    return spread_ms(sent), spread_ms(delivered), len(delivered)


def bench(n: int, tmp: Path) -> None:
    lab_file = make_test_lab(tmp, clients=n, name=f"fanout-{n}.yaml")
    sim = SimulatedLab(lab_file, state_dir=tmp / f"state-{n}", twin="placeholder")
    t0 = time.monotonic()
    sim.start()
    try:
        os.environ[SECRETS_FILE_VAR] = str(sim.secrets_file)
        print(f"N={n}: simulated lab up in {time.monotonic() - t0:.1f} s", flush=True)
        settings = DriverSettings(ssh_command_timeout_s=60)
        with LabSession(load_lab(lab_file), sim.clock, settings=settings) as s:
            names = [m.name for m in s.lab.clients]
            for mode, fn in (("before", before), ("after", after)):
                for verb in (PowerVerb.REBOOT, PowerVerb.GRACEFUL_OFF):
                    all_up(s, names)
                    s.ssh.close()  # no cached connection: the burst pays its own handshakes
                    t = time.monotonic()
                    send, deliver, count = fn(s, names, verb)
                    took = time.monotonic() - t
                    label = "reboot" if verb is PowerVerb.REBOOT else "shutdown"
                    print(
                        f"  {mode:6s} {label:8s} N={n:3d}: send spread {send:8.1f} ms | "
                        f"delivery spread {deliver:8.1f} ms | delivered {count}/{n} | call {took:5.2f} s",
                        flush=True,
                    )
                    if verb is PowerVerb.GRACEFUL_OFF:
                        all_down(s, names)
    finally:
        sim.stop()


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [50, 100]
    with tempfile.TemporaryDirectory(prefix="bench-fanout-") as tmp:
        for n in sizes:
            bench(n, Path(tmp))


if __name__ == "__main__":
    main()

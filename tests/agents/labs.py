"""A test lab whose clients sit on three simulated subnets, each behind a site agent, and the agents
as real `labctl agent` processes (optionally inside a network namespace).

The lab is tests/labfiles.make_test_lab (the 2007 lab on a random 127.<a>/16 block) with its
clients split over the networks ``seg-1..3`` (``127.<a>.65-67.0/24``, each its own WoL broadcast
address) and an ``agents:`` section naming one agent per segment.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.labfiles import make_test_lab

SITES = ("site-1", "site-2", "site-3")
REPO = Path(__file__).resolve().parents[2]


def segment_of(site: int) -> int:
    return 64 + site  # 127.<a>.65.0/24 for site-1


def three_site_lab(
    base: Path,
    hub_url: str,
    *,
    clients_per_site: int = 3,
    heartbeat_s: float = 0.5,
    name: str = "sites",
    sim_wol_port: int | None = None,
    ready_by_agents: bool = True,
    wide: bool = False,
) -> tuple[Path, Path]:
    """(the lab file every controller and agent reads, the file the simulator runs).

    ``sim_wol_port``: the simulator listens for the segments' magic packets on this port instead
    of the inventory's (nothing on this host's loopback then answers the inventory's port: a
    packet reaches a client only through the segment's own listener, see tests/agents/segments.py).
    ``wide``: /22 segments (``127.<a>.64/68/72.0/22``, up to 1,022 clients each: the benchmark).
    """
    base.mkdir(parents=True, exist_ok=True)
    path = make_test_lab(base, 1, name=f"{name}.yaml")
    text = path.read_text()
    a = re.search(r"subnet: 127\.(\d+)\.0\.0/16", text)
    assert a, "lab-net moved in sim-2007.yaml"
    block = int(a.group(1))
    start = text.index("clients:\n")
    end = text.index("\nservers:")
    entry = text[start + len("clients:\n") : end]
    nets, clients = [], []
    n = 0
    width = 4 if wide else 1  # /22 or /24
    for k in range(1, len(SITES) + 1):
        seg = 64 + width * (k - 1) if wide else segment_of(k)
        nets.append(
            f"  - {{name: seg-{k}, subnet: 127.{block}.{seg}.0/{24 - (width // 2)}, "
            f"broadcast: 127.{block}.{seg + width - 1}.255, wol_port: 40009}}\n"
        )
        first, last = n + 1, n + clients_per_site
        digits = max(3, len(str(last)))
        e = entry.replace("optiplex-[001-001]", f"optiplex-[{first:0{digits}d}-{last:0{digits}d}]")
        e = e.replace("network: lab-net", f"network: seg-{k}")
        e = e.replace("mac: 00:1a:a0:07:00:01", f"mac: 00:1a:a0:07:{first >> 8:02x}:{first & 0xFF:02x}")
        e = e.replace(f"ip: 127.{block}.1.1", f"ip: 127.{block}.{seg}.1")
        clients.append(e)
        n = last
    text = text[:start] + "clients:\n" + "".join(clients) + text[end:]
    text = text.replace("\nswitches:", "\n" + "".join(nets) + "\nswitches:", 1)
    sites = "".join(
        f"    - {{name: {s}, networks: [seg-{k}], ready: {str(ready_by_agents).lower()}}}\n"
        for k, s in enumerate(SITES, 1)
    )
    text += f"\nagents:\n  hub: {hub_url}\n  heartbeat_s: {heartbeat_s}\n  missed_beats: 3\n  sites:\n{sites}"
    path.write_text(text)
    sim_path = path
    if sim_wol_port is not None:
        sim_path = path.with_name(f"{name}-sim.yaml")
        sim_text = re.sub(
            r"(name: seg-\d, subnet: [^,]+, broadcast: [^,]+, wol_port: )40009", rf"\g<1>{sim_wol_port}", text
        )
        sim_path.write_text(sim_text)
    return path, sim_path


def clients_of(site: int, clients_per_site: int) -> list[str]:
    first = (site - 1) * clients_per_site + 1
    return [f"optiplex-{i:03d}" for i in range(first, first + clients_per_site)]


@dataclass
class AgentProcess:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        """SIGKILL: the agent dies as in a crash (no goodbye to the hub)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def start_agent(
    lab_file: Path,
    name: str,
    workdir: Path,
    *,
    hub: str | None = None,
    netns: str | None = None,
    env: dict[str, str] | None = None,
    extra: Sequence[str] = (),
    ready_timeout_s: float = 60.0,
    wait: bool = True,
) -> AgentProcess:
    """`labctl agent` as its own process (in ``netns`` when given); returned once it serves
    (``wait``; else at once: call :func:`wait_started`)."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"{name}.log"
    argv = [sys.executable, "-m", "labctl", "agent", "--lab", str(lab_file), "--name", name]
    argv += ["--state-dir", str(workdir / name)]
    if hub:
        argv += ["--hub", hub]
    argv += list(extra)
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
    agent = AgentProcess(name, proc, log)
    if wait:
        wait_started(agent, ready_timeout_s)
    return agent


def wait_started(agent: AgentProcess, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while f"agent {agent.name} of" not in agent.log_text():
        if agent.proc.poll() is not None or time.monotonic() > deadline:
            agent.stop()
            raise AssertionError(f"agent {agent.name} did not start: {agent.log_text()[-2000:]}")
        time.sleep(0.05)


@contextlib.contextmanager
def running_agents(
    lab_file: Path,
    workdir: Path,
    names: Sequence[str] = SITES,
    *,
    netns: dict[str, str] | None = None,
    **kw: object,
) -> Iterator[dict[str, AgentProcess]]:
    """Agents ``names`` (each in its namespace ``netns[name]`` when given), stopped at the end."""
    agents: dict[str, AgentProcess] = {}
    try:
        for n in names:  # started together: each takes seconds to import and dial out
            ns = (netns or {}).get(n)
            agents[n] = start_agent(lab_file, n, workdir, wait=False, netns=ns, **kw)  # type: ignore[arg-type]
        for a in agents.values():
            wait_started(a)
        yield agents
    finally:
        for a in agents.values():
            a.stop()

"""Wake-on-LAN storm of 3,000 clients across 3 site agents on 3 subnets: the dispatch spread of a
timed fan-out over NATS JetStream, beside the single-process figure (the clients backend's burst).

A real hub (the pinned nats-server) on loopback, three `labctl agent` processes dialling out to it
as leaf nodes, one per /22 subnet of 1,000 clients, and a UDP listener on each subnet's broadcast
address counting what arrived. Per run, ``session.power.on(all 3,000)``:

- **single process**: the inventory without its agents: this process's WolSender, one burst;
- **3 agents**: the `agent` backend: clock offsets measured, one order per agent with the fire
  instant on its own clock, every agent's burst at that instant, the stamps back on our clock.

Figures (wall ms, median of the runs): the send spread over all 3,000 (first to last machine's
first packet), the cross-agent spread (first packet of the first agent to that of the last: how
together the sites fired; target under 5 ms), the agents' lateness past the instant, their clock
offsets with the round trip, and how long until every result was back. Prints figures only.

    .venv/bin/python bench/bench_agents.py [--clients-per-site 1000] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_wol import Listener  # noqa: E402  (counts what arrives on a subnet's broadcast address)

from labctl.agents.execute import local_lab  # noqa: E402
from labctl.inventory import load_lab  # noqa: E402
from labctl.inventory.model import Lab  # noqa: E402
from labctl.lab.session import LabSession  # noqa: E402
from labctl.lab.sites import link_for  # noqa: E402
from tests.agents.labs import SITES, running_agents, three_site_lab  # noqa: E402
from tests.nats_server import start_hub  # noqa: E402


def ms(x: float | None) -> str:
    return "    n/a" if x is None else f"{x * 1e3:7.2f}"


def med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def run(lab: Lab, listeners: list[Listener], runs: int, *, agents: bool) -> None:
    spreads, cross, late, back, offsets, rtts = [], [], [], [], [], []
    received = []
    with LabSession(lab) as s:
        names = [m.name for m in lab.clients]
        for _ in range(runs):
            before = sum(x.count for x in listeners)
            t0 = time.monotonic()
            report = s.power.on(names)
            back.append(time.monotonic() - t0)
            assert report.ok, list(report.failed.items())[:3]
            spreads.append(report.send_spread_wall_s)
            if agents:
                d = link_for(s).last_dispatch  # type: ignore[attr-defined]
                cross.append(d.cross_agent_spread_s)
                late.extend(a.late_s for a in d.agents.values() if a.late_s is not None)
                offsets.extend(abs(a.offset_s) for a in d.agents.values())
                rtts.extend(a.rtt_s for a in d.agents.values())
                back[-1] -= d.lead_s  # the lead before the instant is not the agents' doing
            time.sleep(0.5)
            received.append(sum(x.count for x in listeners) - before)
    label = "3 agents      " if agents else "single process"
    n = len(lab.clients)
    print(
        f"  {label} {n} clients: send spread {ms(med(spreads))} ms (max {ms(max(spreads))}), "
        f"cross-agent spread {ms(med(cross))} ms (max {ms(max(cross) if cross else None)}), "
        f"fired late {ms(med(late))} ms, done {ms(med(back))} ms after the instant, "
        f"{min(received)}/{n * 3} packets received (worst run)"
    )
    if agents:
        print(
            f"  {'':14} clock offsets |median| {ms(med(offsets))} ms, round trip {ms(med(rtts))} ms "
            f"(offset known to ±{ms(max(rtts) / 2)} ms)"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients-per-site", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-agents-") as tmp:
        base = Path(tmp)
        hub = start_hub(base / "hub")
        try:
            lab_file, _ = three_site_lab(base, hub.url, clients_per_site=args.clients_per_site, wide=True)
            lab = load_lab(lab_file)
            listeners = [
                Listener(lab.networks[f"seg-{k}"].broadcast, 40009) for k in range(1, len(SITES) + 1)
            ]
            try:
                print(
                    f"Wake-on-LAN storm, {len(lab.clients)} clients on {len(SITES)} subnets "
                    f"(x3 packets each; wall ms, median of {args.runs} runs)"
                )
                run(local_lab(lab).model_copy(update={"agents": None}), listeners, args.runs, agents=False)
                with running_agents(lab_file, base / "agents", hub=hub.leaf_url):
                    run(lab, listeners, args.runs, agents=True)
            finally:
                for x in listeners:
                    x.close()
        finally:
            hub.stop()


if __name__ == "__main__":
    main()

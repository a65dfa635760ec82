"""Agents in their own network namespaces, one per simulated subnet: a Wake-on-LAN packet stays on
its segment, and still wakes its clients through the agent that sits there."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from labctl.agents.execute import local_lab
from labctl.agents.nats_server import NatsServer, start_nats_server
from labctl.drivers.wol import WolSender, WolTarget
from labctl.inventory import load_lab
from labctl.lab.power.model import State
from labctl.lab.session import LabSession
from tests.agents.labs import SITES, clients_of, running_agents, three_site_lab
from tests.agents.segments import SegmentRelay, Segments, netns_available, segments
from tests.drivers.power_labs import running_sim
from tests.lab.conftest import FAST

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WHY_NOT = netns_available()
if WHY_NOT is not None:
    pytestmark.append(pytest.mark.skip(reason=f"network namespaces are not permitted here: {WHY_NOT}"))

PER_SITE = 3
SIM_WOL_PORT = 41009  # where the simulator hears the segments' packets (the inventory says 40009)
ALL = [n for k in range(1, 4) for n in clients_of(k, PER_SITE)]


@dataclass
class NetnsLab:
    hub: NatsServer
    sim: object
    lab_file: Path
    seg: Segments
    relays: dict[str, SegmentRelay]


@pytest.fixture(scope="module")
def netns_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsLab]:
    base = tmp_path_factory.mktemp("netns")
    with segments(len(SITES)) as seg:
        hub = start_nats_server(
            base / "hub", name="hub", js_domain="hub", leaf_listen=True, leaf_host=seg.hub_ip
        )
        try:
            files: dict[int, tuple[Path, Path]] = {}

            def sim_file(attempt: int) -> Path:
                files[attempt] = three_site_lab(
                    base / f"try-{attempt}",
                    hub.url,
                    clients_per_site=PER_SITE,
                    sim_wol_port=SIM_WOL_PORT,
                    ready_by_agents=False,  # the segments reach only the hub: readiness is watched here
                )
                return files[attempt][1]

            with running_sim(base, sim_file) as sim:
                lab_file = next(lab for lab, s in files.values() if s == Path(sim.lab_file))  # type: ignore[attr-defined]
                lab = load_lab(lab_file)
                relays = {}
                for k, (name, ns) in enumerate(zip(SITES, seg.names, strict=True), 1):
                    bcast = lab.networks[f"seg-{k}"].broadcast
                    relays[name] = SegmentRelay(ns, bcast, 40009, (bcast, SIM_WOL_PORT))
                try:
                    yield NetnsLab(hub, sim, lab_file, seg, relays)
                finally:
                    for r in relays.values():
                        r.close()
        finally:
            hub.stop()


def test_a_magic_packet_stays_on_its_segment_and_wakes_its_clients_through_the_agent(
    netns_lab: NetnsLab, tmp_path: Path
) -> None:
    lab = load_lab(netns_lab.lab_file)
    here = LabSession(local_lab(lab), netns_lab.sim.clock, settings=FAST)  # type: ignore[attr-defined]
    try:
        # from the controller's own network the segment's broadcast goes nowhere
        target = lab.machines["optiplex-001"]
        WolSender(repeat=3).wake(
            [WolTarget(target.name, target.mac or "", lab.networks["seg-1"].broadcast, 40009)]
        )
        netns_lab.sim.clock.sleep(90)  # type: ignore[attr-defined]  # longer than a client's boot
        assert here.power.client_states([target])[target.name].state is State.OFF
        assert all(r.received == 0 for r in netns_lab.relays.values())
        inside = dict(zip(SITES, netns_lab.seg.names, strict=True))  # each agent in its own segment
        with (
            running_agents(netns_lab.lab_file, tmp_path, hub=netns_lab.hub.leaf_url, netns=inside),
            LabSession(lab, netns_lab.sim.clock, settings=FAST) as s,  # type: ignore[attr-defined]
        ):
            report = s.power.on(ALL)
            assert report.ok, report.failed
            for k, site in enumerate(SITES, 1):
                for n in clients_of(k, PER_SITE):
                    assert report.outcomes[n].backend == f"wol-ssh@{site}"
            ready = s.wait_ready(ALL, timeout_s=600)
            assert {n: r.state for n, r in ready.items()} == dict.fromkeys(ALL, "ready")
        # each segment heard exactly its own clients (three repeats each), nothing of the others
        for k, site in enumerate(SITES, 1):
            relay = netns_lab.relays[site]
            assert relay.macs == {lab.machines[n].mac for n in clients_of(k, PER_SITE)}
            assert relay.received == PER_SITE * 3
    finally:
        here.power.off(ALL)
        here.close()

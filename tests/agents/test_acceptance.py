"""Acceptance: a boot storm on a lab whose clients sit on three simulated subnets, each behind an
agent, measures the same storm as the single-controller lab, with the cross-agent spread recorded.

Two simulated labs from the same file and seed (the physical twin: boot times come from the
streaming server's disks, NICs and the UDP retry protocol), one storm each: through the three
agents, and from this controller alone (the same inventory without its agents)."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from labctl.agents.execute import local_lab
from labctl.inventory import load_lab
from labctl.inventory.credentials import SECRETS_FILE_VAR
from labctl.lab.session import LabSession
from tests.agents.labs import SITES, clients_of, running_agents, three_site_lab
from tests.agents.storm import Storm, storm
from tests.lab.conftest import FAST
from tests.nats_server import start_hub

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PER_SITE = 5
ALL = [n for k in range(1, 4) for n in clients_of(k, PER_SITE)]


def _sim(base: Path, lab_file: Path) -> object:
    from labctl.sim.endpoint import PortInUseError
    from labctl.sim.simlab import SimulatedLab

    sim = SimulatedLab(lab_file, state_dir=base, twin="auto")
    try:
        sim.start()
    except PortInUseError as exc:
        pytest.skip(f"the test lab's loopback block is taken: {exc}")
    return sim


def _storm_on(base: Path, *, via_agents: bool) -> Storm:
    hub = start_hub(base / "hub")
    try:
        lab_file, _ = three_site_lab(base, hub.url, clients_per_site=PER_SITE)
        sim = _sim(base / "sim", lab_file)
        try:
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv(SECRETS_FILE_VAR, str(sim.secrets_file))  # type: ignore[attr-defined]
                lab = load_lab(lab_file)
                if not via_agents:
                    lab = local_lab(lab).model_copy(update={"agents": None})
                    with LabSession(lab, sim.clock, settings=FAST) as s:  # type: ignore[attr-defined]
                        return storm(s, ALL, ready_timeout_s=900)
                with (
                    running_agents(lab_file, base / "agents", hub=hub.leaf_url),
                    LabSession(lab, sim.clock, settings=FAST) as s,  # type: ignore[attr-defined]
                ):
                    result = storm(s, ALL, ready_timeout_s=900)
                    result.dispatch_event = next(  # type: ignore[attr-defined]
                        e.detail for e in s.timeline.events("agent.dispatch") if e.detail["action"] == "on"
                    )
                    return result
        finally:
            sim.stop()  # type: ignore[attr-defined]
    finally:
        hub.stop()


@pytest.fixture(scope="module")
def storms(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Storm, Storm]]:
    yield (
        _storm_on(tmp_path_factory.mktemp("agents"), via_agents=True),
        _storm_on(tmp_path_factory.mktemp("single"), via_agents=False),
    )


def test_the_storm_through_three_agents_measures_what_the_single_controller_measures(storms) -> None:
    agents, single = storms
    for result in storms:
        assert result.on.ok and {c.outcome for c in result.clients} == {"ready"}
    boot_a = [agents.outcome(n).boot_time_s for n in ALL]
    boot_s = [single.outcome(n).boot_time_s for n in ALL]
    assert all(b is not None for b in boot_a + boot_s)
    # the same storm: the same boot times and retries within the twin's own run-to-run noise
    assert statistics.mean(boot_a) == pytest.approx(statistics.mean(boot_s), rel=0.15)  # type: ignore[arg-type]
    assert max(boot_a) == pytest.approx(max(boot_s), rel=0.2)  # type: ignore[arg-type]
    retries_a = sum(agents.outcome(n).retries or 0 for n in ALL)
    retries_s = sum(single.outcome(n).retries or 0 for n in ALL)
    assert abs(retries_a - retries_s) <= max(3, 0.3 * max(retries_a, retries_s))


def test_the_cross_agent_spread_and_each_agents_clock_are_recorded(storms) -> None:
    agents, single = storms
    event = agents.dispatch_event  # type: ignore[attr-defined]
    assert set(event["agents"]) == set(SITES)
    assert event["cross_agent_spread_wall_s"] is not None and event["clock_uncertainty_wall_s"] is not None
    for a in event["agents"].values():
        assert a["status"] == "done" and a["ok"] == PER_SITE and a["clock_offset_s"] is not None
    # one group action per site (backend wol-ssh@site-k), beside the single controller's one
    assert sorted(g.backend for g in agents.on.group_actions()) == [f"wol-ssh@{s}" for s in SITES]
    assert [g.backend for g in single.on.group_actions()] == ["wol-ssh"]

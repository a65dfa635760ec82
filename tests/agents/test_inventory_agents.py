"""The inventory's agents: section: which agent serves which machine, and the one-line refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.inventory import load_lab
from labctl.inventory.model import PowerKind
from labctl.lab.power.registry import BACKENDS, by_backend
from tests.agents.labs import SITES, three_site_lab


@pytest.fixture
def lab_file(tmp_path: Path) -> Path:
    path, _ = three_site_lab(tmp_path, "nats://127.0.0.1:4222", clients_per_site=4)
    return path


def test_each_machine_of_a_served_network_goes_to_its_agent_and_the_rest_stay_here(lab_file: Path) -> None:
    lab = load_lab(lab_file)
    assert lab.agents is not None and list(lab.agents.sites) == list(SITES)
    site2 = lab.agents.sites["site-2"]
    assert site2.machines == ("optiplex-005", "optiplex-006", "optiplex-007", "optiplex-008")
    assert lab.machines["optiplex-005"].agent == "site-2"
    assert lab.machines["optiplex-005"].power_kind is PowerKind.AGENT
    assert lab.machines["optiplex-005"].own_power_kind is PowerKind.WOL_SSH
    assert lab.machines["pvs-01"].agent is None and lab.machines["pvs-01"].power_kind is PowerKind.REDFISH
    # the registry sends every served machine to the agent backend, the rest to their own
    groups = by_backend([lab.machines[n] for n in ("optiplex-001", "optiplex-012", "pvs-01")])
    assert {k: [m.name for m in ms] for k, ms in groups.items()} == {
        PowerKind.AGENT: ["optiplex-001", "optiplex-012"],
        PowerKind.REDFISH: ["pvs-01"],
    }
    assert BACKENDS[PowerKind.AGENT].__name__ == "AgentBackend"


def test_bmcs_and_hosts_put_machines_off_its_networks_under_an_agent(lab_file: Path, tmp_path: Path) -> None:
    text = lab_file.read_text().replace(
        "{name: site-3, networks: [seg-3]",
        "{name: site-3, networks: [seg-3], bmcs: [pvs-01], hosts: [infra-01]",
    )
    path = tmp_path / "more.yaml"
    path.write_text(text)
    lab = load_lab(path)
    assert lab.machines["pvs-01"].agent == "site-3" and lab.machines["infra-01"].agent == "site-3"
    assert lab.machines["pvs-01"].own_power_kind is PowerKind.REDFISH
    assert "bmcs pvs-01" in lab.agents.sites["site-3"].serves_text()  # type: ignore[union-attr]


def test_a_lab_without_agents_is_unchanged() -> None:
    lab = load_lab()
    assert lab.agents is None
    assert all(m.agent is None and m.power_kind is m.own_power_kind for m in lab.machines.values())


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        (
            "networks: [seg-2]",
            "networks: [seg-9]",
            ["agents.sites[1].networks[0]", "unknown network 'seg-9'"],
        ),
        (
            "{name: site-3, networks: [seg-3]",
            "{name: site-3, networks: [seg-3, seg-1]",
            ["agents.sites[2]", "served by agents 'site-1' and 'site-3'", "one agent per machine"],
        ),
        ("{name: site-2,", "{name: site-1,", ["agents.sites[1].name", "duplicate agent name 'site-1'"]),
        ("{name: site-2,", "{name: site two,", ["agents.sites[1].name"]),
        (
            "{name: site-3, networks: [seg-3]",
            "{name: site-3, networks: [seg-3], bmcs: [pvs-09]",
            ["agents.sites[2].bmcs[0]", "unknown machine 'pvs-09'"],
        ),
        ("  hub: nats://127.0.0.1:4222", "  hub: 127.0.0.1:4222", ["agents.hub", "malformed hub URL"]),
        (
            "    network: seg-1\n",
            "    network: seg-1\n    power: agent\n",
            ["clients[0].power", "power: agent is not written", "agents: section"],
        ),
    ],
    ids=[
        "unknown-network",
        "served-twice",
        "duplicate-name",
        "bad-name",
        "unknown-bmc",
        "bad-hub",
        "power-agent",
    ],
)
def test_a_bad_agents_section_is_one_line_naming_the_item(
    lab_file: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, words: list[str]
) -> None:
    text = lab_file.read_text()
    assert text.count(old) == 1, old
    lab_file.write_text(text.replace(old, new))
    code = run_cli(cli, ["inventory", "validate", str(lab_file)])
    lines = capsys.readouterr().err.splitlines()
    assert code == 2
    assert len(lines) == 1, lines
    for w in words:
        assert w in lines[0], (w, lines[0])

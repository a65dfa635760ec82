"""`labctl agent`, `labctl agents` and `labctl quarantine` from the shell: one line for each bad
input or unreachable hub, and the quarantine round trip on a simulated lab without agents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.inventory import load_lab
from labctl.lab.health import QuarantineStore, exclude_quarantined
from labctl.lab.sites import require_agents
from tests.agents.labs import three_site_lab
from tests.lab.conftest import start_lab


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    code = run_cli(cli, list(args))
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err.splitlines()


def test_an_unknown_agent_name_or_a_lab_without_agents_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab_file, _ = three_site_lab(tmp_path, "nats://127.0.0.1:1")
    code, _, err = _run(capsys, "agent", "--lab", str(lab_file), "--name", "site-9")
    assert (
        code == 2 and len(err) == 1 and "no agent 'site-9'" in err[0] and "site-1, site-2, site-3" in err[0]
    )
    code, _, err = _run(capsys, "agents", "--lab", "hardware/sim-2007.yaml")
    assert code == 2 and len(err) == 1 and "no agents: section" in err[0]


def test_an_unreachable_hub_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab_file, _ = three_site_lab(tmp_path, "nats://127.0.0.1:1")
    code, _, err = _run(capsys, "agents", "--lab", str(lab_file))
    assert code == 1 and len(err) == 1
    assert "nats://127.0.0.1:1: connect to the hub" in err[0]


def test_a_lab_without_agents_needs_none() -> None:
    require_agents(load_lab())  # nothing to check, nothing to connect to


@pytest.mark.integration
def test_quarantine_check_list_and_release_on_a_lab_without_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LABCTL_QUARANTINE_FILE", str(tmp_path / "q.json"))
    sim = start_lab(
        tmp_path, monkeypatch, clients=3, faults="- {kind: client_never_wakes, targets: [optiplex-003]}"
    )
    try:
        lab = str(sim.lab_file)
        code, out, _ = _run(
            capsys, "quarantine", "check", "clients", "--wake", "--wake-timeout", "150", "--lab", lab
        )
        assert code == 1
        assert any(line.startswith("optiplex-003: wake: timeout") and "(quarantined)" in line for line in out)
        assert out[-1].startswith("2 of 3 healthy; 1 newly quarantined")
        code, out, _ = _run(capsys, "quarantine", "list", "--lab", lab, "--json")
        (entry,) = [json.loads(x) for x in out]
        assert entry["machine"] == "optiplex-003" and entry["reason"].startswith("wake: timeout")
        machines = list(load_lab(lab).clients)
        usable, excluded = exclude_quarantined(machines, lab=load_lab(lab))
        assert [m.name for m in usable] == ["optiplex-001", "optiplex-002"] and list(excluded) == [
            "optiplex-003"
        ]
        assert run_cli(cli, ["quarantine", "release", "optiplex-003", "--lab", lab]) == 0
        assert QuarantineStore().entries() == []
    finally:
        run_cli(cli, ["power", "off", "clients", "--lab", str(sim.lab_file)])
        sim.stop()


def test_an_unreadable_quarantine_store_is_one_line_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "q.json"
    store.write_text("{not json")
    monkeypatch.setenv("LABCTL_QUARANTINE_FILE", str(store))
    code, _, err = _run(capsys, "quarantine", "list", "--all")
    assert code == 1 and len(err) == 1 and str(store) in err[0] and "fix or delete the file" in err[0]

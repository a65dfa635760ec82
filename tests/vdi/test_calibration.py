"""The VDI twin beside the 2012 paper's tables 5-7 and the 2014 write-cache post: verdicts and directions."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from labctl.cli.calibrate_cmd import calibrate as calibrate_cmd
from labctl.inventory import load_lab
from labctl.sim.twin.vdi.calibration import Study, calibrate_2012, calibrate_2014, study_of
from tests.vdi.labs import vdi_yaml

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def study_2012() -> Study:
    lab = load_lab(ROOT / "hardware" / "vdi-2012-ps6010xvs-630.yaml")
    assert lab.vdi is not None and study_of(lab.vdi) == "2012"
    return calibrate_2012(lab.vdi, lab.name)


@pytest.fixture(scope="module")
def study_2014() -> Study:
    lab = load_lab(ROOT / "hardware" / "vdi-pvs-write-cache-2014.yaml")
    assert lab.vdi is not None and study_of(lab.vdi) == "2014"
    return calibrate_2014(lab.vdi, lab.name)


def value(study: Study, group: str, quantity: str) -> float:
    (c,) = [c for c in study.checks if c.group.startswith(group) and c.quantity == quantity]
    return c.value


def test_the_2012_tables_pass_with_every_row_judged(study_2012: Study) -> None:
    failed = [
        f"{c.group}: {c.quantity} = {c.value:.2f} (published {c.published})"
        for c in study_2012.checks
        if not c.ok
    ]
    assert not failed, failed
    groups = {c.group for c in study_2012.checks}
    assert {
        "table 7",
        "1 array (630)",
        "2 arrays (1260)",
        "1 array, 20% pre-booted (630)",
        "scale-out",
    } <= groups
    assert all(c.ok is not None for c in study_2012.checks)
    assert len(study_2012.checks) >= 25


def test_the_2012_phases_order_and_scaling(study_2012: Study) -> None:
    boot = value(study_2012, "table 7", "boot: IOPS per desktop")
    login = value(study_2012, "table 7", "login: IOPS per desktop")
    steady = value(study_2012, "table 7", "steady: IOPS per desktop")
    assert boot > login > steady > 0  # the paper's order: boot storm > login storm > steady state
    assert value(study_2012, "table 7", "steady: read share") < value(
        study_2012, "table 7", "boot: read share"
    )
    one = value(study_2012, "1 array", "steady-state IOPS")
    two = value(study_2012, "2 arrays", "steady-state IOPS")
    assert two / one == pytest.approx(2.0, rel=0.05)  # linear scale-out
    assert value(study_2012, "1 array, 20%", "all users logged on") > 3 * value(
        study_2012, "1 array (630)", "all users logged on (100% pre-booted)"
    )


def test_the_2014_write_cache_modes_pass(study_2014: Study) -> None:
    failed = [
        f"{c.group}: {c.quantity} = {c.value:.2f} (published {c.published})"
        for c in study_2014.checks
        if not c.ok
    ]
    assert not failed, failed
    disk = value(study_2014, "device disk", "Standard (task)")
    ram256 = value(study_2014, "RAM 256 MB", "Enhanced (knowledge)")
    ram512 = value(study_2014, "RAM 512 MB", "Enhanced (knowledge)")
    assert disk > 3 and ram512 < ram256 < value(study_2014, "device disk", "Enhanced (knowledge)") / 3
    # heavier users write more and overflow a small RAM cache sooner
    assert (
        value(study_2014, "RAM 256 MB", "Professional (power)")
        > ram256
        > value(study_2014, "RAM 256 MB", "Standard (task)")
    )


def _small_2014(tmp_path: Path, twin: str = "") -> Path:
    """A 2014-shaped lab small enough for a CLI test: three profiles, 12 desktops each."""
    text = vdi_yaml(desktops=12, hosts=3, twin=twin)
    pools = text.split("  pools:\n")[1].split("  launchers:")[0]
    more = ""
    for k, (name, wl) in enumerate((("enhanced", "knowledge"), ("professional", "power")), start=2):
        more += (
            pools.replace("name: pool", f"name: {name}")
            .replace('"d-[0001-0012]"', f'"{name[:3]}-[01-12]"')
            .replace("workload: task", f"workload: {wl}")
            .replace("      cluster: vdi\n", f"      cluster: vdi\n      hosts: [esx-vdi-{k:02d}]\n")
        )
    text = text.replace(
        pools, pools.replace("      cluster: vdi\n", "      cluster: vdi\n      hosts: [esx-vdi-01]\n") + more
    )
    path = tmp_path / "small-2014.yaml"
    path.write_text(text)
    return path


def test_calibrate_prints_the_table_and_exits_1_when_a_verdict_fails(tmp_path: Path) -> None:
    # page file and logs all going straight to disk: a RAM cache could no longer spare the host
    bad = _small_2014(tmp_path, twin="direct_write_share: 0.9")
    res = CliRunner().invoke(calibrate_cmd, ["--lab", str(bad)])
    assert res.exit_code == 1, res.output
    assert "2014 PVS write-cache post" in res.output and "FAIL" in res.output and "9.1-11.7" in res.output
    assert "calibration: FAIL" in res.output


def test_calibrate_passes_on_a_small_lab_shaped_like_the_2014_post(tmp_path: Path) -> None:
    res = CliRunner().invoke(calibrate_cmd, ["--lab", str(_small_2014(tmp_path))])
    assert res.exit_code == 0, res.output
    assert "calibration: PASS" in res.output and "capacities" in res.output and "RAID 10" in res.output


def test_a_lab_no_study_matches_gets_figures_without_verdicts(tmp_path: Path) -> None:
    path = tmp_path / "linked.yaml"
    path.write_text(vdi_yaml(desktops=8, provisioning="{kind: linked_clone, image_gb: 40}"))
    res = CliRunner().invoke(calibrate_cmd, ["--lab", str(path)])
    assert res.exit_code == 0, res.output
    assert "no published study matches" in res.output and "no verdicts" in res.output
    assert "steady-state IOPS" in res.output


def test_every_twin_parameter_is_documented_in_the_readme() -> None:
    from labctl.inventory.vdi_params import VdiTwinParameters

    readme = (ROOT / "labctl" / "sim" / "twin" / "vdi" / "README.md").read_text()
    missing = [name for name in VdiTwinParameters.model_fields if f"`{name}`" not in readme]
    assert not missing, f"document these in labctl/sim/twin/vdi/README.md: {missing}"

"""`labctl size measured --run` reads what the run measured (issue 20): a VDI run's IOPS per desktop
and write shares from its phase figures (the plans write no `<phase>_write_share`), the array's
capability from the cells whose latency criterion passed; a 2007 boot storm's cost per client from
the largest group that passed (the load a certificate certifies), so the clients per set it gives
is never fewer than the set was seen to boot."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from labctl.sizing import size_from_measurements
from labctl.sizing.from_run import run_profile
from labctl.sizing.load import Phase
from tests.report.synthetic import Synth, make_run
from tests.report.synthetic_vdi import make_vdi_run


@pytest.fixture(scope="module")
def vdi(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_vdi_run(tmp_path_factory.mktemp("vdi"), steady_iops=7.5)


def test_vdi_phases_from_the_phase_figures(vdi: Path) -> None:
    p = run_profile(vdi)
    assert set(p.chosen) == {Phase.BOOT, Phase.LOGIN, Phase.STEADY}
    steady = p.chosen[Phase.STEADY]
    assert steady.iops_per_desktop == Fraction(15, 2)
    assert steady.write_share == Fraction(7, 10)  # 30 % reads in the phase figures
    assert p.array.raid.value == 10  # the array's first tier in the run's inventory
    result = size_from_measurements(p.profile, 100)
    assert result.desktops_per_array >= 100, "a passing cell of 100 desktops on one array"


def test_only_the_cells_given_count(vdi: Path) -> None:
    p = run_profile(vdi, {"vdi_storm-default-050"})
    assert {f.cell for f in p.chosen.values()} == {"vdi_storm-default-050"}


def test_a_boot_storm_is_sized_from_its_largest_passing_group(tmp_path: Path) -> None:
    run = make_run(tmp_path, group_sizes=(1, 5, 25, 75, 100), synth=Synth(sizing=True))
    p = run_profile(run)
    boot = p.chosen[Phase.BOOT]
    # 100 fails its queue criterion; 75 is the largest that passed (marginal), and each of its
    # clients cost less than one booting alone
    assert boot.cell == "boot_storm-standalone-075"
    alone = next(f for f in p.figures.phases if f.cell == "boot_storm-standalone-001")
    assert alone.iops_per_desktop > boot.iops_per_desktop
    assert size_from_measurements(p.profile, 75).desktops_per_array >= 75

"""The calculators' arithmetic: exactness, inverses, penalties, rounding, drive defaults, bad input."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from labctl.sizing import (
    DEFAULT_IOPS_PER_DRIVE,
    ArrayCapability,
    DriveType,
    MeasuredProfile,
    Phase,
    PhaseLoad,
    RaidLevel,
    SizingInputError,
    capacity_headroom,
    desktops_per_array,
    drives_needed,
    functional_iops,
    raw_iops_needed,
    size_from_measurements,
    storm_drives,
)
from labctl.sizing.drives import DRIVE_SEEK_MS, raid_set_functional_iops
from labctl.sizing.exact import exact, show


@pytest.mark.parametrize(("level", "penalty"), [(0, 1), (1, 2), (10, 2), (5, 4), (50, 4), (6, 6), (60, 6)])
def test_write_penalties(level: int, penalty: int) -> None:
    assert RaidLevel(level).write_penalty == penalty
    # all writes: one host write costs `penalty` disk I/Os
    assert functional_iops(600, 1, level).functional_iops == Fraction(600, penalty)
    # all reads: no penalty on any level
    assert functional_iops(600, 0, level).functional_iops == 600


@pytest.mark.parametrize("raw", ["1", "999", "8991", "12345.678"])
@pytest.mark.parametrize("write", ["0%", "0.2%", "13%", "50%", "87%", "99.8%", "100%"])
@pytest.mark.parametrize("raid", ["1", "5", "6", "10"])
def test_functional_and_raw_are_exact_inverses(raw: str, write: str, raid: str) -> None:
    f = functional_iops(raw, write, raid).functional_iops
    assert raw_iops_needed(f, write, raid).raw_iops == Fraction(raw)


def test_write_share_is_of_host_ios_not_the_backend_shortcut() -> None:
    # 400 host IOPS at 50 % writes on RAID 5 cost 200 reads + 200 x 4 writes = 1000 disk I/Os;
    # the shortcut raw*R + raw*W/penalty would claim 625
    assert functional_iops(1000, "50%", 5).functional_iops == 400
    assert raw_iops_needed(400, "50%", 5).raw_iops == 200 + 200 * 4


def test_floats_are_read_as_the_decimals_they_print_as() -> None:
    assert desktops_per_array(2539.0, 25, 6, 1.0, 1.5).desktops_per_array_exact == Fraction("642.608")
    assert exact(0.1, "x") + exact(0.2, "x") == Fraction(3, 10)
    assert exact(Decimal("0.15"), "x") == Fraction(3, 20)
    assert exact("3/2", "x") == exact("150%", "x") == Fraction(3, 2)


@pytest.mark.parametrize("kind", [DriveType.SAS_15K, DriveType.SAS_10K, DriveType.NL_7K2])
def test_rotational_defaults_match_seek_plus_half_revolution(kind: DriveType) -> None:
    seek_ms, rpm = DRIVE_SEEK_MS[kind]
    physics = 1000 / (seek_ms + Fraction(60_000, rpm) / 2)
    assert abs(DEFAULT_IOPS_PER_DRIVE[kind] / physics - 1) < Fraction(3, 100), (kind, float(physics))


def test_drive_type_defaults_and_override() -> None:
    assert DEFAULT_IOPS_PER_DRIVE == {
        DriveType.SSD: 6000,
        DriveType.SAS_15K: 180,
        DriveType.SAS_10K: 140,
        DriveType.NL_7K2: 80,
    }
    assert drives_needed(1800, 0, 0, "15K").drives == 10
    assert drives_needed(1800, 0, 0, "15k", iops_per_drive=90).drives == 20  # override wins
    assert drives_needed(1800, 0, 0, iops_per_drive=90).drive is None
    with pytest.raises(SizingInputError, match="drive_type"):
        drives_needed(1800, 0, 0)


def test_drives_round_up_to_whole_drives_then_to_the_raid_geometry() -> None:
    exact_fit = drives_needed(1800, 0, 0, "15k")  # exactly 10 drives: no bump
    assert exact_fit.drives_exact == 10 and exact_fit.drives == 10
    r = drives_needed(1801, 0, 0, "15k")
    assert r.drives_exact == Fraction(1801, 180) and r.drives_whole == 11 and r.drives == 11
    r10 = drives_needed(1801, 0, 10, "15k")  # reads only on RAID 10: 11 drives -> 12 (even)
    assert r10.drives_whole == 11 and r10.drives == 12
    assert drives_needed(100, 0, 6, "15k").drives == 4  # 1 drive of load, RAID 6 needs 4
    assert drives_needed(100, 0, 5, "15k").drives == 3
    assert drives_needed(100, 0, 1, "15k").drives == 2
    with pytest.raises(SizingInputError, match="RAID 1 mirror holds 2 drives"):
        drives_needed(1000, 0, 1, "15k")


def test_storm_drives_boot_and_steady_and_preboot() -> None:
    steady, boot = PhaseLoad.of(8, "99.8%"), PhaseLoad.of(18, "87%")
    r = storm_drives(630, steady, boot, 10, "15k")
    assert r.steady.functional_iops == 630 * 8 and r.boot.functional_iops == 630 * 18
    assert r.steady.raw_iops == 5040 * Fraction("1.998") and r.boot.raw_iops == 11340 * Fraction("1.87")
    assert (r.steady.drives, r.boot.drives, r.drives, r.limiting_phase) == (56, 118, 118, "boot")
    pre = storm_drives(630, steady, boot, 10, "15k", preboot_share="20%")
    assert pre.booting == 504 and pre.boot.functional_iops == 504 * 18 and pre.boot.drives == 96
    assert pre.steady.drives == r.steady.drives  # pre-booting does not change steady state


def test_capacity_headroom_parameters_change_the_answer() -> None:
    base = desktops_per_array(2539, 25, 6, 1, "1.5")
    none = desktops_per_array(2539, 25, 6, 1, "1.5", array_headroom_share=0, vm_headroom_share=0)
    assert none.desktops_per_array_exact == Fraction(2539 - 150, Fraction(5, 2))
    assert none.desktops_per_array > base.desktops_per_array
    assert capacity_headroom(1000, 850).meets  # exactly 15 % free meets "at least 15 %"
    assert not capacity_headroom(1000, 851).meets
    assert capacity_headroom(1000, 860, "10%").meets


def test_measured_limiting_phase_and_drives_for_the_boot_storm() -> None:
    profile = MeasuredProfile(
        {
            Phase.STEADY: PhaseLoad.of(8, "99.8%"),
            Phase.LOGIN: PhaseLoad.of(13, "97%"),
            Phase.BOOT: PhaseLoad.of(18, "87%"),
        },
        ArrayCapability.of(6000, "97%", 6),
    )
    r = size_from_measurements(profile, 1000, drive="ssd", drive_raid=10, preboot_share="50%")
    raw = 6000 * (Fraction(3, 100) + Fraction(97, 100) * 6)
    assert profile.array.raw_iops == raw
    per = {f.phase: f.desktops_exact for f in r.fits}
    assert per[Phase.LOGIN] == Fraction(6000, 13)  # the phase the capability was measured in
    assert per[Phase.BOOT] == raw / (18 * (Fraction(13, 100) + Fraction(87, 100) * 6))
    assert r.limiting.phase is Phase.BOOT
    assert r.arrays == -(-1000 // r.desktops_per_array)
    assert r.booting == 500 and r.boot_drives is not None
    assert r.boot_drives.raid is RaidLevel.RAID10 and r.boot_drives.functional_iops == 500 * 18
    assert r.boot_drives.drives == 4  # 9000 x 1.87 / 6000 = 2.8 -> 3 -> RAID 10 needs 4


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: functional_iops(-1, "10%", 5), "raw_iops"),
        (lambda: functional_iops(100, "101%", 5), "write_share"),
        (lambda: functional_iops(100, 87, 5), "write_share"),  # 87 without % is not guessed at
        (lambda: functional_iops(100, "-1%", 5), "write_share"),
        (lambda: functional_iops(100, "10%", 7), "raid"),
        (lambda: functional_iops("lots", "10%", 5), "raw_iops"),
        (lambda: functional_iops("1e999999999", "10%", 5), "raw_iops"),  # refused, not expanded
        (lambda: functional_iops("nan", "10%", 5), "raw_iops"),
        (lambda: functional_iops(float("inf"), "10%", 5), "raw_iops"),
        (lambda: raid_set_functional_iops(0, "10%", 10, "15k"), "drives"),
        (lambda: raid_set_functional_iops(3, "10%", 10, "15k"), "drives"),
        (lambda: drives_needed(100, "10%", 5, "12k"), "drive_type"),
        (lambda: drives_needed(100, "10%", 5, iops_per_drive=0), "iops_per_drive"),
        (lambda: desktops_per_array(100, 25, 6, 1, "1.5"), "array_capacity_gb"),
        (lambda: desktops_per_array(2539, 25, "1.5", 1, "1.5"), "vdisk_count"),
        (lambda: desktops_per_array(2539, 25, 6, 0, 0), "write_cache_gb"),
        (lambda: capacity_headroom(100, 200), "used_gb"),
        (lambda: storm_drives(0, PhaseLoad.of(1, 0), PhaseLoad.of(1, 0), 10, "ssd"), "desktops"),
    ],
)
def test_bad_input_names_the_parameter_and_the_fix(call: object, field: str) -> None:
    with pytest.raises(SizingInputError) as info:
        call()  # type: ignore[operator]
    assert info.value.field == field
    message = str(info.value)
    assert message.startswith(field) and "(" in message and "\n" not in message


def test_show_is_exact_when_the_decimal_ends() -> None:
    assert show(Fraction("642.608"), "desktops") == "642.608 desktops"
    assert show(Fraction(50, 7)) == "≈7.1429"
    assert show(Fraction(-3, 2)) == "-1.5"

"""Every worked example of the 2012 paper (../shared/reference/vdi-pvs-equallogic-2012.txt), reproduced.

Each test names the paper's line(s) it reproduces (``L785`` is line 785 of the reference file). Where
the paper rounds for prose ("around 640"), the test asserts the exact value and then the paper's
rounding of it.
"""

from __future__ import annotations

from fractions import Fraction

from labctl.sizing import (
    ArrayCapability,
    MeasuredProfile,
    Phase,
    PhaseLoad,
    booting_desktops,
    capacity_headroom,
    desktops_per_array,
    per_desktop_iops,
    size_from_measurements,
)
from labctl.sizing.exact import whole_up

TB_GB = 1024  # the paper's unit: 2.48 TB (Table 2) is 2,539.5 GB (Table 8)

# Table 6 (L722-L733): one array / two arrays
DESKTOPS = {1: 630, 2: 1270}
STEADY_IOPS = {1: 4500, 2: 9000}
LOGIN_PEAK_IOPS = {1: 6846, 2: 12400}
BOOT_PEAK_IOPS = {1: 10000, 2: 15000}
# Table 7 (L739-L742): IOPS per desktop (low, high) and write share per phase
TABLE7 = {
    Phase.STEADY: ((7, 8), Fraction("99.8") / 100),
    Phase.LOGIN: ((11, 13), Fraction(97, 100)),
    Phase.BOOT: ((16, 18), Fraction(87, 100)),
}


def _percent_1dp(x: Fraction) -> Fraction:
    """A share as the paper prints it: a percentage with one decimal."""
    return Fraction(round(x * 1000), 10)


def test_l785_capacity_formula_sample_gives_642_desktops_around_640() -> None:
    # L763 formula, L767 headroom 15 % / 25 %, L785 the sample, L787 "around 640 desktops"
    r = desktops_per_array(2539, 25, 6, 1, "1.5")
    assert r.reserved_gb == Fraction("0.15") * 2539 + 25 * 6 == Fraction("530.85")
    assert r.usable_gb == Fraction("2008.15")
    assert r.per_desktop_gb == Fraction("1.25") * 1 + Fraction("1.25") * Fraction("1.5") == Fraction("3.125")
    assert r.desktops_per_array_exact == Fraction("642.608")
    assert r.desktops_per_array == 642
    assert round(r.desktops_per_array, -1) == 640  # the paper's "around 640"
    assert r.desktops_per_array >= 630  # L787: "we deployed 630 virtual desktops"


def test_l779_table8_capacity_2539_5_gives_the_same_642() -> None:
    # Table 8 (L779) gives 2539.5 GB, the sample (L785) uses 2539: both hold 642 whole desktops
    r = desktops_per_array("2539.5", 25, 6, 1, "1.5")
    assert r.desktops_per_array_exact == Fraction("642.744")
    assert r.desktops_per_array == desktops_per_array(2539, 25, 6, 1, "1.5").desktops_per_array == 642


def test_l271_l779_array_capacity_2_48_tb_is_2539_5_gb() -> None:
    # L271 "Total member capacity: 2.48 TB", L779 "2539.5 GB": binary terabytes
    assert round(Fraction("2.48") * TB_GB, 1) == Fraction("2539.5")


def test_l581_l778_write_cache_1_5_gb_is_the_75_percent_of_2_gb_ever_filled() -> None:
    # L482: each desktop had a 2 GB write cache; L581: "never reached 75%"; L778: WCacheSize 1.5 GB
    assert Fraction(75, 100) * 2 == Fraction("1.5")
    # with the full 2 GB allocated the formula holds fewer desktops than the 630 the paper ran
    assert desktops_per_array(2539, 25, 6, 1, 2).desktops_per_array == 535 < 630


def test_l182_each_desktop_consumed_3_gb_ram_plus_write_cache() -> None:
    # L182: "3 GB of storage capacity - 2 GB of write cache ... and 1 GB of RAM"
    assert desktops_per_array(2539, 25, 6, 1, 2, vm_headroom_share=0).per_desktop_gb == 3


def test_l271_single_array_free_space_15_2_percent_used_84_8_percent() -> None:
    # L271: 2.48 TB total, "Free member space: 384.87 GB (15.2%)", "Capacity used by volumes: (84.8%)"
    total = Fraction("2539.5")
    r = capacity_headroom(total, total - Fraction("384.87"))
    assert r.free_gb == Fraction("384.87")
    assert _percent_1dp(r.free_share) == Fraction("15.2")
    assert _percent_1dp(1 - r.free_share) == Fraction("84.8")
    assert r.meets  # L396: at least 15 % spare


def test_l264_l271_volumes_of_2_1_tb_leave_more_than_15_percent() -> None:
    # L271 volumes: vDisk-vol 150 GB + 4 x 500 GB = 2150 GB, "2.1 TB"; L264 "more than 15% head room"
    used = 150 + 4 * 500
    assert round(Fraction(used, TB_GB), 1) == Fraction("2.1")
    r = capacity_headroom("2539.5", used)
    assert r.free_share > Fraction(15, 100) and r.meets


def test_l284_l733_two_arrays_use_about_4_tb_with_more_than_18_percent_headroom() -> None:
    # L280, L284: 150 GB + 8 x 500 GB on two arrays, "around 4 TB", "more than 18% head room";
    # L733 capacity buffer 15 % and 18 %
    used = 150 + 8 * 500
    assert round(Fraction(used, TB_GB)) == 4
    r = capacity_headroom(2 * Fraction("2539.5"), used)
    assert Fraction(18, 100) < r.free_share < Fraction(19, 100)
    assert _percent_1dp(r.free_share) == Fraction("18.3")


def test_l434_twenty_percent_preboot_is_126_of_630() -> None:
    # L434, L585: "only 126 virtual desktops (20% of the 630) were pre-booted"
    assert 630 - booting_desktops(630, "20%") == 126
    assert booting_desktops(630, "20%") == 504  # the rest boot on demand


def test_l425_desktops_per_blade_and_l482_per_datastore_round_up() -> None:
    # L425: 630 desktops on 8 blades, "around 80" each; 1270 on 16 blades
    assert whole_up(Fraction(630, 80)) == 8 and whole_up(Fraction(1270, 80)) == 16
    # L482, L725: 630 desktops on 4 datastores and 1270 on 8: 157.5 and 158.75, "~160"
    assert round(Fraction(630, 4), -1) == round(Fraction(1270, 8), -1) == 160


def test_l499_steady_state_4500_iops_over_630_desktops_is_7_14_per_desktop() -> None:
    # L499: "around 4500 which is around 7.3 IOPS per VM". 4500 / 630 is 7.14, inside Table 7's
    # 7-8 (L740); the paper's 7.3 would need 7.3 x 630 = 4599 IOPS, i.e. "around 4500" was ~4600.
    per_desktop = per_desktop_iops(4500, 630)
    assert per_desktop == Fraction(50, 7)
    assert round(per_desktop, 2) == Fraction("7.14")
    assert Fraction("7.3") * 630 == Fraction("4599")
    low, high = TABLE7[Phase.STEADY][0]
    assert low <= per_desktop <= high


def test_l729_l742_table7_low_ends_are_table6_one_array_peaks_over_630() -> None:
    # Table 6 (L729-L732) one array over its 630 desktops, rounded: 7.14 -> 7, 10.87 -> 11,
    # 15.87 -> 16: the low end of each of Table 7's ranges (L740-L742)
    for phase, total in (
        (Phase.STEADY, STEADY_IOPS[1]),
        (Phase.LOGIN, LOGIN_PEAK_IOPS[1]),
        (Phase.BOOT, BOOT_PEAK_IOPS[1]),
    ):
        assert round(per_desktop_iops(total, DESKTOPS[1])) == TABLE7[phase][0][0], phase


def test_l620_l623_two_arrays_scale_almost_linearly() -> None:
    # Table 5 (L620-L621): 630 desktops at 4500 IOPS, 1270 at 9000: per desktop 7.14 and 7.09,
    # both in Table 7's 7-8; twice the IOPS for 2.016 times the desktops ("almost linear", L623)
    one, two = per_desktop_iops(4500, 630), per_desktop_iops(9000, 1270)
    assert round(one, 2) == Fraction("7.14") and round(two, 2) == Fraction("7.09")
    assert abs(two / one - 1) < Fraction(1, 100)
    assert Fraction(9000, 4500) == 2


def test_l632_login_peak_of_one_member_times_two_is_the_pool_peak() -> None:
    # L632: 6200 IOPS on one member, "almost the same" on the other; L605, L627, L729: 12400 on the pool
    assert LOGIN_PEAK_IOPS[2] == 2 * 6200
    assert whole_up(Fraction(LOGIN_PEAK_IOPS[2], 6200)) == 2


def test_l789_arrays_are_the_larger_of_capacity_and_iops_needs() -> None:
    # L789: "determine the number of arrays needed for capacity and IOPS separately. The maximum ..."
    # The 2012 one-array figures as a measured profile: capability = the boot peak it carried
    # (10,000 IOPS at boot's 87 % writes, L731/L742); RAID 10 assumed (the paper does not say).
    profile = MeasuredProfile(
        {
            Phase.STEADY: PhaseLoad.of(per_desktop_iops(4500, 630), TABLE7[Phase.STEADY][1]),
            Phase.LOGIN: PhaseLoad.of(per_desktop_iops(6846, 630), TABLE7[Phase.LOGIN][1]),
            Phase.BOOT: PhaseLoad.of(per_desktop_iops(10000, 630), TABLE7[Phase.BOOT][1]),
        },
        ArrayCapability.of(10000, TABLE7[Phase.BOOT][1], 10),
        "2012 paper, Tables 6 and 7",
    )
    by_capacity = desktops_per_array(2539, 25, 6, 1, "1.5").desktops_per_array  # 642 (L785)
    r = size_from_measurements(profile, 1270, desktops_per_array_by_capacity=by_capacity)
    # the boot storm limits, exactly at the 630 desktops it was measured with
    assert r.limiting.phase is Phase.BOOT and r.limiting.desktops_exact == 630
    assert r.arrays_by_capacity == 2  # 1270 / 642 (L436, L662: two arrays held 1270)
    # an unsaturated peak understates capability: 1270 / 630 -> 3 arrays, the safe side of the 2 used
    assert r.arrays_by_iops == 3 and r.arrays == max(3, 2) == 3
    # steady state alone would not limit: 18700 / (50/7 x 1.998) back-end IOPS per desktop
    steady = next(f for f in r.fits if f.phase is Phase.STEADY)
    assert steady.desktops_exact == Fraction(18700 * 7 * 1000, 50 * 1998) and steady.desktops == 1310


def test_l662_two_arrays_hold_1270_desktops_by_capacity() -> None:
    # L662, L893: one array hosted 630, two arrays 1270; by capacity (L785) 642 per array
    r = desktops_per_array(2539, 25, 6, 1, "1.5", desktops=1270)
    assert r.arrays == 2
    assert desktops_per_array(2539, 25, 6, 1, "1.5", desktops=630).arrays == 1

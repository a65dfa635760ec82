"""Worked examples of the 2007 excerpt and the 2014 post (../shared/reference/), reproduced.

``L220`` is line 220 of the reference file named in the test. The 2007 excerpt's other worked
example, the disk-queue limit of 2 x 4 spindles = 8 (L231), is a criterion and is reproduced in
tests/criteria/test_criteria.py.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from labctl.sizing import (
    ArrayCapability,
    MeasuredProfile,
    Phase,
    PhaseLoad,
    nic_ports_needed,
    size_from_measurements,
)
from labctl.sizing.drives import raid_set_functional_iops


def test_2007_l220_one_port_instead_of_two_saturates_at_50_clients() -> None:
    # streaming-2007-excerpt.txt L213, L220: over 60 % on each of two GbE ports from 50 clients;
    # "utilizing only one of the two network interfaces would saturate the connection"
    r = nic_ports_needed("60%", 2, on_ports=1)
    assert r.load_ports == Fraction(6, 5)
    assert r.utilisation_on(1) == Fraction(6, 5) > 1  # "double": 120 %, saturated
    assert r.ports_needed == 2
    assert r.outputs()["saturated_on_ports"] is True


def test_2007_l213_98_percent_on_two_ports_needs_three_under_the_2012_90_percent_criterion() -> None:
    # streaming-2007-excerpt.txt L213: "about 98% utilization ... on each interface when booting 75
    # to 100 clients"; vdi-pvs-equallogic-2012.txt L406: network under 90 %
    r = nic_ports_needed("98%", 2, "90%")
    assert r.ports_exact == Fraction("1.96") / Fraction("0.9") and r.ports_needed == 3
    assert nic_ports_needed("98%", 2).ports_needed == 2  # at 100 % allowed, two ports just carry it


def test_2007_l224_write_cache_raid10_of_four_10k_drives() -> None:
    # streaming-2007-excerpt.txt L224: write cache on "a separate four disk RAID 10 volume",
    # 10K rpm SAS; client writes land there (L226). At 100 % writes each host write costs 2.
    r = raid_set_functional_iops(4, "100%", 10, "10k")
    assert r.raw_iops == 4 * 140 and r.functional_iops == 280
    # the HA configuration's 8-disk RAID 10 (L248) doubles it
    assert raid_set_functional_iops(8, "100%", 10, "10k").functional_iops == 2 * r.functional_iops


# pvs-write-cache-2014.txt L35-L58: Avg IOPS/User, device HDD only vs 256 MB RAM + overflow
IOPS_PER_USER_2014 = [
    # (hypervisor, profile, HDD only, 256 MB RAM + overflow)
    ("ESXi", "Standard", "5", "0.4"),  # L35, L36
    ("ESXi", "Enhanced", "8", "1.2"),  # L38, L39
    ("ESXi", "Professional thin", "9.1", "1.9"),  # L41, L43
    ("ESXi", "Professional thick", "11.7", "1.9"),  # L42, L43
    ("Hyper-V", "Standard", "5.2", "0.3"),  # L49, L50
    ("Hyper-V", "Enhanced", "9.3", "0.8"),  # L52, L53
    ("Hyper-V", "Professional thin", "12.3", "2.0"),  # L55, L57
    ("Hyper-V", "Professional thick", "10.5", "2.0"),  # L56, L57
]


@pytest.mark.parametrize(("hypervisor", "profile", "hdd_only", "ram_overflow"), IOPS_PER_USER_2014)
def test_2014_l62_ram_overflow_stretches_shared_arrays_at_least_3x(
    hypervisor: str, profile: str, hdd_only: str, ram_overflow: str
) -> None:
    # pvs-write-cache-2014.txt L62: "Cut your local disk costs by 2/3 or stretch those shared arrays
    # 2 or 3x". The post gives no write share; the same share for both modes cancels out.
    array = ArrayCapability.of(10000, "90%", 10)

    def per_array(iops_per_user: str) -> Fraction:
        profile_ = MeasuredProfile({Phase.STEADY: PhaseLoad.of(iops_per_user, "90%")}, array)
        return size_from_measurements(profile_, 1).limiting.desktops_exact

    stretch = per_array(ram_overflow) / per_array(hdd_only)
    assert stretch == Fraction(hdd_only) / Fraction(ram_overflow)
    assert stretch >= 3, (hypervisor, profile)

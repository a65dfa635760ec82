"""Compact ranges expand to the boxes they stand for, and back for display."""

from __future__ import annotations

import pytest

from labctl.inventory.ranges import (
    MAX_RANGE,
    RangeError,
    compact_names,
    expand_ips,
    expand_macs,
    expand_names,
)


def test_name_range_keeps_zero_padding_of_the_first_bound() -> None:
    assert expand_names("optiplex-[098-101]") == [
        "optiplex-098",
        "optiplex-099",
        "optiplex-100",
        "optiplex-101",
    ]
    assert expand_names("pvs-01") == ["pvs-01"]


@pytest.mark.parametrize("bad", ["optiplex-[001-]", "a-[1-2]-[3-4]", "x-[5-1]", "y-[1-2"])
def test_malformed_name_ranges_are_refused_with_a_fix(bad: str) -> None:
    with pytest.raises(RangeError) as err:
        expand_names(bad)
    assert bad in str(err.value) and err.value.fix


def test_name_range_beyond_any_lab_is_refused_before_it_is_expanded() -> None:
    assert len(expand_names(f"c-[1-{MAX_RANGE}]")) == MAX_RANGE
    with pytest.raises(RangeError) as err:
        expand_names("c-[1-30000000]")  # a typo: 30 million Machines would take minutes to refuse
    assert "c-[1-30000000]" in str(err.value) and "30000000 machines" in str(err.value)
    assert str(MAX_RANGE) in err.value.fix


def test_mac_range_increments_across_octets_and_normalises_case_and_dashes() -> None:
    assert expand_macs("00-1A-A0-07-00-FF", 3) == [
        "00:1a:a0:07:00:ff",
        "00:1a:a0:07:01:00",
        "00:1a:a0:07:01:01",
    ]
    assert expand_macs("00:1a:a0:07:00:01..00:1a:a0:07:00:03", 3)[-1] == "00:1a:a0:07:00:03"


def test_ip_range_crosses_subnet_boundaries() -> None:
    assert expand_ips("10.0.1.255", 2) == ["10.0.1.255", "10.0.2.0"]
    assert expand_ips("10.0.0.1..10.0.0.3", 3) == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]


def test_range_that_runs_backwards_counts_as_a_mismatch() -> None:
    with pytest.raises(RangeError) as err:
        expand_ips("10.0.0.9..10.0.0.1", 9)
    assert "holds 0 addresses" in str(err.value) and "10.0.0.17" in err.value.fix


def test_compact_names_is_the_inverse_of_expand_for_runs() -> None:
    names = [*expand_names("optiplex-[001-025]"), "pvs-01", *expand_names("optiplex-[051-053]")]
    assert compact_names(names) == "optiplex-[001-025], pvs-01, optiplex-[051-053]"

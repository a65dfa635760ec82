"""typeperf / Performance Monitor CSV, PVS device status and the inventory's time zone against the
formats Windows and Citrix publish (tests/conformance/SOURCES.md names each text's source)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from labctl.drivers import pvs, typeperf
from labctl.drivers.typeperf import TimeZoneUnknown, parse_pdh_csv, parse_query, samples_from_pdh
from labctl.inventory.model import ServerSpec
from labctl.sim.ssh import pvs as sim_pvs
from labctl.sim.ssh import typeperf as sim_typeperf
from labctl.sim.twin.interface import DeviceStatus

# Performance Monitor's CSV counter log as Microsoft's documentation of the format shows it (quoted
# in Linchi Shea's preparePerfLog.pl, 2002): zone name and bias in the first cell, and a value cut
# short ("...e") as the published sample has it.
EDT_LOG = (
    '"(PDH-CSV 4.0) (Eastern Daylight Time)(240)","\\\\SQL01\\Memory\\Pages/sec","\\\\SQL01\\PhysicalDisk(0 D:)\\% Disk Time"\n'
    '"09/08/2002 12:35:45.166","11.296813511113458","7.0625001143654654e"\n'
    '"09/08/2002 12:36:00.167","0.26679653905997197","2.8829087316668804"\n'
    '"09/08/2002 12:36:15.169","0.13331924737007395","2.0239260004978679"\n'
)
# A header written on a French Windows in Morocco: the localised zone name holds parentheses of its
# own (the first cell a public analysis script renames, "(PDH-CSV 4.0) (Maroc (heure d...")
MAROC_HEADER = '"(PDH-CSV 4.0) (Maroc (heure d\'été))(-60)","\\\\PC\\Processus(_Total)\\% temps utilisateur"'
# Console typeperf on a German Windows: localised object and counter names, no zone in the header
GERMAN = (
    "\r\n"
    '"(PDH-CSV 4.0)","\\\\SRV\\Prozessor(_Total)\\Prozessorzeit (%)","\\\\SRV\\Arbeitsspeicher\\Verfügbare MB"\r\n'
    '"03/29/2009 01:59:59.000","12.5","2048"\r\n'
    '"03/29/2009 03:00:00.000","","2047"\r\n'
    '"03/29/2009 03:00:01.000"," ","2046"\r\n'
    "Der Befehl wurde erfolgreich ausgeführt.\r\n"
)


def test_a_log_s_zone_and_bias_place_its_local_times() -> None:
    t = parse_pdh_csv(EDT_LOG)
    assert (t.zone_name, t.utc_bias_min) == ("Eastern Daylight Time", 240)
    rs = samples_from_pdh(EDT_LOG, "sql01")
    first = datetime(2002, 9, 8, 16, 35, 45, 166000, tzinfo=UTC).timestamp()  # 12:35 EDT = 16:35 UTC
    assert min(r.source_ts for r in rs) == pytest.approx(first)
    # the value published cut short is no reading, not a number made up
    disk_first = [r for r in rs if r.metric == "disk_busy_pct" and abs(r.source_ts - first) < 0.01]
    assert disk_first == []
    # a declared zone that agrees is taken (DST-correct per row); one that disagrees is refused
    assert samples_from_pdh(EDT_LOG, "sql01", time_zone="America/New_York") == rs
    with pytest.raises(typeperf.TypeperfError, match="time_zone Europe/London"):
        samples_from_pdh(EDT_LOG, "sql01", time_zone="Europe/London")


def test_a_localised_zone_name_with_parentheses_keeps_its_bias() -> None:
    """The regex stopped at the first ')' and dropped the bias: the samples were taken for UTC."""
    text = MAROC_HEADER + '\n"07/14/2019 10:00:00.000","3.5"\n'
    t = parse_pdh_csv(text)
    assert (t.zone_name, t.utc_bias_min) == ("Maroc (heure d'été)", -60)
    (r,) = samples_from_pdh(text, "pc")
    assert r.source_ts == datetime(2019, 7, 14, 9, 0, tzinfo=UTC).timestamp()


def test_console_output_without_a_zone_needs_the_declared_one_and_converts_across_dst() -> None:
    with pytest.raises(TimeZoneUnknown, match="time_zone"):
        samples_from_pdh(GERMAN, "srv")
    rs = samples_from_pdh(GERMAN, "srv", time_zone="Europe/Berlin")
    stamps = sorted({r.source_ts for r in rs})
    # 01:59:59 CET and 03:00:00 CEST are one second apart: the clocks went forward in between
    assert stamps[1] - stamps[0] == 1.0
    assert stamps[0] == datetime(2009, 3, 29, 0, 59, 59, tzinfo=UTC).timestamp()
    # missing values, empty or a blank, are no readings
    assert sum(1 for r in rs if r.source_ts == stamps[1]) == 1


def test_localised_counter_names_are_not_mapped_silently() -> None:
    """A German server's counters are not the English ones the plans ask for: the preflight's
    typeperf -q check names them missing instead of the parser guessing."""
    rs = samples_from_pdh(GERMAN, "srv", time_zone="Europe/Berlin")
    assert not any(r.metric == "cpu_pct" for r in rs)
    listing = "\\Prozessor(*)\\Prozessorzeit (%)\r\n\\Arbeitsspeicher\\Verfügbare MB\r\n"
    assert typeperf.missing_counters(typeperf.SERVER_COUNTERS, parse_query(listing)) == list(
        typeperf.SERVER_COUNTERS
    )


def test_the_simulated_typeperf_prints_the_declared_zone_s_local_time_without_a_zone() -> None:
    t = datetime(2014, 7, 1, 12, 0, 0, 250000, tzinfo=UTC).timestamp()
    assert sim_typeperf._timestamp(t, "America/Los_Angeles") == "07/01/2014 05:00:00.250"
    assert sim_typeperf._timestamp(t, None) == "07/01/2014 12:00:00.250"
    text = (
        '"(PDH-CSV 4.0)","\\\\S\\Memory\\Available MBytes"\n'
        f'"{sim_typeperf._timestamp(t, "America/Los_Angeles")}","1"\n'
    )
    (r,) = samples_from_pdh(text, "s", time_zone="America/Los_Angeles")
    assert r.source_ts == pytest.approx(t)


def test_the_inventory_takes_an_iana_zone_and_names_the_fix_for_a_windows_name() -> None:
    base = {"name": "pvs-01", "role": "streaming", "network": "lab", "ip": "10.0.0.1"}
    assert (
        ServerSpec.model_validate({**base, "time_zone": "America/Los_Angeles"}).time_zone
        == "America/Los_Angeles"
    )
    assert ServerSpec.model_validate(base).time_zone is None
    with pytest.raises(ValidationError, match="not an IANA time zone"):
        ServerSpec.model_validate({**base, "time_zone": "Pacific Standard Time"})


# Citrix PvsDeviceInfo (PVS 1903 PowerShell-with-objects reference): an inactive device has Ip
# 0.0.0.0, DiskVersion 0, ServerName "" and Status "".
INACTIVE = {
    "DeviceName": "optiplex-007",
    "DeviceMac": "00-1A-A0-07-00-07",
    "Active": False,
    "Status": "",
    "ServerName": "",
    "Ip": "0.0.0.0",
    "DiskVersion": 0,
}


def test_an_inactive_pvs_device_has_no_address_or_version() -> None:
    (d,) = pvs.parse_device_info(json.dumps(INACTIVE))
    assert (d.name, d.mac, d.active, d.ip, d.disk_version, d.retries) == (
        "optiplex-007",
        "00:1a:a0:07:00:07",
        False,
        None,
        None,
        0,
    )


def test_the_simulated_pvs_answers_an_inactive_device_as_the_reference_does() -> None:
    obj = sim_pvs.device_object(
        DeviceStatus("optiplex-007", "00:1a:a0:07:00:07", False, 0, None, "pvs-01", None)
    )
    assert {k: obj[k] for k in INACTIVE} == INACTIVE
    assert (obj["Ip"], obj["DiskVersion"], obj["Status"], obj["ServerName"]) == ("0.0.0.0", 0, "", "")

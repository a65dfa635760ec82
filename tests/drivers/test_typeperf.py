"""The PDH-CSV parser on literal typeperf output (real format: leading blank line, quoted header,
expanded instances, local timestamps, trailing status lines)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from labctl.drivers.typeperf import (
    CounterPath,
    TypeperfError,
    interval_arg,
    missing_counters,
    parse_pdh_csv,
    parse_query,
    sample_argv,
    samples_from_pdh,
)

# As typeperf prints it on Windows Server 2003 (CRLF line ends, blank first line).
REAL = (
    "\r\n"
    '"(PDH-CSV 4.0)","\\\\PVS-01\\Processor(_Total)\\% Processor Time","\\\\PVS-01\\Memory\\Available MBytes",'
    '"\\\\PVS-01\\Network Interface(Broadcom BCM5708C NetXtreme II GigE [NDIS VBD Client])\\Bytes Sent/sec",'
    '"\\\\PVS-01\\Network Interface(Broadcom BCM5708C NetXtreme II GigE [NDIS VBD Client] _2)\\Bytes Sent/sec",'
    '"\\\\PVS-01\\Network Interface(Broadcom BCM5708C NetXtreme II GigE [NDIS VBD Client])\\Current Bandwidth",'
    '"\\\\PVS-01\\Network Interface(Broadcom BCM5708C NetXtreme II GigE [NDIS VBD Client] _2)\\Current Bandwidth",'
    '"\\\\PVS-01\\PhysicalDisk(0 C:)\\Avg. Disk Queue Length","\\\\PVS-01\\PhysicalDisk(1 D:)\\Avg. Disk Queue Length",'
    '"\\\\PVS-01\\PhysicalDisk(_Total)\\Avg. Disk Queue Length"\r\n'
    '"11/21/2007 14:03:01.250","12.500000","3071.000000","62500000.000000","125000.000000",'
    '"1000000000.000000","1000000000.000000","0.250000","18.125000","18.375000"\r\n'
    '"11/21/2007 14:03:02.251","87.031250","3050.000000","122500000.000000","0.000000",'
    '"1000000000.000000","1000000000.000000","0.500000","42.000000","42.500000"\r\n'
    "Exiting, please wait...                    \r\n"
    "The command completed successfully.\r\n"
)


def test_header_and_rows_are_parsed_with_instances_expanded() -> None:
    t = parse_pdh_csv(REAL)
    assert len(t.columns) == 9
    assert t.columns[0] == CounterPath("PVS-01", "Processor", "_Total", "% Processor Time")
    assert t.columns[1] == CounterPath("PVS-01", "Memory", None, "Available MBytes")
    assert t.columns[3].instance == "Broadcom BCM5708C NetXtreme II GigE [NDIS VBD Client] _2"
    assert len(t.rows) == 2
    assert t.rows[0][0] == datetime(2007, 11, 21, 14, 3, 1, 250000)
    assert t.rows[1][1][0] == pytest.approx(87.03125)
    assert t.utc_bias_min is None


def test_samples_keep_the_source_timestamp_and_name_entities() -> None:
    rs = samples_from_pdh(REAL, "pvs-01", time_zone="UTC", memory_total_mb=4096)
    first_ts = datetime(2007, 11, 21, 14, 3, 1, 250000, tzinfo=UTC).timestamp()
    cpu = [r for r in rs if r.metric == "cpu_pct"]
    assert [r.entity for r in cpu] == ["pvs-01", "pvs-01"]
    assert cpu[0].source_ts == pytest.approx(first_ts)
    assert cpu[1].value == pytest.approx(87.03125)
    queue = {
        (r.entity, r.value) for r in rs if r.metric == "disk_queue_len" and r.source_ts == cpu[1].source_ts
    }
    assert ("pvs-01/D:", 42.0) in queue and ("pvs-01/C:", 0.5) in queue and ("pvs-01/_Total", 42.5) in queue
    used = [r.value for r in rs if r.metric == "memory_used_mb"]
    assert used == [4096 - 3071, 4096 - 3050]
    util = {
        r.entity: r.value for r in rs if r.metric == "nic_sent_util_pct" and r.source_ts == cpu[1].source_ts
    }
    nic1 = "pvs-01/Broadcom BCM5708C NetXtreme II GigE [NDIS VBD Client]"
    assert util[nic1] == pytest.approx(122500000 * 8 / 1e9 * 100)  # 98 %
    assert util[nic1 + " _2"] == 0.0


def test_time_zone_bias_from_the_header_is_applied() -> None:
    text = REAL.replace('"(PDH-CSV 4.0)"', '"(PDH-CSV 4.0) (W. Europe Standard Time)(-60)"')
    rs = samples_from_pdh(text, "pvs-01")
    # local 14:03 at UTC+1 is 13:03 UTC
    want = datetime(2007, 11, 21, 13, 3, 1, 250000, tzinfo=UTC).timestamp()
    assert min(r.source_ts for r in rs) == pytest.approx(want)


def test_blank_cells_are_skipped_not_zero() -> None:
    text = '\n"(PDH-CSV 4.0)","\\\\S\\Memory\\Pages/sec","\\\\S\\Memory\\Available MBytes"\n"01/02/2020 00:00:00.000"," ","12.0"\n'
    rs = samples_from_pdh(text, "s", time_zone="UTC")
    assert [(r.metric, r.value) for r in rs] == [("memory_available_mb", 12.0)]


def test_typeperf_errors_and_garbage_raise() -> None:
    with pytest.raises(TypeperfError, match="typeperf reported"):
        parse_pdh_csv("\nError: No valid counters.\n")
    with pytest.raises(TypeperfError, match="no PDH-CSV header"):
        parse_pdh_csv("'typeperf' is not recognized as an internal or external command,")
    bad_row = '\n"(PDH-CSV 4.0)","\\\\S\\Memory\\Available MBytes"\n"01/02/2020 00:00:00.000","1","2"\n'
    with pytest.raises(TypeperfError, match="cells"):
        parse_pdh_csv(bad_row)


def test_command_line_and_interval_format() -> None:
    argv = sample_argv([r"\Processor(_Total)\% Processor Time"], 6, 10)
    assert argv == ["typeperf", r"\Processor(_Total)\% Processor Time", "-sc", "6", "-si", "10"]
    assert interval_arg(0.2) == "1"
    assert interval_arg(90) == "01:30"
    assert interval_arg(3725) == "01:02:05"


def test_query_listing_and_missing_counters() -> None:
    listing = (
        "\\Processor(*)\\% Processor Time\r\n\\Processor(*)\\% User Time\r\n"
        "\\PhysicalDisk(*)\\Avg. Disk Queue Length\r\n\\Memory\\Available MBytes\r\n"
        "The command completed successfully.\r\n"
    )
    listed = parse_query(listing)
    wanted = [
        r"\Processor(_Total)\% Processor Time",
        r"\Memory\Available MBytes",
        r"\PhysicalDisk(*)\Avg. Disk Queue Length",
        r"\Network Interface(*)\Bytes Sent/sec",
    ]
    assert missing_counters(wanted, listed) == [r"\Network Interface(*)\Bytes Sent/sec"]


def test_stream_parser_line_by_line_matches_the_batch_parser() -> None:
    from labctl.drivers.typeperf import PdhStream

    st = PdhStream("pvs-01", time_zone="UTC", memory_total_mb=4096)
    streamed = [r for line in REAL.split("\r\n") for r in st.feed(line)]
    assert streamed == samples_from_pdh(REAL, "pvs-01", time_zone="UTC", memory_total_mb=4096)
    with pytest.raises(TypeperfError):
        PdhStream("x").feed("Error: No valid counters.")


def test_local_times_without_a_zone_are_refused_not_taken_for_utc() -> None:
    """Console typeperf prints no zone: with none declared the parser refuses (it read them as UTC)."""
    from labctl.drivers.typeperf import PdhStream, TimeZoneUnknown

    with pytest.raises(TimeZoneUnknown, match=r"add time_zone: .* to server pvs-01"):
        samples_from_pdh(REAL, "pvs-01")
    stream = PdhStream("pvs-01")
    with pytest.raises(TimeZoneUnknown):
        for line in REAL.split("\r\n"):
            stream.feed(line)


def test_the_declared_zone_places_local_times_dst_correctly() -> None:
    rs = samples_from_pdh(REAL, "pvs-01", time_zone="America/Los_Angeles")
    # 21 Nov 2007 14:03:01.250 PST (UTC-8) is 22:03:01.250 UTC
    want = datetime(2007, 11, 21, 22, 3, 1, 250000, tzinfo=UTC).timestamp()
    assert min(r.source_ts for r in rs) == pytest.approx(want)
    summer = REAL.replace("11/21/2007", "07/21/2007")
    rs = samples_from_pdh(summer, "pvs-01", time_zone="America/Los_Angeles")
    assert min(r.source_ts for r in rs) == pytest.approx(
        datetime(2007, 7, 21, 21, 3, 1, 250000, tzinfo=UTC).timestamp()
    )


def test_a_header_zone_that_contradicts_the_declared_one_is_refused() -> None:
    text = REAL.replace('"(PDH-CSV 4.0)"', '"(PDH-CSV 4.0) (W. Europe Standard Time)(-60)"')
    assert samples_from_pdh(text, "pvs-01", time_zone="Europe/Berlin")
    with pytest.raises(TypeperfError, match="time_zone America/New_York has a bias of 300"):
        samples_from_pdh(text, "pvs-01", time_zone="America/New_York")

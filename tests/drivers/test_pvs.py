from __future__ import annotations

import json

import pytest

from labctl.drivers.pvs import PvsError, parse_device_info, readings

ONE = {
    "Name": "optiplex-001",
    "DeviceMac": "00-1A-A0-07-00-01",
    "Active": True,
    "Status": "3,12",
    "ServerName": "PVS-01",
    "Ip": "10.20.1.1",
    "BootTime": 41.5,
    "DiskVersion": 2,
}


def test_array_of_devices() -> None:
    two = [
        ONE,
        {**ONE, "Name": "optiplex-002", "Active": False, "Status": "0,0", "BootTime": None, "Ip": None},
    ]
    devs = parse_device_info(json.dumps(two, indent=4))
    assert [d.name for d in devs] == ["optiplex-001", "optiplex-002"]
    assert devs[0].mac == "00:1a:a0:07:00:01" and devs[0].retries == 3 and devs[0].ram_cache_pct == 12
    assert devs[0].boot_time_s == 41.5 and devs[0].active
    assert devs[1].boot_time_s is None and not devs[1].active and devs[1].ip is None


def test_single_device_is_an_unwrapped_object() -> None:
    devs = parse_device_info(json.dumps(ONE, indent=4))
    assert len(devs) == 1 and devs[0].name == "optiplex-001"


def test_empty_output_means_no_devices_and_garbage_raises() -> None:
    assert parse_device_info("\r\n") == []
    with pytest.raises(PvsError, match="not JSON"):
        parse_device_info("Get-PvsDeviceInfo : The term is not recognized")
    with pytest.raises(PvsError, match="without a Name"):
        parse_device_info('[{"DeviceMac": "x"}]')


def test_readings_per_client() -> None:
    rs = readings(parse_device_info(json.dumps(ONE)), 100.0)
    got = {r.metric: r.value for r in rs}
    assert got == {"active": 1.0, "retries": 3.0, "boot_time_s": 41.5, "ram_cache_pct": 12.0}
    assert all(r.entity == "optiplex-001" and r.source_ts == 100.0 for r in rs)

"""Streaming-server (Citrix Provisioning Services) device status over SSH.

``Get-PvsDeviceInfo | ConvertTo-Json`` prints a JSON array of devices, or, with one device, a
bare object (ConvertTo-Json unwraps one-element arrays). Per device: ``Name``, ``DeviceMac``
(``00-1A-A0-07-00-01``), ``Active``, ``Status`` (``"<retries>,<RAM cache %>"``), ``ServerName``,
``Ip``, ``BootTime`` (seconds from first network contact to the agent up, or null while booting),
``DiskVersion``.

Checked against Citrix's PvsDeviceInfo reference (PVS 1903 "PowerShell with Objects" guide): the
name is ``Name`` or ``DeviceName``; an inactive device has ``Ip`` 0.0.0.0, ``DiskVersion`` 0,
``ServerName`` and ``Status`` "" (read as none, not as an address or version 0). ``BootTime`` is
not a PvsDeviceInfo field there: where it comes from on a real farm is unverified
(docs/conformance.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from labctl.drivers.readings import Reading

DEVICE_INFO_COMMAND = 'powershell -NoProfile -Command "Get-PvsDeviceInfo | ConvertTo-Json"'


INACTIVE_IP = "0.0.0.0"  # PvsDeviceInfo.Ip of a device that is not active


class PvsError(ValueError):
    pass


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    mac: str  # lower case, colon separated
    active: bool
    retries: int
    ram_cache_pct: float | None
    server: str
    ip: str | None
    boot_time_s: float | None
    disk_version: str | None


def _mac(value: Any) -> str:
    return str(value or "").replace("-", ":").lower()


def _status(value: Any) -> tuple[int, float | None]:
    """``"3,12"`` -> (3 retries, 12 % RAM cache); tolerant of blanks and a bare number."""
    if value is None:
        return 0, None
    parts = [p.strip() for p in str(value).split(",")]
    try:
        retries = int(float(parts[0])) if parts and parts[0] else 0
    except ValueError:
        retries = 0
    cache = None
    if len(parts) > 1 and parts[1]:
        try:
            cache = float(parts[1])
        except ValueError:
            cache = None
    return retries, cache


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def parse_device_info(text: str) -> list[DeviceInfo]:
    """Devices from ``ConvertTo-Json`` output: an array, a single object, or nothing at all."""
    text = text.strip().lstrip("\ufeff")
    if not text:
        return []  # no devices: PowerShell prints nothing for an empty pipeline
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PvsError(f"device status is not JSON ({exc.msg} at char {exc.pos}): {text[:80]!r}") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise PvsError(f"device status is neither an array nor an object: {type(data).__name__}")
    out = []
    for item in data:
        if not isinstance(item, dict) or not (item.get("Name") or item.get("DeviceName")):
            raise PvsError(f"device entry without a Name or DeviceName: {str(item)[:80]}")
        name = item.get("Name") or item.get("DeviceName")
        retries, cache = _status(item.get("Status"))
        boot = item.get("BootTime")
        try:
            boot_s = float(boot) if boot not in (None, "") else None
        except (TypeError, ValueError):
            boot_s = None
        out.append(
            DeviceInfo(
                name=str(name),
                mac=_mac(item.get("DeviceMac")),
                active=_bool(item.get("Active")),
                retries=retries,
                ram_cache_pct=cache,
                server=str(item.get("ServerName") or ""),
                ip=(str(item["Ip"]) if item.get("Ip") and str(item["Ip"]) != INACTIVE_IP else None),
                boot_time_s=boot_s,
                disk_version=(
                    str(item["DiskVersion"]) if item.get("DiskVersion") not in (None, 0, "0") else None
                ),
            )
        )
    return out


def readings(devices: list[DeviceInfo], ts: float) -> list[Reading]:
    """Boot time, retries and activity per client, stamped ``ts`` (PVS has no sample time)."""
    out = []
    for d in devices:
        out.append(Reading(d.name, "active", "bool", ts, 1.0 if d.active else 0.0))
        out.append(Reading(d.name, "retries", "requests", ts, float(d.retries)))
        if d.boot_time_s is not None:
            out.append(Reading(d.name, "boot_time_s", "s", ts, d.boot_time_s))
        if d.ram_cache_pct is not None:
            out.append(Reading(d.name, "ram_cache_pct", "%", ts, d.ram_cache_pct))
    return out

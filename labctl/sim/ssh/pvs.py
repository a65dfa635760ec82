"""``powershell ... Get-PvsDeviceInfo ... | ConvertTo-Json``: Citrix PVS device status, as JSON.

On a streaming server (in the configuration's ``streaming_servers`` or of role ``streaming``) any
``powershell`` line that mentions both ``Get-PvsDeviceInfo`` and ``ConvertTo-Json`` (other text,
``-SiteName X``, ``Add-PSSnapin ...;`` and the like, is ignored) prints every device of the site,
as Windows PowerShell 5.1's ``ConvertTo-Json`` writes it: 4-space indents, ``"Key":  value``
with two spaces after the colon, CRLF line ends. ``-Name X`` or ``-DeviceName X`` selects one
device. Fields per device::

    Name, DeviceName   "optiplex-001"
    DeviceId           a GUID, stable per device
    DeviceMac          "00-1A-A0-07-00-01"        (dashes, upper case, as PVS shows MACs)
    Active             true | false
    Status             "<retries>,<RAM cache %>"  e.g. "3,0"; "" while the device is inactive
    ServerName         the streaming server the device is connected to; "" while inactive
    Ip                 "127.20.1.1"; "0.0.0.0" while inactive (Citrix's PvsDeviceInfo reference)
    BootTime           seconds from first network contact to agent start (3 decimals); null
                       while booting or off. NOT a field of Citrix's PvsDeviceInfo (PVS 1903
                       PowerShell-with-objects reference): this simulator's own, named in
                       docs/conformance.md as unverified
    DiskVersion        1; 0 while inactive (the reference)
    SiteName, CollectionName, DiskLocatorName

The quirk of ``ConvertTo-Json``: one device is printed as a bare object, not an array of one;
no device prints nothing at all. Elsewhere the cmdlet is unknown: PowerShell's
``CommandNotFoundException`` text on stderr, exit 1.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from labctl.sim.ssh.cmdline import Segment, after_switch
from labctl.sim.ssh.shell import CRLF, MachineEnv, Shell
from labctl.sim.twin.interface import DeviceStatus

SITE = "Site"
COLLECTION = "Collection"
DISK_LOCATOR = "Store\\vDisk-xp-sp2"
DISK_VERSION = 1
RAM_CACHE_PCT = 0


def _not_recognized(term: str, line: str) -> str:
    marker = "~" * max(1, len(term))
    pos = max(0, line.find(term))
    return CRLF.join(
        [
            f"{term} : The term '{term}' is not recognized as the name of a cmdlet, function, script file, "
            "or operable program. Check the spelling of the name, or if a path was included, verify that "
            "the path is correct and try again.",
            f"At line:1 char:{pos + 1}",
            f"+ {line}",
            f"+ {' ' * pos}{marker}",
            f"    + CategoryInfo          : ObjectNotFound: ({term}:String) [], CommandNotFoundException",
            "    + FullyQualifiedErrorId : CommandNotFoundException",
            "",
            "",
        ]
    )


def _script(seg: Segment) -> str:
    for switch in ("-Command", "-c", "/Command", "/c"):
        rest = after_switch(seg.text, switch)
        if rest is not None:
            rest = rest.strip()
            if len(rest) >= 2 and rest[0] == '"' and rest[-1] == '"':
                rest = rest[1:-1]
            return rest
    return ""


async def powershell(sh: Shell, seg: Segment) -> int:
    script = _script(seg)
    low = script.lower()
    if "get-pvsdeviceinfo" in low and "convertto-json" in low:
        if not sh.env.is_streaming_server:
            await sh.err(_not_recognized("Get-PvsDeviceInfo", script))
            return 1
        devices = site_devices(sh.env)
        m = re.search(r"-(?:Device)?Name\s+(?:'([^']*)'|\"([^\"]*)\"|(\S+))", script, re.IGNORECASE)
        if m:
            wanted = (m.group(1) or m.group(2) or m.group(3) or "").lower()
            devices = [d for d in devices if d.name.lower() == wanted]
        objects = [device_object(d) for d in devices]
        if not objects:
            return 0
        value: Any = objects[0] if len(objects) == 1 else objects
        await sh.out(convert_to_json(value) + CRLF)
        return 0
    if not script:
        return 0
    term = re.split(r"[\s|;]", script.strip(), maxsplit=1)[0]
    await sh.err(_not_recognized(term, script))
    return 1


def site_devices(env: MachineEnv) -> list[DeviceStatus]:
    """Every client of the site, with the server it streams from (as PVS lists a site)."""
    twin = env.ctx.twin
    seen: dict[str, DeviceStatus] = {}
    servers = env.streaming_servers()
    if env.name in servers:
        servers.remove(env.name)
    for server in [env.name, *servers]:
        try:
            statuses = twin.device_status(server)
        except (KeyError, ValueError):
            continue
        for d in statuses:
            old = seen.get(d.name)
            if old is None or (d.active and not old.active):
                seen[d.name] = d
    out = []
    for m in env.ctx.lab.clients:
        known = seen.pop(m.name, None)
        out.append(known or DeviceStatus(m.name, m.mac or "", False, 0, None, "", m.ip))
    out.extend(seen.values())  # devices the twin knows that the inventory does not
    return out


INACTIVE_IP = "0.0.0.0"  # PvsDeviceInfo.Ip of a device that is not active


def pvs_mac(mac: str) -> str:
    return mac.replace(":", "-").replace(".", "-").upper()


def device_object(d: DeviceStatus) -> dict[str, Any]:
    boot = round(d.boot_time_s, 3) if d.boot_time_s is not None and d.active else None
    return {
        "Name": d.name,
        "DeviceName": d.name,
        "DeviceId": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{d.name}.pvs.labctl")),
        "DeviceMac": pvs_mac(d.mac),
        "Active": d.active,
        "Status": f"{d.retries},{RAM_CACHE_PCT}" if d.active else "",
        "ServerName": d.server if d.active else "",
        "Ip": d.ip if d.active else INACTIVE_IP,
        "BootTime": boot,
        "DiskVersion": DISK_VERSION if d.active else 0,
        "SiteName": SITE,
        "CollectionName": COLLECTION,
        "DiskLocatorName": DISK_LOCATOR,
    }


def _scalar(v: Any) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    s = json.dumps(str(v))
    # JavaScriptSerializer (Windows PowerShell 5.1) escapes these too
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        s = s.replace(ch, esc)
    return s


def convert_to_json(value: Any, level: int = 0) -> str:
    """Windows PowerShell 5.1 ``ConvertTo-Json`` layout (CRLF line ends)."""
    pad = "    " * (level + 1)
    end = "    " * level
    if isinstance(value, dict):
        if not value:
            return "{" + CRLF + CRLF + end + "}"
        items = [f"{pad}{json.dumps(k)}:  {convert_to_json(v, level + 1)}" for k, v in value.items()]
        return "{" + CRLF + ("," + CRLF).join(items) + CRLF + end + "}"
    if isinstance(value, list):
        if not value:
            return "[" + CRLF + CRLF + end + "]"
        items = [pad + convert_to_json(v, level + 1) for v in value]
        return "[" + CRLF + ("," + CRLF).join(items) + CRLF + end + "]"
    return _scalar(value)

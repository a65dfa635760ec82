"""The IPMI driver (pyghmi) against OpenIPMI's ipmi_sim: an independent BMC speaking IPMI 2.0 over
LAN with RMCP+ authentication, started by the test on loopback and stopped by its pid.

ipmi_sim hands Chassis Control to a program (``chassis_control`` in its lan.conf); the one here
keeps the power state in a file and logs every request, so the test sees what the BMC was asked.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from labctl.drivers.ipmi import IpmiClient, IpmiError
from labctl.drivers.power_verbs import PowerReading, PowerVerb
from labctl.inventory.model import IpmiEndpoint
from tests.conformance.processes import executable, free_port, started

pytestmark = pytest.mark.integration

USER, PASSWORD = "labctl", "ipmi-conformance"
# firmware 3.34: major 3, minor 0x34 (BCD "34"; read as binary it would be 52); Dell's enterprise number
FIRMWARE_MAJOR, FIRMWARE_MINOR = 3, 0x34
DELL = 674

CHASSIS = """#!/bin/sh
# ipmi_sim chassis control: get|set, then parameter [value] pairs
echo "$@" >> "{state}/requests.log"
op=$1; shift
if [ "$op" = get ]; then
  for p in "$@"; do
    [ "$p" = power ] && echo "power:$(cat "{state}/power" 2>/dev/null || echo 0)"
  done
else
  while [ $# -gt 1 ]; do
    [ "$1" = power ] && echo "$2" > "{state}/power"
    shift 2
  done
fi
"""


@dataclass(frozen=True)
class IpmiSim:
    endpoint: IpmiEndpoint
    state: Path

    def requests(self) -> list[str]:
        path = self.state / "requests.log"
        return (
            [line for line in path.read_text().splitlines() if not line.startswith("get")]
            if path.exists()
            else []
        )


def ipmitool(port: int, *args: str, user: str = USER, password: str = PASSWORD) -> str:
    """ipmitool over lanplus with cipher suite 3 (HMAC-SHA1): ipmi_sim has no suite 17, and left to
    choose, ipmitool first waits out a Get Channel Cipher Suites that ipmi_sim does not answer."""
    argv = ["ipmitool", "-I", "lanplus", "-C", "3", "-H", "127.0.0.1", "-p", str(port), "-U", user]
    return subprocess.run([*argv, "-P", password, *args], capture_output=True, text=True, timeout=20).stdout


def _ipmitool_answers(port: int) -> bool:
    try:
        out = ipmitool(port, "power", "status")
    except subprocess.TimeoutExpired:
        return False
    return "Chassis Power is" in out


@pytest.fixture(scope="module")
def ipmi_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IpmiSim]:
    tmp = tmp_path_factory.mktemp("ipmi_sim")
    executable("ipmitool", "make install (Debian's ipmitool)")
    port = free_port(kind=__import__("socket").SOCK_DGRAM)
    script = tmp / "chassis.sh"
    script.write_text(CHASSIS.format(state=tmp))
    script.chmod(0o755)
    (tmp / "lan.conf").write_text(
        'name "labctl_conformance"\n'
        "set_working_mc 0x20\n"
        "  startlan 1\n"
        f"    addr 127.0.0.1 {port}\n"
        "    priv_limit admin\n"
        + "".join(
            f"    allowed_auths_{p} none md2 md5 straight\n"
            for p in ("callback", "user", "operator", "admin")
        )
        + "    guid a123456789abcdefa123456789abcdef\n"
        "  endlan\n"
        f'  chassis_control "{script}"\n'
        f'  user 2 true "{USER}" "{PASSWORD}" admin 10 none md2 md5 straight\n'
    )
    (tmp / "cmds.emu").write_text(
        "mc_setbmc 0x20\n"
        f"mc_add 0x20 0 no-device-sdrs 0x23 {FIRMWARE_MAJOR} {FIRMWARE_MINOR:#x} 0x9f {DELL:#x} 0x100\n"
        "mc_enable 0x20\n"
    )
    (tmp / "state").mkdir()
    argv = [
        executable("ipmi_sim", "make install (Debian's openipmi)"),
        *("-c", str(tmp / "lan.conf"), "-f", str(tmp / "cmds.emu"), "-s", str(tmp / "state"), "-n"),
    ]
    with started(argv, ready=lambda: _ipmitool_answers(port), log=tmp / "ipmi_sim.log", deadline_s=30):
        yield IpmiSim(IpmiEndpoint(host="127.0.0.1", port=port, user=USER, password="env:CONF_IPMI_PW"), tmp)


@pytest.fixture
def sim(ipmi_sim: IpmiSim, monkeypatch: pytest.MonkeyPatch) -> IpmiSim:
    monkeypatch.setenv("CONF_IPMI_PW", PASSWORD)
    monkeypatch.setenv("CONF_IPMI_WRONG", "not-the-password")
    return ipmi_sim


def _reading(c: IpmiClient, want: PowerReading, wall_s: float = 5.0) -> PowerReading:
    deadline = time.monotonic() + wall_s
    while (r := c.power_reading()) is not want and time.monotonic() < deadline:
        time.sleep(0.05)
    return r


def test_power_status_and_every_chassis_control_the_driver_sends(sim: IpmiSim) -> None:
    with IpmiClient("ipmi_sim", sim.endpoint, timeout_s=10) as c:
        assert c.act(PowerVerb.FORCE_OFF) == "power down accepted"
        assert _reading(c, PowerReading.OFF) is PowerReading.OFF
        assert c.act(PowerVerb.ON) == "power up accepted"
        assert _reading(c, PowerReading.ON) is PowerReading.ON
        assert "hard reset" in c.act(PowerVerb.REBOOT)
        assert "soft off" in c.act(PowerVerb.GRACEFUL_OFF)
    # what ipmi_sim's chassis was asked, in IPMI's words (table 28-4)
    assert sim.requests()[-4:] == ["set power 0", "set power 1", "set reset 1", "set shutdown 1"]


def test_device_id_reads_the_firmware_revision_as_bcd(sim: IpmiSim) -> None:
    with IpmiClient("ipmi_sim", sim.endpoint, timeout_s=10) as c:
        dev = c.device_id()
    assert dev.firmware == f"{FIRMWARE_MAJOR}.{FIRMWARE_MINOR:x}" == "3.34"  # 0x34 is "34", not 52
    assert (dev.manufacturer_id, dev.product_id, dev.ipmi_version) == (DELL, 0x100, "2.0")
    # ipmitool, the reference client, reads the same BMC the same way
    out = ipmitool(sim.endpoint.port, "mc", "info")
    assert f"Firmware Revision         : {dev.firmware}" in out
    assert f"Manufacturer ID           : {dev.manufacturer_id}" in out


def test_a_wrong_password_is_refused_at_once_naming_the_credential(sim: IpmiSim) -> None:
    wrong = sim.endpoint.model_copy(update={"password": "env:CONF_IPMI_WRONG"})
    t0 = time.monotonic()
    with pytest.raises(IpmiError) as ei:
        IpmiClient("ipmi_sim", wrong, timeout_s=10).open()
    assert time.monotonic() - t0 < 8  # the BMC's refusal, not the deadline
    assert "env:CONF_IPMI_WRONG" in str(ei.value)

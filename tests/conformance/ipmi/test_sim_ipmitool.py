"""The simulated BMC (labctl/sim/ipmi) checked with ipmitool, the reference IPMI client, over lanplus
(RMCP+): the commands the driver sends (chassis status, chassis control) and Get Device ID, which
`labctl check` reads for the firmware revision. The BMC runs in a process of its own."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from labctl.sim.redfish.idrac import IDRAC_FIRMWARE
from tests.conformance.processes import executable
from tests.drivers.power_labs import bmc
from tests.drivers.simparts import SECRETS, write_secrets

pytestmark = pytest.mark.integration


def test_ipmitool_drives_and_reads_the_simulated_bmc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = executable("ipmitool", "make install (Debian's ipmitool)")
    write_secrets(tmp_path, monkeypatch)
    with bmc(tmp_path) as lab:
        ep = lab.machine("infra-01").ipmi  # type: ignore[attr-defined]
        password = SECRETS[ep.password]

        def run(*args: str, user: str = ep.user, pw: str = password) -> subprocess.CompletedProcess[str]:
            argv = [tool, "-I", "lanplus", "-H", ep.host, "-p", str(ep.port), "-U", user, "-P", pw, *args]
            return subprocess.run(argv, capture_output=True, text=True, timeout=30)

        def status_becomes(word: str, wall_s: float = 10.0) -> str:
            deadline = time.monotonic() + wall_s
            while (out := run("power", "status").stdout.strip()) != f"Chassis Power is {word}":
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            return out

        assert status_becomes("on") == "Chassis Power is on"
        assert run("power", "off").stdout.strip() == "Chassis Power Control: Down/Off"
        assert status_becomes("off") == "Chassis Power is off"
        assert "System Power         : off" in run("chassis", "status").stdout
        assert run("power", "on").stdout.strip() == "Chassis Power Control: Up/On"
        assert status_becomes("on") == "Chassis Power is on"
        for verb, said in (("cycle", "Cycle"), ("reset", "Reset"), ("soft", "Soft")):
            assert run("power", verb).stdout.strip() == f"Chassis Power Control: {said}"

        info = run("mc", "info").stdout
        major, minor = IDRAC_FIRMWARE.split(".")[:2]
        assert f"Firmware Revision         : {major}.{minor}" in info  # 4.40, as the Redfish manager says
        assert (
            "Manufacturer ID           : 674" in info and "Product ID                : 256 (0x0100)" in info
        )
        assert "IPMI Version              : 2.0" in info

        refused = run("power", "status", pw="not-the-password")
        assert refused.returncode != 0 and "Chassis Power" not in refused.stdout

"""The table of verified versions (labctl/drivers/verified_versions.yaml) is in step with the suite:
every row names a check that exists and the version that check's implementation or recording
reports; `labctl check` verdicts come from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labctl.drivers.versions import KINDS, check_version, verified

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent


@pytest.mark.parametrize("kind", KINDS)
def test_every_row_names_an_existing_check(kind: str) -> None:
    rows = verified(kind)
    assert rows, f"no verified {kind} version"
    for row in rows:
        assert (ROOT / row.check).is_file(), row
        assert row.basis in ("recording", "emulator", "simulator"), row


def test_the_rows_say_what_the_recordings_and_implementations_report() -> None:
    from labctl.sim.ipmi.bmc import firmware_revision
    from labctl.sim.redfish.idrac import IDRAC_FIRMWARE, REDFISH_VERSION
    from tests.conformance.ipmi.test_driver_ipmi_sim import FIRMWARE_MAJOR, FIRMWARE_MINOR

    rec = HERE / "redfish/recordings/idrac-r640-3.34"
    manager = json.loads((rec / "manager.json").read_text())
    root = json.loads((rec / "root.json").read_text())
    by_basis = {(r.kind, r.basis): r for k in KINDS for r in verified(k)}
    assert (by_basis["redfish", "recording"].version, by_basis["redfish", "recording"].api) == (
        manager["FirmwareVersion"],
        root["RedfishVersion"],
    )
    assert (by_basis["redfish", "simulator"].version, by_basis["redfish", "simulator"].api) == (
        IDRAC_FIRMWARE,
        REDFISH_VERSION,
    )
    assert by_basis["ipmi", "emulator"].version == f"{FIRMWARE_MAJOR}.{FIRMWARE_MINOR:x}"
    major, minor = firmware_revision(IDRAC_FIRMWARE)
    assert by_basis["ipmi", "simulator"].version == f"{major}.{minor:x}"


def test_the_vcenter_row_is_the_recorded_vcenter() -> None:
    govmomi = ROOT / ".labctl/go/pkg/mod/github.com/vmware/govmomi@v0.46.3/simulator/vpx/service_content.go"
    if not govmomi.is_file():
        pytest.skip("govmomi's module cache is not installed (make install builds vcsim into it)")
    text = govmomi.read_text()
    (row,) = [r for r in verified("vcenter") if r.check.endswith("test_counter_catalogue.py")]
    version, build = row.version.split(" build-")
    for field in (f'Version:               "{version}"', f'Build:                 "{build}"', f'"{row.api}"'):
        assert field in text


def test_a_verdict_names_the_verified_versions_when_it_is_not_one() -> None:
    ok = check_version("redfish", "3.34.34.34")
    assert ok.ok and ok.tag == "verified (recording)" and ok.note == ""
    other = check_version("redfish", "7.00.00.00")
    assert not other.ok and other.tag == "not verified"
    assert "7.00.00.00" in other.note and "3.34.34.34 (recording)" in other.note
    assert check_version("ipmi", "4.40").tag == "verified (simulator)"
    with pytest.raises(ValueError, match="unknown endpoint kind"):
        check_version("snmp", "1")


def test_preflight_names_the_ipmi_firmware_and_its_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labctl.clock import LabClock
    from labctl.lab.preflight import Preflight
    from labctl.lab.session import LabSession
    from tests.drivers.power_labs import bmc
    from tests.drivers.simparts import write_secrets

    write_secrets(tmp_path, monkeypatch)
    with bmc(tmp_path) as lab, LabSession(lab, LabClock()) as session:  # type: ignore[arg-type]
        (result, check) = next((r, fn) for r, fn in Preflight(session).checks() if r.kind == "ipmi")
        check(result)
    assert result.ok and result.endpoint == "infra-01 IPMI"
    assert result.version == "firmware 4.40, IPMI 2.0 [verified (simulator)]"
    assert result.notes == [] and "manufacturer 674" in result.capabilities

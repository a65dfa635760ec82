"""The simulated iDRAC against OpenStack's sushy (the Redfish client of Ironic) as a reference
client, and the simulator's error bodies against the ones real iDRACs sent (recordings/errors)."""

from __future__ import annotations

import pytest

from labctl.sim.redfish import messages
from tests.conformance.redfish.conftest import SimIdrac
from tests.conformance.redfish.replay import recording

pytestmark = pytest.mark.integration


def test_sushy_reads_and_drives_the_simulated_idrac(sim_idrac: SimIdrac) -> None:
    sushy = pytest.importorskip("sushy", reason="make install (sushy from PyPI)")
    from sushy import auth

    conn = sushy.Sushy(
        sim_idrac.url,
        verify=str(sim_idrac.ca_file),
        auth=auth.SessionAuth(username=sim_idrac.user, password=sim_idrac.password),
    )
    try:
        assert conn.redfish_version.startswith("1.")
        system = conn.get_system()
        assert system.identity == "System.Embedded.1" and system.manufacturer == "Dell Inc."
        assert system.power_state == sushy.PowerState.ON
        assert {sushy.ResetType.ON, sushy.ResetType.FORCE_OFF, sushy.ResetType.GRACEFUL_SHUTDOWN} <= set(
            system.get_allowed_reset_system_values()
        )
        manager = conn.get_manager()
        assert manager.firmware_version and manager.model == "14G Monolithic"
        chassis = conn.get_chassis()
        assert chassis.power is not None and chassis.power.power_supplies
        # sushy would send If-Match with an ETag; the simulated iDRAC sends none (unverified: docs)
        system.set_system_boot_options(sushy.BootSource.PXE, enabled=sushy.BootSourceOverrideEnabled.ONCE)
        system.refresh()
        assert (system.boot.target, system.boot.enabled) == (
            sushy.BootSource.PXE,
            sushy.BootSourceOverrideEnabled.ONCE,
        )
        with pytest.raises(sushy.exceptions.HTTPError) as ei:
            system.reset_system(sushy.ResetType.ON)  # already on: iDRAC's 409 PSU501
        assert ei.value.status_code == 409 and "PSU501" in str(ei.value)
        assert len(conn.get_session_service().sessions.get_members()) >= 1
    finally:
        conn._auth.close()  # logs the session out


@pytest.mark.parametrize(
    ("recorded", "simulated"),
    [
        ("session-limit-idrac-2.4.json", messages.session_limit),
        ("already-on-idrac-2.1.json", messages.already_on),
    ],
)
def test_the_simulated_error_bodies_have_the_recorded_shape(recorded: str, simulated) -> None:
    real = recording(f"errors/{recorded}")["body"]["error"]
    sim = simulated()["error"]
    assert set(sim) == set(real)
    assert sim["code"].rsplit(".", 1)[1] == real["code"].rsplit(".", 1)[1] == "GeneralError"
    (real_info,) = real["@Message.ExtendedInfo"]
    (sim_info,) = sim["@Message.ExtendedInfo"]
    assert set(sim_info) == set(real_info)
    assert sim_info["MessageId"].rsplit(".", 1)[1] == real_info["MessageId"].rsplit(".", 1)[1]
    assert sim_info["Message"] == real_info["Message"]
    assert sim_info["Severity"] == real_info["Severity"]


# what the driver reads from each resource: (path into the JSON) -> the type a real iDRAC gives
DRIVER_READS = {
    "root.json": ("RedfishVersion", "Systems", "Managers", "Chassis", "Links/Sessions/@odata.id"),
    "system.json": (
        "PowerState",
        "Manufacturer",
        "Model",
        "SKU",
        "BiosVersion",
        "Actions/#ComputerSystem.Reset/target",
        "Actions/#ComputerSystem.Reset/ResetType@Redfish.AllowableValues",
        "Boot/BootSourceOverrideTarget",
        "Boot/BootSourceOverrideEnabled",
        "Boot/BootSourceOverrideTarget@Redfish.AllowableValues",
        "Links/Chassis",
    ),
    "manager.json": ("Model", "FirmwareVersion"),
}
URIS = {
    "root.json": "/redfish/v1/",
    "system.json": "/redfish/v1/Systems/System.Embedded.1",
    "manager.json": "/redfish/v1/Managers/iDRAC.Embedded.1",
}


def _at(doc: object, path: str) -> object:
    for part in path.split("/"):
        assert isinstance(doc, dict) and part in doc, f"no {path}"
        doc = doc[part]
    return doc


@pytest.mark.parametrize("recorded", sorted(DRIVER_READS))
def test_what_the_driver_reads_is_where_and_as_a_real_idrac_has_it(
    sim_idrac: SimIdrac, recorded: str
) -> None:
    import requests

    real = recording(f"idrac-r640-3.34/{recorded}")
    sim = requests.get(
        sim_idrac.url + URIS[recorded],
        auth=(sim_idrac.user, sim_idrac.password),
        verify=str(sim_idrac.ca_file),
        timeout=10,
    ).json()
    for path in DRIVER_READS[recorded]:
        assert type(_at(sim, path)) is type(_at(real, path)), path
    if recorded == "system.json":
        reset = "Actions/#ComputerSystem.Reset/ResetType@Redfish.AllowableValues"
        assert _at(sim, reset) == _at(real, reset)  # the same eight ResetTypes, in the same order
        targets = "Boot/BootSourceOverrideTarget@Redfish.AllowableValues"
        assert _at(sim, targets) == _at(real, targets)

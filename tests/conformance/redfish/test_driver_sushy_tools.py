"""The Redfish driver against OpenStack's sushy-tools emulator (its fake systems driver, no libvirt),
started by the test on loopback over HTTPS with HTTP basic auth, and stopped by its pid.

sushy-tools is an independent Redfish service: it has no session service and no chassis power
resource, sets boot overrides as Continuous, and carries out resets a few seconds late.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from labctl.drivers.base import Backoff
from labctl.drivers.power_verbs import PowerVerb
from labctl.drivers.redfish import RedfishClient, RedfishError
from labctl.inventory.model import BmcEndpoint, Tls, TlsMode
from tests.conformance.processes import executable, free_port, started

pytestmark = pytest.mark.integration

FAST = Backoff(attempts=2, base_s=0.05, max_s=0.2, jitter=0.0)
USER, PASSWORD = "admin", "sushy-conformance"
SYSTEM_UUID = "27946b59-9e44-4fa7-8e91-f3527a1ef094"  # the fake driver's default system


def _config(tmp: Path) -> Path:
    import bcrypt  # sushy-tools' own dependency: its htpasswd file takes bcrypt only

    (tmp / "htpasswd").write_text(f"{USER}:{bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()}\n")
    conf = tmp / "emulator.conf"
    conf.write_text(
        f"SUSHY_EMULATOR_AUTH_FILE = {str(tmp / 'htpasswd')!r}\n"
        f"SUSHY_EMULATOR_STATE_DIR = {str(tmp / 'state')!r}\n"
        "SUSHY_EMULATOR_FAKE_SYSTEMS = [{"
        f"'uuid': {SYSTEM_UUID!r}, 'name': 'fake', 'power_state': 'On', 'external_notifier': False,"
        " 'nics': [{'mac': '00:5c:52:31:3a:9c', 'ip': '172.22.0.100'}]}]\n"
    )
    return conf


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    from labctl.sim.certs import server_cert

    tmp = tmp_path_factory.mktemp("sushy-tools")
    cert = server_cert(tmp / "pki", "127.0.0.1")
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    argv = [
        executable("sushy-emulator", "make install (sushy-tools from PyPI)"),
        "--config",
        str(_config(tmp)),
        "--fake",
        "-i",
        "127.0.0.1",
        "-p",
        str(port),
        "--ssl-certificate",
        str(cert.cert_file),
        "--ssl-key",
        str(cert.key_file),
    ]

    def answers() -> bool:
        try:
            return requests.get(f"{url}/redfish/v1/", verify=str(cert.ca_file), timeout=1).status_code == 200
        except requests.RequestException:
            return False

    with started(argv, ready=answers, log=tmp / "emulator.log", deadline_s=30):
        yield url, cert.ca_file


@pytest.fixture
def bmc(emulator, monkeypatch: pytest.MonkeyPatch) -> BmcEndpoint:
    monkeypatch.setenv("CONF_SUSHY_PW", PASSWORD)
    url, ca = emulator
    return BmcEndpoint(
        url=url, user=USER, password="env:CONF_SUSHY_PW", tls=Tls(mode=TlsMode.VERIFY, ca_file=str(ca))
    )


def test_a_service_without_a_session_service_is_used_with_basic_auth(bmc: BmcEndpoint) -> None:
    """Its root names no SessionService; a POST to the usual Sessions URI is refused 401 (it needs
    credentials, as every request there does), which the driver once read as a wrong password."""
    with RedfishClient("sushy", bmc, timeout_s=10, backoff=FAST) as rf:
        assert rf.auth_mode == "basic (no session service in the service root)"
        inv = rf.inventory()
        assert inv.redfish_version == "1.5.0" and inv.power_state in ("On", "Off")
        assert inv.bmc_firmware  # the manager's FirmwareVersion


def test_power_state_reset_types_and_resets(bmc: BmcEndpoint) -> None:
    with RedfishClient("sushy", bmc, timeout_s=10, backoff=FAST) as rf:
        assert rf.power_state() in ("On", "Off")
        target, allowed = rf.allowed_reset_types()
        assert target == f"/redfish/v1/Systems/{SYSTEM_UUID}/Actions/ComputerSystem.Reset"
        assert {"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart"} <= set(allowed)
        assert rf.plan_reset(PowerVerb.GRACEFUL_OFF).reset_type == "GracefulShutdown"
        assert rf.fire(rf.plan_reset(PowerVerb.ON)) in ("On accepted", "already on")
        assert rf.reset("ForceRestart") == "accepted"
        with pytest.raises(RedfishError, match="not supported by this system"):
            rf.reset("PowerCycle")  # not among its allowable values: refused before the POST


def test_boot_override_and_a_chassis_without_power(bmc: BmcEndpoint) -> None:
    with RedfishClient("sushy", bmc, timeout_s=10, backoff=FAST) as rf:
        rf.set_boot_once("Pxe")
        target, enabled = rf.boot_override()
        assert target == "Pxe"
        assert enabled == "Continuous"  # sushy-tools keeps every override (documented in its code)
        with pytest.raises(RedfishError, match="read power consumption: HTTP 404"):
            rf.power_watts()  # its chassis has no Power resource: an error naming the reading


def test_a_certificate_from_an_unknown_ca_is_refused_naming_the_fix(bmc: BmcEndpoint) -> None:
    untrusted = bmc.model_copy(update={"tls": Tls(mode=TlsMode.VERIFY)})
    with pytest.raises(RedfishError, match="TLS verification failed") as ei:
        RedfishClient("sushy", untrusted, timeout_s=10, backoff=FAST).open()
    assert "ca_file" in ei.value.fix

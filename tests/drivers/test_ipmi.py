"""The IPMI driver (pyghmi) against a simulated BMC speaking RMCP+ over UDP on loopback."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from labctl.drivers.ipmi import IpmiClient, IpmiError, IpmiTimeout
from labctl.drivers.power_verbs import PowerReading, PowerVerb
from labctl.inventory.model import IpmiEndpoint
from tests.drivers.power_labs import bmc
from tests.drivers.simparts import SECRETS, write_secrets

pytestmark = pytest.mark.integration


def eventually(fn, wall_s: float = 5.0) -> object:
    deadline = time.monotonic() + wall_s
    while not (v := fn()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return v


def test_status_off_on_and_reset_over_udp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_secrets(tmp_path, monkeypatch)
    with bmc(tmp_path) as lab:
        ep = lab.machine("infra-01").ipmi  # type: ignore[attr-defined]
        with IpmiClient("infra-01", ep, timeout_s=10) as c:
            assert c.power_reading() is PowerReading.ON
            assert c.act(PowerVerb.FORCE_OFF) == "power down accepted"
            assert eventually(lambda: c.power_reading() is PowerReading.OFF)
            assert c.act(PowerVerb.ON) == "power up accepted"
            assert eventually(lambda: c.power_reading() is PowerReading.ON)
            assert "hard reset" in c.act(PowerVerb.REBOOT)  # IPMI has no graceful restart


def test_a_wrong_user_or_password_is_refused_at_once_naming_the_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_secrets(tmp_path, monkeypatch)
    with bmc(tmp_path) as lab:
        ep: IpmiEndpoint = lab.machine("infra-01").ipmi  # type: ignore[attr-defined]
        write_secrets(tmp_path, monkeypatch, {**SECRETS, "secret:sim.wrong": "not-the-password"})
        for wrong in (
            ep.model_copy(update={"user": "nobody"}),
            ep.model_copy(update={"password": "secret:sim.wrong"}),
        ):
            t0 = time.monotonic()
            with pytest.raises(IpmiError) as ei:
                IpmiClient("infra-01", wrong, timeout_s=10).open()
            assert time.monotonic() - t0 < 5  # an answer, not a timeout
            assert f"infra-01 IPMI BMC ({ep.host}:{ep.port})" in str(ei.value)
            assert f"credential {wrong.password}" in str(ei.value)


def test_a_bmc_that_never_answers_costs_the_deadline_then_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_secrets(tmp_path, monkeypatch)
    # nothing listens there: UDP gets no answer (not even a refusal pyghmi would act on)
    ep = IpmiEndpoint(host="127.0.0.1", port=9, user="root", password="secret:sim.bmc_password")
    t0 = time.monotonic()
    with pytest.raises((IpmiTimeout, IpmiError)) as ei:
        IpmiClient("ghost-01", ep, timeout_s=1.0).open()
    assert time.monotonic() - t0 < 5
    assert "ghost-01 IPMI BMC (127.0.0.1:9)" in str(ei.value)


def test_device_id_of_the_simulated_bmc_is_an_idracs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Firmware as BCD, manufacturer in 3 bytes, product in the 2 after them (IPMI 2.0 table 20-2):
    pyghmi's server once packed the manufacturer in 4, and the product ID read as 0."""
    write_secrets(tmp_path, monkeypatch)
    with bmc(tmp_path) as lab:
        ep = lab.machine("infra-01").ipmi  # type: ignore[attr-defined]
        with IpmiClient("infra-01", ep, timeout_s=10) as c:
            dev = c.device_id()
    assert (dev.firmware, dev.manufacturer_id, dev.product_id, dev.ipmi_version) == (
        "4.40",
        674,
        0x100,
        "2.0",
    )

"""An endpoint the inventory marks ``tls: {mode: insecure}`` does not warn on every request
(InsecureRequestWarning flooded runs); it is said once per endpoint in the log instead, and no
process-wide warning filter hides the warning for anyone else."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest
import requests
import urllib3

from labctl.drivers import base
from labctl.drivers.base import TlsAdapter
from labctl.drivers.redfish import RedfishClient
from labctl.inventory.model import Tls, TlsMode
from tests.drivers.simparts import endpoints, write_secrets

pytestmark = pytest.mark.integration


@pytest.fixture
def idrac(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    write_secrets(tmp_path, monkeypatch)
    with endpoints(tmp_path, "labctl.sim.redfish", only=lambda e: e.info.name == "pvs-01") as parts:
        yield parts


def insecure_warnings(caught: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in caught if issubclass(w.category, urllib3.exceptions.InsecureRequestWarning)]


def test_insecure_endpoints_are_quiet_per_request_and_logged_once(
    idrac, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base, "_NOTED_INSECURE", set())
    bmc = idrac.lab.machine("pvs-01").bmc
    assert bmc.tls.mode is TlsMode.INSECURE
    root = f"{bmc.url}/redfish/v1/"
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO, "labctl.drivers.base"):
        warnings.simplefilter("always")
        # the same request without the adapter warns: the test can see the warning
        with requests.Session() as plain:
            assert plain.get(root, verify=False, timeout=5).status_code == 200
        assert len(insecure_warnings(caught)) == 1
        caught.clear()
        for _ in range(2):  # two clients of the same BMC: one log line
            with RedfishClient("pvs-01", bmc, timeout_s=5) as rf:
                for _ in range(3):
                    assert rf.power_state() == "On"
        assert insecure_warnings(caught) == []
        with requests.Session() as s:
            s.mount("https://", TlsAdapter(Tls(mode=TlsMode.INSECURE), "other-endpoint"))
            assert s.get(root, verify=False, timeout=5).status_code == 200
        assert insecure_warnings(caught) == []
        # the choice is per endpoint: a session without the adapter still warns afterwards
        with requests.Session() as plain:
            plain.get(root, verify=False, timeout=5)
        assert len(insecure_warnings(caught)) == 1
    lines = [r.getMessage() for r in caplog.records if "TLS certificate not verified" in r.getMessage()]
    assert lines == [
        f"pvs-01 BMC ({bmc.url}): TLS certificate not verified (tls: {{mode: insecure}} in the inventory)",
        "other-endpoint: TLS certificate not verified (tls: {mode: insecure} in the inventory)",
    ]

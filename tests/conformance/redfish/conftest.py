"""The simulated iDRAC the conformance tests check, started once per module."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.drivers.simparts import SECRETS, endpoints, write_secrets


@dataclass(frozen=True)
class SimIdrac:
    url: str
    user: str
    password: str
    ca_file: Path


@pytest.fixture(scope="module")
def sim_idrac(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimIdrac]:
    tmp = tmp_path_factory.mktemp("sim-idrac")
    with pytest.MonkeyPatch.context() as mp:
        write_secrets(tmp, mp)
        with endpoints(tmp, "labctl.sim.redfish", only=lambda e: e.machine.name == "pvs-01") as parts:
            (svc,) = parts.endpoints
            password = SECRETS[svc.bmc.password]
            yield SimIdrac(svc.bmc.url, svc.bmc.user, password, parts.ca_file)

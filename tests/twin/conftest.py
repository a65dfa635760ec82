"""Shared fixtures for the lab twin's tests: the 2007 lab, storms run once per session."""

from __future__ import annotations

from typing import Any

import pytest

from labctl.inventory import load_lab
from labctl.inventory.model import Lab
from labctl.sim.twin.storm import StormResult, run_storm

GROUPS = (1, 5, 10, 25, 50, 75, 100)


@pytest.fixture(scope="session")
def lab() -> Lab:
    return load_lab(configuration="standalone", every_machine=True)


@pytest.fixture(scope="session")
def ha_lab() -> Lab:
    return load_lab(configuration="ha", every_machine=True)


@pytest.fixture(scope="session")
def storms(lab: Lab) -> dict[int, StormResult]:
    """The 2007 boot storm for every published group size (6-minute window, 1-s samples)."""
    return {n: run_storm(lab, n) for n in GROUPS}


def with_server_hw(lab: Lab, server: str, **update: Any) -> Lab:
    """The lab with ``server``'s hardware changed (e.g. nics=Nics(...), fs_cache_mb=...)."""
    m = lab.machines[server]
    assert m.server_hardware is not None
    hw = m.server_hardware.model_copy(update=update)
    return lab.model_copy(
        update={"machines": {**lab.machines, server: m.model_copy(update={"server_hardware": hw})}}
    )


def with_volume(lab: Lab, server: str, volume: str, **update: Any) -> Lab:
    """The lab with one volume of ``server`` changed (disks, disk_type, rpm, ...)."""
    hw = lab.machines[server].server_hardware
    assert hw is not None
    vols = tuple(v.model_copy(update=update) if v.name == volume else v for v in hw.volumes)
    return with_server_hw(lab, server, volumes=vols)


def with_twin(lab: Lab, **update: Any) -> Lab:
    return lab.model_copy(update={"twin": lab.twin.model_validate({**lab.twin.model_dump(), **update})})

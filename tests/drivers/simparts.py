"""Start single simulated endpoints (one protocol) on a fresh test lab, for driver tests.

Drivers are tested over real sockets against the simulator's endpoint servers; the lab twin is
the placeholder (fixed boot time, flat counters), so driver behaviour is what is under test.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from labctl.clock import LabClock
from labctl.inventory import load_lab
from labctl.inventory.credentials import SECRETS_FILE_VAR
from labctl.inventory.model import Lab

SECRETS = {
    "secret:sim.bmc_password": "calvin-sim",
    "secret:sim.client_password": "client-sim",
    "secret:sim.server_password": "server-sim",
    "secret:sim.unity_password": "unity-sim",
    "secret:sim.vcenter_password": "vc-sim",
}


def sim_module(name: str) -> Any:
    """Import a simulator module, or skip the test naming the module that is not there yet."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            pytest.skip(f"{name} is not in the tree yet (the simulated endpoint is being built)")
        raise


@dataclass
class SimParts:
    lab: Lab
    clock: LabClock
    ctx: Any
    twin: Any
    endpoints: list[Any] = field(default_factory=list)

    @property
    def ca_file(self) -> Path:
        return Path(self.ctx.state_dir) / "ca.pem"

    def by_name(self) -> dict[str, Any]:
        out = {}
        for e in self.endpoints:
            name = getattr(getattr(e, "machine", None), "name", None) or e.info.name
            out[name] = e
        return out


def write_secrets(tmp_path: Path, mp: pytest.MonkeyPatch, secrets: dict[str, str] = SECRETS) -> Path:
    import yaml

    path = tmp_path / "secrets.yaml"
    path.write_text(yaml.safe_dump({k.split(":", 1)[1]: v for k, v in secrets.items()}))
    mp.setenv(SECRETS_FILE_VAR, str(path))
    return path


@contextmanager
def endpoints(
    tmp_path: Path,
    module: str,
    *,
    clients: int = 3,
    faults: str = "",
    time_scale: float = 60.0,
    twin_factory: Callable[..., Any] | None = None,
    extra_lab_yaml: str = "",
    only: Callable[[Any], bool] | None = None,
) -> Iterator[SimParts]:
    """The endpoints one simulator module builds for a fresh test lab, started; stopped on exit."""
    from tests.labfiles import make_test_lab

    mod = sim_module(module)
    from labctl.sim.endpoint import PortInUseError, SimContext
    from labctl.sim.faults import FaultBook
    from labctl.sim.twin.placeholder import PlaceholderTwin

    started: list[Any] = []
    try:
        for attempt in range(4):  # another test run may hold this random 127.x block: take another
            lab = load_lab(
                make_test_lab(
                    tmp_path,
                    clients=clients,
                    faults=faults,
                    time_scale=time_scale,
                    extra_lab_yaml=extra_lab_yaml,
                    name=f"test-lab-{attempt}.yaml",
                ),
                every_machine=True,
            )
            clock = LabClock(scale=lab.time_scale)
            twin = (twin_factory or PlaceholderTwin)(lab, clock)
            ctx = SimContext(
                lab, twin, FaultBook(lab.faults, clock), clock, tmp_path / f"sim-state-{attempt}", SECRETS
            )
            eps = mod.build_endpoints(ctx)
            if only is not None:
                eps = [e for e in eps if only(e)]
            try:
                for e in eps:
                    e.start()
                    started.append(e)
                break
            except PortInUseError:
                for e in reversed(started):
                    e.stop()
                started.clear()
                if attempt == 3:
                    raise
        yield SimParts(lab, clock, ctx, twin, started)
    finally:
        for e in reversed(started):
            e.stop()

"""A test lab with one storage array of every kind, and its array simulators started, for tests of
the array simulators and drivers over their real protocols.

Each array serves the LUN ``vdi-ds-01``. With the placeholder twin every array reports the same flat
counters (per SP: 50 reads/s, 30 writes/s, 8 KB per I/O, 1.5 ms), so every backend must read the same
normalised figures: 100 reads/s, 60 writes/s, 1.5 ms, 8 KB.
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
from labctl.inventory.model import Lab, StorageArray, Tls, TlsMode
from labctl.sim.endpoint import PortInUseError, SimContext
from labctl.sim.faults import FaultBook
from labctl.sim.twin.placeholder import PlaceholderTwin
from tests.drivers import simparts
from tests.labfiles import make_test_lab

SECRETS = {
    "secret:sim.unity_password": "unity-sim",
    "secret:sim.powerstore_password": "powerstore-sim",
    "secret:sim.sc_password": "sc-sim",
    "secret:sim.equallogic_community": "eql-community-sim",
}
KINDS = ("unity", "powerstore", "sc", "equallogic")
MODULES = {k: f"labctl.sim.{k}" for k in KINDS}
# the placeholder twin, summed over both SPs
FLAT = {"read_iops": 100.0, "write_iops": 60.0, "latency_ms": 1.5, "io_size_kb": 8.0}


def storage_yaml(a: int, *, equallogic_url: str = "") -> str:
    """Arrays of the other kinds beside the lab's Unity, in the lab's block 127.a.4.x."""
    eql = equallogic_url or f"snmp://127.{a}.4.4:16100"
    return f"""  - name: ps-01
    kind: powerstore
    url: https://127.{a}.4.2:8443
    user: admin
    password: "secret:sim.powerstore_password"
    tls: {{mode: insecure}}
    luns: [vdi-ds-01]
  - name: sc-01
    kind: sc
    url: https://127.{a}.4.3:3033/api/rest
    user: Admin
    password: "secret:sim.sc_password"
    tls: {{mode: insecure}}
    luns: [vdi-ds-01]
  - name: eql-01
    kind: equallogic
    url: {eql}
    user: sanhq
    password: "secret:sim.equallogic_community"
    luns: [vdi-ds-01]
"""


def make_array_lab(
    tmp_path: Path,
    *,
    faults: str = "",
    time_scale: float = 60.0,
    name: str = "arrays.yaml",
    equallogic_query: str = "",
) -> Path:
    path = make_test_lab(tmp_path, clients=2, faults=faults, time_scale=time_scale, name=name)
    text = path.read_text()
    a = int(text.split("subnet: 127.")[1].split(".")[0])
    eql = f"snmp://127.{a}.4.4:16100{equallogic_query}"
    text = text.replace("\ngroups:\n", "\n" + storage_yaml(a, equallogic_url=eql) + "\ngroups:\n", 1)
    path.write_text(text)
    return path


def write_secrets(tmp_path: Path, mp: pytest.MonkeyPatch, secrets: dict[str, str] = SECRETS) -> Path:
    """A secrets file with the arrays' credentials, named by $LABCTL_SECRETS_FILE."""
    return simparts.write_secrets(tmp_path, mp, secrets)


@dataclass
class ArrayLab:
    lab: Lab
    clock: LabClock
    ctx: SimContext
    servers: dict[str, Any] = field(default_factory=dict)  # array name -> simulator

    @property
    def ca_file(self) -> Path:
        return Path(self.ctx.state_dir) / "ca.pem"

    def array(self, name: str) -> StorageArray:
        """The inventory's array, TLS verified against the simulator's CA."""
        arr = self.lab.storage[name]
        if arr.url.startswith("https"):
            return arr.model_copy(update={"tls": Tls(mode=TlsMode.VERIFY, ca_file=str(self.ca_file))})
        return arr


@contextmanager
def array_lab(
    tmp_path: Path,
    *,
    kinds: tuple[str, ...] = KINDS,
    faults: str = "",
    time_scale: float = 60.0,
    twin_factory: Callable[..., Any] | None = None,
    clock: LabClock | None = None,
    secrets: dict[str, str] = SECRETS,
    equallogic_query: str = "",
) -> Iterator[ArrayLab]:
    """The array simulators of ``kinds`` on a fresh test lab, started; stopped on exit."""
    started: list[Any] = []
    try:
        for attempt in range(4):  # another test run may hold this random 127.x block: take another
            lab = load_lab(
                make_array_lab(
                    tmp_path,
                    faults=faults,
                    time_scale=time_scale,
                    name=f"arrays-{attempt}.yaml",
                    equallogic_query=equallogic_query,
                ),
                every_machine=True,
            )
            clk = clock or LabClock(scale=lab.time_scale)
            twin = (twin_factory or PlaceholderTwin)(lab, clk)
            ctx = SimContext(
                lab, twin, FaultBook(lab.faults, clk), clk, tmp_path / f"state-{attempt}", secrets
            )
            servers = {}
            try:
                for kind in kinds:
                    for e in importlib.import_module(MODULES[kind]).build_endpoints(ctx):
                        e.start()
                        started.append(e)
                        servers[e.array.name] = e
                break
            except PortInUseError:
                for e in reversed(started):
                    e.stop()
                started.clear()
                if attempt == 3:
                    raise
        yield ArrayLab(lab, clk, ctx, servers)
    finally:
        for e in reversed(started):
            e.stop()

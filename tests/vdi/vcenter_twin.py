"""The simulated vCenter (labctl-vcsim, its own process) fed by a twin in the test's process on a
fast-forward clock: the test moves lab time and reads the same twin the simulator serves.

    with twin_vcenter(tmp_path, vdi_yaml(desktops=8), monkeypatch) as tv:
        tv.client()                      # labctl's driver, logged in
        tv.advance(20)                   # 20 lab s; returns once vCenter has the new 20 s sample
        tv.twin.vm_perf([...])           # the truth

The lab file is a tests/vdi/labs.py inventory moved to a free loopback block.
"""

from __future__ import annotations

import random
import ssl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyVim.connect import Disconnect, SmartConnect

from labctl.drivers.vsphere import VCenterClient
from labctl.inventory import load_lab
from labctl.inventory.credentials import SECRETS_FILE_VAR
from labctl.inventory.model import Lab
from labctl.sim.certs import CA_FILE
from labctl.sim.faults import FaultBook
from labctl.sim.secrets import sim_secrets
from labctl.sim.twin import FastForwardClock, PhysicalTwin, build_twin
from labctl.sim.vcenter.guest import GuestUpdater
from labctl.sim.vcenter.launcher import VcsimLaunch, launch_vcenter
from labctl.sim.vcenter.push import boundary_of
from labctl.sim.vcenter.topology import topology
from tests.labfiles import _free_block

DEADLINE_S = 20.0


def wait_for(predicate: Callable[[], Any], what: str, timeout_s: float = DEADLINE_S) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.01)


def by_name(si: Any, vimtype: Any) -> dict[str, Any]:
    """Every managed object of a type, by name (a ContainerView, as clients list them)."""
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [vimtype], True)
    try:
        return {o.name: o for o in view.view}
    finally:
        view.Destroy()


@dataclass
class TwinVcenter:
    lab: Lab
    twin: PhysicalTwin
    clock: FastForwardClock
    launch: VcsimLaunch
    updater: GuestUpdater
    password: str
    state_dir: Path

    def client(self) -> VCenterClient:
        return VCenterClient(self.lab.vcenters["vc-01"], timeout_s=30).open()

    @contextmanager
    def si(self) -> Iterator[Any]:
        ctx = ssl.create_default_context(cafile=str(self.state_dir / CA_FILE))
        si = SmartConnect(
            host=self.launch.topology.host,
            port=self.launch.topology.port,
            user=self.lab.vcenters["vc-01"].user,
            pwd=self.password,
            sslContext=ctx,
            httpConnectionTimeout=30,
        )
        try:
            yield si
        finally:
            Disconnect(si)

    def synced(self) -> None:
        """Wait until the twin has applied every operation vCenter journaled and pushed its state."""
        link = self.updater.link
        last = link.events(10**12, 0).last
        wait_for(lambda: self.updater.pusher.acked >= last, f"the twin to apply journal event {last}")

    def advance(self, lab_s: float) -> None:
        """Move lab time on; return once vCenter holds the 20 s sample of the new boundary."""
        self.clock.advance(lab_s)
        self.twin.advance()
        target = boundary_of(self.clock.now())
        wait_for(lambda: self.updater.pusher.last_boundary >= target, f"vCenter's sample at {target}")


@contextmanager
def twin_vcenter(
    tmp_path: Path, yaml_text: str, monkeypatch: pytest.MonkeyPatch, *, start_s: float | None = None
) -> Iterator[TwinVcenter]:
    block = _free_block(random.Random())
    path = tmp_path / "vdi-vcenter.yaml"
    text = yaml_text.replace("127.30.", f"127.{block}.")
    # the driver trusts the lab's own certificate (tests/sim covers verified TLS)
    text = text.replace(
        "password: 'secret:sim.vcenter_password'}",
        "password: 'secret:sim.vcenter_password', tls: {mode: insecure}}",
    )
    path.write_text(text)
    lab = load_lab(path, every_machine=True)
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    secrets = sim_secrets(lab, state_dir)
    monkeypatch.setenv(SECRETS_FILE_VAR, str(secrets.file))
    vc = lab.vcenters["vc-01"]
    password = secrets.values[vc.password]
    clock = FastForwardClock(scale=lab.time_scale, **({"start_s": start_s} if start_s else {}))
    twin = build_twin(lab, clock, FaultBook(lab.faults, clock, seed=lab.seed))
    assert isinstance(twin, PhysicalTwin)
    launch = launch_vcenter(lab, vc, password=password, state_dir=state_dir, faults=list(lab.faults))
    updater = None
    try:
        launch.wait_ready(60)
        updater = GuestUpdater(
            vc,
            topology(lab, vc),
            password=password,
            twin=twin,
            clock=clock,
            ca_file=str(state_dir / CA_FILE),
        )
        updater.start(connect_timeout_s=30)
        yield TwinVcenter(lab, twin, clock, launch, updater, password, state_dir)
    finally:
        if updater is not None:
            updater.stop()
        launch.process.terminate()
        try:
            launch.process.wait(timeout=10)
        except Exception:
            launch.process.kill()

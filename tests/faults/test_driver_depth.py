"""A vCenter that dies under an open session: every call of the vSphere driver is an
EndpointError naming the vCenter and the action (never a bare ConnectionRefusedError from a
property read pyVmomi makes on the wire), and the storms end a cell the same way with it."""

from __future__ import annotations

import os
import signal
import socket
import time

import pytest

from labctl.drivers.vsphere import VCenterClient, VSphereError
from labctl.scenarios.breakoff import break_off, describe
from labctl.scenarios.common import Phases
from labctl.scenarios.vdi_storm import VdiStormResult, VdiStormSettings
from tests.drivers.vcsim import run_vcsim

pytestmark = pytest.mark.integration


def _gone(pid: int, host: str, port: int) -> None:
    """SIGKILL vcsim (our child: a zombie until run_vcsim reaps it) and wait for its port to close."""
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                pass
        except OSError:
            return
        time.sleep(0.05)
    pytest.fail(f"vcsim {pid} still answers on {host}:{port}")


def test_every_read_of_a_vcenter_that_died_is_an_endpoint_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with run_vcsim("-vm", "2", "-host", "1", "-autostart=false") as sim:
        monkeypatch.setenv("LABCTL_TEST_VC_PASSWORD", sim.password)
        vc = VCenterClient(sim.vcenter(), timeout_s=5)
        vc.open()
        assert vc.datacenters()  # the session and its datacenters are cached from here on
        _gone(sim.pid, sim.host, sim.port)
        reads = {
            "host states": vc.hosts_in_maintenance,
            "VM questions": vc.vm_questions,
            "datastores": vc.datastores,
            "counters": vc.perf_counters,
        }
        for what, read in reads.items():
            with pytest.raises(VSphereError) as ei:
                read()
            text = str(ei.value)
            assert text.startswith("vc-test (vCenter https://127.0.0.1:"), (what, text)
            # the peer went away (refused, closed, silent), not its certificate
            assert any(w in text for w in ("connection failed", "connection closed", "no answer")), (
                what,
                text,
            )
            assert "tls:" not in text, (what, text)
            assert sim.password not in text, (what, text)
        vc.close()


def test_a_storm_ends_a_cell_the_same_way_whatever_the_lab_raised() -> None:
    clock = iter(range(100))
    phases = Phases(lambda: float(next(clock)))
    result = VdiStormResult(
        settings=VdiStormSettings(), prebooted_pct=100.0, desktops=["d-0001"], entities={}
    )
    err = VSphereError("vc-01 (vCenter https://127.0.0.1:8989/sdk)", "read host states", "connection failed")
    break_off(result, phases, err)  # no phase yet: the cell never started
    assert result.prepare_failed == str(err) and not result.broke_off

    class Ctx:  # the one thing Phases asks of the cell's context
        def step(self, title: str) -> object:
            import contextlib

            return contextlib.nullcontext()

    with phases(Ctx(), "steady", "steady"):  # type: ignore[arg-type]
        pass
    break_off(result, phases, ConnectionRefusedError(111, "Connection refused"))
    assert result.broke_off == "steady broke off: ConnectionRefusedError: [Errno 111] Connection refused"
    assert describe(err) == str(err)

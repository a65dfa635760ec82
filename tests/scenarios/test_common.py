"""Per-client outcomes of a storm, from the streaming server's and the orchestrator's sides."""

from __future__ import annotations

from labctl.drivers.pvs import DeviceInfo
from labctl.inventory.load import load_lab
from labctl.lab.ready import Readiness
from labctl.scenarios.common import client_boots


def _dev(name: str, active: bool, boot: float | None, retries: int) -> DeviceInfo:
    return DeviceInfo(name, "", active, retries, None, "pvs-01", None, boot, None)


def test_streaming_server_figures_win_and_failures_stay_per_client() -> None:
    a, b, c = load_lab().clients[:3]
    readiness = {
        a.name: Readiness(a.name, "client", "ready", at=1045.0, boot_time_s=30.0, retries=1),
        b.name: Readiness(b.name, "client", "timeout", detail="never seen active"),
    }
    devices = {a.name: _dev(a.name, True, 41.5, 3), b.name: _dev(b.name, False, 12.0, 9)}
    out = {x.name: x for x in client_boots([a, b, c], readiness, devices, 1000.0, {c.name: "SSH refused"})}
    # the streaming software's own boot time and retries, not the orchestrator's guess
    assert (out[a.name].boot_time_s, out[a.name].retries, out[a.name].time_to_ready_s) == (41.5, 3, 45.0)
    # an inactive device's stale figures are not reported as this boot's
    assert out[b.name].outcome == "timeout" and out[b.name].boot_time_s is None
    # a client whose command failed and that never came up is an error with the reason
    assert out[c.name].outcome == "error" and out[c.name].detail == "SSH refused"

"""Per-client outcomes of a storm, from the streaming server's and the orchestrator's sides, and
who the cell blames when the streaming server could not be read."""

from __future__ import annotations

from labctl.drivers.pvs import DeviceInfo
from labctl.inventory.load import load_lab
from labctl.lab.power import PowerOutcome, PowerReport
from labctl.lab.ready import Readiness
from labctl.scenarios.common import blame_streaming_server, cell_entities, client_outcomes


def _dev(name: str, active: bool, boot: float | None, retries: int) -> DeviceInfo:
    return DeviceInfo(name, "", active, retries, None, "pvs-01", None, boot, None)


def test_streaming_server_figures_win_and_failures_stay_per_client() -> None:
    a, b, c = load_lab().clients[:3]
    readiness = {
        a.name: Readiness(a.name, "client", "ready", at=1045.0, boot_time_s=30.0, retries=1),
        b.name: Readiness(b.name, "client", "timeout", detail="never seen active"),
    }
    devices = {a.name: _dev(a.name, True, 41.5, 3), b.name: _dev(b.name, False, 12.0, 9)}
    power = PowerReport(
        "on",
        "group",
        {
            a.name: PowerOutcome(a.name, "client", True, "magic packet x3", sent_lab=1000.5),
            b.name: PowerOutcome(b.name, "client", True, "magic packet x3", sent_lab=1000.6),
            c.name: PowerOutcome(c.name, "client", False, "SSH refused"),
        },
        1000.0,
        1001.0,
        0.1,
        0.002,
    )
    out = client_outcomes([a, b, c], readiness, devices, 1000.0, role="storm", power=power)
    # the streaming software's own boot time and retries, not the orchestrator's guess
    assert (out[a.name].boot_time_s, out[a.name].retries, out[a.name].time_to_ready_s) == (41.5, 3, 45.0)
    assert out[a.name].sent_ts_s == 1000.5 and out[a.name].role == "storm"
    # an inactive device's stale figures are not reported as this boot's
    assert out[b.name].outcome == "timeout" and out[b.name].boot_time_s is None
    # a client whose command failed and that never came up is an error with the reason
    assert out[c.name].outcome == "error" and out[c.name].detail == "SSH refused"


def test_an_unreadable_streaming_server_is_named_not_the_clients() -> None:
    a, b = load_lab().clients[:2]
    readiness = {m.name: Readiness(m.name, "client", "ready", at=1030.0) for m in (a, b)}
    why = "pvs-01: read device status: authentication failed (check the credential)"
    out = client_outcomes([a, b], readiness, {}, 1000.0, role="storm", unread=why)
    assert all(c.boot_time_s is None and why in c.detail for c in out.values())
    reason = blame_streaming_server({"pvs-01": why}, out)
    assert reason.startswith("streaming server pvs-01 could not be read") and "2 of 2 clients" in reason
    # a server that failed but whose clients all have their figures is nobody's excuse
    assert blame_streaming_server({"pvs-01": why}, {}) == ""


def test_cell_entities_follow_the_configuration() -> None:
    assert cell_entities(load_lab(None, "standalone")) == {
        "streaming_server": "pvs-01",
        "write_cache_disk": "pvs-01/D:",
        "share_server": "infra-01",
    }
    ha = cell_entities(load_lab(None, "ha"))
    assert ha["write_cache_disk"].startswith("nas-01/") and ha["streaming_server"] == "pvs-01"

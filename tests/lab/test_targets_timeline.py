from __future__ import annotations

from pathlib import Path

import pytest

from labctl.clock import LabClock
from labctl.errors import UnknownTargetError
from labctl.inventory import load_lab
from labctl.lab.events import Timeline
from labctl.lab.targets import resolve, split_selector
from tests.labfiles import make_test_lab


@pytest.fixture
def lab(tmp_path: Path):
    return load_lab(make_test_lab(tmp_path, clients=12))


def names(ms) -> list[str]:
    return [m.name for m in ms]


def test_selectors(lab) -> None:
    assert names(resolve(lab, "optiplex-[002-004]")) == ["optiplex-002", "optiplex-003", "optiplex-004"]
    assert names(resolve(lab, "streaming")) == ["pvs-01"]  # pvs-02 is in the HA configuration only
    assert names(resolve(lab, "pvs-01, optiplex-[001-002],pvs-01")) == [
        "pvs-01",
        "optiplex-001",
        "optiplex-002",
    ]
    assert len(resolve(lab, "clients")) == 12
    assert names(resolve(lab, ["servers"])) == [m.name for m in lab.servers]
    assert split_selector("a-[1-2],b") == ["a-[1-2]", "b"]


@pytest.mark.parametrize("bad", ["optiplex-[010-013]", "optiplx-001", "first-100", "", "x-[3-1]"])
def test_unknown_targets_say_so(lab, bad: str) -> None:
    with pytest.raises(UnknownTargetError):
        resolve(lab, bad)


def test_unknown_target_suggests_a_close_name(lab) -> None:
    with pytest.raises(UnknownTargetError, match="did you mean 'optiplex-001'"):
        resolve(lab, "optiplx-001")


def test_timeline_subscribers_get_every_event_until_unsubscribed() -> None:
    tl = Timeline(LabClock(scale=60))
    got = []
    unsub = tl.subscribe(got.append)
    tl.subscribe(lambda e: 1 / 0)  # a broken subscriber does not stop the others
    e = tl.append("power.action", "optiplex-001", action="on", kind="client")
    assert got == [e] and e.detail == {"action": "on", "kind": "client"}
    unsub()
    tl.append("ready", "optiplex-001")
    assert len(got) == 1 and len(tl) == 2
    assert [x.kind for x in tl.events("power")] == ["power.action"]
    assert tl.events(target="optiplex-001")[-1].kind == "ready"


def test_wol_targets_from_the_inventory_with_a_relay(tmp_path) -> None:
    from labctl.lab.session import LabSession

    lab = load_lab(make_test_lab(tmp_path, clients=2, name="plain.yaml"))
    with LabSession(lab) as s:
        t = s.wol_target(lab.machine("optiplex-002"))
        net = lab.networks["lab-net"]
        assert (t.mac, t.broadcast, t.port, t.relay) == (
            "00:1a:a0:07:00:02",
            net.broadcast,
            net.wol_port,
            None,
        )
    text = (
        (tmp_path / "plain.yaml")
        .read_text()
        .replace("    wol_port: 40009", "    wol_port: 40009\n    wol_relay: infra-01")
    )
    (tmp_path / "relay.yaml").write_text(text)
    lab = load_lab(tmp_path / "relay.yaml")
    with LabSession(lab) as s:
        t = s.wol_target(lab.machine("optiplex-001"))
        assert (
            t.relay is not None and t.relay.name == "infra-01" and t.relay.host == lab.machine("infra-01").ip
        )

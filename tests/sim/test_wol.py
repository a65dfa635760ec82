"""Wake-on-LAN: magic packets sent with the `wakeonlan` library over real UDP sockets on loopback."""

from __future__ import annotations

import socket
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import wakeonlan

from labctl.clock import LabClock
from labctl.inventory import load_lab
from labctl.inventory.faults import FaultKind, FaultSpec
from labctl.inventory.model import Lab
from labctl.sim.endpoint import PortInUseError, SimContext
from labctl.sim.faults import FaultBook
from labctl.sim.simlab import SimulatedLab
from labctl.sim.twin.interface import PowerState
from labctl.sim.twin.placeholder import PlaceholderTwin
from labctl.sim.wol import MalformedPacket, WolListener, build_endpoints, parse_magic_packet
from tests.labfiles import make_test_lab

MAC = "00:1a:a0:07:00:03"
DEADLINE_S = 3.0


def magic(mac: str, password: bytes = b"") -> bytes:
    return b"\xff" * 6 + bytes.fromhex(mac.replace(":", "")) * 16 + password


# --- parsing -------------------------------------------------------------------------------------


def test_parse_plain_packet() -> None:
    assert parse_magic_packet(magic(MAC)) == (MAC, None)


@pytest.mark.parametrize("password", [b"\x01\x02\x03\x04", b"\xaa\xbb\xcc\xdd\xee\xff"])
def test_parse_secureon_password(password: bytes) -> None:
    assert parse_magic_packet(magic(MAC, password)) == (MAC, password)


def test_parse_matches_the_wakeonlan_library() -> None:
    assert parse_magic_packet(wakeonlan.create_magic_packet(MAC)) == (MAC, None)
    mac, pw = parse_magic_packet(wakeonlan.create_magic_packet(f"{MAC}/11:22:33:44:55:66"))
    assert mac == MAC and pw == bytes.fromhex("112233445566")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "0 bytes"),
        (magic(MAC)[:-1], "101 bytes"),
        (b"\xfe" + magic(MAC)[1:], "6 x 0xFF"),
        (b"\xff" * 6 + bytes.fromhex(MAC.replace(":", "")) * 15 + b"\x00" * 6, "16 times"),
        (magic(MAC)[:-6] + bytes.fromhex("001aa0070004"), "16 times"),
    ],
)
def test_parse_rejects_malformed(data: bytes, reason: str) -> None:
    with pytest.raises(MalformedPacket, match=reason):
        parse_magic_packet(data)


# --- a listener on a real socket ---------------------------------------------------------------


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return load_lab(make_test_lab(tmp_path, clients=5), every_machine=True)


def _listener(lab: Lab, faults: list[FaultSpec] | None = None) -> tuple[WolListener, PlaceholderTwin]:
    clock = LabClock(scale=lab.time_scale)
    twin = PlaceholderTwin(lab, clock)
    ctx = SimContext(lab, twin, FaultBook(faults or [], clock), clock, Path("/nonexistent"))
    (listener,) = build_endpoints(ctx)
    return listener, twin


@pytest.fixture
def wol(lab: Lab) -> Iterator[tuple[WolListener, PlaceholderTwin]]:
    listener, twin = _listener(lab)
    listener.start()
    try:
        yield listener, twin
    finally:
        listener.stop()


def wait_stats(listener: WolListener, key: str, value: int) -> dict[str, object]:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        stats = listener.stats()
        if stats[key] == value:
            return stats
        time.sleep(0.01)
    raise AssertionError(f"{key} did not reach {value} within {DEADLINE_S} s: {listener.stats()}")


def test_one_listener_per_subnet_on_its_broadcast_address(lab: Lab) -> None:
    listener, _ = _listener(lab)
    net = lab.networks["lab-net"]
    assert (listener.info.kind, listener.info.host, listener.info.port) == (
        "wol",
        net.broadcast,
        net.wol_port,
    )
    assert listener.info.protocol == "udp"


def test_magic_packet_from_wakeonlan_wakes_exactly_that_client(lab: Lab, wol) -> None:
    listener, twin = wol
    net = lab.networks["lab-net"]
    target = lab.machine("optiplex-003")
    wakeonlan.wake(target.mac, host=net.broadcast, port=net.wol_port)
    wait_stats(listener, "woken", 1)
    assert twin.power_state("optiplex-003") in (PowerState.POWERING_ON, PowerState.ON)
    others = [c.name for c in lab.clients if c.name != "optiplex-003"]
    assert all(twin.power_state(n) is PowerState.OFF for n in others)


def test_deprecated_send_magic_packet_with_ip_address_arrives(lab: Lab, wol) -> None:
    """What the brief names: send_magic_packet(mac, ip_address=broadcast, port=wol_port)."""
    listener, twin = wol
    net = lab.networks["lab-net"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        wakeonlan.send_magic_packet(
            lab.machine("optiplex-001").mac, ip_address=net.broadcast, port=net.wol_port
        )
    wait_stats(listener, "woken", 1)
    assert twin.power_state("optiplex-001") is not PowerState.OFF


def test_secureon_password_variants_are_accepted(lab: Lab, wol) -> None:
    listener, twin = wol
    net = lab.networks["lab-net"]
    wakeonlan.wake(
        f"{lab.machine('optiplex-002').mac}/01:02:03:04:05:06", host=net.broadcast, port=net.wol_port
    )
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        s.sendto(magic(lab.machine("optiplex-004").mac, b"\x01\x02\x03\x04"), (net.broadcast, net.wol_port))
    stats = wait_stats(listener, "woken", 2)
    assert stats["malformed"] == 0
    assert twin.power_state("optiplex-002") is not PowerState.OFF
    assert twin.power_state("optiplex-004") is not PowerState.OFF


def test_malformed_packets_are_counted_and_ignored(lab: Lab, wol) -> None:
    listener, twin = wol
    net = lab.networks["lab-net"]
    mac = lab.machine("optiplex-005").mac
    bad = [b"hello", magic(mac)[:-1], magic(mac)[:-6] + b"\x00" * 6, b"\x00" * 6 + magic(mac)[6:]]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        for packet in bad:
            s.sendto(packet, (net.broadcast, net.wol_port))
    stats = wait_stats(listener, "malformed", len(bad))
    assert stats["woken"] == 0 and stats["received"] == len(bad)
    assert "6 x 0xFF" in str(stats["last_malformed"])
    assert all(twin.power_state(c.name) is PowerState.OFF for c in lab.clients)


def test_unknown_mac_is_counted_not_woken(lab: Lab, wol) -> None:
    listener, _ = wol
    net = lab.networks["lab-net"]
    wakeonlan.wake("02:00:00:00:00:99", host=net.broadcast, port=net.wol_port)
    wait_stats(listener, "unknown_mac", 1)


def test_a_datagram_to_another_blocks_broadcast_does_not_arrive(lab: Lab, wol, tmp_path: Path) -> None:
    """On loopback 127.x.255.255 reaches only a socket bound to it: labs on other blocks are apart."""
    listener, twin = wol
    other = load_lab(make_test_lab(tmp_path, clients=1, name="other.yaml"), every_machine=True)
    other_net = other.networks["lab-net"]
    net = lab.networks["lab-net"]
    assert other_net.broadcast != net.broadcast
    wakeonlan.wake(lab.machine("optiplex-001").mac, host=other_net.broadcast, port=net.wol_port)
    wakeonlan.wake(lab.machine("optiplex-002").mac, host=net.broadcast, port=net.wol_port)
    wait_stats(listener, "woken", 1)  # the second packet arrived; the first never will
    time.sleep(0.1)
    assert listener.stats()["received"] == 1
    assert twin.power_state("optiplex-001") is PowerState.OFF


def test_client_never_wakes_fault_ignores_its_packets(lab: Lab) -> None:
    fault = FaultSpec(kind=FaultKind.CLIENT_NEVER_WAKES, targets=("optiplex-003",))
    listener, twin = _listener(lab, [fault])
    listener.start()
    try:
        net = lab.networks["lab-net"]
        wakeonlan.wake(lab.machine("optiplex-003").mac, host=net.broadcast, port=net.wol_port)
        wakeonlan.wake(lab.machine("optiplex-002").mac, host=net.broadcast, port=net.wol_port)
        stats = wait_stats(listener, "ignored_by_fault", 1)
        wait_stats(listener, "woken", 1)
        assert stats["malformed"] == 0
        assert twin.power_state("optiplex-003") is PowerState.OFF
        assert twin.power_state("optiplex-002") is not PowerState.OFF
    finally:
        listener.stop()


def test_taken_port_names_it(lab: Lab) -> None:
    net = lab.networks["lab-net"]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((net.broadcast, net.wol_port))
        listener, _ = _listener(lab)
        with pytest.raises(PortInUseError, match=f"{net.broadcast}:{net.wol_port}"):
            listener.start()


# --- through the simulator process ---------------------------------------------------------------


@pytest.mark.integration
def test_simulator_process_counts_packets_in_its_status(start_sim) -> None:
    """Also: a fault given at start (as `sim up --fault` does) reaches the simulator process."""
    sim_lab: SimulatedLab = start_sim(sim_faults=["client_never_wakes:optiplex-003"])
    lab = sim_lab.lab
    wol = sim_lab.endpoint("wol", "lab-net")
    assert (wol.host, wol.port) == (lab.networks["lab-net"].broadcast, lab.networks["lab-net"].wol_port)
    wakeonlan.wake(lab.machine("optiplex-002").mac, host=wol.host, port=wol.port)
    wakeonlan.wake(lab.machine("optiplex-003").mac, host=wol.host, port=wol.port)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        s.sendto(b"not a magic packet", (wol.host, wol.port))
    deadline = time.monotonic() + DEADLINE_S
    while True:
        entry = next(e for e in sim_lab.control_status()["endpoints"] if e["kind"] == "wol")
        if entry["stats"]["received"] == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert entry["stats"]["woken"] == 1
    assert entry["stats"]["malformed"] == 1
    assert entry["stats"]["ignored_by_fault"] == 1
    status = sim_lab.control_status()
    machine = {e["name"]: e for e in status["endpoints"] if e["kind"] == "ssh"}
    assert machine["optiplex-002"]["power"] != str(PowerState.OFF)
    assert machine["optiplex-001"]["power"] == str(PowerState.OFF)
    assert machine["optiplex-003"]["power"] == str(PowerState.OFF)
    assert {"kind": "client_never_wakes", "targets": ["optiplex-003"]}.items() <= status["faults"][-1].items()

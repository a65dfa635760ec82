"""Wake-on-LAN: real magic packets over UDP to a listener on a loopback broadcast address."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from labctl.drivers.ssh import CommandResult, Shell, SshTarget
from labctl.drivers.wol import WolSender, WolTarget


@contextmanager
def listener(addr: str) -> Iterator[tuple[int, list[bytes]]]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
    sock.bind((addr, 0))
    sock.settimeout(0.1)
    got: list[bytes] = []
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            try:
                got.append(sock.recv(2048))
            except TimeoutError:
                continue

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        yield sock.getsockname()[1], got
    finally:
        stop.set()
        t.join(timeout=2)
        sock.close()


def mac_of(packet: bytes) -> str:
    assert packet[:6] == b"\xff" * 6 and len(packet) == 102
    return packet[6:12].hex(":")


def wait_for(got: list[bytes], n: int, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        time.sleep(0.01)


def test_group_burst_with_repeats_and_spread() -> None:
    bcast = "127.91.255.255"
    with listener(bcast) as (port, got):
        targets = [WolTarget(f"pc-{i:03d}", f"00:1a:a0:07:00:{i:02x}", bcast, port) for i in range(1, 51)]
        d = WolSender(repeat=3, gap_s=0.01).wake(targets)
        wait_for(got, 150)
    assert d.packets == 150 and not d.errors
    assert set(d.first_sent) == {t.name for t in targets}
    assert 0 <= d.spread_s <= d.burst_s < 2.0
    macs = [mac_of(p) for p in got]
    assert len(macs) == 150
    assert {m: macs.count(m) for m in set(macs)} == {t.mac: 3 for t in targets}
    assert macs[:50] == [t.mac for t in targets]  # one round of the whole group before any repeat


def test_unreachable_route_is_reported_per_machine_not_raised() -> None:
    d = WolSender(repeat=1).wake([WolTarget("pc-1", "00:1a:a0:07:00:01", "no-such-host.invalid", 9)])
    assert "pc-1" in d.errors and d.packets == 0


class FakeSsh:
    def __init__(self) -> None:
        self.commands: list[tuple[str, str]] = []

    def run(self, target: SshTarget, argv: object, **kw: object) -> CommandResult:
        self.commands.append((target.name, str(argv)))
        return CommandResult(str(argv), 0, "", "", 0.01)


def test_relay_sends_from_the_relay_host_over_ssh() -> None:
    relay = SshTarget("relay-01", "10.9.0.5", 22, "lab", shell=Shell.POSIX)
    ssh = FakeSsh()
    targets = [WolTarget(f"pc-{i}", f"00:1a:a0:07:00:0{i}", "10.9.255.255", 9, relay) for i in (1, 2)]
    d = WolSender(repeat=2, gap_s=0, ssh=ssh).wake(targets)  # type: ignore[arg-type]
    # the relay's wakeonlan is asked its options once (this one does not name --host: Debian's -i)
    assert (
        ssh.commands
        == [("relay-01", "['wakeonlan', '-h']")]
        + [
            ("relay-01", "wakeonlan -i 10.9.255.255 -p 9 00:1a:a0:07:00:01 00:1a:a0:07:00:02"),
        ]
        * 2
    )
    assert d.packets == 4 and set(d.first_sent) == {"pc-1", "pc-2"}


def test_a_relay_without_its_credential_fails_its_route_only() -> None:
    from labctl.errors import MissingCredentialError

    class NoCredentialSsh(FakeSsh):
        def run(self, target: SshTarget, argv: object, **kw: object) -> CommandResult:
            raise MissingCredentialError("env:RELAY_PW", target.endpoint, "export RELAY_PW=...")

    relay = SshTarget("relay-01", "10.9.0.5", 22, "lab", shell=Shell.POSIX)
    bcast = "127.91.255.255"
    with listener(bcast) as (port, got):
        local = WolTarget("pc-local", "00:1a:a0:07:00:01", bcast, port)
        far = WolTarget("pc-far", "00:1a:a0:07:00:02", "10.9.255.255", 9, relay)
        d = WolSender(repeat=1, ssh=NoCredentialSsh()).wake([local, far])  # type: ignore[arg-type]
        wait_for(got, 1)
    # the packet sent from here is kept, with its time; the relayed machine says why it was not sent
    assert set(d.first_sent) == {"pc-local"} and d.packets == 1 and [mac_of(p) for p in got] == [local.mac]
    assert set(d.errors) == {"pc-far"} and "env:RELAY_PW is not set" in d.errors["pc-far"]


def test_repeat_must_be_positive() -> None:
    with pytest.raises(ValueError):
        WolSender(repeat=0)


# --- against the simulated lab's Wake-on-LAN listener --------------------------------------------


@pytest.mark.integration
def test_sim_listener_wakes_the_group_but_not_a_client_that_never_wakes(tmp_path) -> None:
    from labctl.sim.twin.interface import PowerState
    from tests.drivers.simparts import endpoints

    fault = "- {kind: client_never_wakes, targets: [optiplex-003]}"
    with endpoints(tmp_path, "labctl.sim.wol", clients=5, faults=fault) as parts:
        net = parts.lab.networks["lab-net"]
        targets = [WolTarget(m.name, m.mac or "", net.broadcast, net.wol_port) for m in parts.lab.clients]
        d = WolSender(repeat=2, gap_s=0.01).wake(targets)
        assert not d.errors and d.packets == 10
        listener = parts.endpoints[0]
        deadline = time.monotonic() + 3
        while listener.stats()["received"] < 10 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert listener.stats()["received"] == 10
        states = {m.name: parts.twin.power_state(m.name) for m in parts.lab.clients}
    assert states.pop("optiplex-003") is PowerState.OFF
    assert set(states.values()) <= {PowerState.POWERING_ON, PowerState.ON}

"""Wake-on-LAN on both sides of the wire, each against something this project did not write.

- The simulated clients' listeners (labctl/sim/wol.py) receive magic packets from Debian's
  `wakeonlan` (a Perl sender, not the PyPI library the driver uses) on a lab whose clients sit on
  two subnets, each listener on its subnet's directed broadcast address.
- The driver's packets (labctl/drivers/wol.py, with the PyPI `wakeonlan`) are caught by plain
  sockets on each subnet's broadcast address and read by a parser written here from AMD's Magic
  Packet Technology white paper (publication 20213, 1995): 6 x 0xFF, then the MAC 16 times,
  anywhere in the frame, optionally followed by a SecureOn password.
- The relay command the driver runs on a relay host for a routed subnet is run as is, with
  Debian's `wakeonlan` and with the PyPI package's script (either may be on a relay).

Loopback only: each test lab has its own 127.a/16 block (tests/labfiles.py), lab-net 127.a.0.0/17
and far-net 127.a.128.0/17, their broadcasts 127.a.127.255 and 127.a.255.255.
"""

from __future__ import annotations

import ipaddress
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import wakeonlan

from labctl.clock import LabClock
from labctl.drivers.ssh import CommandResult, Shell, SshTarget, join_command
from labctl.drivers.wol import WolSender, WolTarget
from labctl.errors import EndpointError
from labctl.inventory.model import Lab
from labctl.lab.context import LabContext
from labctl.lab.preflight import CheckResult, Preflight
from labctl.sim.endpoint import SimContext
from labctl.sim.faults import FaultBook
from labctl.sim.twin.interface import PowerState
from labctl.sim.twin.placeholder import PlaceholderTwin
from labctl.sim.wol import WolListener, build_endpoints
from tests.conformance.wol.twolans import two_subnet_lab

DEADLINE_S = 5.0
DEBIAN_WAKEONLAN = Path("/usr/bin/wakeonlan")


def debian_wakeonlan() -> str:
    """Debian's Perl `wakeonlan` (the venv's `wakeonlan` is the PyPI library's script)."""
    if not DEBIAN_WAKEONLAN.is_file() or b"perl" not in DEBIAN_WAKEONLAN.read_bytes()[:64]:
        pytest.skip("Debian's wakeonlan is not installed: make install (the wol-sender target)")
    return str(DEBIAN_WAKEONLAN)


def amd_magic_packet(data: bytes) -> tuple[str, bytes]:
    """``(mac, what follows)`` of the magic packet in ``data``, read as AMD's white paper
    defines it; AssertionError when there is none. Written apart from labctl.sim.wol."""
    sync = bytes([0xFF] * 6)
    for start in range(len(data) - 101):
        if data[start : start + 6] != sync:
            continue
        mac = data[start + 6 : start + 12]
        if all(data[start + 6 + 6 * i : start + 12 + 6 * i] == mac for i in range(16)):
            return "-".join(f"{b:02X}" for b in mac), data[start + 102 :]
    raise AssertionError(f"no magic packet in {data.hex()}")


# --- the simulated listeners, sent to by Debian's wakeonlan ---------------------------------------


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return two_subnet_lab(tmp_path)


@pytest.fixture
def listeners(lab: Lab) -> Iterator[tuple[dict[str, WolListener], PlaceholderTwin]]:
    clock = LabClock(scale=lab.time_scale)
    twin = PlaceholderTwin(lab, clock)
    ctx = SimContext(lab, twin, FaultBook([], clock), clock, Path("/nonexistent"))
    endpoints = build_endpoints(ctx)
    by_net = {}
    for e in endpoints:
        (net,) = [n for n in lab.networks.values() if n.broadcast == e.info.host]
        by_net[net.name] = e
        e.start()
    try:
        yield by_net, twin
    finally:
        for e in endpoints:
            e.stop()


def wait_for(listener: WolListener, key: str, value: int) -> dict[str, object]:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        stats = listener.stats()
        if stats[key] == value:
            return stats
        time.sleep(0.01)
    raise AssertionError(f"{key} did not reach {value} within {DEADLINE_S} s: {listener.stats()}")


def send(argv: list[str]) -> str:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_one_listener_per_subnet_on_its_directed_broadcast(lab: Lab, listeners) -> None:
    by_net, _ = listeners
    for name, net in lab.networks.items():
        directed = ipaddress.ip_network(net.subnet).broadcast_address
        assert (by_net[name].info.host, by_net[name].info.port) == (str(directed), net.wol_port)


def test_debian_wakeonlan_wakes_the_simulated_clients_of_each_subnet(lab: Lab, listeners) -> None:
    by_net, twin = listeners
    sender = debian_wakeonlan()
    for name, net in lab.networks.items():
        macs = [c.mac or "" for c in lab.clients if c.network == name]
        said = send([sender, "-i", net.broadcast, "-p", str(net.wol_port), *macs])
        assert said.count("Sending magic packet") == len(macs)
        wait_for(by_net[name], "woken", len(macs))
    assert all(by_net[n].stats()["malformed"] == 0 for n in by_net)
    assert all(twin.power_state(c.name) is not PowerState.OFF for c in lab.clients)


def test_a_packet_to_another_subnets_broadcast_wakes_nothing_there(lab: Lab, listeners) -> None:
    """A directed broadcast reaches one subnet: far-01's NIC never sees a packet sent to
    lab-net's broadcast address. The simulator woke any machine of the lab by MAC, so a driver
    sending to the wrong network's address would have passed on the simulated lab."""
    by_net, twin = listeners
    near, far = lab.networks["lab-net"], lab.machine("far-01")
    send([debian_wakeonlan(), "-i", near.broadcast, "-p", str(near.wol_port), far.mac or ""])
    stats = wait_for(by_net["lab-net"], "other_subnet", 1)
    assert stats["woken"] == 0
    assert twin.power_state("far-01") is PowerState.OFF


def test_the_magic_sequence_anywhere_in_the_datagram_wakes(lab: Lab, listeners) -> None:
    """AMD's white paper: the NIC scans the whole frame for the sequence. A datagram with bytes
    before it (and a trailer that is no SecureOn password) still wakes the machine; the
    simulator refused anything but 102, 106 or 108 bytes starting with the sequence."""
    by_net, twin = listeners
    net, pc = lab.networks["lab-net"], lab.machine("optiplex-002")
    packet = b"labctl\x00\x00" + wakeonlan.create_magic_packet(pc.mac or "") + b"\x00\x01"
    assert amd_magic_packet(packet)[0] == (pc.mac or "").upper().replace(":", "-")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(packet, (net.broadcast, net.wol_port))
    wait_for(by_net["lab-net"], "woken", 1)
    assert twin.power_state("optiplex-002") is not PowerState.OFF


class LocalShell:
    """The relay's side of SSH, here: each command line, as SSH would deliver it, run by a POSIX
    shell whose PATH holds only `hostname` and one real ``wakeonlan`` (or none): the relay host.
    The transport is not what is checked; the command lines and the programs are."""

    def __init__(self, program: str | None, bin_dir: Path):
        bin_dir.mkdir(exist_ok=True)
        (bin_dir / "hostname").symlink_to(shutil.which("hostname") or "/bin/hostname")
        if program is not None:
            (bin_dir / "wakeonlan").symlink_to(program)
        self.env = {"PATH": str(bin_dir)}  # the relay's programs and nothing else
        self.lines: list[str] = []

    def close(self) -> None:
        pass

    def run(
        self,
        target: SshTarget,
        argv: Sequence[str] | str,
        *,
        timeout_s: float | None = None,
        action: str | None = None,
        check: bool = False,
    ) -> CommandResult:
        line = argv if isinstance(argv, str) else join_command(argv, target.shell)
        self.lines.append(line)
        out = subprocess.run(
            ["/bin/sh", "-c", line],
            capture_output=True,
            text=True,
            timeout=timeout_s or 10,
            env=self.env,
            check=False,
        )
        if check and out.returncode != 0:  # as SshPool.run(check=True) does
            raise EndpointError(
                target.endpoint, action or line, f"exit {out.returncode}: {out.stderr.strip()}"
            )
        return CommandResult(line, out.returncode, out.stdout, out.stderr, 0.0)


@pytest.mark.parametrize("tool", ["debian", "pypi"])
def test_the_relay_command_works_with_either_real_wakeonlan(
    lab: Lab, listeners, tool: str, tmp_path: Path
) -> None:
    """A routed subnet's packets are sent by its relay host over SSH with the relay's
    `wakeonlan`: Debian's takes -i, the PyPI package's 4.x script takes -o and exits 2 on -i.
    The driver sent -i to both; it now asks the relay's program once which it is."""
    by_net, _ = listeners
    program = debian_wakeonlan() if tool == "debian" else str(Path(sys.executable).parent / "wakeonlan")
    shell = LocalShell(program, tmp_path / "bin")
    relay = SshTarget("relay-01", "127.0.0.1", 22, "lab", shell=Shell.POSIX)
    net = lab.networks["far-net"]
    targets = [
        WolTarget(c.name, c.mac or "", net.broadcast, net.wol_port, relay)
        for c in lab.clients
        if c.network == "far-net"
    ]
    dispatch = WolSender(repeat=1, ssh=shell).wake(targets)  # type: ignore[arg-type]
    assert not dispatch.errors, dispatch.errors
    wait_for(by_net["far-net"], "woken", len(targets))
    assert by_net["far-net"].stats()["malformed"] == 0
    flag = "-i" if tool == "debian" else "-o"
    assert shell.lines[-1].startswith(f"wakeonlan {flag} {net.broadcast} -p {net.wol_port} ")


def test_a_relay_without_wakeonlan_fails_its_route_before_the_burst(
    lab: Lab, listeners, tmp_path: Path
) -> None:
    by_net, _ = listeners
    shell = LocalShell(None, tmp_path / "bin")
    relay = SshTarget("relay-01", "127.0.0.1", 22, "lab", shell=Shell.POSIX)
    net = lab.networks["far-net"]
    far = WolTarget("far-01", lab.machine("far-01").mac or "", net.broadcast, net.wol_port, relay)
    dispatch = WolSender(repeat=1, ssh=shell).wake([far])  # type: ignore[arg-type]
    assert set(dispatch.errors) == {"far-01"} and "exit 127" in dispatch.errors["far-01"]
    assert shell.lines == ["wakeonlan -h"] and dispatch.packets == 0
    assert by_net["far-net"].stats()["received"] == 0


@pytest.mark.parametrize(("tool", "flag"), [("debian", "-i"), ("pypi", "-o"), (None, "")])
def test_labctl_check_names_the_relays_wakeonlan(
    lab: Lab, tmp_path: Path, tool: str | None, flag: str
) -> None:
    """`labctl check`'s Wake-on-LAN row of a relayed subnet asks the relay's program."""
    relayed = lab.model_copy(
        update={
            "networks": {
                **lab.networks,
                "far-net": lab.networks["far-net"].model_copy(update={"wol_relay": "far-01"}),
            }
        }
    )
    program = {"debian": debian_wakeonlan, "pypi": lambda: str(Path(sys.executable).parent / "wakeonlan")}
    shell = LocalShell(program[tool]() if tool else None, tmp_path / "bin")
    ctx = LabContext(relayed)
    ctx.ssh, ctx.wol = shell, WolSender(ssh=shell)  # type: ignore[assignment, arg-type]
    r = CheckResult("far-net Wake-on-LAN", "wol", "")
    try:
        Preflight(ctx)._wol(r, "far-net")
    except EndpointError as exc:  # the preflight's runner turns this into the row's reason
        assert tool is None and "exit 127" in str(exc)
        return
    finally:
        ctx.close()
    assert tool is not None and f"sends with `wakeonlan {flag} {{broadcast}}" in r.capabilities
    assert shell.lines == ["hostname", "wakeonlan -h"]


# --- the driver's packets, read by the white paper's rules ----------------------------------------


def test_the_drivers_packets_go_to_each_clients_subnet_and_meet_the_spec(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    receivers: dict[str, socket.socket] = {}
    for name, net in lab.networks.items():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((str(ipaddress.ip_network(net.subnet).broadcast_address), net.wol_port))
        s.settimeout(0.3)
        receivers[name] = s
    broadcast_flags: list[int] = []
    made = wakeonlan.create_socket

    def spy(**kw):  # type: ignore[no-untyped-def]
        sock = made(**kw)
        broadcast_flags.append(sock.getsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST))
        return sock

    monkeypatch.setattr(wakeonlan, "create_socket", spy)
    ctx = LabContext(lab)
    try:
        targets = [ctx.wol_target(c) for c in lab.clients]
        dispatch = WolSender(repeat=2, gap_s=0.0).wake(targets)
    finally:
        ctx.close()
    assert not dispatch.errors and dispatch.packets == 2 * len(targets)
    assert broadcast_flags == [1, 1]  # SO_BROADCAST on each subnet's socket, or a real NIC refuses
    for name, s in receivers.items():
        got = []
        try:
            while True:
                data, _ = s.recvfrom(2048)
                got.append(data)
        except TimeoutError:
            pass
        finally:
            s.close()
        want = sorted((c.mac or "").upper().replace(":", "-") for c in lab.clients if c.network == name)
        assert all(len(d) == 102 for d in got)  # no password, nothing around the sequence
        parsed = [amd_magic_packet(d) for d in got]
        assert all(rest == b"" for _, rest in parsed)
        assert sorted(mac for mac, _ in parsed) == sorted(want * 2), name

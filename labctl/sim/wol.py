"""Wake-on-LAN for the simulated lab: one UDP listener per simulated subnet.

Each listener binds the network's *broadcast* address and ``wol_port`` from the inventory (e.g.
``127.20.255.255:40009``). On loopback a datagram sent to ``127.x.255.255`` is delivered only to a
socket bound to that address (or to the wildcard), so a driver sends to the inventory's broadcast
address unchanged -- with ``wakeonlan.wake(mac, host=broadcast, port=wol_port)`` exactly as on a
real subnet -- and two simulated labs on different 127.x blocks never see each other's packets.

A magic packet (AMD's Magic Packet Technology white paper, publication 20213, 1995) is 6 x 0xFF
followed by the target MAC 16 times, *anywhere* in the frame: the NIC scans for that sequence and
ignores what surrounds it. A 4- or 6-byte SecureOn password follows it directly (the `wakeonlan`
library's ``mac/password`` form sends 6). A datagram without the sequence is counted as
malformed and ignored. A well-formed packet wakes the machine with that MAC only if the machine
sits on this listener's subnet (a broadcast does not cross into another subnet: a packet sent to
the wrong network's broadcast address wakes nothing on a real lab), and unless the
``client_never_wakes`` fault is active for it (the packet arrives; the NIC never powers the box).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
import threading
from dataclasses import dataclass

from labctl.inventory.faults import FaultKind
from labctl.sim.endpoint import EndpointInfo, PortInUseError, SimContext

log = logging.getLogger(__name__)

SYNC = b"\xff" * 6
MAGIC_LEN = 6 + 16 * 6  # 102
PASSWORD_LENGTHS = (0, 4, 6)


class MalformedPacket(ValueError):
    pass


def parse_magic_packet(data: bytes) -> tuple[str, bytes | None]:
    """``(mac, password)`` of the first magic packet in a datagram (the sync stream and 16 copies
    of one MAC, anywhere in it); the password is the 4 or 6 bytes after it when exactly that many
    follow. Raises :class:`MalformedPacket` saying what is wrong."""
    if len(data) < MAGIC_LEN:
        raise MalformedPacket(f"{len(data)} bytes (a magic packet has at least 102)")
    start = data.find(SYNC)
    if start < 0:
        raise MalformedPacket("does not contain 6 x 0xFF")
    while start >= 0 and start + MAGIC_LEN <= len(data):
        mac = data[start + 6 : start + 12]
        if data[start + 6 : start + MAGIC_LEN] == mac * 16:
            rest = data[start + MAGIC_LEN :]
            password = rest if len(rest) in PASSWORD_LENGTHS[1:] else None
            return ":".join(f"{b:02x}" for b in mac), password
        start = data.find(SYNC, start + 1)
    raise MalformedPacket("no MAC is repeated 16 times after 6 x 0xFF")


@dataclass
class WolStats:
    received: int = 0
    woken: int = 0
    unknown_mac: int = 0  # well formed, but no machine of the lab has that MAC
    other_subnet: int = 0  # a machine of the lab, on another subnet: a broadcast does not reach it
    ignored_by_fault: int = 0  # client_never_wakes
    malformed: int = 0
    last_malformed: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "received": self.received,
            "woken": self.woken,
            "unknown_mac": self.unknown_mac,
            "other_subnet": self.other_subnet,
            "ignored_by_fault": self.ignored_by_fault,
            "malformed": self.malformed,
            "last_malformed": self.last_malformed,
        }


class WolListener:
    """A SimEndpoint: the magic-packet receiver of one subnet (broadcast address + port)."""

    def __init__(self, ctx: SimContext, name: str, broadcast: str, port: int):
        self.ctx = ctx
        self.info = EndpointInfo("wol", name, broadcast, port, "udp")
        self._by_mac = {m.mac: m.name for m in ctx.lab.machines.values() if m.mac}
        # the machines this broadcast reaches: those on a network with this (broadcast, port)
        nets = {n.name for n in ctx.lab.networks.values() if (n.broadcast, n.wol_port) == (broadcast, port)}
        self._reached = {m.mac for m in ctx.lab.machines.values() if m.mac and m.network in nets}
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._stats = WolStats()

    # --- SimEndpoint ---------------------------------------------------------------------------
    def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.bind((self.info.host, self.info.port))
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:
                raise PortInUseError("wol", self.info.name, self.info.host, self.info.port) from None
            raise
        sock.settimeout(0.2)
        self._sock = sock
        self._stopping.clear()
        self._thread = threading.Thread(target=self._serve, name=f"wol-{self.info.host}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked recvfrom at once
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    # --- stats ---------------------------------------------------------------------------------
    def stats(self) -> dict[str, object]:
        with self._lock:
            return self._stats.as_dict()

    # --- receiving -----------------------------------------------------------------------------
    def _serve(self) -> None:
        sock = self._sock
        assert sock is not None
        while not self._stopping.is_set():
            try:
                data, peer = sock.recvfrom(2048)
            except TimeoutError:
                continue
            except OSError:
                if self._stopping.is_set():
                    return
                raise
            if self._stopping.is_set():
                return
            try:
                self.handle(data, peer)
            except Exception:  # a bad twin call must not kill the listener
                log.exception("wol %s: handling a packet from %s failed", self.info.host, peer)

    def handle(self, data: bytes, peer: object = None) -> str | None:
        """Process one datagram. Returns the woken machine's name, if any."""
        with self._lock:
            self._stats.received += 1
        try:
            mac, _password = parse_magic_packet(data)
        except MalformedPacket as exc:
            with self._lock:
                self._stats.malformed += 1
                self._stats.last_malformed = str(exc)
            log.info("wol %s: malformed packet from %s: %s", self.info.host, peer, exc)
            return None
        name = self._by_mac.get(mac)
        if name is not None and mac not in self._reached:
            with self._lock:
                self._stats.other_subnet += 1
            log.info(
                "wol %s: magic packet for %s (%s), which is on another subnet", self.info.host, name, mac
            )
            return None
        if name is not None and self.ctx.faults.active(FaultKind.CLIENT_NEVER_WAKES, name):
            with self._lock:
                self._stats.ignored_by_fault += 1
            log.info(
                "wol %s: magic packet for %s (%s) ignored: client_never_wakes", self.info.host, name, mac
            )
            return None
        woken = self.ctx.twin.wake_on_lan(mac)
        with self._lock:
            if woken is None:
                self._stats.unknown_mac += 1
            else:
                self._stats.woken += 1
        log.info("wol %s: magic packet for %s -> %s", self.info.host, mac, woken or "no such machine")
        return woken


def build_endpoints(ctx: SimContext) -> list[WolListener]:
    """One listener per distinct (broadcast address, WoL port) of the lab's networks."""
    by_addr: dict[tuple[str, int], list[str]] = {}
    for net in ctx.lab.networks.values():
        by_addr.setdefault((net.broadcast, net.wol_port), []).append(net.name)
    return [WolListener(ctx, ",".join(names), host, port) for (host, port), names in by_addr.items()]

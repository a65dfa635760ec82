"""Simulated subnets as Linux network namespaces, made and removed by the tests (root, `ip netns`).

Each segment is a namespace of its own: an agent runs inside it, and the segment's broadcast
domain is that namespace's loopback (a magic packet sent to ``127.<a>.65.255`` there reaches only
sockets of that namespace, as a broadcast reaches only its own subnet). The namespaces reach the
hub through veth pairs on one bridge of this host (10.231.<x>.0/24): the only way out of a
segment, like a site's one outbound port.

The simulated lab's twin lives in the host's namespace. A :class:`SegmentRelay` is the segment's
WoL listener: its socket is made *inside* the segment's namespace (``setns`` on a helper thread)
and bound to the segment's broadcast address and WoL port; each magic packet it receives is
counted and handed to the simulator, which listens for the segments on another port of the host
(so nothing in the host's namespace answers the inventory's port: only the segment wakes them).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


class NetnsUnavailable(RuntimeError):
    pass


def _ip(*args: str, netns: str | None = None) -> None:
    argv = ["ip", *(["netns", "exec", netns, "ip"] if netns else []), *args]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        raise NetnsUnavailable(f"{' '.join(argv)}: {res.stderr.strip() or res.returncode}")


def netns_available() -> str | None:
    """None if this process may make network namespaces, else why not."""
    name = f"lcprobe{os.getpid() % 100000}"
    try:
        _ip("netns", "add", name)
    except (NetnsUnavailable, FileNotFoundError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    with contextlib.suppress(NetnsUnavailable):
        _ip("netns", "del", name)
    return None


def socket_in_netns(netns: str, family: int = socket.AF_INET, kind: int = socket.SOCK_DGRAM) -> socket.socket:
    """A socket of namespace ``netns`` (a socket belongs to the namespace it was made in; setns
    changes only the calling thread's, so a helper thread enters, makes it and ends)."""
    out: dict[str, object] = {}

    def work() -> None:
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(f"/var/run/netns/{netns}", os.O_RDONLY)
        try:
            if _libc.setns(target, CLONE_NEWNET) != 0:
                out["error"] = OSError(ctypes.get_errno(), f"setns {netns}")
                return
            try:
                out["sock"] = socket.socket(family, kind)
            finally:
                _libc.setns(own, CLONE_NEWNET)
        finally:
            os.close(own)
            os.close(target)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return out["sock"]  # type: ignore[return-value]


@dataclass
class SegmentRelay:
    """The WoL listener of one segment, inside its namespace, forwarding to the simulator."""

    netns: str
    broadcast: str
    port: int
    forward_to: tuple[str, int]
    received: int = 0
    macs: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.sock = socket_in_netns(self.netns)
        self.sock.bind((self.broadcast, self.port))
        self.sock.settimeout(0.2)
        self.out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # the host's namespace
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"relay-{self.netns}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(2048)
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.received += 1
                if len(data) >= 12:
                    self.macs.add(":".join(f"{b:02x}" for b in data[6:12]))
            self.out.sendto(data, self.forward_to)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()
        self.out.close()


@dataclass
class Segments:
    """Namespaces ``names`` linked by veth pairs to the bridge ``bridge`` at ``hub_ip``."""

    bridge: str
    hub_ip: str
    names: list[str]
    addresses: list[str]


def _free_subnet() -> int:
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, timeout=10).stdout
    free = [x for x in range(256) if f" 10.231.{x}." not in used]
    if not free:
        raise NetnsUnavailable("no free 10.231.x.0/24 for the test segments")
    return random.choice(free)


@contextlib.contextmanager
def segments(count: int) -> Iterator[Segments]:
    tag = f"{os.getpid() % 4096:03x}{random.randrange(16 * 16):02x}"
    x = _free_subnet()
    bridge = f"lcb{tag}"
    made: list[str] = []
    try:
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"10.231.{x}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        addresses = []
        for k in range(1, count + 1):
            ns, host_end, ns_end = f"lc{tag}s{k}", f"lc{tag}h{k}", f"lc{tag}n{k}"
            _ip("netns", "add", ns)
            made.append(ns)
            _ip("link", "add", host_end, "type", "veth", "peer", "name", ns_end)
            _ip("link", "set", ns_end, "netns", ns)
            _ip("link", "set", host_end, "master", bridge)
            _ip("link", "set", host_end, "up")
            addr = f"10.231.{x}.{10 + k}"
            _ip("addr", "add", f"{addr}/24", "dev", ns_end, netns=ns)
            _ip("link", "set", ns_end, "up", netns=ns)
            _ip("link", "set", "lo", "up", netns=ns)
            addresses.append(addr)
        yield Segments(bridge, f"10.231.{x}.1", made, addresses)
    finally:
        for ns in made:  # deleting a namespace deletes its end of the veth pair, and so the pair
            with contextlib.suppress(NetnsUnavailable):
                _ip("netns", "del", ns)
        with contextlib.suppress(NetnsUnavailable):
            _ip("link", "del", bridge)

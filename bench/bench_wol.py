"""Wake-on-LAN storm: dispatch spread (first to last machine's first magic packet) for 100 and
3,000 clients, with labctl's WoL driver (the `wakeonlan` library) over real UDP on loopback.

A listener bound to the lab network's broadcast address counts what arrived. Prints figures only.

    .venv/bin/python bench/bench_wol.py
"""

from __future__ import annotations

import socket
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labctl.drivers.wol import WolSender, WolTarget

BROADCAST = "127.250.255.255"


def mac(i: int) -> str:
    raw = f"001aa0{i:06x}"
    return ":".join(raw[k : k + 2] for k in range(0, 12, 2))


class Listener:
    """Counts the magic packets (and the MACs) arriving on ``addr``; port 0: a free one."""

    def __init__(self, addr: str, port: int = 0):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024 * 1024)
        self.sock.bind((addr, port))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.count = 0
        self.macs: set[bytes] = set()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(2048)
            except TimeoutError:
                continue
            self.count += 1
            self.macs.add(data[6:12])

    def close(self) -> None:
        self._stop.set()
        self._t.join(2)
        self.sock.close()


def storm(n: int, repeat: int, runs: int = 5) -> None:
    spreads, bursts, received, distinct = [], [], [], []
    for _ in range(runs):
        lis = Listener(BROADCAST)
        targets = [WolTarget(f"client-{i:04d}", mac(i + 1), BROADCAST, lis.port) for i in range(n)]
        d = WolSender(repeat=repeat, gap_s=0.05).wake(targets)
        deadline = time.monotonic() + 3
        while lis.count < d.packets and time.monotonic() < deadline:
            time.sleep(0.01)
        lis.close()
        assert not d.errors, d.errors
        spreads.append(d.spread_s)
        bursts.append(d.burst_s)
        received.append(lis.count)
        distinct.append(len(lis.macs))
    print(
        f"  {n:>5} clients x{repeat}: spread median {statistics.median(spreads) * 1e3:7.2f} ms "
        f"(max {max(spreads) * 1e3:6.2f}), burst incl. repeats {statistics.median(bursts) * 1e3:7.2f} ms, "
        f"{statistics.median(received):.0f}/{n * repeat} packets received, "
        f"{min(distinct)}/{n} machines reached (worst run)"
    )


def main() -> None:
    print("Wake-on-LAN dispatch spread (labctl WolSender, one socket per subnet, loopback UDP)")
    for n in (100, 3000):
        for repeat in (1, 3):
            storm(n, repeat)


if __name__ == "__main__":
    main()

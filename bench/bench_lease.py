"""Lab lease latency on both backends: take, renew, release and list, one caller and many.

The file store (flock + atomic rename, this machine) and the NATS store (a JetStream key-value
bucket on a nats-server this script starts on loopback, compare-and-set per change). Also the
renewal of one shared resource by 8 holders at once, where compare-and-set conflicts are retried.
Prints figures (median and 95th percentile in milliseconds).

    .venv/bin/python bench/bench_lease.py [N]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labctl.agents.nats_server import start_nats_server  # noqa: E402
from labctl.lab.lease.file import FileLeaseStore  # noqa: E402
from labctl.lab.lease.hub import NatsLeaseStore  # noqa: E402
from labctl.lab.lease.record import RecordLeaseStore  # noqa: E402

SHARED_HOLDERS = 8


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def figures(label: str, ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return f"  {label:<34} median {statistics.median(ms):7.2f} ms   p95 {p95:7.2f} ms   (n={len(ms)})"


def bench(store: RecordLeaseStore, n: int) -> None:
    takes: list[float] = []
    releases: list[float] = []
    for i in range(n):
        t0 = time.perf_counter()
        lease = store.take(f"lab:bench-{i % 10}", "bench", ttl_s=60)
        t1 = time.perf_counter()
        lease.release()
        t2 = time.perf_counter()
        takes.append((t1 - t0) * 1000)
        releases.append((t2 - t1) * 1000)
    print(figures("take (free lab)", takes))
    print(figures("release", releases))
    lease = store.take("lab:bench-renew", "bench", ttl_s=60)
    print(figures("renew (compare-and-set)", timed(lambda: store._renew("lab:bench-renew", lease.token), n)))
    for i in range(20):
        store.take(f"group:bench/g{i}", "bench", ttl_s=60)
    print(figures("list (21 leases)", timed(store.list, max(10, n // 10))))
    store.take("lab:bench-held", "holder", ttl_s=60)

    def refused() -> None:
        try:
            store.take("lab:bench-held", "bench", ttl_s=60)
        except Exception:
            pass

    print(figures("take refused (LeaseHeld)", timed(refused, n)))

    shared = [store.take("switch:bench", f"holder {k}", ttl_s=60, shared=True) for k in range(SHARED_HOLDERS)]
    per_call: list[float] = []
    lock = threading.Lock()

    def renew_loop(token: str) -> None:
        mine = timed(lambda: store._renew("switch:bench", token), max(10, n // 4))
        with lock:
            per_call.extend(mine)

    threads = [threading.Thread(target=renew_loop, args=(s.token,)) for s in shared]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(figures(f"renew shared, {SHARED_HOLDERS} holders at once", per_call))
    store.close()


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory(prefix="bench-lease-") as tmp:
        print(f"file store ({tmp}/leases)")
        bench(FileLeaseStore(Path(tmp) / "leases"), n)
        server = start_nats_server(Path(tmp) / "nats", name="bench-hub")
        try:
            print(f"NATS store ({server.url}, JetStream file storage)")
            bench(NatsLeaseStore(server.url, bucket="bench-leases"), n)
        finally:
            server.stop()


if __name__ == "__main__":
    main()

"""A lease holder in its own process, for the tests: takes a lease, reports, holds, releases.

    python -m tests.lease.holder SPEC RESOURCE [RESOURCE...] --ttl 1 --hold 30 [--wait S] [--shared]
        [--on-go]

SPEC is ``file:<dir>`` or ``nats:<url>#<bucket>``. One JSON line per event on stdout:
``{"event": "taken", ...}`` (then holds), ``{"event": "held", "message": ...}`` (exit 3),
``{"event": "released", "last_user": ...}``. ``--on-go`` waits for a line on stdin after "ready",
so holders started one after the other try at the same moment.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from labctl.lab.lease import LeaseHeld, LeaseStore


def open_store(spec: str) -> LeaseStore:
    kind, _, where = spec.partition(":")
    if kind == "file":
        from labctl.lab.lease.file import FileLeaseStore

        return FileLeaseStore(where)
    if kind == "nats":
        from labctl.lab.lease.hub import NatsLeaseStore

        url, _, bucket = where.partition("#")
        return NatsLeaseStore(url, bucket=bucket)
    raise SystemExit(f"bad store spec {spec!r}")


def holder_name(name: str) -> str:
    return f"holder {name} pid {os.getpid()}"


def emit(event: str, **fields: object) -> None:
    print(json.dumps({"event": event, "at": time.time(), "pid": os.getpid(), **fields}), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("resources", nargs="+")
    ap.add_argument("--name", default="h")
    ap.add_argument("--ttl", type=float, default=1.0)
    ap.add_argument("--wait", type=float, default=0.0)
    ap.add_argument("--hold", type=float, default=30.0)
    ap.add_argument("--shared", action="store_true")
    ap.add_argument("--on-go", action="store_true")
    ap.add_argument("--exit-without-release", action="store_true")
    args = ap.parse_args()
    store = open_store(args.spec)
    holder = holder_name(args.name)
    emit("ready", holder=holder)
    if args.on_go:
        sys.stdin.readline()
    try:
        leases = store.take_all(args.resources, holder, ttl_s=args.ttl, wait_s=args.wait, shared=args.shared)
    except LeaseHeld as exc:
        emit("held", holder=holder, message=str(exc), resource=exc.info.resource, by=exc.info.holder)
        store.close()
        return 3
    emit("taken", holder=holder, first_user=[lease.first_user for lease in leases])
    time.sleep(args.hold)
    if args.exit_without_release:
        return 0  # no release, no close: what is left is the exit hook's
    for lease in leases:
        lease.release()
    emit(
        "released",
        holder=holder,
        last_user=[lease.last_user for lease in leases],
        lost=[lease.lost.is_set() for lease in leases],
    )
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

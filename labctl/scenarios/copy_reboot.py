"""The copy/reboot matrix (2007 paper, test scenario 2): one group copies while another reboots.

With every client booted and the boot storm passed, the copiers each copy a 512 MB file along one
path while the rebooters restart at the same moment. Measured: each copier's copy duration, each
rebooter's boot time and retries (streaming server) and time-to-ready (orchestrator).

Copy paths, in the paper's words:
- ``local_to_local``: local vDisk to local vDisk (vDisk reads, write-cache writes, network);
- ``local_to_share``: local vDisk to a remote share (vDisk reads, network);
- ``share_to_local``: remote share to local vDisk (write-cache writes, network);
- ``share_to_share``: remote share to remote share (network only).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum

from labctl.drivers.ssh import SshError
from labctl.errors import BadInputError, EndpointError
from labctl.inventory.model import Machine, Share
from labctl.lab.session import LabSession
from labctl.records.samples import Event
from labctl.scenarios.base import Progress, ProgressHook, no_progress
from labctl.scenarios.common import ClientBoot, client_boots

LOCAL_DIR = r"C:\labctl"
SOURCE_FILE = "file512.bin"  # 512 MiB: on every client's image and on the share


class CopyPath(StrEnum):
    LOCAL_TO_LOCAL = "local_to_local"
    LOCAL_TO_SHARE = "local_to_share"
    SHARE_TO_LOCAL = "share_to_local"
    SHARE_TO_SHARE = "share_to_share"


def copy_command(path: CopyPath, client: str, share: Share) -> list[str]:
    """The cmd.exe copy a client runs for ``path``; each client writes its own destination file."""
    unc = share.unc.rstrip("\\")
    local_src = rf"{LOCAL_DIR}\{SOURCE_FILE}"
    share_src = rf"{unc}\{SOURCE_FILE}"
    local_dst = rf"{LOCAL_DIR}\copy-{client}.bin"
    share_dst = rf"{unc}\copy-{client}.bin"
    src, dst = {
        CopyPath.LOCAL_TO_LOCAL: (local_src, local_dst),
        CopyPath.LOCAL_TO_SHARE: (local_src, share_dst),
        CopyPath.SHARE_TO_LOCAL: (share_src, local_dst),
        CopyPath.SHARE_TO_SHARE: (share_src, share_dst),
    }[path]
    return ["copy", "/Y", src, dst]


@dataclass(frozen=True)
class CopyOutcome:
    name: str
    ok: bool
    copy_s: float | None  # lab seconds from dispatch to "1 file(s) copied."
    detail: str = ""


@dataclass(frozen=True)
class CopyRebootResult:
    copy_path: CopyPath
    copiers: tuple[CopyOutcome, ...]
    rebooters: tuple[ClientBoot, ...]
    start_ts: float
    end_ts: float
    reboot_spread_s: float
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def never_ready(self) -> list[str]:
        return [r.name for r in self.rebooters if r.outcome != "ready"]

    @property
    def failed_copies(self) -> list[str]:
        return [c.name for c in self.copiers if not c.ok]


def split_groups(clients: list[Machine], copiers: int, rebooters: int) -> tuple[list[Machine], list[Machine]]:
    """The first ``copiers`` clients copy, the next ``rebooters`` reboot: disjoint groups."""
    if copiers + rebooters > len(clients):
        raise BadInputError(
            f"{copiers} copiers + {rebooters} rebooters is more than the {len(clients)} clients of the lab"
            " (lower the group sizes with --param, or add clients to the inventory)"
        )
    return clients[:copiers], clients[copiers : copiers + rebooters]


def run_copy_reboot(
    session: LabSession,
    copiers: list[Machine],
    rebooters: list[Machine],
    copy_path: CopyPath,
    share: Share,
    *,
    timeout_s: float = 900.0,
    progress: ProgressHook = no_progress,
) -> CopyRebootResult:
    """Start the copies and the reboots at the same moment; wait for both (bounded by ``timeout_s``)."""
    clock = session.clock
    total = len(copiers) + len(rebooters)
    done = 0
    lock = threading.Lock()
    members = {m.name for m in rebooters}

    def tick(n: int = 1) -> None:
        nonlocal done
        with lock:
            done += n
            d = done
        progress(Progress("copy+reboot", d, total))

    def on_event(ev: Event) -> None:
        if ev.kind == "ready" and ev.target in members:
            tick()

    start = clock.now()
    deadline = start + timeout_s
    wall_timeout = clock.to_wall_s(timeout_s) + 30.0

    def copy_one(m: Machine) -> CopyOutcome:
        t0 = clock.now()
        try:
            res = session.ssh.run(
                session.ssh_target(m),
                copy_command(copy_path, m.name, share),
                timeout_s=wall_timeout,
                action=f"copy 512 MB ({copy_path.value})",
            )
        except (SshError, EndpointError) as exc:
            tick()
            return CopyOutcome(m.name, False, None, str(exc))
        t1 = clock.now()
        tick()
        ok = res.ok and "1 file(s) copied" in res.stdout
        detail = "" if ok else (res.stderr.strip() or res.stdout.strip() or f"exit {res.exit_status}")
        return CopyOutcome(m.name, ok, t1 - t0 if ok else None, detail)

    unsubscribe = session.timeline.subscribe(on_event)
    stop_watching = threading.Event()
    watch = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reboot-watch")
    pool = ThreadPoolExecutor(max_workers=max(1, len(copiers)), thread_name_prefix="copy")
    finished = False
    try:
        progress(Progress("copy+reboot", 0, total))
        # Watch the rebooters before the reboot goes out: dispatching a group over SSH can take
        # longer (in lab time, on a fast simulated clock) than a client needs to go down and come
        # back, and a reboot is only seen if the client is seen down first.
        watching = (
            watch.submit(
                session.wait_ready, rebooters, deadline=deadline, expect_boot=True, stop=stop_watching
            )
            if rebooters
            else None
        )
        futures = [pool.submit(copy_one, m) for m in copiers]
        report = session.power.reboot([m.name for m in rebooters]) if rebooters else None
        readiness = watching.result() if watching is not None else {}
        copies = [f.result() for f in futures]
        finished = True
    finally:
        unsubscribe()
        # On Ctrl-C or a failure, do not sit out the reboot watch and the copies (up to the cell
        # timeout on a real lab): the caller restores power, which also ends the copies' sessions.
        if not finished:
            stop_watching.set()
        watch.shutdown(wait=finished, cancel_futures=not finished)
        pool.shutdown(wait=finished, cancel_futures=not finished)
    end = clock.now()

    devices, _errors = session.power.device_status() if rebooters else ({}, {})
    reboot_failed = {n: o.detail for n, o in report.failed.items()} if report else {}
    reboots = client_boots(rebooters, readiness, devices, start, reboot_failed)
    return CopyRebootResult(
        copy_path=copy_path,
        copiers=tuple(copies),
        rebooters=reboots,
        start_ts=start,
        end_ts=end,
        reboot_spread_s=report.spread_lab_s if report else 0.0,
    )

"""The copy/reboot matrix (2007 paper, test scenario 2): one group copies while another reboots.

One cell, end to end:

1. **prepare**: boot every client of the plan's group and wait until each is up;
2. **settle**: let the boot storm pass: wait until the streaming servers' counters (and the
   write-cache disk's) stay below the ``quiet`` limits for ``quiet_hold_s``, read from what the
   recorder has recorded in this cell;
3. **copy+reboot** (the window): the copiers each copy a 512 MB file along one path while the
   rebooters restart at the same moment; the window ends when every copy and every reboot is done
   (bounded by ``cell_timeout_s``). Measured: each copier's copy duration, each rebooter's boot time
   and retries (streaming server) and time to ready (orchestrator); clients not rebooting must stay
   up (anything else is a power change this run did not make: a lab fault);
4. **restore**: every client back up, the state the next cell starts from. When the run is
   interrupted this is left to the environment, which returns the lab to its state before the run.

Copy paths, in the paper's words:
- ``local_to_local``: local vDisk to local vDisk (vDisk reads, write-cache writes, network);
- ``local_to_share``: local vDisk to a remote share (vDisk reads, network);
- ``share_to_local``: remote share to local vDisk (write-cache writes, network);
- ``share_to_share``: remote share to remote share (network only).
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import Field

from labctl.errors import EndpointError, LabctlError
from labctl.inventory.model import Lab, Machine, Share
from labctl.lab.power import State
from labctl.lab.ready import Readiness
from labctl.lab.session import LabSession
from labctl.lab.strategy import Goal
from labctl.records.run_record import ClientOutcome, Window
from labctl.records.samples import Event
from labctl.scenarios.base import CellContext, Progress, Scenario
from labctl.scenarios.common import (
    Phases,
    StormResult,
    cell_entities,
    client_outcomes,
    healthy,
    restore,
    unread_servers,
)
from labctl.scenarios.settings import LabSeconds, Percent, ScenarioSettings, Settings

LOCAL_DIR = r"C:\labctl"
SOURCE_FILE = "file512.bin"  # 512 MiB: on every client's image and on the share
POLL_LAB_S = 5.0  # how often the cell looks at its copies, its rebooters and the stop event


class CopyPath(StrEnum):
    LOCAL_TO_LOCAL = "local_to_local"
    LOCAL_TO_SHARE = "local_to_share"
    SHARE_TO_LOCAL = "share_to_local"
    SHARE_TO_SHARE = "share_to_share"


class QuietLimits(Settings):
    """What "the storm has passed" means: every streaming-server counter below these (idle in the
    2007 lab is a few % CPU and a queue below 1)."""

    cpu_pct: Percent = 25.0
    disk_queue_len: float = Field(2.0, strict=True, ge=0, le=10_000, allow_inf_nan=False)
    nic_sent_util_pct: Percent = 15.0


class CopyRebootSettings(ScenarioSettings):
    """How a copy/reboot cell runs (``testplans/copy_reboot.params.yaml``)."""

    boot_all_timeout_s: LabSeconds = Field(900.0, description="boot every client before the matrix")
    settle_timeout_s: LabSeconds = Field(900.0, description="wait for the servers' counters to go quiet")
    cell_timeout_s: LabSeconds = Field(900.0, description="copies and reboots of one cell")
    quiet: QuietLimits = Field(default_factory=QuietLimits, description="limits of a quiet server")
    quiet_hold_s: LabSeconds = Field(30.0, description="how long the counters must stay below the limits")

    def lab_problems(self, lab: Lab) -> list[str]:
        problems = self.group_problems(lab, 1, "clients")
        if lab.configuration is not None and lab.configuration.share is None:
            problems.append(
                f"copy_paths: configuration {lab.configuration.name} of {lab.name} names no share for the copy paths "
                "(add share: to the configuration)"
            )
        return problems


def copy_paths(path: CopyPath, client: str, share: Share) -> tuple[str, str]:
    """(source, destination) a client copies for ``path``; each client writes its own file."""
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
    return src, dst


def split_groups(clients: list[Machine], copiers: int, rebooters: int) -> tuple[list[Machine], list[Machine]]:
    """The first ``copiers`` clients copy, the next ``rebooters`` reboot: disjoint groups."""
    if copiers + rebooters > len(clients):
        raise LabctlError(
            f"{copiers} copiers + {rebooters} rebooters is more than the {len(clients)} clients of the lab"
            " (lower the group sizes with --param, or add clients to the inventory)"
        )
    return clients[:copiers], clients[copiers : copiers + rebooters]


@dataclass(kw_only=True)
class CopyRebootResult(StormResult):
    """What a copy/reboot cell measured; :meth:`summary` writes it as the cell summary."""

    copiers: int
    rebooters: int
    copy_path: CopyPath
    settings: CopyRebootSettings
    quiet_at_ts_s: float | None = None  # when the servers went quiet before the burst
    blame_role: str | None = "rebooter"

    def criteria_variables(self) -> dict[str, Any]:
        return {"copiers": self.copiers, "rebooters": self.rebooters, "copy_path": self.copy_path.value}

    @property
    def failed_copies(self) -> list[str]:
        return [c.name for c in self.clients.values() if c.role == "copier" and c.outcome != "copied"]

    def extra(self) -> dict[str, float | int | str | bool | None]:
        return {"back_to_baseline_ts_s": self.quiet_at_ts_s, "failed_copies": len(self.failed_copies)}


class CopyReboot(Scenario):
    """``copiers`` clients copy 512 MB along ``copy_path`` while ``rebooters`` restart (module doc)."""

    name = "copy_reboot"
    title = "copy/reboot"

    def __init__(
        self,
        copiers: int,
        rebooters: int,
        copy_path: CopyPath | str,
        settings: CopyRebootSettings | None = None,
    ):
        self.copiers = copiers
        self.rebooters = rebooters
        self.copy_path = CopyPath(copy_path)
        self.settings = settings or CopyRebootSettings()

    def parameters(self) -> dict[str, Any]:
        return {"copiers": self.copiers, "rebooters": self.rebooters, "copy_path": self.copy_path.value}

    def sample_interval_s(self) -> float:
        return self.settings.sample_interval_s

    def poll_interval_s(self) -> float:
        return self.settings.poll_interval_s

    def run(self, lab: LabSession, ctx: CellContext) -> CopyRebootResult:
        st = self.settings
        everyone, excluded = healthy(lab, lab.machines(st.clients), st.health_check)
        copiers, rebooters = split_groups(everyone, self.copiers, self.rebooters)
        cfg = lab.lab.configuration
        share = cfg.share if cfg is not None else None
        if share is None:  # the plan's parameters are checked against the lab first
            raise LabctlError(f"{lab.lab.name}: the configuration names no share for the copy paths")
        phases = Phases(lab.clock.now)
        entities = cell_entities(lab.lab)
        result = CopyRebootResult(
            copiers=self.copiers,
            rebooters=self.rebooters,
            copy_path=self.copy_path,
            settings=st,
            entities=entities,
            phases=phases.items,
        )
        try:
            if not ctx.stop.is_set():
                ctx.progress(Progress("boot all", 0, len(everyone)))
                with phases(
                    ctx,
                    "prepare",
                    f"boot all {len(everyone)} clients and wait until they are up and answer SSH",
                ):
                    # copiers and rebooters are commanded over SSH next: up means answering it
                    prep = lab.strategy.bring(
                        everyone, Goal.READY, timeout_s=st.boot_all_timeout_s, stop=ctx.stop, answering=True
                    )
                if not prep.ok and not ctx.stop.is_set():
                    result.prepare_failed = f"clients never came up before the matrix: {prep.describe()}"
            if not ctx.stop.is_set() and not result.prepare_failed:
                ctx.progress(Progress("settle"))
                with phases(ctx, "settle", "let the boot storm pass: wait until the servers are quiet"):
                    result.quiet_at_ts_s = _wait_quiet(lab, ctx, st, entities)
                    lab.timeline.append(
                        "settle",
                        "servers",
                        quiet_at=result.quiet_at_ts_s,
                        timed_out=result.quiet_at_ts_s is None,
                    )
            if not ctx.stop.is_set() and not result.prepare_failed:
                title = (
                    f"{self.copiers} clients copy 512 MB {self.copy_path.value} while {self.rebooters} reboot"
                )
                with phases(ctx, "window", title):
                    self._copy_and_reboot(lab, ctx, everyone, copiers, rebooters, share, result)
        finally:
            result.stopped = ctx.stop.is_set()
            if not result.stopped:
                with phases(ctx, "restore", "restore: every client back up"):
                    ctx.progress(Progress("restore"))
                    result.restore = restore(
                        lab, {m.name: State.ON for m in everyone}, st.restore_timeout_s, ctx.abort
                    )
            result.clients.update(excluded)
        return result

    def _copy_and_reboot(
        self,
        lab: LabSession,
        ctx: CellContext,
        everyone: list[Machine],
        copiers: list[Machine],
        rebooters: list[Machine],
        share: Share,
        result: CopyRebootResult,
    ) -> None:
        clock = lab.clock
        total = len(copiers) + len(rebooters)
        done = 0
        lock = threading.Lock()
        members = {m.name for m in rebooters}

        def tick() -> None:
            nonlocal done
            with lock:
                done += 1
                d = done
            ctx.progress(Progress("copy+reboot", d, total))

        def on_event(ev: Event) -> None:
            if ev.kind == "ready" and ev.target in members:
                tick()

        start = clock.now()
        deadline = start + self.settings.cell_timeout_s
        wall_timeout = clock.to_wall_s(self.settings.cell_timeout_s) + 30.0

        def copy_one(m: Machine) -> ClientOutcome:
            t0 = clock.now()
            try:
                copied = lab.files.copy(
                    m,
                    *copy_paths(self.copy_path, m.name, share),
                    timeout_s=wall_timeout,
                    action=f"copy 512 MB ({self.copy_path.value})",
                )
            except EndpointError as exc:
                tick()
                return ClientOutcome(name=m.name, role="copier", outcome="copy_failed", detail=str(exc))
            t1 = clock.now()
            tick()
            ok, detail = copied.ok, copied.detail
            return ClientOutcome(
                name=m.name,
                role="copier",
                outcome="copied" if ok else "copy_failed",
                copy_s=t1 - t0 if ok else None,
                sent_ts_s=t0,
                detail=detail,
            )

        unsubscribe = lab.timeline.subscribe(on_event)
        watch = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reboot-watch")
        pool = ThreadPoolExecutor(max_workers=max(1, len(copiers)), thread_name_prefix="copy")
        watching: Future[dict[str, Readiness]] | None = None
        copying: list[Future[ClientOutcome]] = []
        report = None
        try:
            ctx.progress(Progress("copy+reboot", 0, total))
            # Watch the rebooters before the reboot goes out: dispatching a group over SSH can take
            # longer (in lab time, on a fast simulated clock) than a client needs to go down and come
            # back, and a reboot is only seen if the client is seen down first.
            if rebooters:
                watching = watch.submit(
                    lab.wait_ready, rebooters, deadline=deadline, expect_boot=True, stop=ctx.stop
                )
            copying = [pool.submit(copy_one, m) for m in copiers]
            report = lab.power.reboot([m.name for m in rebooters]) if rebooters else None
            result.actions = report.group_actions() if report is not None else []
            # wait in slices: an interrupt ends the wait at its next poll (the copies' sessions end
            # with the restore that follows, or with the session)
            pending: set[Future[Any]] = {*copying, *([watching] if watching else [])}
            while pending and not ctx.stop.is_set():
                _, pending = wait(pending, timeout=clock.to_wall_s(POLL_LAB_S), return_when=FIRST_EXCEPTION)
            if watching is not None and ctx.stop.is_set():  # a stopped watch returns at its next poll
                wait([watching], timeout=5.0)
        finally:
            unsubscribe()
            finished = not ctx.stop.is_set()
            watch.shutdown(wait=finished, cancel_futures=not finished)
            pool.shutdown(wait=finished, cancel_futures=not finished)
        result.window = Window(start_ts_s=start, end_ts_s=clock.now())
        stopped = ctx.stop.is_set()

        def outcome(f: Future[Any]) -> Any:  # everything, unless interrupted: then what finished
            return f.result() if not stopped else (f.result() if f.done() and not f.exception() else None)

        readiness: dict[str, Readiness] = (outcome(watching) if watching is not None else None) or {}
        copies = [c for c in (outcome(f) for f in copying) if c is not None]
        devices: dict[str, Any] = {}
        errors: dict[str, str] = {}
        if not stopped:
            # clients that did not reboot stay up, as do the rebooters once back: nobody else powers them
            expected = {m.name: Goal.ON for m in everyone if m.name not in members}
            expected.update({n: Goal.ON for n, r in readiness.items() if r.ready})
            lab.strategy.unexpected(expected)  # a power.unexpected event each: the runner fails the cell
            if rebooters:
                devices, errors = lab.power.device_status()
        result.unread = dict(errors)
        clients = {c.name: c for c in copies}
        clients.update(
            client_outcomes(
                rebooters,
                readiness,
                devices,
                start,
                role="rebooter",
                power=report,
                unread=unread_servers(errors),
            )
        )
        result.clients = clients


def _wait_quiet(
    lab: LabSession, ctx: CellContext, st: CopyRebootSettings, entities: dict[str, str]
) -> float | None:
    """Wait (lab time) until every streaming-server counter in ``st.quiet`` (and the write-cache
    disk's queue) stays below its limit for ``quiet_hold_s`` after every client is up, judged on
    what the recorder has recorded in this cell; returns the lab time it went quiet, or None at the
    deadline or a stop. (Quiet before the last client came up does not count: the storm has not
    passed until the clients are up and the server has been quiet since.)"""
    clock = lab.clock
    up_at = clock.now()
    deadline = up_at + st.settle_timeout_s
    servers = {m.name for m in lab.streaming_servers}
    wc = entities.get("write_cache_disk")
    limits = st.quiet.model_dump()
    while not ctx.stop.is_set():
        now = clock.now()
        quiet_since = now - st.quiet_hold_s
        ok = True
        seen = False
        for metric, limit in limits.items():
            for s in ctx.series(source="typeperf", metric=metric):
                if s.entity.split("/", 1)[0] not in servers and s.entity != wc:
                    continue
                recent = s.window(quiet_since, None)
                if len(recent) == 0 or s.ts[0] > quiet_since:
                    ok = False  # not enough history yet
                    continue
                seen = True
                if max(recent.values) > limit:
                    ok = False
        if ok and seen and now - up_at >= st.quiet_hold_s:
            return now
        if now >= deadline:
            return None
        clock.sleep(max(POLL_LAB_S, st.quiet_hold_s / 6), ctx.stop)
    return None

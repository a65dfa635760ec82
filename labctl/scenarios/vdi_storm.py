"""A VSI-style storm on a virtual desktop pool (the 2012 paper's tests): boot, login, steady, logoff.

One cell, phases on one timeline, each selectable (``phases``):

1. **prepare**: every desktop of the cell off (the lab's strategy), so every boot is a boot and no
   session is left over; the launchers greeted (reachable, protocol, cursor).
2. **boot**: the pre-booted share (``prebooted_pct``, the first of a seeded shuffle, as a pooled
   broker picks them) powered on through vCenter, in one PowerOnMultiVM (``boot_mode: batched``)
   or at ``boot_rate_per_s``; the phase lasts until they are up (Tools and IP) plus
   ``boot_settle_s`` (services and the broker agent: the boot storm goes on after the guest is up).
   Without a boot phase they are booted in *prepare*, unmeasured.
3. **idle**: ``idle_s`` with the desktops idle (the paper waited 20 minutes after registration).
4. **login**: users arrive through the launchers (``login_pace``: at ``login_interval_s``, 0 = all at
   once, or as launchers free up); desktops off are booted on demand for them
   (:mod:`labctl.scenarios.vdi_sessions`).
5. **steady**: the sessions run their workload for ``steady_s``.
6. **logoff**: every session logs off.
7. **restore** (always): the desktops back to off.

Measured around it by the runner: the arrays (per volume / tier / controller) and the hosts
(vCenter); by the scenario: the sessions (logons, timed operations). The result derives per phase
the arrays' figures (:mod:`labctl.scenarios.vdi_derive`), the response-time index
(:mod:`labctl.records.rt_index`) and each desktop's user-experience band.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from labctl.errors import BadInputError, LabctlError
from labctl.inventory.model import Lab
from labctl.inventory.vdi import ProvisioningKind, VdiLab, WriteCacheMode
from labctl.lab.launchers import Launchers, SessionState, open_launchers
from labctl.lab.power import PowerReport, State
from labctl.lab.session import LabSession
from labctl.lab.strategy import Goal
from labctl.lab.vdi_state import read_vdi_state
from labctl.records import rt_index
from labctl.records.run_record import (
    CellSummary,
    ClientOutcome,
    IndexPoint,
    PhaseFigures,
    ResponseIndex,
    Window,
)
from labctl.scenarios import vdi_derive as D
from labctl.scenarios import vdi_logons
from labctl.scenarios import vdi_metrics as M
from labctl.scenarios.base import CellContext, CellHead, Progress, Scenario
from labctl.scenarios.breakoff import LAB_ERRORS, StaysUnreadable, break_off
from labctl.scenarios.common import Phases, StormResult, restore
from labctl.scenarios.settings import (
    RESTORE_FAILURE_HELP,
    Count,
    LabSeconds,
    RestoreFailure,
    SampleInterval,
    Settings,
)
from labctl.scenarios.vdi_sessions import (
    LAUNCHER_UNREADABLE_S,
    TERMINAL,
    LoginStorm,
    Pacing,
    SessionBook,
    clean_leftover_sessions,
    describe_leftovers,
    leave_no_session,
    log_off,
    work,
)

PhaseName = Literal["boot", "idle", "login", "steady", "logoff"]
PHASES: tuple[PhaseName, ...] = ("boot", "idle", "login", "steady", "logoff")
ROLE = "desktop"
# View Planner's split: interactive operations (group A, judged at 1 s) and those that wait for I/O
# (group B, 6 s). Operations not named here count in `all` only.
DEFAULT_GROUPS = {
    "ie_browse": "A",
    "freemind_edit": "A",
    "word_type": "A",
    "excel_sort": "A",
    "ie_open": "B",
    "pdf_open": "B",
    "pdf_print": "B",
    "flash_play": "B",
    "outlook_open": "B",
    "ppt_slideshow": "B",
    "zip_compress": "B",
    "video_play": "B",
}


class IndexSettings(Settings):
    """The response-time index's parameters (docs/response-time-index.md)."""

    sample_s: LabSeconds = Field(60.0, description="lab seconds per index sample")
    min_ops_per_sample: Count = Field(5, description="a sample with fewer operations joins the next")
    reference_quantile: float = Field(0.10, ge=0.0, le=0.5, description="an operation's reference quantile")
    baseline_samples: Count = Field(15, description="the lowest samples the baseline is taken from")
    baseline_outliers: int = Field(2, ge=0, le=100, description="of those, the very lowest dropped")
    threshold_s: LabSeconds = Field(1.0, description="saturated above baseline + this, s")
    consecutive: Count = Field(3, description="samples in a row above the limit")
    good_within_s: LabSeconds = Field(0.5, description="a desktop is good up to baseline + this, s")
    fair_within_s: LabSeconds = Field(1.0, description="fair up to baseline + this; poor above")

    def params(self) -> rt_index.IndexParams:
        return rt_index.IndexParams(**self.model_dump())


class VdiStormSettings(Settings):
    """How a VDI storm cell runs (``testplans/vdi_storm.params.yaml``)."""

    pool: str | None = Field(None, description="the desktop pool (default the lab's first pool)")
    desktops: Count | None = Field(None, description="the first N desktops of the pool (default all)")
    phases: list[PhaseName] = Field(list(PHASES), min_length=1, description="the phases to run, in order")
    workload: str | None = Field(None, description="task, knowledge or power (default the pool's)")
    boot_mode: Literal["batched", "rate"] = Field("batched", description="one PowerOnMultiVM, or at a rate")
    boot_rate_per_s: float = Field(3.0, gt=0, le=1000, description="boot_mode rate: power-ons per lab second")
    boot_timeout_s: LabSeconds = Field(1800.0, description="the pre-booted desktops up by then")
    boot_settle_s: LabSeconds = Field(300.0, description="after the last is up: services, broker agent")
    idle_s: float = Field(1200.0, ge=0, le=86400, description="idle before the logons (paper: 20 minutes)")
    login_pace: Literal["rate", "launchers"] = Field(
        "rate", description="users at an interval, or per launcher"
    )
    login_interval_s: float = Field(
        1.0, ge=0, le=3600, description="rate: lab seconds between users (0: at once)"
    )
    login_timeout_s: LabSeconds = Field(7200.0, description="every user logged on by then")
    retry_s: LabSeconds = Field(15.0, description="a refused start is tried again after this")
    first_try_s: LabSeconds = Field(60.0, description="a desktop booted for a user: first start after this")
    broker_power_per_min: Count = Field(10, description="desktops the broker powers on per minute")
    steady_s: float = Field(3600.0, ge=0, le=86400, description="steady state, lab seconds")
    steady_settle_s: float = Field(
        900.0, ge=0, le=86400, description="first part of steady left out of its figures (first loops)"
    )
    logoff_timeout_s: LabSeconds = Field(600.0, description="every session logged off by then")
    user_prefix: str = Field(
        "vsi-user-", min_length=1, max_length=32, description="user names: prefix + number"
    )
    session_poll_s: LabSeconds = Field(20.0, description="how often the launchers are asked for news")
    launcher_unreadable_s: LabSeconds = Field(
        LAUNCHER_UNREADABLE_S,
        description="a launcher failing every read this many lab seconds breaks the login or steady "
        "phase off (a lab fault naming it); its desktops are not measured from its first failed read",
    )
    login_poll_s: LabSeconds = Field(
        5.0,
        description="the same while users log on: with login_pace launchers a launcher's next user "
        "starts when the last is seen on, so a long poll slows the storm (Login VSI's launchers know at once)",
    )
    operation_groups: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_GROUPS))
    index: IndexSettings = Field(default_factory=IndexSettings)
    seed: int = Field(2012, description="the broker's random order of desktops")
    prepare_timeout_s: LabSeconds = Field(900.0, description="every desktop off, lab seconds")
    restore_timeout_s: LabSeconds = Field(900.0, description="the restore, lab seconds")
    restore_failure: RestoreFailure = Field("lab_fault", description=RESTORE_FAILURE_HELP)
    poll_interval_s: SampleInterval = Field(
        10.0, description="lab seconds between reads of arrays and vCenter"
    )
    sample_interval_s: SampleInterval = Field(5.0, description="typeperf interval (servers, if any)")

    def lab_problems(self, lab: Lab) -> list[str]:
        vdi = lab.vdi
        if vdi is None or not vdi.pools:
            return ["pool: the lab has no virtual desktop pools (vdi.pools in the inventory)"]
        pool = self.pool or next(iter(vdi.pools))
        if pool not in vdi.pools:
            return [f"pool: {pool!r} is not a pool of {lab.name} (pools: {', '.join(vdi.pools)})"]
        n = len(vdi.pools[pool].desktops)
        if self.desktops is not None and self.desktops > n:
            return [f"desktops: {self.desktops}, but pool {pool!r} has {n} (choose at most {n})"]
        if "login" in self.phases and not [ln for ln in vdi.launchers if ln.pool == pool]:
            return [f"phases: login needs launchers for pool {pool!r} (vdi.launchers in the inventory)"]
        return []


def cell_desktops(lab: Lab, st: VdiStormSettings, arrays: int | None = None) -> list[str]:
    """The cell's desktops: the pool's (its first ``desktops``), or with ``arrays`` those whose
    disks are on the first ``arrays`` arrays of the inventory (the scale-out cells)."""
    vdi = lab.vdi
    if vdi is None:
        raise BadInputError(f"lab {lab.name}: no vdi: section")
    pool = vdi.pools[st.pool or next(iter(vdi.pools))]
    names = list(pool.desktops)
    if arrays is not None:
        keep = set(list(vdi.arrays)[:arrays])
        names = [d for d in names if vdi.datastores[vdi.placement[d][2]].array in keep]
    return names[: st.desktops] if st.desktops is not None else names


def _table7_pool(vdi: VdiLab, result: VdiStormResult) -> bool:
    """The cell's desktops are what the 2012 paper's table 7 characterises: task workers streamed
    by PVS with the write cache on the device's disk."""
    pool = vdi.pool_of(result.desktops[0]) if result.desktops else None
    workload = result.settings.workload or (pool.workload if pool is not None else "")
    prov = pool.provisioning if pool is not None else None
    return (
        prov is not None
        and prov.kind is ProvisioningKind.PVS
        and prov.write_cache is WriteCacheMode.DEVICE_DISK
        and workload == "task"
    )


def array_outcomes(lab: Lab, arrays: list[str]) -> dict[str, ClientOutcome]:
    """Each array's spare capacity: its tiers' usable capacity (after RAID, spares out) against what
    the inventory's datastores on it allocate (the 2012 paper's 84.8 % used, 15.2 % free)."""
    vdi = lab.vdi
    out: dict[str, ClientOutcome] = {}
    if vdi is None:
        return out
    for a in arrays:
        usable = sum(t.usable_gb for t in vdi.arrays[a].tiers) if a in vdi.arrays else 0.0
        used = sum(ds.capacity_gb for ds in vdi.datastores.values() if ds.array == a)
        spare = 100.0 * (1.0 - used / usable) if usable > 0 else None
        out[a] = ClientOutcome(
            name=a,
            role="array",
            outcome="measured",
            spare_capacity_pct=spare,
            detail=f"{used:,.0f} of {usable:,.0f} GB allocated to datastores",
        )
    return out


@dataclass(kw_only=True)
class VdiStormResult(StormResult):
    settings: VdiStormSettings  # type: ignore[assignment]
    prebooted_pct: float
    desktops: list[str] = field(default_factory=list)
    users: int = 0
    arrays: list[str] = field(default_factory=list)
    booted_in_boot: int = 0
    on_demand: int = 0
    figures: list[PhaseFigures] = field(default_factory=list)
    index: rt_index.IndexResult | None = None
    book: SessionBook | None = None
    # per launcher the correction its times got onto the controller's clock (lab/launchers/clock.py)
    launcher_clocks: dict[str, float | int | str | bool | None] = field(default_factory=dict)
    login_failures: list[str] = field(default_factory=list)
    logoff_failed: list[str] = field(
        default_factory=list
    )  # sessions that did not log off, launchers not told
    lab_state: list[str] = field(
        default_factory=list
    )  # what vCenter says is wrong: hosts, datastores, desktops
    leftover_sessions: int = 0  # sessions an earlier run left on the launchers, logged off in prepare
    found_on: int = 0  # desktops on before the cell, powered off in prepare

    def figure(self, phase: str, array: str = "") -> PhaseFigures | None:
        return next((f for f in self.figures if f.phase == phase and f.array == array), None)

    def criteria_variables(self) -> dict[str, Any]:
        return {"desktops": len(self.desktops), "sessions": self.users, "arrays": len(self.arrays)}

    def lab_faults(self) -> list[str]:
        """What the lab did that the desktops' figures cannot answer for, each naming the thing: the
        hosts, datastores and stunned desktops vCenter reports first (the cause), then logons the
        launchers report failed, sessions that did not log off, launchers that could not be read."""
        faults = [*self.lab_state, *super().lab_faults()]
        failed = self.failed_logons()
        if failed:
            names = sorted(failed)
            more = f" and {len(names) - 5} more" if len(names) > 5 else ""
            faults.append(
                f"logon failed on {len(names)} desktop(s) ({', '.join(names[:5])}{more}): {failed[names[0]]}"
            )
        if self.logoff_failed:
            more = f" (and {len(self.logoff_failed) - 3} more)" if len(self.logoff_failed) > 3 else ""
            faults.append(f"logoff: {'; '.join(self.logoff_failed[:3])}{more}")
        if self.book is not None and self.book.poll_errors:
            name, why = next(iter(self.book.poll_errors.items()))
            faults.append(f"launcher {name} could not be read: {why}")
        running = [e for e in (self.book.foreign.values() if self.book else ()) if e.state not in TERMINAL]
        if running:
            faults.append(f"the launchers ran {describe_leftovers(running)} during the storm (not counted)")
        return faults

    def failed_logons(self) -> dict[str, str]:
        """Desktop -> why, for every logon its launcher reported failed (the desktop rejected the
        user, the session broke): a lab fault, unlike a user who found no desktop in time."""
        if self.book is None:
            return {}
        return {
            e.desktop: e.reason or "the launcher reports the logon failed"
            for e in self.book.latest.values()
            if e.state is SessionState.FAILED
        }

    def extra(self) -> dict[str, float | int | str | bool | None]:
        out: dict[str, float | int | str | bool | None] = {
            "desktops": len(self.desktops),
            "sessions": self.users,
            "prebooted_pct": self.prebooted_pct,
            "booted_on_demand": self.on_demand,
            "failed_sessions": len(self.login_failures),
            "leftover_sessions": self.leftover_sessions,
            "desktops_found_on": self.found_on,
        }
        for f in self.figures:
            if not f.array and f.iops_per_desktop is not None:
                out[f"{f.phase}_iops_per_desktop"] = round(f.iops_per_desktop, 3)
                out[f"{f.phase}_iops_peak"] = round(f.iops_peak or 0.0, 1)
        if self.index is not None:
            out["index_baseline_s"] = self.index.baseline_s
            out["saturation_sessions"] = self.index.saturation_sessions
        if self.book is not None:  # the logon waterfall: p50/p95 per phase, unmeasured ones with why
            out.update(vdi_logons.percentiles(self.book.logons.values()))
        out.update(self.launcher_clocks)
        return out

    def summary(self, head: CellHead) -> CellSummary:
        s = super().summary(head)
        idx = self.index
        ri = None
        if idx is not None:
            bands = list(idx.bands.values())
            ri = ResponseIndex(
                baseline_s=idx.baseline_s,
                threshold_s=idx.params.threshold_s,
                saturation_sessions=idx.saturation_sessions,
                saturation_ts_s=idx.saturation_ts,
                sessions_max=max((p.sessions for p in idx.samples), default=0),
                good=sum(b is rt_index.UxBand.GOOD for b in bands),
                fair=sum(b is rt_index.UxBand.FAIR for b in bands),
                poor=sum(b is rt_index.UxBand.POOR for b in bands),
                **self._unmeasured(s),
                parameters={k: float(v) for k, v in vars(idx.params).items()},
                references_s=idx.references_s,
                points=[
                    IndexPoint(ts_s=p.ts, sessions=p.sessions, value_s=p.value_s, ops=p.ops)
                    for p in idx.samples
                ],
            )
        return s.model_copy(update={"phase_figures": self.figures, "response_index": ri})

    def _unmeasured(self, s: CellSummary) -> dict[str, Any]:
        """The response index's desktops not measured to the end (their launcher stopped answering),
        from when (lab seconds after the storm began) and why: counted apart, never good."""
        lost = self.book.unmeasured() if self.book is not None else {}
        if not lost or self.book is None:
            return {}
        t0 = s.storm_start_ts_s or 0.0  # the window's start: the storm's time zero
        return {
            "unmeasured": len(lost),
            "unmeasured_from_s": round(min(lost.values()) - t0, 1),
            "unmeasured_why": self.book.unreadable.describe(),
        }


class VdiStorm(Scenario):
    """See the module docstring."""

    name = "vdi_storm"
    title = "VDI storm"

    def __init__(
        self,
        prebooted_pct: float,
        settings: VdiStormSettings | None = None,
        *,
        arrays: int | None = None,
        cell_params: dict[str, Any] | None = None,
    ):
        self.prebooted_pct = prebooted_pct
        self.settings = settings or VdiStormSettings()
        self.arrays = arrays
        self._params = cell_params

    def parameters(self) -> dict[str, Any]:
        return self._params if self._params is not None else {"prebooted_pct": self.prebooted_pct}

    def sample_interval_s(self) -> float:
        # typeperf's rows; the polled sources (arrays) promise poll_interval_s, what they are read at
        return self.settings.sample_interval_s

    def poll_interval_s(self) -> float:
        return self.settings.poll_interval_s

    def run(self, lab: LabSession, ctx: CellContext) -> VdiStormResult:
        st = self.settings
        vdi = lab.lab.vdi
        if vdi is None:
            raise BadInputError(
                f"lab {lab.lab.name}: no vdi: section (vdi_storm needs a virtual desktop lab)"
            )
        pool = st.pool or next(iter(vdi.pools))
        desktops = cell_desktops(lab.lab, st, self.arrays)
        order = list(desktops)
        random.Random(st.seed).shuffle(order)  # a pooled-random broker picks in no particular order
        pre = order[: round(len(order) * self.prebooted_pct / 100.0)]
        phases = Phases(lab.clock.now)
        arrays = sorted({vdi.datastores[vdi.placement[d][2]].array for d in desktops})
        result = VdiStormResult(
            settings=st,
            prebooted_pct=self.prebooted_pct,
            desktops=desktops,
            arrays=arrays,
            entities={"pool": pool, **{f"array_{k + 1}": a for k, a in enumerate(arrays)}},
            phases=phases.items,
        )
        result.clients.update(array_outcomes(lab.lab, arrays))
        workload = st.workload or vdi.pools[pool].workload
        launchers: Launchers | None = None
        start = lab.clock.now()
        try:
            with phases(ctx, "prepare", f"all {len(desktops)} desktops off; greet the launchers"):
                ctx.progress(Progress("prepare", 0, len(desktops)))
                # the launchers first: sessions an earlier run left are logged off before their
                # desktops are powered off under them
                if "login" in st.phases:
                    launchers = open_launchers(lab, pool)
                    bad = launchers.hello()
                    if bad:
                        name, why = next(iter(bad.items()))
                        result.prepare_failed = f"launcher {name}: {why}"
                    else:
                        self._no_leftovers(lab, ctx, launchers, result)
                if not result.prepare_failed:
                    prep = lab.strategy.bring(
                        desktops, Goal.OFF, timeout_s=st.prepare_timeout_s, stop=ctx.stop
                    )
                    if not prep.ok and not ctx.stop.is_set():
                        result.prepare_failed = prep.describe()
                    self._say_found_on(lab, ctx, pool, prep.report, result)
                if "boot" not in st.phases and pre and not result.prepare_failed:
                    up = lab.strategy.bring(pre, Goal.READY, timeout_s=st.boot_timeout_s, stop=ctx.stop)
                    if not up.ok and not ctx.stop.is_set():
                        result.prepare_failed = f"pre-boot: {up.describe()}"
            if result.prepare_failed or ctx.stop.is_set():
                return result
            start = lab.clock.now()
            book = SessionBook(pool, st.operation_groups)
            result.book = book
            users = [f"{st.user_prefix}{k + 1:04d}" for k in range(len(desktops))]
            for name in st.phases:
                if ctx.stop.is_set():
                    break
                if name == "boot":
                    with phases(ctx, "boot", f"boot storm: {len(pre)} desktops on ({st.boot_mode})"):
                        self._boot(lab, ctx, pre, result)
                elif name == "idle" and st.idle_s > 0:
                    with phases(ctx, "idle", f"{st.idle_s:g} s idle"):
                        ctx.progress(Progress("idle", window_left_s=st.idle_s))
                        lab.clock.sleep(st.idle_s, ctx.stop)
                elif name == "login" and launchers is not None:
                    with phases(ctx, "login", f"login storm: {len(users)} users, {st.login_pace}"):
                        storm = LoginStorm(
                            lab,
                            ctx,
                            launchers,
                            book,
                            Pacing(
                                st.login_pace,
                                st.login_interval_s,
                                st.retry_s,
                                st.first_try_s,
                                st.broker_power_per_min,
                                st.login_poll_s,
                                st.login_timeout_s,
                                st.launcher_unreadable_s,
                            ),
                            workload,
                            booted=list(pre),
                            off=[d for d in order if d not in set(pre)],
                        )
                        result.login_failures = storm.run(users)
                        result.on_demand = len(storm.powered_on)
                        result.users = len(users)
                elif name == "steady" and launchers is not None:
                    with phases(ctx, "steady", f"steady state: {st.steady_s:g} s of {workload} work"):
                        work(
                            lab,
                            ctx,
                            launchers,
                            book,
                            st.steady_s,
                            st.session_poll_s,
                            "steady",
                            st.launcher_unreadable_s,
                        )
                elif name == "logoff" and launchers is not None:
                    with phases(ctx, "logoff", "every session logs off"):
                        result.logoff_failed = log_off(
                            lab, ctx, launchers, book, st.logoff_timeout_s, st.session_poll_s
                        )
            result.window = Window(start_ts_s=start, end_ts_s=lab.clock.now())
            self._derive(lab, ctx, result)
        except LAB_ERRORS as exc:  # the lab failed the cell (vCenter died, ...): said, never lost
            break_off(result, phases, exc)
            if isinstance(exc, StaysUnreadable):  # what the launchers told before is kept: index, figures
                result.window = Window(start_ts_s=start, end_ts_s=lab.clock.now())
                self._derive(lab, ctx, result)
        finally:
            result.stopped = ctx.stop.is_set()
            if result.window is None and lab.clock.now() > start:
                result.window = Window(start_ts_s=start, end_ts_s=lab.clock.now())
            if launchers is not None:
                if result.stopped and result.book is not None:  # interrupted: no session left behind
                    result.logoff_failed = leave_no_session(
                        lab, ctx, launchers, result.book, st.logoff_timeout_s, st.session_poll_s
                    )
                result.launcher_clocks = launchers.clocks.extra()
                launchers.close()
            if not ctx.abort.is_set():  # a second interrupt: no more waiting on the lab
                result.lab_state = self._lab_state(lab, desktops)
            with phases(ctx, "restore", f"restore: the {len(desktops)} desktops off"):
                ctx.progress(Progress("restore"))
                result.restore = restore(
                    lab, {d: State.OFF for d in desktops}, st.restore_timeout_s, ctx.abort
                )
        return result

    def _no_leftovers(
        self, lab: LabSession, ctx: CellContext, launchers: Launchers, result: VdiStormResult
    ) -> None:
        """Sessions the launchers still run that this storm did not start are logged off before
        it (and said: timeline, display, the summary's ``leftover_sessions``); if they will not
        end, the storm refuses to start rather than count them as its own."""
        st = self.settings
        leftovers, stuck = clean_leftover_sessions(
            lab, ctx, launchers, st.logoff_timeout_s, st.session_poll_s
        )
        if not leftovers:
            return
        what = describe_leftovers(leftovers)
        result.leftover_sessions = len(leftovers)
        if stuck:
            result.prepare_failed = f"the launchers run {what}: {stuck}; log them off and run again"
            return
        ctx.progress(Progress("cleanup: sessions", note=f"found {what}: logged them off before the storm"))
        launchers.hello()  # the cursor after their logoff: the storm reads only what follows

    @staticmethod
    def _say_found_on(
        lab: LabSession, ctx: CellContext, pool: str, report: PowerReport | None, result: VdiStormResult
    ) -> None:
        """Desktops the prepare had to power off were on before the cell (an earlier run killed
        before its restore, someone using the pool): said, on the timeline and the summary."""
        was_on = sorted(report.outcomes) if report is not None else []
        if not was_on:
            return
        result.found_on = len(was_on)
        shown = ", ".join(was_on[:5]) + (" ..." if len(was_on) > 5 else "")
        lab.timeline.append("prepare.found_on", pool, count=len(was_on), machines=was_on[:20])
        note = f"found {len(was_on)} desktop(s) on before the storm ({shown}): powered off"
        ctx.progress(Progress("cleanup: desktops", note=note))

    @staticmethod
    def _lab_state(lab: LabSession, desktops: list[str]) -> list[str]:
        """What vCenter says is wrong with the cell's hosts, datastores and desktops now (a vCenter
        that cannot be read is named by the recorder, as a source that kept failing)."""
        try:
            return read_vdi_state(lab, desktops).faults()
        except (LabctlError, OSError) as exc:
            return [f"the desktops' state could not be read from vCenter: {exc}"]

    def _boot(self, lab: LabSession, ctx: CellContext, pre: list[str], result: VdiStormResult) -> None:
        st, clock = self.settings, lab.clock
        if not pre:
            return
        t0 = clock.now()
        ctx.progress(Progress("boot", 0, len(pre)))
        refused: dict[str, str] = {}  # desktop -> why its power-on failed (vCenter's words)
        if st.boot_mode == "batched":
            rep = lab.power.on(pre)
            result.actions.extend(rep.group_actions())
            refused.update((n, o.detail) for n, o in rep.failed.items())
        else:
            step = 1.0 / st.boot_rate_per_s
            k = 0
            while k < len(pre) and not ctx.stop.is_set():
                due = min(len(pre), int((clock.now() - t0) / step) + 1)
                if due > k:
                    rep = lab.power.on(pre[k:due])
                    result.actions.extend(rep.group_actions())
                    refused.update((n, o.detail) for n, o in rep.failed.items())
                    k = due
                clock.sleep(max(step, 1.0), ctx.stop)
        ready = lab.wait_ready(pre, deadline=t0 + st.boot_timeout_s, stop=ctx.stop)
        result.booted_in_boot = sum(1 for r in ready.values() if r.ready)
        late = [n for n, r in ready.items() if not r.ready]
        for n, r in ready.items():
            result.clients[n] = ClientOutcome(
                name=n,
                role=ROLE,
                outcome=r.state,
                time_to_ready_s=(r.at - t0) if r.at is not None else None,
                detail=refused.get(n, r.detail) if not r.ready else r.detail,
            )
        if late and not ctx.stop.is_set():  # the lab's fault (a power task failed, ...): named, with why
            # the failed power task's own error before the state seen at the deadline (the cause)
            late.sort(key=lambda n: n not in refused)
            why = refused.get(late[0]) or ready[late[0]].detail
            result.broke_off = (
                f"boot: {len(late)} of {len(pre)} desktops not up in the boot storm "
                f"(first: {late[0]}{': ' + why if why else ''})"
            )
        ctx.progress(Progress("boot", result.booted_in_boot, len(pre), window_left_s=st.boot_settle_s))
        clock.sleep(st.boot_settle_s, ctx.stop)

    # --- what the cell measured, derived ------------------------------------------------------------

    def _array(self, lab: LabSession, ctx: CellContext, array: str) -> D.ArraySeries:
        kind = lab.lab.storage[array].kind.value
        found = {}
        for metric in (M.READ_IOPS, M.WRITE_IOPS, M.READ_MB_S, M.WRITE_MB_S, M.LATENCY_MS):
            got = ctx.series(source=kind, entity=array, metric=metric)
            found[metric] = got[0] if got else None
        return D.array_series(found)

    def _derive(self, lab: LabSession, ctx: CellContext, result: VdiStormResult) -> None:
        st, vdi = self.settings, lab.lab.vdi
        assert vdi is not None
        per_array = {a: self._array(lab, ctx, a) for a in result.arrays}
        parts = [s for s in per_array.values() if s.ts]
        total = D.summed(parts, st.poll_interval_s) if len(parts) > 1 else (parts[0] if parts else None)
        series = [(a, s) for a, s in (("", total), *per_array.items()) if s is not None and s.ts]
        spans = {p.name: (p.start_ts_s, p.end_ts_s) for p in result.phases if p.end_ts_s is not None}
        if "steady" in spans:  # the first loops launch applications for the first time: left out
            s0, s1 = spans["steady"]
            spans["steady"] = (min(s0 + st.steady_settle_s, s1), s1)
        on_array = {
            a: sum(1 for d in result.desktops if vdi.datastores[vdi.placement[d][2]].array == a)
            for a in per_array
        }

        def divisor(phase: str, array: str) -> int:
            n = result.booted_in_boot if phase in ("boot", "idle") else (result.users or len(result.desktops))
            return n if not array else round(n * on_array[array] / max(len(result.desktops), 1))

        steady_mean: dict[str, float | None] = {}
        if "steady" in spans:
            for array, s in series:
                f = D.figures(s, "steady", spans["steady"], divisor("steady", array), array=array)
                steady_mean[array] = f.iops_mean
                result.figures.append(f)
        for name in PHASES:
            if name == "steady" or name not in spans:
                continue
            for array, s in series:
                result.figures.append(
                    D.figures(
                        s,
                        name,
                        spans[name],
                        divisor(name, array),
                        array=array,
                        steady_mean=steady_mean.get(array),
                    )
                )
        result.figures.sort(key=lambda f: (PHASES.index(f.phase), f.array))
        # table 7 per array, for the criteria (select: {result: ..., role: array}): the paper's figures
        # are those of task workers on PVS with the write cache on the device disk, in the storm with
        # every desktop pre-booted; other pools (another workload or provisioning) and cells with a
        # share pre-booted (a smaller boot storm, boots in the login phase) leave them out (no data)
        for a in per_array if self.prebooted_pct >= 100 and _table7_pool(vdi, result) else ():
            c = result.clients.get(a)
            if c is not None:
                result.clients[a] = c.model_copy(
                    update={
                        f"{ph}_iops_per_desktop": fig.iops_per_desktop
                        for ph in ("boot", "login", "steady")
                        if (fig := result.figure(ph, a)) is not None
                    }
                )
        self._index(result)

    def _index(self, result: VdiStormResult) -> None:
        book = result.book
        if book is None or not book.latest:
            return
        ops = [rt_index.TimedOp(o.session, o.name, o.start_ts, o.response_s) for o in book.operations]
        idx = rt_index.compute(ops, book.spans(), self.settings.index.params())
        unmeasured = book.unmeasured()  # sessions unreadable from a point: rated neither way
        if unmeasured:
            idx = dataclasses.replace(idx, bands={d: b for d, b in idx.bands.items() if d not in unmeasured})
        result.index = idx
        by_session: dict[str, int] = {}
        for o in book.operations:
            by_session[o.session] = by_session.get(o.session, 0) + 1
        for sid, e in book.latest.items():
            c = result.clients.get(e.desktop) or ClientOutcome(name=e.desktop, role=ROLE, outcome="")
            b = idx.bands.get(e.desktop)
            failed = e.state is SessionState.FAILED
            result.clients[e.desktop] = c.model_copy(
                update={
                    "role": ROLE,
                    "outcome": "login_failed" if failed else "logged_on",
                    "login_s": e.login_s if e.login_s is not None else book.login_s.get(sid),
                    "operations": by_session.get(sid, 0),
                    "response_s": idx.desktop_index_s.get(e.desktop),
                    "ux_level": b.level if b is not None else None,
                    "ux_good": int(b is rt_index.UxBand.GOOD) if b is not None else None,
                    "detail": e.reason,
                }
            )
            if e.desktop in unmeasured:
                at = unmeasured[e.desktop] - (result.window.start_ts_s if result.window else 0.0)
                result.clients[e.desktop] = result.clients[e.desktop].model_copy(
                    update={
                        "outcome": "not_measured",
                        "ux_good": None,
                        "detail": f"its session could not be read from {at:.0f} s "
                        f"({book.unreadable.describe()})",
                    }
                )
        # a user who never got a session is a failed logon too: poor, and counted among the desktops
        with_session = {e.desktop for e in book.latest.values()}
        why = result.login_failures[0] if result.login_failures else "no session"
        for d in result.desktops if result.login_failures else ():
            if d not in with_session:
                c = result.clients.get(d) or ClientOutcome(name=d, role=ROLE, outcome="")
                result.clients[d] = c.model_copy(
                    update={
                        "role": ROLE,
                        "outcome": "no_session",
                        "ux_level": rt_index.UxBand.POOR.level,
                        "ux_good": 0,
                        "detail": f"no user got a session on it ({why})",
                    }
                )

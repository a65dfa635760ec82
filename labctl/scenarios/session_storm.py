"""A storm of real sessions on desktops that are already up: logons through the lab's launchers,
steady work, logoff (issue 24). No boot phase and no power action: the desktops are the pool's as
the broker or the lab engineer left them (a Horizon or Citrix pool in use, an RDP farm, the
simulated lab's booted desktops).

One cell per ``session_counts`` value: the first N desktops of the pool each get a user
(``user_format``). Phases on one timeline with the hosts (vCenter) and, where recorded, the arrays:

1. **prepare**: the launchers greeted (reachable, protocol, cursor); sessions an earlier run left
   logged off; with ``bring_up`` the desktops brought up through the lab first (unmeasured: the
   simulated lab's desktops start off), then ``boot_settle_s``.
2. **login**: users arrive through the launchers (:class:`~labctl.scenarios.vdi_sessions.LoginStorm`,
   every desktop taken as up); a session counts only once the workload inside it reports in.
3. **steady**: ``steady_s`` of the sessions' workload.
4. **logoff**: every session logs off (an interrupted storm logs off what it started, always).

The summary: per desktop its ClientOutcome (``login_s``, ``operations``, ``response_s``, the UX band,
the launcher's reason when it failed), the response-time index (:mod:`labctl.records.rt_index`), and
the logon waterfall's p50/p95 per phase with the phases no launcher could measure and why
(:mod:`labctl.scenarios.vdi_logons`); the waterfall's samples are in series.csv; per launcher the
correction its times got onto the controller's clock (``launcher_clock_*``,
:mod:`labctl.lab.launchers.clock`). A launcher failing every read for ``launcher_unreadable_s``
breaks the login or steady phase off, a lab fault naming it (:mod:`labctl.scenarios.breakoff`). Judged by
``criteria/session_storm.yaml``. The code above the connector is the same on a real pool and on the
simulated lab (its launchers answer the same protocol from the twin).

``record_sources`` names the kinds of the lab's sources the cell records (``vcenter``, ``storage``,
``typeperf``, ``pvs``, ``redfish``; default every one the lab offers): a pool measured from its
hosts only (no array API reachable from the controller) records ``[vcenter]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from labctl.errors import BadInputError
from labctl.inventory.model import Lab
from labctl.lab.launchers import Launchers, open_launchers
from labctl.lab.session import LabSession
from labctl.lab.strategy import Goal
from labctl.records.run_record import Window
from labctl.scenarios.base import CellContext, Progress
from labctl.scenarios.breakoff import LAB_ERRORS, StaysUnreadable, break_off
from labctl.scenarios.common import Phases
from labctl.scenarios.settings import LabSeconds
from labctl.scenarios.vdi_sessions import (
    LAUNCHER_UNREADABLE_S,
    LoginStorm,
    Pacing,
    SessionBook,
    leave_no_session,
    log_off,
    work,
)
from labctl.scenarios.vdi_storm import VdiStorm, VdiStormResult, VdiStormSettings, cell_desktops

SessionPhase = Literal["login", "steady", "logoff"]
SourceKind = Literal["vcenter", "storage", "typeperf", "pvs", "redfish"]


class SessionStormSettings(VdiStormSettings):
    """How a session storm cell runs (``testplans/session_storm.params.yaml``); the pacing, polling,
    index and operation groups are vdi_storm's."""

    phases: list[SessionPhase] = Field(  # type: ignore[assignment]
        ["login", "steady", "logoff"], min_length=1, description="the phases to run, in order"
    )
    user_format: str = Field(
        "vsi-user-{n:04d}",
        min_length=1,
        max_length=64,
        description="the user of the n-th desktop (from 1): a str.format template with {n}",
    )
    bring_up: bool = Field(
        False,
        description="prepare brings the cell's desktops up through the lab (vCenter) first, unmeasured; "
        "default: taken as up (a pool in use: its broker keeps them up)",
    )
    launcher_unreadable_s: LabSeconds = Field(
        LAUNCHER_UNREADABLE_S,
        description="a launcher failing every read this many lab seconds breaks the login or steady "
        "phase off (a lab fault naming it; a launcher whose clock is beyond the bound fails its reads); "
        "its desktops are not measured from its first failed read",
    )
    record_sources: list[SourceKind] | None = Field(
        None, description="kinds of the lab's sources recorded (default every one the lab offers)"
    )

    def lab_problems(self, lab: Lab) -> list[str]:
        bad = super().lab_problems(lab)
        try:
            self.user_format.format(n=1)
        except (KeyError, IndexError, ValueError) as exc:
            bad.append(f"user_format: {self.user_format!r} is not a template with {{n}} ({exc})")
        return bad


@dataclass(kw_only=True)
class SessionStormResult(VdiStormResult):
    def extra(self) -> dict[str, float | int | str | bool | None]:
        out = super().extra()
        for k in ("prebooted_pct", "booted_on_demand"):  # no boot in this plan
            out.pop(k, None)
        logged_on = sum(1 for c in self.clients.values() if c.outcome == "logged_on")
        out["logged_on"] = logged_on
        out["logged_on_share"] = round(logged_on / len(self.desktops), 3) if self.desktops else 0.0
        return out


class SessionStorm(VdiStorm):
    """See the module docstring."""

    name = "session_storm"
    title = "session storm"

    def __init__(self, sessions: int, settings: SessionStormSettings | None = None):
        st = settings or SessionStormSettings()
        super().__init__(
            100.0, st.model_copy(update={"desktops": sessions}), cell_params={"sessions": sessions}
        )
        self.settings: SessionStormSettings = st.model_copy(update={"desktops": sessions})

    def recorded_sources(self) -> frozenset[str] | None:
        rs = self.settings.record_sources
        return frozenset(rs) if rs is not None else None

    def run(self, lab: LabSession, ctx: CellContext) -> SessionStormResult:
        st = self.settings
        vdi = lab.lab.vdi
        if vdi is None:
            raise BadInputError(f"lab {lab.lab.name}: no vdi: section (session_storm needs a desktop pool)")
        pool = st.pool or next(iter(vdi.pools))
        desktops = cell_desktops(lab.lab, st)
        phases = Phases(lab.clock.now)
        result = SessionStormResult(
            settings=st,
            prebooted_pct=100.0,
            desktops=desktops,
            entities={"pool": pool},
            phases=phases.items,
        )
        workload = st.workload or vdi.pools[pool].workload
        launchers: Launchers | None = None
        start = lab.clock.now()
        try:
            with phases(ctx, "prepare", "greet the launchers"):
                ctx.progress(Progress("prepare", 0, len(desktops)))
                launchers = open_launchers(lab, pool)
                bad = launchers.hello()
                if bad:
                    name, why = next(iter(bad.items()))
                    result.prepare_failed = f"launcher {name}: {why}"
                else:
                    self._no_leftovers(lab, ctx, launchers, result)
                if st.bring_up and not result.prepare_failed:  # e.g. the simulated lab's desktops, off
                    up = lab.strategy.bring(desktops, Goal.READY, timeout_s=st.boot_timeout_s, stop=ctx.stop)
                    if not up.ok and not ctx.stop.is_set():
                        result.prepare_failed = f"bring_up: {up.describe()}"
                    elif st.boot_settle_s > 0:  # the broker agents register after the guest is up
                        lab.clock.sleep(st.boot_settle_s, ctx.stop)
            if result.prepare_failed or ctx.stop.is_set():
                return result
            start = lab.clock.now()
            book = SessionBook(pool, st.operation_groups)
            result.book = book
            users = [st.user_format.format(n=k + 1) for k in range(len(desktops))]
            for name in st.phases:
                if ctx.stop.is_set():
                    break
                if name == "login":
                    with phases(ctx, "login", f"login storm: {len(users)} users, {st.login_pace}"):
                        pacing = Pacing(
                            st.login_pace,
                            st.login_interval_s,
                            st.retry_s,
                            st.first_try_s,
                            st.broker_power_per_min,
                            st.login_poll_s,
                            st.login_timeout_s,
                            st.launcher_unreadable_s,
                        )
                        storm = LoginStorm(
                            lab, ctx, launchers, book, pacing, workload, booted=desktops, off=[]
                        )
                        result.login_failures = storm.run(users)
                        result.users = len(users)
                elif name == "steady":
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
                elif name == "logoff":
                    with phases(ctx, "logoff", "every session logs off"):
                        result.logoff_failed = log_off(
                            lab, ctx, launchers, book, st.logoff_timeout_s, st.session_poll_s
                        )
            result.window = Window(start_ts_s=start, end_ts_s=lab.clock.now())
            self._index(result)
        except LAB_ERRORS as exc:  # a launcher or vCenter died, the lab failed the cell: said, never lost
            break_off(result, phases, exc)
            if isinstance(exc, StaysUnreadable):  # what the launchers told before is kept: index, figures
                result.window = Window(start_ts_s=start, end_ts_s=lab.clock.now())
                self._index(result)
        finally:
            result.stopped = ctx.stop.is_set()
            if result.window is None and lab.clock.now() > start:
                result.window = Window(start_ts_s=start, end_ts_s=lab.clock.now())
            if launchers is not None:
                if result.book is not None and (result.stopped or result.broke_off):
                    result.logoff_failed = leave_no_session(
                        lab, ctx, launchers, result.book, st.logoff_timeout_s, st.session_poll_s
                    )
                result.launcher_clocks = launchers.clocks.extra()
                launchers.close()
        return result

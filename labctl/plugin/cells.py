"""The bodies of the 2007 plan cells, shared by the boot-storm, copy/reboot and HA plans.

Each runs one scenario engine inside a :class:`~labctl.plugin.plan_fixtures.Cell` (recorder,
Allure steps, progress), records what the engine measured, writes the cell summary and judges
the plan's criteria. The plans themselves only choose parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from labctl.inventory.model import Machine
from labctl.lab.power import State
from labctl.lab.session import LabSession
from labctl.plugin.environment import LabEnvironment
from labctl.plugin.plan_fixtures import Cell
from labctl.plugin.plans import PlanParams
from labctl.report import allure_helpers as A
from labctl.scenarios.base import Progress
from labctl.scenarios.boot_storm import BootStormResult, run_boot_storm
from labctl.scenarios.common import ClientBoot, LabFaultError, ensure_off
from labctl.scenarios.copy_reboot import CopyPath, CopyRebootResult, run_copy_reboot, split_groups

# What "the storm has passed" means for the copy/reboot matrix: every streaming-server counter
# below these for `hold_s` lab seconds (idle in the 2007 lab is a few % CPU, a queue below 1).
QUIET_DEFAULT = {"cpu_pct": 25.0, "disk_queue_len": 2.0, "nic_sent_util_pct": 15.0}


def _clients(session: LabSession, params: PlanParams, needed: int) -> list[Machine]:
    clients = session.machines(params["clients"])
    if needed > len(clients):
        pytest.skip(
            f"the cell needs {needed} clients but group {params['clients']!r} of {session.lab.name} has "
            f"{len(clients)} (choose smaller sizes with --param, or another --lab)"
        )
    return clients


def _write_cache_disk(session: LabSession) -> str | None:
    cfg = session.lab.configuration
    if cfg is None:
        return None
    m = session.lab.machines.get(cfg.write_cache_server)
    vols = m.server_hardware.volumes if m and m.server_hardware else ()
    drive = next((v.drive for v in vols if v.name == cfg.write_cache_volume), None)
    return f"{m.name}/{drive}" if m and drive else None


def _record_boots(cell: Cell, boots: Sequence[ClientBoot], end_ts: float) -> None:
    """Each client's boot time, retries and time-to-ready as ``result`` samples stamped ``end_ts``."""
    for c in boots:
        cell.record(c.name, "boot_time_s", "s", c.boot_time_s, end_ts)
        cell.record(c.name, "retries", "requests", c.retries, end_ts)
        cell.record(c.name, "time_to_ready_s", "s", c.time_to_ready_s, end_ts)


def _boot_summary(c: ClientBoot) -> dict[str, Any]:
    """How one client's boot goes into the cell summary."""
    return {
        "boot_time_s": c.boot_time_s,
        "retries": c.retries,
        "ready": c.outcome == "ready",
        "time_to_ready_s": c.time_to_ready_s,
        "outcome": c.outcome,
        "detail": c.detail,
    }


def boot_storm_cell(
    plan_cell: Callable[..., Any],
    lab_env: LabEnvironment,
    params: PlanParams,
    group_size: int,
    configuration: str | None = None,
    *,
    criteria: str = "boot_storm",
) -> BootStormResult:
    window_s = float(params["window_s"])
    with plan_cell(
        "boot storm",
        configuration=configuration,
        interval_s=float(params["sample_interval_s"]),
        window_s=window_s,
        criteria=criteria,
        group_size=group_size,
    ) as cell:
        session = lab_env.session(configuration)
        clients = _clients(session, params, group_size)
        group = clients[:group_size]
        with A.step(f"bring all {len(clients)} clients to S5 and check it"):
            ensure_off(session, clients)
        with A.step(f"wake {group_size} clients at once; sample the {window_s:g} s window"):
            result = run_boot_storm(
                session,
                group,
                window_s=window_s,
                ready_timeout_s=float(params["ready_timeout_s"]),
                progress=cell.progress,
            )
        # read at the end of the window: stamped inside it
        _record_boots(cell, result.clients, result.window_end_ts)
        with A.step(f"restore: the {group_size} clients back to S5"):
            cell.progress(Progress("restore"))
            ensure_off(session, group)
        summary = {
            "cell": cell.cell_id,
            "plan": cell.plan,
            "scenario": "boot_storm",
            "configuration": lab_env.configuration,
            "group_size": group_size,
            "window_s": window_s,
            "storm_start_ts_s": result.storm_start_ts,
            "wake_spread_s": result.wake_spread_s,
            "server": session.streaming_servers[0].name if session.streaming_servers else None,
            "write_cache_disk": _write_cache_disk(session),
            "never_ready": result.never_ready,
            "clients": {c.name: _boot_summary(c) for c in result.clients},
        }
        cell.finish(
            summary,
            window=(result.storm_start_ts, result.window_end_ts),
            expected={"clients": [m.name for m in group]},
        )
    return result


def _boot_everyone(session: LabSession, clients: list[Machine], timeout_s: float) -> list[str]:
    """Power on every client that is off and wait until all are up; returns those that never came."""
    states = session.power.state([m.name for m in clients])
    off = [n for n, s in states.items() if s.state is State.OFF]
    if off:
        session.power.on(off)
    ready = session.wait_ready(clients, timeout_s=timeout_s)
    return [n for n, r in ready.items() if not r.ready]


def _wait_quiet(
    cell: Cell, session: LabSession, thresholds: dict[str, float], hold_s: float, timeout_s: float
) -> float | None:
    """Wait (lab time) until every streaming-server counter in ``thresholds`` stays below its limit
    for ``hold_s``; returns the lab time it went quiet, or None at the deadline."""
    clock = session.clock
    deadline = clock.now() + timeout_s
    servers = {m.name for m in session.streaming_servers}
    wc = _write_cache_disk(session)
    while True:
        now = clock.now()
        quiet_since = now - hold_s
        ok = True
        seen = False
        for metric, limit in thresholds.items():
            for s in cell.recorder.series(cell=cell.cell_id, source="typeperf", metric=metric):
                server = s.entity.split("/", 1)[0]
                if server not in servers and s.entity != wc:
                    continue
                recent = s.window(quiet_since, None)
                if len(recent) == 0 or s.ts[0] > quiet_since:
                    ok = False  # not enough history yet
                    continue
                seen = True
                if max(recent.values) > limit:
                    ok = False
        if ok and seen:
            return now
        if now >= deadline:
            return None
        clock.sleep(max(5.0, hold_s / 6))


def copy_reboot_cell(
    plan_cell: Callable[..., Any],
    lab_env: LabEnvironment,
    params: PlanParams,
    split: list[int] | tuple[int, int],
    copy_path: str,
    configuration: str | None = None,
    *,
    criteria: str = "copy_reboot",
) -> CopyRebootResult:
    copiers_n, rebooters_n = int(split[0]), int(split[1])
    path = CopyPath(copy_path)
    with plan_cell(
        "copy/reboot",
        configuration=configuration,
        interval_s=float(params["sample_interval_s"]),
        criteria=criteria,
        copiers=copiers_n,
        rebooters=rebooters_n,
        copy_path=path.value,
    ) as cell:
        session = lab_env.session(configuration)
        clients = _clients(session, params, copiers_n + rebooters_n)
        copiers, rebooters = split_groups(clients, copiers_n, rebooters_n)
        share = session.lab.configuration.share if session.lab.configuration else None
        if share is None:
            pytest.skip(
                f"{session.lab.name}: the configuration names no share for the copy paths (add share:)"
            )
        with A.step(f"boot all {len(clients)} clients and let the storm pass"):
            cell.progress(Progress("boot all", 0, len(clients)))
            never = _boot_everyone(session, clients, float(params["boot_all_timeout_s"]))
            if never:
                raise LabFaultError(
                    f"{len(never)} client(s) never came up before the matrix: {', '.join(never[:10])}", never
                )
            cell.progress(Progress("settle"))
            quiet_at = _wait_quiet(
                cell,
                session,
                dict(params.get("quiet", QUIET_DEFAULT)),
                30.0,
                float(params["settle_timeout_s"]),
            )
            session.timeline.append("settle", "servers", quiet_at=quiet_at, timed_out=quiet_at is None)
        with A.step(f"{copiers_n} clients copy 512 MB {path.value} while {rebooters_n} reboot"):
            result = run_copy_reboot(
                session,
                copiers,
                rebooters,
                path,
                share,
                timeout_s=float(params["cell_timeout_s"]),
                progress=cell.progress,
            )
        for c in result.copiers:
            cell.record(c.name, "copy_s", "s", c.copy_s, result.end_ts)
        _record_boots(cell, result.rebooters, result.end_ts)
        clients_summary: dict[str, dict[str, Any]] = {
            c.name: {"role": "copier", "copy_s": c.copy_s, "ok": c.ok, "detail": c.detail}
            for c in result.copiers
        }
        for r in result.rebooters:
            clients_summary[r.name] = {"role": "rebooter", **_boot_summary(r)}
        summary = {
            "cell": cell.cell_id,
            "plan": cell.plan,
            "scenario": "copy_reboot",
            "configuration": lab_env.configuration,
            "copiers": copiers_n,
            "rebooters": rebooters_n,
            "copy_path": path.value,
            "storm_start_ts_s": result.start_ts,
            "window_s": result.end_ts - result.start_ts,
            "back_to_baseline_ts_s": quiet_at,
            "reboot_spread_s": result.reboot_spread_s,
            "server": session.streaming_servers[0].name if session.streaming_servers else None,
            "write_cache_disk": _write_cache_disk(session),
            "never_ready": result.never_ready,
            "failed_copies": result.failed_copies,
            "clients": clients_summary,
        }
        cell.finish(
            summary,
            window=(result.start_ts, result.end_ts),
            expected={"copiers": [m.name for m in copiers], "rebooters": [m.name for m in rebooters]},
        )
    return result

"""Run folders built from the typed run record, for the store and comparison tests.

    path = make_run(tmp_path / "results", seed=3)                       # a boot storm, 5 cells
    path = make_run(..., seed=4, write_cache_spindles=2)                # a real regression
    path = make_run(..., seed=5, faults={"boot_storm-standalone-050": "never_booted"})

Each run writes ``run.json`` (RunInfo), ``cells/<id>/summary.json`` (CellSummary with one
ClientOutcome per client and SeriesSummary metrics over the window), ``verdicts.json``
(CellVerdict) and ``series.csv``: what the recorder writes, without running the simulator.

The numbers follow a small queueing picture of the 2007 boot storm, so that a lab change moves the
right figures: every booting client writes to the write-cache RAID 10 at ``WRITE_IOPS_PER_CLIENT``;
the set serves ``spindles / 2 * SPINDLE_IOPS`` writes (RAID 10 writes twice); its utilisation ``rho``
sets the disk queue (M/M/1: rho / (1 - rho)), the disk latency, the clients' retries and a little
of their boot time. Run-to-run noise is seeded and sized as the simulated lab's quick runs showed
it: per-client boot jitter of about 1 s, a run-wide factor of 1 %, retries Poisson, and the
sampling phase of a 5 s counter against a storm lasting tens of seconds (which makes peaks move
by a quarter or more while means move little).
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from labctl.recorder.series import SERIES_COLUMNS, csv_row
from labctl.records import stats
from labctl.records.run_record import (
    Band,
    CellSummary,
    CellVerdict,
    ClientOutcome,
    CriterionVerdict,
    Gap,
    GroupAction,
    Outcome,
    RunInfo,
    SeriesSummary,
    Stamp,
    Window,
    run_outcome,
    worst,
)
from labctl.records.series import Series, iso_utc

T0 = 1_194_256_800.0  # 2007-11-05 10:00:00 UTC, lab time of night 0
WALL0 = 1_795_000_000.0  # wall clock of night 0 (2026-11-18)
DAY_S = 86_400.0
WINDOW_S = 120.0
INTERVAL_S = 5.0
WRITE_IOPS_PER_CLIENT = 2.0  # write-cache writes per booting client (I/O per second)
SPINDLE_IOPS = 140.0  # one 10K SAS drive, random I/O per second
GROUP_SIZES = (1, 5, 25, 50, 100)
SERVER, DISK, NIC = "pvs-01", "pvs-01/D:", "pvs-01/NIC 1"


def cell_id(n: int, configuration: str = "standalone") -> str:
    return f"boot_storm-{configuration}-{n:03d}"


def _burst(t: float, peak: float, tau: float, base: float) -> float:
    """A storm's counter: rises to ``peak`` at ``tau`` seconds, then decays (gamma shape)."""
    if t <= 0:
        return base
    return base + peak * (t / tau) * math.exp(1 - t / tau)


def _series(
    rng: random.Random,
    metric: str,
    entity: str,
    unit: str,
    start: float,
    peak: float,
    tau: float,
    base: float,
    noise: float,
    cut: tuple[float, float] | None = None,
) -> Series:
    phase = rng.uniform(0, INTERVAL_S)  # where the counter's samples fall in the storm
    peak *= 1 + rng.gauss(0, 0.08)  # the storm's intensity this run (arrival order, cache state)
    ts, vals = [], []
    t = phase
    while t <= WINDOW_S:
        if cut is None or not cut[0] <= t <= cut[1]:
            ts.append(start + t)
            vals.append(max(0.0, _burst(t, peak, tau, base) * (1 + rng.gauss(0, noise))))
        t += INTERVAL_S
    return Series("typeperf", entity, metric, unit, "", tuple(ts), tuple(vals))


def _summary(s: Series, window: Window) -> SeriesSummary:
    sil = stats.silences(s, INTERVAL_S, window.as_tuple())
    return SeriesSummary(
        source=s.source,
        entity=s.entity,
        metric=s.metric,
        unit=s.unit,
        samples=len(s),
        expected_interval_s=INTERVAL_S,
        coverage=stats.coverage(s, INTERVAL_S, window.as_tuple()),
        gaps=[Gap(start_ts_s=g.start_ts, end_ts_s=g.end_ts) for g in sil],
        start_ts_s=s.ts[0],
        end_ts_s=s.ts[-1],
        peak=stats.peak(s),
        peak_ts_s=stats.peak_ts(s),
        mean=stats.mean(s),
        p95=stats.p95(s),
        min=stats.minimum(s),
        last=stats.last(s),
    )


def _band(v: float | None, lo: float, hi: float) -> Outcome:
    if v is None:
        return Outcome.LAB_FAULT
    return Outcome.PASS if v <= lo else Outcome.MARGINAL if v <= hi else Outcome.FAIL


def _poisson(rng: random.Random, lam: float) -> int:
    k, p, limit = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def make_cell(
    rng: random.Random,
    n: int,
    start: float,
    *,
    spindles: int = 4,
    run_factor: float = 1.0,
    fault: str | None = None,
    configuration: str = "standalone",
) -> tuple[CellSummary, CellVerdict, list[Series]]:
    """One boot-storm cell of ``n`` clients; ``fault``: ``never_booted`` (a client never reports a
    boot time: lab fault), ``no_data`` (the disk counters go silent mid-window), ``interrupted``."""
    cell = cell_id(n, configuration)
    window = Window(start_ts_s=start, end_ts_s=start + WINDOW_S)
    capacity = spindles / 2 * SPINDLE_IOPS
    rho = min(0.95, n * WRITE_IOPS_PER_CLIENT / capacity)
    queue = rho / (1 - rho)
    tau = 4 + 0.12 * n  # seconds to the storm's peak: shorter than two sample intervals for small groups
    clients: dict[str, ClientOutcome] = {}
    for i in range(1, n + 1):
        name = f"optiplex-{i:03d}"
        boot = (30 + 0.06 * n + 8 * rho**2) * run_factor + rng.gauss(0, 1.0)
        retries = _poisson(rng, 0.05 + 6 * rho**3)
        lost = fault == "never_booted" and i == min(3, n)
        clients[name] = ClientOutcome(
            name=name,
            outcome="timeout" if lost else "ready",
            boot_time_s=None if lost else round(boot, 3),
            retries=None if lost else retries,
            time_to_ready_s=None if lost else round(boot + 15 + rng.uniform(0, 10), 3),
            detail="never reported boot_time_s" if lost else f"active on {SERVER}",
        )
    cut = (40.0, 100.0) if fault == "no_data" else None
    series = [
        _series(rng, "cpu_pct", SERVER, "%", start, min(95.0, 8 + 0.55 * n), tau, 2.0, 0.03),
        _series(rng, "disk_queue_len", DISK, "requests", start, 2.5 * queue, tau, 0.01, 0.05, cut),
        _series(rng, "disk_latency_ms", DISK, "ms", start, 7.0 / (1 - rho), tau, 0.1, 0.05, cut),
        _series(rng, "nic_sent_util_pct", NIC, "%", start, min(95.0, 0.6 * n), tau, 0.2, 0.03),
        _series(rng, "memory_used_mb", SERVER, "MB", start, 0.0, tau, 450 + 1.7 * n, 0.005),
    ]
    series = [Series(s.source, s.entity, s.metric, s.unit, cell, s.ts, s.values) for s in series]
    metrics = {m.key: m for m in (_summary(s, window) for s in series)}
    queue_mean = metrics[f"typeperf/{DISK}/disk_queue_len"].mean
    boots = [c.boot_time_s for c in clients.values() if c.boot_time_s is not None]
    worst_retries = max((c.retries for c in clients.values() if c.retries is not None), default=None)
    low_cov = min(m.coverage or 1.0 for m in metrics.values())
    criteria = [
        CriterionVerdict(
            name="write-cache disk queue",
            outcome=Outcome.NO_DATA if low_cov < 0.9 else _band(queue_mean, 2 * spindles, 10 * spindles),
            statistic="mean",
            unit="requests",
            selector=f"typeperf/{DISK}/disk_queue_len",
            observed=queue_mean,
            entity=DISK,
            pass_band=Band(max=2 * spindles, max_expr="2 * spindles(write_cache_volume)"),
            marginal_band=Band(max=10 * spindles),
            coverage=low_cov,
            message=f"mean {queue_mean:.2f} requests",
        ),
        CriterionVerdict(
            name="retries per client",
            outcome=_band(worst_retries, 10, 50) if len(boots) == n else Outcome.LAB_FAULT,
            statistic="value",
            selector="result/*/retries",
            observed=worst_retries,
            pass_band=Band(max=10),
            marginal_band=Band(max=50),
            missing=[c.name for c in clients.values() if c.boot_time_s is None],
            message="a client never reported" if len(boots) < n else f"worst {worst_retries} retries",
        ),
        CriterionVerdict(
            name="boot time per client",
            outcome=_band(max(boots), 60, 90) if len(boots) == n else Outcome.LAB_FAULT,
            statistic="value",
            unit="s",
            selector="result/*/boot_time_s",
            observed=max(boots),
            pass_band=Band(max=60),
            marginal_band=Band(max=90),
            message=f"slowest {max(boots):.1f} s",
        ),
    ]
    verdict = CellVerdict(cell=cell, outcome=worst(c.outcome for c in criteria), criteria=criteria)
    outcome = Outcome.INTERRUPTED if fault == "interrupted" else verdict.outcome
    reason = {
        Outcome.LAB_FAULT: f"optiplex-{min(3, n):03d} never reported boot_time_s",
        Outcome.NO_DATA: f"{DISK} disk counters silent from t = 40 s to t = 100 s",
        Outcome.INTERRUPTED: "interrupted: Ctrl-C during window",
    }.get(outcome, "")
    summary = CellSummary(
        cell=cell,
        plan="boot_storm",
        scenario="boot_storm",
        configuration=configuration,
        parameters={"group_size": n, "window_s": WINDOW_S},
        outcome=outcome,
        reason=reason,
        window=window,
        storm_start_ts_s=start,
        entities={"streaming_server": SERVER, "write_cache_disk": DISK},
        clients=clients,
        actions=[
            GroupAction(
                action="on",
                backend="wol-ssh",
                machines=n,
                ok=n,
                first_sent_ts_s=start,
                send_spread_s=round(0.0004 * n, 4),
                send_spread_wall_s=round(0.0004 * n / 60, 6),
                delivery_spread_s=round(0.002 * n, 4),
            )
        ],
        metrics=metrics,
    )
    return summary, verdict, series


def make_run(
    results: Path,
    *,
    seed: int,
    night: int = 0,
    lab: str = "sim-2007",
    write_cache_spindles: int = 4,
    group_sizes: tuple[int, ...] = GROUP_SIZES,
    faults: dict[str, str] | None = None,
    profile: str | None = None,
    window_s: float = WINDOW_S,
) -> Path:
    """Write a boot-storm run folder into ``results``; returns its path. ``night`` moves its start by
    days (run ids sort by it); ``seed`` draws its noise; ``profile`` and ``window_s`` are recorded
    in run.json as the plugin records them (the figures are drawn the same)."""
    rng = random.Random(seed)
    wall = WALL0 + night * DAY_S + seed % 3600
    lab_t = T0 + night * DAY_S
    stamp = iso_utc(wall)
    run_id = f"{stamp[:4]}{stamp[5:7]}{stamp[8:10]}-{stamp[11:13]}{stamp[14:16]}{stamp[17:19]}-boot_storm-{seed % 65536:04x}"
    run = Path(results) / run_id
    run_factor = 1 + rng.gauss(0, 0.01)
    cells: list[tuple[CellSummary, CellVerdict, list[Series]]] = []
    for i, n in enumerate(group_sizes):
        fault = (faults or {}).get(cell_id(n))
        cells.append(
            make_cell(
                rng, n, lab_t + i * 600, spindles=write_cache_spindles, run_factor=run_factor, fault=fault
            )
        )
    (run / "cells").mkdir(parents=True)
    for summary, verdict, _ in cells:
        folder = run / "cells" / summary.cell
        folder.mkdir()
        (folder / "summary.json").write_text(summary.model_dump_json(indent=2))
        (folder / "verdicts.json").write_text(verdict.model_dump_json(indent=2))
    with (run / "series.csv").open("w", encoding="utf-8") as f:
        f.write(",".join(SERIES_COLUMNS) + "\n")
        for _, _, series in cells:
            for s in series:
                for ts, v in zip(s.ts, s.values, strict=True):
                    f.write(",".join(csv_row(s.cell, s.source, s.entity, s.metric, s.unit, ts, v)) + "\n")
    end = lab_t + len(group_sizes) * 600
    info = RunInfo(
        run_id=run_id,
        plan="boot_storm",
        parameters=(
            {"group_sizes": list(group_sizes), "window_s": window_s}
            if profile is None
            else {
                "profile": profile,
                "plans": {
                    "boot_storm": {
                        "profile": profile,
                        "source": "testplans/boot_storm.params.yaml",
                        "values": {"group_sizes": list(group_sizes), "window_s": window_s},
                    }
                },
                "pytest_args": ["--profile", profile],
            }
        ),
        lab=lab,
        configuration="standalone",
        inventory_file="/labs/sim-2007.yaml",
        inventory_sha256="0" * 64,
        simulated=True,
        time_scale=60.0,
        labctl_version="0.1.0",
        git_commit="f" * 40,
        git_dirty=False,
        host="ci-1",
        python="3.11.7",
        started=Stamp(wall_utc=stamp, lab_time=iso_utc(lab_t), lab_ts=lab_t),
        ended=Stamp(wall_utc=iso_utc(wall + 60), lab_time=iso_utc(end), lab_ts=end),
        duration_s=60.0,
        outcome=run_outcome(s.outcome for s, _, _ in cells),
        cells=[s.cell for s, _, _ in cells],
    )
    (run / "run.json").write_text(info.model_dump_json(indent=2))
    return run

"""The 2007 boot storm in the certification: groups of clients woken at once, per configuration.

Results: a table per group size, the paper's figures (boot time and retries against the group
size, the servers' counters over time: :mod:`labctl.report.figures_storm`), the criteria matrix.
Findings: how boot time and retries grew, where a criterion left its pass band, clients that
never booted. Conclusion: the largest group that booted within every criterion (with every
smaller group too). Sizing: streaming NIC ports for the measured load and the write-cache set
from the measured boot IOPS (:mod:`labctl.sizing`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from labctl.errors import BadInputError
from labctl.records.run_record import CriterionVerdict, Outcome
from labctl.report import figures_storm
from labctl.report.certify.common import (
    OUTCOME_WORD,
    WORDS,
    band_text,
    cell_label,
    criteria_table,
    criterion_findings,
    num,
    outcome_cell,
    verdict_matrix,
    with_unit,
    words,
)
from labctl.report.certify.figures import machines_under_test, sections_as_blocks, server_title
from labctl.report.certify.model import Block, Cell, Formula, Section, Table, Text, Tone
from labctl.report.certify.registry import Context, Kind, register
from labctl.report.counters import NIC, pick
from labctl.report.run_view import CellView
from labctl.sizing import Phase, nic_ports_needed, size_from_measurements
from labctl.sizing.drives import DriveType
from labctl.sizing.from_run import run_profile

ROLE = "storm"
PASSED = (Outcome.PASS, Outcome.MARGINAL)
NIC_LIMIT_PCT = 90.0  # the NIC criterion's pass limit when the run's criteria have none (2012 paper)
RPM_DRIVE = {15000: DriveType.SAS_15K, 10000: DriveType.SAS_10K, 7200: DriveType.NL_7K2}
DRIVE_WORDS = {
    DriveType.SSD: "SSD",
    DriveType.SAS_15K: "15K rpm",
    DriveType.SAS_10K: "10K rpm",
    DriveType.NL_7K2: "7.2K rpm",
}


def clients(n: int | None) -> str:
    return "1 client" if n == 1 else f"{n} clients"


def passed(c: CellView) -> bool:
    return c.whole and c.outcome in PASSED and c.verdict is not None


def queue_criterion(c: CellView) -> CriterionVerdict | None:
    """The criterion on the write-cache volume's disk queue (found by its evidence, not its name)."""
    disk = c.entity("write_cache_disk")
    for v in c.verdict.criteria if c.verdict is not None else []:
        if any(r.metric == "disk_queue_len" and r.entity == disk for r in v.series):
            return v
    return None


def nic_criterion(c: CellView) -> CriterionVerdict | None:
    for v in c.verdict.criteria if c.verdict is not None else []:
        if any(r.metric == "nic_sent_util_pct" for r in v.series):
            return v
    return None


def by_config(cells: Sequence[CellView]) -> dict[str, list[CellView]]:
    return {
        cfg: sorted(group, key=lambda c: c.group_size or 0)
        for cfg, group in figures_storm.by_configuration(cells).items()
    }


def supported(group: Sequence[CellView]) -> tuple[CellView | None, CellView | None]:
    """(the largest cell that passed with every smaller one, the first that did not)."""
    best = None
    for c in group:
        if not passed(c):
            return best, c
        best = c
    return best, None


def _mean_max(values: list[float]) -> str:
    return f"{num(statistics.fmean(values))} / {num(max(values))}" if values else "-"


def _stat(c: CellView, entity: str | None, metric: str, *stats: str) -> str:
    m = c.metric(entity, metric) if entity else None
    if m is None:
        return "-"
    return " / ".join(num(getattr(m, s)) for s in stats)


def results_table(cells: Sequence[CellView], several: bool) -> Table:
    rows: list[list[str | Cell]] = []
    for c in cells:
        server = c.entity("streaming_server")
        picked = pick(NIC, server, [c]) if server else None
        nic = _stat(c, picked.entity, picked.metric, "peak") if picked and picked.factor == 1.0 else "-"
        wc = c.entity("write_cache_disk")
        covered = [
            m.coverage for m in c.metrics.values() if m.coverage is not None and m.source == "typeperf"
        ]
        booted = c.summary.values("boot_time_s", ROLE)
        members = c.summary.by_role(ROLE)
        row: list[str | Cell] = [c.configuration] if several else []
        row += [
            Cell(str(c.group_size), num=True),
            outcome_cell(c.outcome, OUTCOME_WORD[c.outcome] + (" (killed)" if c.provisional else "")),
            Cell(
                f"{len(booted)} of {len(members)}",
                Tone.BAD if len(booted) < len(members) else Tone.NONE,
                True,
            ),
            Cell(_mean_max(booted), num=True),
            Cell(_mean_max(c.summary.values("retries", ROLE)), num=True),
            Cell(_stat(c, server, "cpu_pct", "peak", "mean"), num=True),
            Cell(nic, num=True),
            Cell(_stat(c, wc, "disk_queue_len", "mean", "peak"), num=True),
            Cell(
                f"{min(covered) * 100:.0f}" if covered else "-",
                Tone.BAD if covered and min(covered) < 0.9 else Tone.NONE,
                True,
            ),
        ]
        rows.append(row)
    head = (["configuration"] if several else []) + [
        "clients woken",
        "outcome",
        "clients booted",
        "boot time, s (mean / slowest)",
        "retries per client (mean / most)",
        "CPU, % (peak / mean)",
        "busier NIC out, % (peak)",
        "write-cache queue, requests (mean / peak)",
        "coverage, % (lowest)",
    ]
    return Table.of(
        "Boot storm results per group size, over each cell's six-minute window",
        head,
        rows,
        note="Boot time and retries as the streaming server reports them for every client of the group. "
        "Server figures: the streaming server's CPU and busier network port (outbound) and the write-cache "
        "volume's disk queue, over the window the criteria were judged on. Coverage: the lowest share of "
        "that window with samples among the server's series (below 90 % a criterion has no data).",
    )


class BootStorm(Kind):
    key = "boot_storm"
    title = "Boot storm"

    def select(self, cells: Sequence[CellView]) -> list[CellView]:
        return figures_storm.storm_cells(cells)

    def method(self, ctx: Context, cells: Sequence[CellView]) -> list[Block]:
        sizes = sorted({c.group_size for c in cells if c.group_size is not None})
        windows = sorted(
            {float(w) for c in cells if isinstance(w := c.summary.extra.get("window_s"), int | float)}
        )
        spreads = [a.send_spread_s for c in cells for a in c.summary.actions if a.action == "on"]
        intervals = sorted(
            {
                m.expected_interval_s
                for c in cells
                for m in c.metrics.values()
                if m.source == "typeperf" and m.expected_interval_s
            }
        )
        rows = [
            ["configurations", ", ".join(by_config(cells))],
            ["group sizes (clients woken at once)", ", ".join(str(n) for n in sizes)],
            ["window per group", " / ".join(f"{num(w)} s" for w in windows) or "-"],
            ["server counters sampled every", " / ".join(f"{num(i)} s" for i in intervals) or "-"],
            [
                "wake burst: first to last packet, at most",
                f"{num(max(spreads) * 1000, 0)} ms" if spreads else "-",
            ],
        ]
        blocks: list[Block] = [
            Text(
                "Boot storm (the 2007 paper's first scenario). Before each group every client is brought to "
                "the soft-off state (ACPI S5) and checked, so no client-side cache helps. The group is woken "
                "at once by Wake-on-LAN magic packets sent in one burst, and the run waits out a fixed window "
                "while it samples the streaming server's counters (CPU, used memory, outbound network "
                "utilisation per port, disk queue of each volume). The streaming software reports each "
                "client's boot time (first network contact until the client agent starts in Windows) and its "
                "session retries (disk requests re-sent after the 200 ms UDP timeout). After the window the "
                "clients are returned to S5."
            ),
            Table.of("Boot storm parameters", ("parameter", "value"), rows),
        ]
        table = criteria_table(cells, "Acceptance criteria of each boot-storm group")
        if table is not None:
            blocks.append(table)
        return blocks

    def results(self, ctx: Context, cells: Sequence[CellView]) -> Section:
        groups = by_config(cells)
        several = len(groups) > 1
        ordered = [c for g in groups.values() for c in g]
        children = [Section("Results per group size", [results_table(ordered, several)])]
        children += sections_as_blocks(
            figures_storm.sections(ordered),
            server_title("Boot storm: "),
            machines_under_test(ctx.inputs, ordered),
        )
        label = (lambda c: f"{c.configuration} {c.group_size}") if several else (lambda c: str(c.group_size))
        matrix = verdict_matrix(
            ordered, label, "Criteria per group size: the judged value and its outcome", "clients"
        )
        if matrix is not None:
            children.append(Section("Criteria verdicts per group size", [matrix]))
        return Section(
            self.title,
            [Text("Groups of clients woken at once; one cell per group size and configuration.")],
            children,
        )

    def findings(self, ctx: Context, cells: Sequence[CellView]) -> list[str]:
        out: list[str] = []
        groups = by_config(cells)
        for cfg, group in groups.items():
            where = f" ({cfg})" if len(groups) > 1 else ""
            out += [f"{s[:-1]}{where}." for s in _trends(group)]
            out += [
                f"{s[:-1]}{where}."
                for s in criterion_findings(group, lambda c: clients(c.group_size), "groups")
            ]
            for c in group:
                missing = c.summary.never_booted(ROLE)
                if missing and c.summary.by_role(ROLE):
                    shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
                    out.append(
                        f"At {clients(c.group_size)}{where}, {clients(len(missing))} never reported a boot: {shown}."
                    )
        return out

    def conclusion(self, ctx: Context, cells: Sequence[CellView]) -> list[str]:
        out = []
        for cfg, group in by_config(cells).items():
            best, first_bad = supported(group)
            server = next(
                (c.entity("streaming_server") for c in group if c.entity("streaming_server")),
                "the streaming server",
            )
            on = f"on {server}" + (f" ({cfg})" if cfg != "lab" else "")
            if best is None:
                c = first_bad or group[0]
                why = f": {words(c.reason)}" if c.reason else ""
                out.append(
                    f"No boot-storm group passed {on}: {clients(c.group_size)} {WORDS[c.outcome]}{why}."
                )
                continue
            upto = [c for c in group if (c.group_size or 0) <= (best.group_size or 0)]
            boot = max((v for c in upto for v in c.summary.values("boot_time_s", ROLE)), default=None)
            retries = max((v for c in upto for v in c.summary.values("retries", ROLE)), default=None)
            tries = (
                "without a session retry"
                if not retries
                else f"with at most {with_unit(retries, 'retries', 0)} each"
            )
            sentence = (
                f"{clients(best.group_size)} woken at once boot within {with_unit(boot, 's')} {tries} {on}"
            )
            queues = [q for c in upto if (q := queue_criterion(c)) is not None and q.observed is not None]
            if queues:
                q = max(queues, key=lambda x: x.observed or 0.0)
                limit = band_text(q.pass_band, q.unit, expression=False).removeprefix("≤ ")
                expr = words(q.pass_band.max_expr) if q.pass_band is not None and q.pass_band.max_expr else ""
                verb = {"mean": "averages", "peak": "peaks", "max": "peaks"}.get(
                    q.statistic, f"has a {q.statistic} of"
                )
                sentence += (
                    f"; the write-cache disk queue {verb} at most {with_unit(q.observed, q.unit, 2)} "
                    f"(limit {limit}" + (f": {expr})" if expr else ")")
                )
            marginal = sorted(
                {
                    v.name
                    for c in upto
                    for v in (c.verdict.criteria if c.verdict else [])
                    if v.outcome is Outcome.MARGINAL
                }
            )
            if marginal:
                sentence += f"; marginal: {', '.join(marginal)}"
            if first_bad is not None:
                sentence += f"; the group of {clients(first_bad.group_size)} {WORDS[first_bad.outcome]}"
            out.append(sentence + ".")
        return out

    def sizing(self, ctx: Context, cells: Sequence[CellView]) -> list[Section]:
        return [s for s in (_nic_sizing(ctx, cells), _storage_sizing(ctx, cells)) if s is not None]


def _trends(group: Sequence[CellView]) -> list[str]:
    whole = [c for c in group if c.whole and c.summary.values("boot_time_s", ROLE)]
    if len(whole) < 2:
        return []
    out = []
    means = [(c, statistics.fmean(c.summary.values("boot_time_s", ROLE))) for c in whole]
    start = next((x for x in means if (x[0].group_size or 0) >= 25), means[0])
    if start is means[-1]:
        start = means[0]
    end = means[-1]
    slowest = max(end[0].summary.values("boot_time_s", ROLE))
    verb = "rose" if end[1] > start[1] + 1 else "fell" if end[1] < start[1] - 1 else "stayed near"
    if verb == "stayed near":
        out.append(
            f"Mean boot time stayed near {num(start[1])} s from {clients(start[0].group_size)} to "
            f"{clients(end[0].group_size)} (slowest client {num(slowest)} s)."
        )
    else:
        out.append(
            f"Mean boot time {verb} from {num(start[1])} s at {clients(start[0].group_size)} to {num(end[1])} s at "
            f"{clients(end[0].group_size)}; the slowest client took {num(slowest)} s."
        )
    retries = [(c, c.summary.values("retries", ROLE)) for c in whole]
    worst_c, worst_r = max(retries, key=lambda x: (max(x[1], default=0), x[0].group_size or 0))
    if not worst_r or max(worst_r) == 0:
        out.append("No client needed a session retry in any group.")
    else:
        calm = 0
        while calm < len(retries) and retries[calm][1] and max(retries[calm][1]) == 0:
            calm += 1
        lead = (
            f"No client needed a session retry up to {clients(retries[calm - 1][0].group_size)}; at "
            if calm
            else "At "
        )
        out.append(
            f"{lead}{clients(worst_c.group_size)} they averaged {num(statistics.fmean(worst_r))} session "
            f"retries each, the most {num(max(worst_r), 0)}."
        )
    server = next((c.entity("streaming_server") for c in whole if c.entity("streaming_server")), None)
    if server:
        mem = [
            (c, m)
            for c in whole
            if (m := c.metric(server, "memory_used_mb")) is not None and m.peak is not None
        ]
        if mem:
            c, m = max(mem, key=lambda x: x[1].peak or 0.0)
            out.append(f"Used memory on {server} peaked at {num(m.peak, 0)} MB, at {clients(c.group_size)}.")
    return out


def _ports(n: int) -> str:
    return "1 port" if n == 1 else f"{n} ports"


def _lab_volume(ctx: Context, c: CellView) -> dict | None:
    disk = c.entity("write_cache_disk")
    lab = ctx.inputs.lab(c.configuration)
    return lab.volume(disk) if lab is not None and disk else None


def _nic_sizing(ctx: Context, cells: Sequence[CellView]) -> Section | None:
    for cfg, group in by_config(cells).items():
        c, _ = supported(group)  # the largest group certified: sizing never speaks of a failed one
        if c is None:
            continue
        server = c.entity("streaming_server")
        picked = pick(NIC, server, [c]) if server else None
        m = c.metric(picked.entity, picked.metric) if picked is not None and picked.factor == 1.0 else None
        if server is None or m is None or m.peak is None:
            continue
        lab = ctx.inputs.lab(c.configuration)
        hw = (lab.machines.get(server, {}).get("server_hardware") or {}) if lab is not None else {}
        nics = hw.get("nics") or {}
        ports = int(nics.get("count") or 2)
        speed = f" of {num(float(nics['speed_gbps']))} Gbit/s" if nics.get("speed_gbps") else ""
        crit = nic_criterion(c)
        limit = (
            crit.pass_band.max
            if crit is not None and crit.pass_band and crit.pass_band.max
            else NIC_LIMIT_PCT
        )
        share = min(m.peak, 100.0) / 100
        result = nic_ports_needed(f"{share:.4f}", ports, f"{limit / 100:.4f}", on_ports=1)
        alone = float(result.utilisation_on(1)) * 100
        summary = Table.of(
            "Streaming network ports: the answer",
            ("quantity", "value"),
            [
                [
                    "load measured",
                    f"{num(m.peak)} % peak on the busier of {ports} ports{speed}, {clients(c.group_size)} ({cfg})",
                ],
                ["load in ports' worth", f"{num(float(result.load_ports), 2)}"],
                [
                    f"ports needed, each at most {num(limit, 0)} %",
                    Cell(f"{_ports(result.ports_needed)}{speed}", Tone.NONE),
                ],
                [
                    "one port alone would carry",
                    Cell(f"{num(alone, 0)} %", Tone.BAD if alone >= 100 else Tone.NONE),
                ],
            ],
        )
        return Section(
            "Streaming network ports",
            [
                Text(
                    f"At {clients(c.group_size)} ({cfg}) the busier of the streaming server's {ports} ports peaked at "
                    f"{num(m.peak)} % outbound, the load balanced between them as in the paper. Spread over as "
                    f"many ports as keep each under the {num(limit, 0)} % limit of the NIC criterion:"
                ),
                summary,
                Formula(tuple(result.lines()), "labctl size nic-ports: the arithmetic"),
            ],
        )
    return None


def certified(cells: Sequence[CellView]) -> tuple[str, CellView, list[CellView]] | None:
    """(configuration, its largest certified group, the groups up to it) of the first configuration
    with a certified group: what the sizing speaks of."""
    for cfg, group in by_config(cells).items():
        best, _ = supported(group)
        if best is not None:
            return cfg, best, [c for c in group if (c.group_size or 0) <= (best.group_size or 0)]
    return None


def _storage_sizing(ctx: Context, cells: Sequence[CellView]) -> Section | None:
    """The write-cache set for the load the document certifies, from what the set was measured to
    carry: the cost per client in the largest certified group, and what each of the set's drives
    carried then. So the answer agrees with the verdict (the certified group on the drives it ran
    on); a larger population scales from the same measured figures."""
    found = certified(cells)
    if found is None:
        return Section(
            "Write-cache storage",
            [
                Text(
                    "No boot-storm group is certified, so nothing is sized: sizing reads certified groups only."
                )
            ],
        )
    cfg, best, upto = found
    run = ctx.inputs.run_of(best)
    try:
        measured = run_profile(run.path, {c.id for c in upto if ctx.inputs.run_of(c) is run})
    except BadInputError as exc:
        return Section("Write-cache storage", [Text(f"Not sized from this run: {words(str(exc))}")])
    volume = _lab_volume(ctx, best)
    rpm = int(volume.get("rpm") or 0) if volume else 0
    disks = int(volume.get("disks") or 0) if volume else 0
    a = measured.array
    n = best.group_size or 1
    set_text = f"{disks} × {num(rpm / 1000, 1)}K rpm disks in {a.raid}" if disks and rpm else str(a.raid)
    per_drive = measured.profile.array.raw_iops / disks if disks else None
    result = size_from_measurements(
        measured.profile, n, iops_per_drive=per_drive, drive_raid=a.raid if per_drive is not None else None
    )
    boot = measured.chosen.get(Phase.BOOT)
    rows: list[list[str | Cell]] = [
        ["the load certified", Cell(f"{clients(n)} woken at once ({cfg})")],
    ]
    if boot is not None:
        where = next((c for c in cells if c.id == boot.cell), None)
        rows.append(
            [
                "write-cache IOPS per client while booting",
                f"{num(float(boot.iops_per_desktop), 2)} IOPS at {num(float(boot.write_share) * 100, 0)} % writes "
                f"in {cell_label(where) if where else boot.cell}",
            ]
        )
    rows.append(
        [
            "what the set carried with its queue inside its bands"
            + (" (a lower bound: it never left its pass band)" if measured.lower_bound else ""),
            f"{num(float(a.iops))} IOPS on {set_text}",
        ]
    )
    if per_drive is not None:
        rows.append(["what each drive carried then (back-end I/Os)", f"{num(float(per_drive))} IOPS"])
    rows.append(["clients per set by the measured figures", Cell(str(result.desktops_per_array))])
    if result.boot_drives is not None:
        rows.append(
            [
                f"drives for a boot storm of {clients(n)}",
                Cell(f"{result.boot_drives.drives} in {result.boot_drives.raid}"),
            ]
        )
    blocks: list[Block] = [
        Text(
            "The write-cache volume takes the clients' writes during a boot storm. The boot phase runs from the "
            "wake until the last client was ready; the volume's average IOPS over it, divided by the clients "
            f"booting, is what one client costs, taken in the largest certified group ({clients(n)}). "
            + (
                "Its reads and writes are not recorded apart, so every I/O is counted as a write (the safe side: "
                "each costs the RAID write penalty). "
                if boot is not None and boot.write_share == 1
                else ""
            )
            + "The drives are sized by what each drive of the set carried in that group (its controller's "
            "write-back cache included), so the answer is the configuration certified; a larger population "
            "scales from the same figures (labctl size measured --run RUN --desktops N)."
        ),
        Table.of("Write-cache storage: the answer", ("quantity", "value"), rows),
        Formula(tuple(result.lines()), "labctl size measured --run: the arithmetic"),
    ]
    if measured.lower_bound:
        blocks.append(
            Text(
                "The write-cache set's queue stayed inside its pass band: it was never saturated, so what it "
                "and each of its drives carried is a lower bound of what they can carry, and the drives the "
                "same figures give for more clients are an upper bound.",
                note=True,
            )
        )
    return Section("Write-cache storage", blocks)


register(BootStorm())

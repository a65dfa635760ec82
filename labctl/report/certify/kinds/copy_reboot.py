"""The 2007 copy/reboot matrix in the certification: one group copies a 512 MB file along a copy
path while another group reboots, per copiers/rebooters split and configuration.

Results: a table per cell, the paper's figures (:mod:`labctl.report.figures_matrix`: the rebooters'
boot time and retries and the copy times per split with the copy paths side by side; the servers'
counters over time for the heaviest split), the criteria matrix. Findings: where criteria left
their pass band, the copy path that slowed the rebooters most, the slowest copies.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from labctl.records.run_record import Outcome
from labctl.report import figures_matrix
from labctl.report.certify.common import (
    OUTCOME_WORD,
    criteria_table,
    criterion_findings,
    num,
    outcome_cell,
    verdict_matrix,
    with_unit,
)
from labctl.report.certify.figures import figure, machines_under_test, sections_as_blocks, server_title
from labctl.report.certify.model import Block, Cell, Section, Table, Text, Tone
from labctl.report.certify.registry import Context, Kind, register
from labctl.report.counters import NIC, pick
from labctl.report.figures_storm import by_configuration
from labctl.report.run_view import CellView, copy_path_label, path_order

PASSED = (Outcome.PASS, Outcome.MARGINAL)
FILE_MB = 512  # the paper's copy (the plan's copy size)


def label(c: CellView, several: bool = False) -> str:
    cfg = f"{c.configuration}: " if several else ""
    return f"{cfg}{c.split[0]}/{c.split[1]} {copy_path_label(c.copy_path or 'copy')}"


def ordered(cells: Sequence[CellView]) -> dict[str, list[CellView]]:
    return {
        cfg: sorted(group, key=lambda c: (c.split, path_order(c.copy_path or "")))
        for cfg, group in by_configuration(cells).items()
    }


def heaviest(group: Sequence[CellView]) -> tuple[int, int]:
    return max({c.split for c in group}, key=lambda s: (s[0] + s[1], s))


def _mean_max(values: list[float], digits: int = 1) -> str:
    return f"{num(statistics.fmean(values), digits)} / {num(max(values), digits)}" if values else "-"


def results_table(cells: Sequence[CellView], several: bool) -> Table:
    rows: list[list[str | Cell]] = []
    for c in cells:
        server = c.entity("streaming_server")
        picked = pick(NIC, server, [c]) if server else None
        nic_m = c.metric(picked.entity, picked.metric) if picked and picked.factor == 1.0 else None
        cpu = c.metric(server, "cpu_pct") if server else None
        wc = c.entity("write_cache_disk")
        queue = c.metric(wc, "disk_queue_len") if wc else None
        covered = [
            m.coverage for m in c.metrics.values() if m.coverage is not None and m.source == "typeperf"
        ]
        rebooters = c.summary.by_role("rebooter")
        booted = c.summary.values("boot_time_s", "rebooter")
        copies = c.summary.values("copy_s", "copier")
        row: list[str | Cell] = [c.configuration] if several else []
        row += [
            f"{c.split[0]}\u00a0/\u00a0{c.split[1]}",  # no-break spaces: a narrow column keeps each on one line
            copy_path_label(c.copy_path or "-").replace(" ", "\u00a0"),
            outcome_cell(c.outcome, OUTCOME_WORD[c.outcome] + (" (killed)" if c.provisional else "")),
            Cell(
                f"{len(booted)} of {len(rebooters)}",
                Tone.BAD if len(booted) < len(rebooters) else Tone.NONE,
                True,
            ),
            Cell(_mean_max(booted), num=True),
            Cell(_mean_max(c.summary.values("retries", "rebooter")), num=True),
            Cell(_mean_max(copies, 0), num=True),
            Cell(num(cpu.peak) if cpu else "-", num=True),
            Cell(num(nic_m.peak) if nic_m else "-", num=True),
            Cell(num(queue.mean) if queue else "-", num=True),
            Cell(
                f"{min(covered) * 100:.0f}" if covered else "-",
                Tone.BAD if covered and min(covered) < 0.9 else Tone.NONE,
                True,
            ),
        ]
        rows.append(row)
    head = (["configuration"] if several else []) + [
        "copiers / rebooters",
        "copy path",
        "outcome",
        "rebooters booted",
        "rebooter boot time, s (mean / slowest)",
        "rebooter retries (mean / most)",
        f"{FILE_MB} MB copy, s (mean / slowest)",
        "CPU peak, %",
        "busier NIC out, % (peak)",
        "write-cache queue, requests (mean)",
        "coverage, % (lowest)",
    ]
    return Table.of(
        "Copy/reboot results per cell, over each cell's window",
        head,
        rows,
        note="Copy paths: local is the client's streamed system drive (its writes land in the write cache on "
        "the server), share is a file share on another server. Coverage as in the boot-storm table.",
    )


class CopyReboot(Kind):
    key = "copy_reboot"
    title = "Copy/reboot matrix"

    def select(self, cells: Sequence[CellView]) -> list[CellView]:
        return figures_matrix.matrix_cells(cells)

    def owns(self, c: CellView) -> bool:
        return c.is_matrix

    def method(self, ctx: Context, cells: Sequence[CellView]) -> list[Block]:
        splits = sorted({c.split for c in cells})
        paths = sorted({c.copy_path or "" for c in cells}, key=path_order)
        rows = [
            ["configurations", ", ".join(ordered(cells))],
            ["copiers / rebooters", ", ".join(f"{a} / {b}" for a, b in splits)],
            ["copy paths", ", ".join(copy_path_label(p) for p in paths if p)],
            ["file copied by each copier", f"{FILE_MB} MB"],
        ]
        blocks: list[Block] = [
            Text(
                "Copy/reboot matrix (the 2007 paper's second scenario). Every client is booted and the boot "
                "storm allowed to pass (the server's counters back at their baseline). Then, at the same moment, "
                f"one group of clients copies a {FILE_MB} MB file along a copy path while another group "
                "reboots. Copy paths: local to local (the streamed system drive: reads from the vDisk, writes "
                "into the write cache), local to share, share to local, and share to share (network only). "
                "Judged: the rebooting clients' boot time and retries, every copy finishing, and the server."
            ),
            Table.of("Copy/reboot parameters", ("parameter", "value"), rows),
        ]
        table = criteria_table(cells, "Acceptance criteria of each copy/reboot cell")
        if table is not None:
            blocks.append(table)
        return blocks

    def results(self, ctx: Context, cells: Sequence[CellView]) -> Section:
        groups = ordered(cells)
        several = len(groups) > 1
        flat = [c for g in groups.values() for c in g]
        children = [Section("Results per cell", [results_table(flat, several)])]
        for cfg, group in groups.items():
            suffix = f" ({cfg})" if several or cfg != "lab" else ""
            figs = figures_matrix.experience_figs(group)
            if figs:
                children.append(
                    Section(
                        f"Client experience{suffix}",
                        [
                            Text(
                                "For each copiers/rebooters split, the copy paths side by side (the paper's "
                                "figures 9 and 10)."
                            ),
                            *(figure(f) for f in figs),
                        ],
                    )
                )
            split = heaviest(group)
            children += sections_as_blocks(
                figures_matrix.split_sections([c for c in group if c.split == split], suffix),
                server_title("Copy/reboot "),
                machines_under_test(ctx.inputs, group),
            )
        matrix = verdict_matrix(
            flat, lambda c: label(c, several), "Criteria per cell: the judged value and its outcome", "cell"
        )
        if matrix is not None:
            children.append(Section("Criteria verdicts per cell", [matrix]))
        return Section(
            self.title,
            [
                Text(
                    "Server counters over time are shown for the heaviest split of each configuration; the "
                    "figures page of each run (report/figures.html) has every split."
                )
            ],
            children,
        )

    def findings(self, ctx: Context, cells: Sequence[CellView]) -> list[str]:
        out: list[str] = []
        groups = ordered(cells)
        for cfg, group in groups.items():
            where = f" ({cfg})" if len(groups) > 1 else ""
            out += [f"{s[:-1]}{where}." for s in criterion_findings(group, label, "cells")]
            split = heaviest(group)
            at = [c for c in group if c.split == split and c.whole]
            boots = [
                (c, statistics.fmean(v)) for c in at if (v := c.summary.values("boot_time_s", "rebooter"))
            ]
            if len(boots) > 1:
                worst, best = max(boots, key=lambda x: x[1]), min(boots, key=lambda x: x[1])
                out.append(
                    f"With {split[0]} copying while {split[1]} reboot{where}, the rebooters booted slowest with "
                    f"copies {copy_path_label(worst[0].copy_path or '')} ({num(worst[1])} s on average) and "
                    f"fastest with {copy_path_label(best[0].copy_path or '')} ({num(best[1])} s)."
                )
            copies = [(c, statistics.median(v)) for c in at if (v := c.summary.values("copy_s", "copier"))]
            if copies:
                c, median = max(copies, key=lambda x: x[1])
                out.append(
                    f"The slowest copies{where} were {copy_path_label(c.copy_path or '')} at {split[0]} / {split[1]}: "
                    f"median {num(median, 0)} s for {FILE_MB} MB ({num(FILE_MB / median)} MB/s per copier)."
                )
            for c in group:
                failed = [x.name for x in c.summary.by_role("copier") if x.outcome != "copied"]
                if failed:
                    out.append(
                        f"In {label(c)}{where}, {len(failed)} {'copier' if len(failed) == 1 else 'copiers'} did not finish: "
                        f"{', '.join(failed[:5])}."
                    )
        return out

    def conclusion(self, ctx: Context, cells: Sequence[CellView]) -> list[str]:
        out = []
        for cfg, group in ordered(cells).items():
            on = f" ({cfg})" if cfg != "lab" else ""
            bad = [c for c in group if not (c.whole and c.outcome in PASSED and c.verdict is not None)]
            if bad:
                words = sorted({OUTCOME_WORD[c.outcome] for c in bad})
                out.append(
                    f"{len(bad)} of {len(group)} copy/reboot cells{on} did not pass ({', '.join(words)}): the "
                    "runtime load is not certified."
                )
                continue
            split = heaviest(group)
            at = [c for c in group if c.split == split]
            boot = max((v for c in at for v in c.summary.values("boot_time_s", "rebooter")), default=None)
            retries = max((v for c in at for v in c.summary.values("retries", "rebooter")), default=None)
            copy = max((v for c in at for v in c.summary.values("copy_s", "copier")), default=None)
            out.append(
                f"Under the heaviest runtime load measured{on}, {split[0]} clients copying {FILE_MB} MB while "
                f"{split[1]} reboot, the rebooting clients boot within {with_unit(boot, 's')} with at most "
                f"{with_unit(retries, 'retries', 0)} each, and every copy finishes within {with_unit(copy, 's', 0)}."
            )
        return out


register(CopyReboot())

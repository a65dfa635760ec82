"""Pieces every kind's sections share: numbers with units, outcome words, the criteria table, the
criteria matrix (every criterion of every cell, coloured by its outcome) and per-criterion
findings along a plan's axis (group size, copiers/rebooters)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from labctl.records.run_record import Band, CriterionVerdict, Outcome
from labctl.report.certify.model import Cell, Table, Tone
from labctl.report.run_view import CellView, copy_path_label

OUTCOME_WORD = {
    Outcome.PASS: "pass",
    Outcome.MARGINAL: "marginal",
    Outcome.FAIL: "fail",
    Outcome.NO_DATA: "no data",
    Outcome.LAB_FAULT: "lab fault",
    Outcome.ERROR: "error",
    Outcome.INTERRUPTED: "interrupted",
}
WORDS = {  # what a cell or criterion did, in a sentence
    Outcome.PASS: "passed",
    Outcome.MARGINAL: "marginal",
    Outcome.FAIL: "failed a criterion",
    Outcome.NO_DATA: "had no data to judge",
    Outcome.LAB_FAULT: "had a lab fault",
    Outcome.ERROR: "broke off with an error",
    Outcome.INTERRUPTED: "was interrupted",
}
OUTCOME_TONE = {
    Outcome.PASS: Tone.OK,
    Outcome.MARGINAL: Tone.WARN,
    Outcome.FAIL: Tone.BAD,
    Outcome.NO_DATA: Tone.BAD,
    Outcome.LAB_FAULT: Tone.BAD,
    Outcome.ERROR: Tone.BROKEN,
    Outcome.INTERRUPTED: Tone.BROKEN,
}
STATISTIC_WORDS = {
    "mean": "average over the window",
    "peak": "highest sample in the window",
    "max": "highest sample in the window",
    "min": "lowest sample in the window",
    "last": "last sample in the window",
    "value": "each machine's own value (the worst decides)",
    "time_above": "time spent above the threshold",
    "storm_duration": "duration of the storm",
    "p95": "95th percentile over the window",
    "p99": "99th percentile over the window",
}
# A criterion of ``required: false`` is judged when its series or results exist; without them it is
# reported as no data and does not fail the cell. Measured outside its bands it fails like any other.
WHEN_MEASURED = " (judged when measured)"
# The criteria files' names for inventory figures, in words (the bands' expressions are shown so).
EXPRESSION_WORDS = (
    ("spindles(write_cache_volume)", "the write-cache set's disks"),
    ("spindles(vdisk_volume)", "the vDisk set's disks"),
    ("ram_mb", "the server's RAM in MB"),
    (" * ", " × "),
    ("<=", "≤"),
    (">=", "≥"),
)
METRIC_WORDS = {
    "disk_queue_len": "disk queue length",
    "cpu_pct": "CPU utilisation",
    "nic_sent_util_pct": "outbound utilisation of each network port",
    "memory_used_mb": "used memory",
    "boot_time_s": "boot time",
    "retries": "session retries",
    "copy_s": "copy duration",
    "latency_ms": "I/O latency",
    "net_util_pct": "network utilisation",
    "retransmit_pct": "storage network retransmissions",
    "response_s": "operation response time",
    "spare_capacity_pct": "spare capacity",
    "ux_good": "share of desktops in the good user-experience band",
    "ux_level": "user-experience band (good, fair, poor)",
    "boot_iops_per_desktop": "boot-storm IOPS per desktop",
    "login_iops_per_desktop": "login-storm IOPS per desktop",
    "steady_iops_per_desktop": "steady-state IOPS per desktop",
    "login_s": "logon duration",
    "cpu.usage.average": "CPU utilisation",
    "mem_usage_pct": "memory utilisation",
    "mem.usage.average": "memory utilisation",
    "mem_balloon_kb": "ballooned memory",
    "mem.vmmemctl.average": "ballooned memory",
}
ROLE_WORDS = {
    "storm": "every client of the group",
    "rebooter": "every rebooting client",
    "copier": "every copier",
    "desktop": "every desktop",
    "array": "each array",
}
SOURCE_WORDS = {  # who a selector of this source (and any entity) judges
    "vcenter": "each ESXi host",
    "sessions": "the sessions' timed operations",
    "*": "each array and volume",
}
_PATTERN = re.compile(r"[\[\]*?|()]")
ENTITY_WORDS = {"write_cache_disk": "the write-cache volume", "streaming_server": "the streaming server"}


def words(expr: str) -> str:
    """A criteria file's expression or a caption in words: ``2 * spindles(write_cache_volume)`` ->
    ``2 × the write-cache set's disks``."""
    for raw, said in EXPRESSION_WORDS:
        expr = expr.replace(raw, said)
    return expr


def cell_label(c: CellView, configuration: bool = True) -> str:
    """A cell in words: ``boot storm, 75 clients (standalone)``, ``copy/reboot 50/50 local → share (ha)``."""
    if c.is_matrix:
        text = f"copy/reboot {c.split[0]}/{c.split[1]} {copy_path_label(c.copy_path or 'copy')}"
    elif c.summary.scenario == "boot_storm" and c.group_size is not None:
        text = f"boot storm, {c.group_size} client{'s' if c.group_size != 1 else ''}"
    elif c.is_vdi:
        text = _vdi_label(c)
    else:
        text = c.id
    return f"{text} ({c.configuration})" if configuration and c.configuration else text


VDI_WORDS = {
    "vdi_storm": "VDI storm",
    "scale_out": "scale-out",
    "write_cache_modes": "write-cache mode",
    "session_storm": "session storm",
}


def _vdi_label(c: CellView) -> str:
    """``VDI storm, 630 desktops, 50 % pre-booted``: the scenario, the desktops, the parameters."""
    n = len(c.summary.by_role("desktop")) or c.summary.extra.get("desktops")
    bits = [f"{n} desktops"] if n else []
    for k, v in sorted(c.summary.parameters.items()):
        if k == "desktops":
            continue
        if k == "prebooted_pct":
            bits.append(f"{v} % pre-booted")
        else:
            bits.append(f"{k.replace('_', ' ')} {v}")
    return ", ".join([VDI_WORDS.get(c.summary.scenario, c.summary.scenario), *bits])


def num(v: float | None, digits: int = 1) -> str:
    """A number for people: whole numbers without decimals, else ``digits`` decimals; ``-`` for none."""
    if v is None or not math.isfinite(v):
        return "-"
    if abs(v - round(v)) < 10 ** (-digits) / 2 or abs(v) >= 1000:
        return f"{round(v):,}".replace(",", " ")
    return f"{v:.{digits}f}"


def with_unit(v: float | None, unit: str, digits: int = 1) -> str:
    if v is None:
        return "-"
    text = num(v, digits)
    if not unit:
        return text
    if unit == "retries":
        return f"{text} {'retry' if text == '1' else 'retries'}"
    if unit == "requests":
        return f"{text} {'request' if text == '1' else 'requests'}"
    return f"{text} {unit}"


def outcome_cell(o: Outcome, text: str | None = None) -> Cell:
    return Cell(text if text is not None else OUTCOME_WORD[o], OUTCOME_TONE[o])


def criterion_cell(v: CriterionVerdict) -> Cell:
    """A criterion's outcome as a cell: a criterion judged only when measured that had nothing to
    judge is "not measured", not a red "no data" (it does not count against the cell)."""
    if v.outcome is Outcome.NO_DATA and not v.required:
        return Cell("not measured", Tone.NONE)
    return outcome_cell(v.outcome)


def band_text(band: Band | None, unit: str, expression: bool = True) -> str:
    """``≤ 8 requests (2 × the write-cache set's disks)``; ``-`` for no band."""
    if band is None:
        return "-"
    parts = []
    for limit, expr, sign in ((band.min, band.min_expr, "≥"), (band.max, band.max_expr, "≤")):
        if limit is None:
            continue
        shown = f"{sign} {with_unit(limit, unit)}"
        if expr and expression:
            shown += f" (= {words(expr)})"
        parts.append(shown)
    return " and ".join(parts) or "-"


def _expressions(band: Band | None) -> str:
    if band is None:
        return ""
    return " and ".join(words(e) for e in (band.min_expr, band.max_expr) if e)


def _metric_words(metric: str, v: CriterionVerdict) -> str:
    """A selector's metric in words; a pattern (``cpu[._][pu]*``) by the metrics it matched."""
    if _PATTERN.search(metric):
        matched = sorted({r.metric for r in v.series if r.metric})
        said = sorted({METRIC_WORDS.get(m, m.replace("_", " ")) for m in matched})
        return " / ".join(said) if said else "the matching counters"
    return METRIC_WORDS.get(metric, metric.replace("_", " "))


def judged_in_words(cells: Sequence[CellView], v: CriterionVerdict) -> str:
    """What a criterion judges, in words: ``average disk queue length of the write-cache volume
    (pvs-01/D:, nas-01/E:)``, ``boot time of every client of the group (each machine's own value)``,
    ``CPU utilisation of each ESXi host: highest sample in the window``. Never the selector's text."""
    parts = v.selector.split("/")
    metric = _metric_words(parts[-1], v)
    stat = STATISTIC_WORDS.get(v.statistic, v.statistic)
    if parts[0] == "clients":
        who = ROLE_WORDS.get(parts[1], parts[1])
        if parts[1] == "desktop" and v.statistic == "value":
            stat = "over the desktops"
        return f"{metric} of {who}: {stat}"
    source, entities = parts[0], parts[1:-1]
    if source == "sessions":
        group = "/".join(entities)
        which = f", group {group.removeprefix('group:')}" if group.startswith("group:") else ""
        return f"{metric} of the sessions' timed operations{which}: {stat}"
    if source in SOURCE_WORDS and all(e in ("*", "") for e in entities):
        return f"{metric} of {SOURCE_WORDS[source]}: {stat}"
    selected = sorted({"/".join((criterion(c, v.name) or v).selector.split("/")[1:-1]) for c in cells})
    named = [k for c in cells[:1] for k, e in c.entities.items() if e in selected]
    if named:
        who = ENTITY_WORDS.get(named[0], named[0].replace("_", " "))
    else:
        who = "each port of the server" if any(e.endswith("/*") for e in selected) else "the server"
    shown = ", ".join(e.removesuffix("/*") for e in selected[:3]) + (" ..." if len(selected) > 3 else "")
    return f"{metric} of {who} ({shown}): {stat}"


def criteria_in_order(cells: Sequence[CellView]) -> list[str]:
    names: list[str] = []
    for c in cells:
        for v in c.verdict.criteria if c.verdict is not None else []:
            if v.name not in names:
                names.append(v.name)
    return names


def criterion(c: CellView, name: str) -> CriterionVerdict | None:
    if c.verdict is None:
        return None
    return next((v for v in c.verdict.criteria if v.name == name), None)


def criteria_table(cells: Sequence[CellView], caption: str) -> Table | None:
    """One row per criterion of the cells' plan: what is judged, the bands (per configuration when
    they differ, e.g. 2 x spindles of each configuration's own write-cache set) and why."""
    rows = []
    for name in criteria_in_order(cells):
        found = [(c.configuration, v) for c in cells if (v := criterion(c, name)) is not None]
        first = found[0][1]
        columns = []
        for band_of in (lambda v: v.pass_band, lambda v: v.marginal_band):
            by_text: dict[str, list[str]] = {}
            for cfg, v in found:
                text = band_text(band_of(v), v.unit, expression=False)
                if cfg not in by_text.setdefault(text, []):
                    by_text[text].append(cfg)
            shown = (
                "; ".join(f"{t} ({', '.join(c for c in cfgs if c)})" for t, cfgs in by_text.items())
                if len(by_text) > 1
                else next(iter(by_text))
            )
            expr = _expressions(band_of(first))
            columns.append(f"{shown}: {expr}" if expr else shown)
        rows.append(
            [
                name + ("" if first.required else WHEN_MEASURED),
                judged_in_words([c for c in cells if criterion(c, name) is not None], first),
                *columns,
                first.description or "-",
            ]
        )
    if not rows:
        return None
    return Table.of(
        caption,
        ("criterion", "what is judged", "pass", "marginal", "why this band"),
        rows,
        note="Outside the marginal band a criterion fails. A series with samples over less than 90 % of "
        "the window gives no data, and a machine without its value is a lab fault: neither is a pass. "
        "A criterion judged when measured fails like any other when its value is outside its bands; "
        "when the cell gives it nothing to judge it is reported as no data and does not fail the cell.",
    )


MATRIX_COLUMNS = 8  # criteria side by side in the verdict matrix; beyond, criteria become its rows


def verdict_matrix(
    cells: Sequence[CellView], label: Callable[[CellView], str], caption: str, first_head: str
) -> Table | None:
    """Every criterion of every cell: the judged value, coloured by its outcome, and the cell's outcome."""
    names = criteria_in_order(cells)
    if not cells:
        return None
    units = {}
    for n in names:
        v = next((criterion(c, n) for c in cells if criterion(c, n) is not None), None)
        units[n] = v.unit if v is not None else ""
    rows = []
    for c in cells:
        row: list[str | Cell] = [label(c)]
        for n in names:
            v = criterion(c, n)
            if v is None:
                row.append(Cell("-"))
            elif v.observed is None:
                row.append(criterion_cell(v))
            else:
                text = num(v.observed)
                if v.outcome is not Outcome.PASS:
                    text += f" ({OUTCOME_WORD[v.outcome]})"
                row.append(Cell(text, OUTCOME_TONE[v.outcome], num=True))
        word = OUTCOME_WORD[c.outcome] + (" (killed)" if c.provisional else "")
        row.append(outcome_cell(c.outcome, word))
        rows.append(row)
    head = [first_head] + [f"{n} ({units[n]})" if units[n] else n for n in names] + ["cell"]
    if len(names) > MATRIX_COLUMNS and len(cells) <= MATRIX_COLUMNS:
        # many criteria, few cells: a column per criterion would be a word wide; a row per criterion instead
        head, rows = (
            ["criterion", *(str(r[0]) for r in rows)],
            [[h, *(r[i] for r in rows)] for i, h in enumerate(head[1:], 1)],
        )
    return Table.of(
        caption,
        head,
        rows,
        note="Green: inside the pass band; orange: marginal (outside the pass band, inside the marginal "
        "band); red: failed, no data or a lab fault; purple: the cell broke off. The value is the one "
        "judged: for per-client criteria, the worst client's.",
    )


def _of(n: int, total: int, what: str) -> str:
    """``3 of 7 groups``; ``the one cell`` when there is one (``what`` is a plural in s)."""
    return f"the one {what.removesuffix('s')}" if total == 1 else f"{n} of {total} {what}"


def criterion_findings(
    cells: Sequence[CellView], axis: Callable[[CellView], str], what: str = "cells"
) -> list[str]:
    """For each criterion: where it left its pass band, in words. ``cells`` in axis order.

    ``From 75 clients on, NIC peak was outside its pass band (≤ 90 %): 93.5 % at 75, 97.3 % at 100.``
    """
    out = []
    quiet: list[str] = []  # judged only when measured, and given nothing: one sentence for them all
    for name in criteria_in_order(cells):
        judged = [(c, v) for c in cells if (v := criterion(c, name)) is not None]
        bad = [(c, v) for c, v in judged if v.outcome is not Outcome.PASS]
        if not bad:
            continue
        unit = judged[0][1].unit
        measured = [(c, v) for c, v in bad if v.outcome in (Outcome.MARGINAL, Outcome.FAIL)]
        unmeasured = [(c, v) for c, v in bad if v.outcome not in (Outcome.MARGINAL, Outcome.FAIL)]
        if measured:
            band = band_text(measured[0][1].pass_band, unit)
            mixed = len({v.outcome for _, v in measured}) > 1
            values = ", ".join(
                f"{with_unit(v.observed, unit)} at {axis(c)}"
                + (f" ({OUTCOME_WORD[v.outcome]})" if mixed else "")
                for c, v in measured[:6]
            )
            more = f" and {len(measured) - 6} more" if len(measured) > 6 else ""
            tail_start = next(
                (
                    i
                    for i in range(len(judged))
                    if all(v.outcome in (Outcome.MARGINAL, Outcome.FAIL) for _, v in judged[i:])
                ),
                None,
            )
            worst = (
                "left its pass band"
                if mixed
                else "failed"
                if measured[0][1].outcome is Outcome.FAIL
                else "was marginal"
            )
            if tail_start == len(judged) - 1 and len(measured) == 1:
                lead = f"At {axis(judged[-1][0])}, {name} {worst}"
                values = with_unit(measured[0][1].observed, unit)  # the lead already says where
            elif tail_start is not None and tail_start > 0 and len(judged) - tail_start == len(measured):
                lead = f"From {axis(judged[tail_start][0])} on, {name} {worst}"
            elif len(measured) == len(judged):
                lead = f"In every one of the {len(judged)} {what}, {name} {worst}"
            else:
                lead = f"{name[0].upper() + name[1:]} {worst} in {_of(len(measured), len(judged), what)}"
            out.append(f"{lead} (pass band {band}): {values}{more}.")
        # judged only when measured, and given nothing: said so, not blamed on the measurement
        unjudged = [(c, v) for c, v in unmeasured if v.outcome is Outcome.NO_DATA and not v.required]
        unmeasured = [(c, v) for c, v in unmeasured if (c, v) not in unjudged]
        if unjudged:
            where = ", ".join(axis(c) for c, _ in unjudged[:3]) + (" ..." if len(unjudged) > 3 else "")
            quiet.append(
                f"{name} ({where})" if len(unjudged) < len(judged) else f"{name} (every one of the {what})"
            )
        if unmeasured:
            kinds = sorted({OUTCOME_WORD[v.outcome] for _, v in unmeasured})
            where = ", ".join(axis(c) for c, _ in unmeasured[:6]) + (" ..." if len(unmeasured) > 6 else "")
            outcome = unmeasured[0][1].outcome
            why = why_not_passed(
                outcome, [v for _, v in unmeasured if v.outcome is outcome], [c for c, _ in unmeasured]
            )
            out.append(
                f"{name[0].upper() + name[1:]} could not be judged in {_of(len(unmeasured), len(judged), what)} "
                f"({' / '.join(kinds)}: {where}): {why}."
            )
    if quiet:
        out.append(
            "Judged only when measured, and given nothing to judge here (they do not count against the "
            f"cells): {'; '.join(quiet)}."
        )
    return out


def why_not_passed(outcome: Outcome, criteria: Sequence[CriterionVerdict], cells: Sequence[CellView]) -> str:
    """Why criteria (of one outcome, over a group of cells) did not pass, in words, with the numbers."""
    if outcome is Outcome.NO_DATA:
        cover = sorted(v.coverage * 100 for v in criteria if v.coverage is not None)
        if cover:
            span = (
                f"{cover[0]:.0f} %"
                if len(cover) == 1 or round(cover[0]) == round(cover[-1])
                else f"{cover[0]:.0f} to {cover[-1]:.0f} %"
            )
            return f"its series had samples over only {span} of the window (90 % needed): a fault of the measurement"
        return "too few samples to judge: a fault of the measurement"
    if outcome is Outcome.LAB_FAULT:
        missing = sorted({m for v in criteria for m in v.missing})
        if missing:
            return f"no value from {', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''} (never booted or never finished)"
    if outcome is Outcome.FAIL:
        values = ", ".join(with_unit(v.observed, v.unit) for v in criteria[:4] if v.observed is not None)
        band = band_text(criteria[0].marginal_band, criteria[0].unit) if criteria else ""
        if values:
            return f"{values}, beyond the marginal band {band}"
    if outcome is Outcome.INTERRUPTED:
        return "the run was stopped during it; what it measured is kept but judges nothing"
    reasons = [words(c.reason) for c in cells if c.reason]
    return reasons[0] if reasons else WORDS[outcome]

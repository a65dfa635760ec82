"""The appendices: every criterion that did not pass with its evidence (where in the run folder
the judged series or values are, when the value first left its band, how much of the window had
samples); the traceability of every number (run ids, inventory hash, labctl version and commit,
SHA-256 of each file of each run folder); and a glossary."""

from __future__ import annotations

from pathlib import PurePosixPath

from labctl.records.run_record import CriterionVerdict, Outcome
from labctl.report.certify.common import (
    OUTCOME_WORD,
    band_text,
    cell_label,
    criterion_cell,
    num,
    outcome_cell,
    with_unit,
    words,
)
from labctl.report.certify.inputs import NOT_HASHED, Inputs, RunData
from labctl.report.certify.model import Block, Cell, Section, Table, Text
from labctl.report.run_view import CellView

COMMON_TERMS = ("IOPS", "coverage", "cell", "window", "RAID 1 / RAID 10")
GLOSSARY = (
    ("ACPI S5", "the soft-off power state: the machine is off but can be woken over the network."),
    ("Wake-on-LAN", "a network packet (a magic packet) that powers on a machine in S5."),
    ("streaming server", "the server that delivers the clients' disk image (the vDisk) over the network."),
    ("vDisk", "the shared, read-only disk image every client boots and runs from."),
    (
        "write cache",
        "where the streaming server keeps each client's disk writes; discarded when it shuts down.",
    ),
    (
        "boot time",
        "from the client's first network contact with the streaming server until its agent starts.",
    ),
    (
        "session retry",
        "a disk request the client re-sent because no answer came within the 200 ms UDP timeout.",
    ),
    (
        "disk queue length",
        "requests waiting for or being served by a volume, averaged by the server's counters.",
    ),
    (
        "RAID 1 / RAID 10",
        "mirrored disks; RAID 10 stripes over mirrored pairs (each write costs two disk writes).",
    ),
    ("spindles", "the physical disks of a RAID set."),
    ("IOPS", "input/output operations per second."),
    ("coverage", "the share of a window in which a series has samples at its promised interval."),
    ("cell", "one point of a test plan: one group size, one copiers/rebooters split and copy path."),
    ("window", "the span a cell's numbers and criteria are taken over (six minutes for a boot storm)."),
    ("HA", "high availability: a second streaming server and a NAS holding vDisks and write caches."),
)


def _evidence(c: CellView, v: CriterionVerdict) -> str:
    """Where the judged data is: the file and the criterion's selector (every series it matched is
    named in the cell's verdicts.json)."""
    files = sorted({r.file for r in v.series}) or ["verdicts.json"]
    where = ", ".join(f if f == "series.csv" else f"cells/{c.id}/{f}" for f in files)
    return f"{where}: {v.selector}"


def _when(c: CellView, v: CriterionVerdict) -> str:
    if v.first_crossing_ts is None or v.window is None:
        return "-"
    return f"{num(v.first_crossing_ts - v.window.start_ts_s)} s"


def verdicts_section(inputs: Inputs) -> Section:
    rows: list[list[str | Cell]] = []
    broken = []
    for c in inputs.all_cells:
        if c.verdict is None:
            broken.append(c)
            continue
        for v in c.verdict.criteria:
            if v.outcome is Outcome.PASS:
                continue
            rows.append(
                [
                    cell_label(c),
                    v.name,
                    criterion_cell(v),
                    Cell(with_unit(v.observed, v.unit) + (f" on {v.entity}" if v.entity else ""), num=False),
                    band_text(v.pass_band, v.unit, expression=False),
                    _when(c, v),
                    f"{num(v.coverage * 100, 0)} %" if v.coverage is not None else "-",
                    _evidence(c, v),
                ]
            )
    blocks: list[Block] = [
        Text(
            "Every criterion of every cell that was not a pass, with its evidence: the judged value and the "
            "entity that decided it, the pass band, when the series first left the band (seconds into the "
            "window), the share of the window with samples, and where the data is in the run folder (the "
            "file and the series the criterion selects; each cell's verdicts.json names every series it "
            "matched and the judge's message). Criteria that passed are in the results' criteria matrices; their evidence is in the same "
            "files (cells/<cell>/verdicts.json names each series)."
        )
    ]
    if rows:
        blocks.append(
            Table.of(
                "Criteria that did not pass",
                (
                    "cell",
                    "criterion",
                    "outcome",
                    "judged value",
                    "pass band",
                    "left the band at",
                    "coverage",
                    "evidence",
                ),
                rows,
                small=True,
            )
        )
    else:
        blocks.append(Text("Every criterion of every cell passed."))
    if broken:
        blocks.append(
            Table.of(
                "Cells without a verdict (never judged)",
                ("cell", "outcome", "reason"),
                [
                    [c.id, outcome_cell(c.outcome, OUTCOME_WORD[c.outcome]), words(c.reason or "-")]
                    for c in broken
                ],
                small=True,
            )
        )
    return Section("Criteria verdicts and their evidence", blocks)


def _run_rows(r: RunData) -> list[list[str]]:
    i = r.info
    if i is None:
        return [["run id", r.run_id], ["run.json", "not readable"]]
    commit = (i.git_commit or "not in a git checkout") + (" (with local changes)" if i.git_dirty else "")
    ended = i.ended.wall_utc if i.ended is not None else "no end recorded"
    return [
        ["run id", i.run_id],
        ["plans", i.plan],
        ["outcome", i.outcome.value + (f": {i.reason}" if i.reason else "")],
        [
            "lab, configuration",
            f"{i.lab}, {i.configuration or '-'}" + (" (simulated)" if i.simulated else ""),
        ],
        ["started, ended (UTC, wall clock)", f"{i.started.wall_utc}, {ended}"],
        ["cells", str(len(i.cells))],
        # its name: the controller's folders are no business of the reader (the SHA-256 identifies it)
        ["inventory file", PurePosixPath(i.inventory_file.replace("\\", "/")).name or "-"],
        ["inventory SHA-256", i.inventory_sha256],
        ["labctl version, commit", f"{i.labctl_version}, {commit}"],
        ["controller host, Python", f"{i.host}, {i.python}"],
        ["run folder digest (SHA-256 of the file list below)", r.digest],
    ]


def traceability_section(inputs: Inputs) -> Section:
    children = []
    for r in inputs.runs:
        files = Table.of(
            f"Files of run {r.run_id}",
            ("file", "bytes", "SHA-256"),
            [[f.path, Cell(f"{f.size:,}".replace(",", " "), num=True), f.sha256] for f in r.files],
            small=True,
            mono=(2,),
        )
        children.append(
            Section(
                f"Run {r.run_id}",
                [Table.of("Run record", ("field", "value"), _run_rows(r), mono=()), files],
            )
        )
    return Section(
        "Traceability",
        [
            Text(
                "Every number in this document comes from the files below. To check one, recompute the "
                "SHA-256 of the run folder's files (sha256sum) and compare. Not hashed: "
                + ", ".join(f"{d}/" for d in NOT_HASHED)
                + " (reports made from the record afterwards, this document among them)."
            )
        ],
        children,
    )


VDI_GLOSSARY = (
    ("desktop pool", "the virtual desktops of one kind (image, size, workload) the users log on to."),
    ("pre-booted", "desktops powered on before the users arrive; the others boot when their user logs on."),
    ("session launcher", "a machine that logs users on to their desktops and runs their timed operations."),
    ("logon duration", "from a user's logon request until the desktop is ready, as the launcher measured it."),
    ("IOPS per desktop", "the arrays' IOPS in a phase over the desktops in it (the 2012 paper's table 7)."),
    (
        "response-time index",
        "a typical operation's response time as the sessions grow (docs/response-time-index.md); "
        "its baseline is the unloaded speed.",
    ),
    (
        "saturation point",
        "read as VSImax is: the session count from which the index stays more than its threshold above "
        "the baseline; not saturated when it never does.",
    ),
    ("judged when measured", "a criterion that fails when measured out of band and is not counted when "
     "the cell gives it nothing to judge."),
)  # fmt: skip


VDI_COMMON = (
    ("cell", "one point of a test plan: one desktop count and pre-booted share (one array count, one write-cache mode)."),
    ("window", "the span a cell's numbers and criteria are taken over: from the first desktop powered on to the last logoff."),
)  # fmt: skip


def glossary_section(vdi: bool = False, streaming: bool = True) -> Section:
    """The terms of the kinds of test in the document (the 2007 storms', the VDI storms', or both)."""
    terms = [list(g) for g in GLOSSARY] if streaming else [list(g) for g in GLOSSARY if g[0] in COMMON_TERMS]
    if vdi:
        if not streaming:  # the 2007 words of the common terms, in the VDI storms' own
            said = dict(VDI_COMMON)
            terms = [[t, said.get(t, m)] for t, m in terms]
        terms += [list(g) for g in VDI_GLOSSARY]
    return Section(
        "Glossary",
        [Table.of("Terms used in this document", ("term", "meaning"), terms)],
    )

"""``junit.xml`` in the run folder, for CI servers (Jenkins, GitLab, GitHub annotations): one
``testcase`` per cell, rewritten whole (atomically) after every cell so a killed run still has one.

By the cell's outcome:

    pass          passed
    marginal      passed, with ``outcome=marginal`` and the reason in ``system-out``
    fail          <failure type="ThresholdFailure" message="reason">
    lab_fault     <error type="LabFault" message="reason">
    no_data       <error type="NoData" message="reason">
    error         <error type="Error" message="reason">
    interrupted   <error type="Interrupted" message="reason">   (never a pass)

``message`` is the cell's one-line reason; the element's text lists every criterion that did not
pass. Each test case has properties with the key figures: the outcome, the cell's parameters, its
window, the clients that had no boot time, and each criterion's judged value.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import datetime
from typing import Any

from labctl.recorder.atomic import atomic_write_text
from labctl.recorder.runfolder import RunFolder
from labctl.records.run_record import CellRecord, Outcome, RunInfo

JUNIT_FILE = "junit.xml"

# outcome -> (element, type attribute); pass and marginal have none
ELEMENTS: dict[Outcome, tuple[str, str]] = {
    Outcome.FAIL: ("failure", "ThresholdFailure"),
    Outcome.LAB_FAULT: ("error", "LabFault"),
    Outcome.NO_DATA: ("error", "NoData"),
    Outcome.ERROR: ("error", "Error"),
    Outcome.INTERRUPTED: ("error", "Interrupted"),
}
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: Any) -> str:
    """Text XML 1.0 can carry (control characters dropped)."""
    return _XML_BAD.sub("", str(text))


def _num(v: float | None) -> str:
    return "" if v is None else f"{v:.6g}"


def cell_seconds(record: CellRecord, time_scale: float) -> float:
    """Wall seconds the cell took: its phases (or its window) in lab seconds over the time scale."""
    s = record.summary
    starts = [p.start_ts_s for p in s.phases]
    ends = [p.end_ts_s for p in s.phases if p.end_ts_s is not None]
    if s.window is not None:
        starts.append(s.window.start_ts_s)
        ends.append(s.window.end_ts_s)
    if not starts or not ends:
        return 0.0
    return max(0.0, (max(ends) - min(starts)) / (time_scale or 1.0))


def properties(record: CellRecord) -> list[tuple[str, str]]:
    """The key figures of a cell, as (name, value)."""
    s = record.summary
    out = [("outcome", s.outcome.value)]
    out += [(f"parameter.{k}", str(v)) for k, v in s.parameters.items()]
    if s.configuration:
        out.append(("configuration", s.configuration))
    if s.window is not None:
        out.append(("window_s", _num(s.window.duration_s)))
    if s.clients:
        out.append(("clients", str(len(s.clients))))
        booting = [c for c in s.clients.values() if c.role in ("storm", "rebooter")]
        if booting:
            out.append(("clients_without_boot_time", str(sum(c.boot_time_s is None for c in booting))))
    if record.verdict is not None:
        for c in record.verdict.criteria:
            value = f"{_num(c.observed)} {c.unit}".strip()
            out.append((f"criterion.{c.name}", f"{c.outcome.value}" + (f" {value}" if value else "")))
    return out


class JUnitSink:
    def __init__(self, run: RunFolder, file: str = JUNIT_FILE):
        self.run = run
        self.file = file
        self.records: list[CellRecord] = []

    def cell_finished(self, record: CellRecord) -> None:
        self.records = [r for r in self.records if r.cell != record.cell] + [record]
        self.write(self.run.info)

    def run_finished(self, info: RunInfo) -> None:
        self.write(info)

    def write(self, info: RunInfo) -> None:
        atomic_write_text(self.run.file(self.file), self.run.redactor.text(self.xml(info)))

    def xml(self, info: RunInfo) -> str:
        counts = {"tests": len(self.records), "failures": 0, "errors": 0, "skipped": 0}
        suite = ET.Element("testsuite", name=_clean(info.plan), timestamp=_timestamp(info.started.wall_utc))
        props = ET.SubElement(suite, "properties")
        for k, v in (
            ("lab", info.lab),
            ("run_id", info.run_id),
            ("configuration", info.configuration or ""),
            ("run_outcome", info.outcome.value),
            ("labctl_version", info.labctl_version),
            ("git_commit", info.git_commit or ""),
        ):
            ET.SubElement(props, "property", name=k, value=_clean(v))
        total = 0.0
        for r in self.records:
            s = r.summary
            seconds = cell_seconds(r, info.time_scale)
            total += seconds
            case = ET.SubElement(
                suite,
                "testcase",
                classname=_clean(f"{info.lab}.{s.plan}"),
                name=_clean(s.cell),
                time=f"{seconds:.3f}",
            )
            cp = ET.SubElement(case, "properties")
            for k, v in properties(r):
                ET.SubElement(cp, "property", name=_clean(k), value=_clean(v))
            kind = ELEMENTS.get(s.outcome)
            if kind is not None:
                element, type_ = kind
                counts["failures" if element == "failure" else "errors"] += 1
                el = ET.SubElement(case, element, type=type_, message=_clean(s.reason or s.outcome.value))
                lines = [
                    f"[{c.outcome.value}] {c.message}" for c in (r.verdict.criteria if r.verdict else [])
                ]
                el.text = _clean("\n".join([s.reason, *(x for x in lines if not x.startswith("[pass]"))]))
            elif s.outcome is Outcome.MARGINAL:
                ET.SubElement(case, "system-out").text = _clean(f"marginal: {s.reason}")
        for k, n in counts.items():
            suite.set(k, str(n))
        suite.set("time", f"{total:.3f}")
        root = ET.Element("testsuites", name=_clean(f"labctl {info.plan} on {info.lab}"))
        for k in ("tests", "failures", "errors", "skipped"):
            root.set(k, suite.get(k, "0"))
        root.set("time", suite.get("time", "0"))
        root.append(suite)
        ET.indent(root)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _timestamp(wall_utc: str) -> str:
    """JUnit's timestamp: ISO 8601 without a zone (the Ant schema's form), in UTC."""
    try:
        return datetime.fromisoformat(wall_utc).strftime("%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return ""

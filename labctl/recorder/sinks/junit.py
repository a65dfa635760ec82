"""``junit.xml`` in the run folder, for CI servers (Jenkins, GitLab, GitHub annotations): one
``testsuite`` per plan of the run and one ``testcase`` per cell, every cell of every plan (a run of
several plans, ``labctl run 2007``, shares one sink), rewritten whole (atomically) after every
cell so a killed run still has one.

By the cell's outcome (the word a person reads, as in the terminal, Allure, the figures page,
the store and the certificate, begins the ``message``):

    pass          passed
    marginal      passed, property ``outcome=marginal`` and ``system-out`` ``MARGINAL: reason``;
                  with ``strict_marginal`` (``--strict-marginal``) <failure type="Marginal">
    fail          <failure type="ThresholdFailure" message="fail: reason">
    lab_fault     <error type="LabFault" message="lab fault: reason">
    no_data       <error type="NoData" message="no data: reason">
    error         <error type="Error" message="error: reason">
    interrupted   <error type="Interrupted" message="interrupted: reason">   (never a pass)

Why marginal looks so: JUnit has four states (passed, failure, error, skipped) and CI servers count
only those. A marginal cell passed (it is inside its marginal band), so by default it is a passing
test case that says so where every CI server shows a test's details: the ``system-out`` (Jenkins'
"Standard Output", GitLab's "System output") starting ``MARGINAL:``, the ``outcome`` property,
and the suite's ``marginal`` property with the count. Not ``skipped`` (the cell ran and was
measured) and not a name marker (the test's history on the CI server follows its name).
``--strict-marginal`` makes it a ``failure`` of type ``Marginal`` for those who want CI red.

The element's text lists every criterion that did not pass. Each test case has properties with the
key figures: the outcome, the cell's parameters, its window, the clients that had no boot time, and
each criterion's judged value.
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


def outcome_word(outcome: Outcome) -> str:
    """The word for an outcome a person reads (``lab fault``, ``no data``): the outcome's value
    with spaces, the same in every output."""
    return outcome.value.replace("_", " ")


class JUnitSink:
    def __init__(self, run: RunFolder, file: str = JUNIT_FILE, *, strict_marginal: bool = False):
        self.run = run
        self.file = file
        self.strict_marginal = strict_marginal
        self.records: list[CellRecord] = []

    def cell_finished(self, record: CellRecord) -> None:
        self.records = [r for r in self.records if r.cell != record.cell] + [record]
        self.write(self.run.info)

    def run_finished(self, info: RunInfo) -> None:
        self.write(info)

    def write(self, info: RunInfo) -> None:
        atomic_write_text(self.run.file(self.file), self.run.redactor.text(self.xml(info)))

    def element(self, outcome: Outcome) -> tuple[str, str] | None:
        """The JUnit element (``failure`` / ``error``) and its type for an outcome; None: passed."""
        if outcome is Outcome.MARGINAL and self.strict_marginal:
            return ("failure", "Marginal")
        return ELEMENTS.get(outcome)

    def xml(self, info: RunInfo) -> str:
        plans: dict[str, list[CellRecord]] = {}
        for r in self.records:
            plans.setdefault(r.summary.plan, []).append(r)
        root = ET.Element("testsuites", name=_clean(f"labctl {info.plan} on {info.lab}"))
        totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
        seconds = 0.0
        for plan, records in (plans or {info.plan: []}).items():
            suite = self._suite(info, plan, records)
            root.append(suite)
            for k in totals:
                totals[k] += int(suite.get(k, "0"))
            seconds += float(suite.get("time", "0"))
        for k, n in totals.items():
            root.set(k, str(n))
        root.set("time", f"{seconds:.3f}")
        ET.indent(root)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

    def _suite(self, info: RunInfo, plan: str, records: list[CellRecord]) -> ET.Element:
        counts = {"tests": len(records), "failures": 0, "errors": 0, "skipped": 0}
        suite = ET.Element("testsuite", name=_clean(plan), timestamp=_timestamp(info.started.wall_utc))
        props = ET.SubElement(suite, "properties")
        marginal = sum(r.summary.outcome is Outcome.MARGINAL for r in records)
        for k, v in (
            ("lab", info.lab),
            ("run_id", info.run_id),
            ("configuration", info.configuration or ""),
            ("run_outcome", info.outcome.value),
            ("labctl_version", info.labctl_version),
            ("git_commit", info.git_commit or ""),
            ("marginal", str(marginal)),
        ):
            ET.SubElement(props, "property", name=k, value=_clean(v))
        total = 0.0
        for r in records:
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
            word = outcome_word(s.outcome)
            kind = self.element(s.outcome)
            if kind is not None:
                element, type_ = kind
                counts["failures" if element == "failure" else "errors"] += 1
                el = ET.SubElement(case, element, type=type_, message=_clean(f"{word}: {s.reason or word}"))
                lines = [
                    f"[{c.outcome.value}] {c.message}" for c in (r.verdict.criteria if r.verdict else [])
                ]
                el.text = _clean("\n".join([s.reason, *(x for x in lines if not x.startswith("[pass]"))]))
            if s.outcome is Outcome.MARGINAL:
                ET.SubElement(case, "system-out").text = _clean(f"{word.upper()}: {s.reason}")
        for k, n in counts.items():
            suite.set(k, str(n))
        suite.set("time", f"{total:.3f}")
        return suite


def _timestamp(wall_utc: str) -> str:
    """JUnit's timestamp: ISO 8601 without a zone (the Ant schema's form), in UTC."""
    try:
        return datetime.fromisoformat(wall_utc).strftime("%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return ""

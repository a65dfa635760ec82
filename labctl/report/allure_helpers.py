"""Allure for test plans (allure-pytest): one test case per plan cell.

In a plan::

    from labctl.report import allure_helpers as A

    def test_boot_storm(group_size, lab, recorder, run_folder):
        cell = cell_id("boot_storm", lab.configuration.name, group_size)
        A.label_cell("boot_storm", "boot storm", cell, group_size=group_size, window_s=360)
        with A.step("wake group"):
            ...
        with A.step("sample window"):
            ...
        A.attach_series(recorder.series(cell=cell), "series")
        A.attach_figure(fig, "CPU utilisation")
        A.attach_json(summary, "summary")
        verdict = evaluate(criteria, recorder, summary, names=names)   # a CellVerdict
        A.report_verdict(verdict, recorder)      # one step per criterion, evidence charts
        raise_for_outcome(verdict)               # ThresholdFailure / LabFault / NoDataError

At the start or end of the session (the plugin does it): :func:`write_environment` with the lab
name and the firmware / software versions read from the endpoints, and :func:`write_categories`,
into the Allure results folder (``results/<run>/allure-results``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import allure

from labctl import __version__
from labctl.criteria.errors import LabFault, NoDataError, ThresholdFailure
from labctl.recorder.sinks import allure as allure_sink
from labctl.records.run_record import CellVerdict, CriterionVerdict
from labctl.report import charts

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from labctl.records.series import Series, SeriesProvider

ALLURE_RESULTS_DIR = "allure-results"
ENVIRONMENT_FILE = "environment.properties"
CATEGORIES_FILE = "categories.json"

step = allure.step

# The categories and the series CSV live with the Allure sink now (labctl.recorder.sinks.allure);
# these names stay until the report's callers use the sink.
CATEGORIES = allure_sink.CATEGORIES
series_csv = allure_sink.series_csv


# --- labels, parameters ----------------------------------------------------------------------


def label_cell(
    plan: str,
    scenario: str,
    cell: str,
    *,
    title: str | None = None,
    description: str | None = None,
    **params: Any,
) -> None:
    """Labels for one plan cell: epic = plan, feature = scenario, story = cell; parameters.
    The test's title defaults to ``<scenario> · <cell>``."""
    allure.dynamic.epic(plan)
    allure.dynamic.feature(scenario)
    allure.dynamic.story(cell)
    allure.dynamic.title(title or f"{scenario} · {cell}")
    if description:
        allure.dynamic.description(description)
    for name, value in params.items():
        allure.dynamic.parameter(name, _param(value))


def _param(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


# --- attachments -----------------------------------------------------------------------------


def attach_figure(fig: Figure, name: str, *, png: bool = True, svg: bool = False) -> None:
    """A matplotlib figure as PNG (shown inline by Allure) and/or SVG."""
    if png:
        allure.attach(charts.png(fig), name=name, attachment_type=allure.attachment_type.PNG)
    if svg:
        allure.attach(charts.svg(fig), name=name, attachment_type=allure.attachment_type.SVG)


def attach_file(path: str | Path, name: str | None = None) -> None:
    """A file (e.g. a PNG or SVG written elsewhere); the type is taken from its extension."""
    p = Path(path)
    kinds = {
        ".png": allure.attachment_type.PNG,
        ".svg": allure.attachment_type.SVG,
        ".csv": allure.attachment_type.CSV,
        ".json": allure.attachment_type.JSON,
        ".txt": allure.attachment_type.TEXT,
        ".html": allure.attachment_type.HTML,
    }
    allure.attach.file(str(p), name=name or p.name, attachment_type=kinds.get(p.suffix.lower()))


def attach_series(series: Sequence[Series], name: str = "series") -> None:
    allure.attach(series_csv(series), name=name, attachment_type=allure.attachment_type.CSV)


def attach_json(data: Any, name: str) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    allure.attach(text, name=name, attachment_type=allure.attachment_type.JSON)


def attach_text(text: str, name: str) -> None:
    allure.attach(text, name=name, attachment_type=allure.attachment_type.TEXT)


# --- criteria --------------------------------------------------------------------------------


def report_verdict(
    verdict: CellVerdict,
    data: SeriesProvider | None = None,
    *,
    charts_for: Sequence[str] = ("fail", "marginal", "lab_fault"),
    attach_passing_charts: bool = False,
) -> None:
    """One Allure step per criterion (failed / broken where it did not pass, with the same
    exception type the cell fails with), its evidence chart and the series it was judged on, and
    the verdict as JSON. Does not raise: call ``raise_for_outcome(verdict)`` afterwards.

    For a test that judges its own cell under allure-pytest; the cell runner's Allure sink
    (:class:`~labctl.recorder.sinks.AllureSink`) does the same from the cell record."""

    def marker(outcome: str, message: str, required: bool = True) -> Exception | None:
        if outcome == "fail":
            return ThresholdFailure(message)
        if outcome == "lab_fault":
            return LabFault(message)
        if outcome == "no_data" and required:
            return NoDataError(message)
        return None

    criteria = verdict.criteria
    with contextlib.suppress(ThresholdFailure, LabFault, NoDataError), step(f"criteria: {verdict.outcome}"):
        for r in criteria:
            with (
                contextlib.suppress(ThresholdFailure, LabFault, NoDataError),
                step(f"[{r.outcome}] {r.message}"),
            ):
                want_chart = str(r.outcome) in charts_for or attach_passing_charts
                if data is not None and want_chart and r.series:
                    found = evidence_series(r, data)
                    if found:
                        attach_figure(charts.evidence(r, found), f"{r.name} (evidence)")
                        attach_series(found, f"{r.name} (series)")
                if r.description:
                    attach_text(r.description, "why this band")
                err = marker(str(r.outcome), r.message, r.required)
                if err is not None:
                    raise err
        attach_json(verdict.model_dump(mode="json"), "verdicts")
        worst = max(
            (r for r in criteria if marker(str(r.outcome), "", r.required) is not None),
            key=lambda r: r.outcome.severity,
            default=None,
        )
        if worst is not None:  # the group step shows the cell's state too
            err = marker(
                str(worst.outcome),
                f"{verdict.outcome}: " + "; ".join(r.name for r in criteria if r.outcome is worst.outcome),
            )
            if err is not None:
                raise err


def evidence_series(r: CriterionVerdict, data: SeriesProvider) -> list[Series]:
    """The series a criterion judged, over the window it judged (per-machine results have none)."""
    out = []
    span = r.window.as_tuple() if r.window is not None else (None, None)
    for ref in r.series:
        if ref.file != "series.csv":
            continue
        for s in data.series(cell=ref.cell or None, source=ref.source, entity=ref.entity, metric=ref.metric):
            if s.cell == ref.cell and s.entity == ref.entity:
                out.append(s.window(*span))
    return out


# --- files in the results folder -------------------------------------------------------------


def _escape_prop(text: str, key: bool = False) -> str:
    out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    if key:
        for ch in (" ", "=", ":", "#", "!"):
            out = out.replace(ch, "\\" + ch)
    return out


def write_environment(results_dir: str | Path, props: Mapping[str, Any], *, redactor: Any = None) -> Path:
    """Write (merge into) ``environment.properties``: lab name, configuration, firmware and
    software versions read from the endpoints. Later calls add to and override earlier ones."""
    path = Path(results_dir) / ENVIRONMENT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    merged: dict[str, str] = {}
    if path.exists():
        merged.update(read_properties(path))
    for k, v in props.items():
        if v is None:
            continue
        text = _param(v)
        merged[str(k)] = redactor.text(text) if redactor is not None else text
    lines = [f"{_escape_prop(k, key=True)}={_escape_prop(v)}" for k, v in sorted(merged.items())]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_properties(path: str | Path) -> dict[str, str]:
    """The simple subset of Java properties that :func:`write_environment` writes."""
    out: dict[str, str] = {}
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.lstrip().startswith(("#", "!")):
            continue
        key: list[str] = []
        val: list[str] = []
        i, esc = 0, False
        target = key
        while i < len(raw):
            ch = raw[i]
            if esc:
                target.append({"n": "\n", "r": "\r", "t": "\t"}.get(ch, ch))
                esc = False
            elif ch == "\\":
                esc = True
            elif ch in "=:" and target is key:
                target = val
            else:
                target.append(ch)
            i += 1
        out["".join(key).strip()] = "".join(val).strip()
    return out


def lab_environment(lab: Any, **versions: Any) -> dict[str, Any]:
    """What ``environment.properties`` should say about a lab (a resolved inventory ``Lab``),
    plus the versions read from its endpoints (``pvs-01 BIOS="2.7.0"``, ``vCenter="8.0.2"``)."""
    env: dict[str, Any] = {
        "lab": lab.name,
        "configuration": lab.configuration.name if lab.configuration is not None else None,
        "simulated lab": "yes" if lab.simulated else "no",
        "time scale": f"{lab.time_scale:g}x" if lab.time_scale != 1 else None,
        "inventory sha256": lab.inventory_sha256[:12] if lab.inventory_sha256 else None,
        "labctl": __version__,
    }
    env.update(versions)
    return env


def write_categories(results_dir: str | Path, extra: Sequence[Mapping[str, Any]] = ()) -> Path:
    """``categories.json`` (Allure 2 format): see :data:`CATEGORIES`. ``extra`` rules go first."""
    return allure_sink.write_categories(results_dir, [dict(e) for e in extra])

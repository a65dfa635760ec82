"""Build a run's HTML report with Allure 3 (npm ``allure``, pinned in package-lock.json and
installed into the project folder's ``node_modules`` by ``make install``).

    results/<run>/allure-results/   what allure-pytest wrote during the run
    results/<run>/report/index.html the Allure report: one file, works offline
    results/<run>/report/figures.html the paper's figure set (labctl.report.figures)
    results/allure-history.jsonl     Allure history across runs (trends), one line per build

Reads the run folder only; never talks to the lab.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labctl.errors import BadInputError, LabctlError
from labctl.recorder.runfolder import read_run_info
from labctl.records.run_record import RunOutcome
from labctl.report.allure_fill import fill_missing
from labctl.report.allure_helpers import ALLURE_RESULTS_DIR, CATEGORIES, write_categories
from labctl.report.figures import write_figures_page
from labctl.report.offline import external_references, make_offline

PROJECT_ROOT = Path(__file__).resolve().parents[2]
REPORT_DIR = "report"
HISTORY_FILE = "allure-history.jsonl"
ALLURE_ENV = "LABCTL_ALLURE"


class ReportError(LabctlError):
    """The report could not be built; the message says what to do."""


@dataclass(frozen=True)
class BuiltReport:
    run: Path
    allure_index: Path | None  # None when the run has no Allure results
    figures: Path | None
    history: Path | None
    tests: int = 0
    state: str = ""  # the run's outcome (and why), from run.json

    def __str__(self) -> str:
        """Where to look: the Allure report, or the figures page when there is no Allure."""
        return str(self.allure_index or self.figures or self.run)

    def lines(self) -> list[str]:
        out = [f"outcome: {self.state}"] if self.state else []
        if self.allure_index:
            out.append(f"report:  {self.allure_index}  ({self.tests} test results)")
        else:
            out.append(f"report:  none (no Allure results in {self.run / ALLURE_RESULTS_DIR})")
        if self.figures:
            out.append(f"figures: {self.figures}")
        if self.history:
            out.append(f"history: {self.history}")
        return out


def find_allure(root: Path = PROJECT_ROOT) -> list[str]:
    """The command that runs the project's Allure 3 (``$LABCTL_ALLURE`` overrides)."""
    override = os.environ.get(ALLURE_ENV)
    if override:
        return [override]
    cli = root / "node_modules" / "allure" / "cli.js"
    if not cli.is_file():
        raise ReportError(
            f"Allure 3 is not installed in {root / 'node_modules'} "
            f"(run `make install`, or `npm ci` in {root})"
        )
    node = shutil.which("node")
    if node is None:
        raise ReportError("node is not on PATH (install Node.js 20 or newer, then `make install`)")
    return [node, str(cli)]


def is_run_folder(p: Path) -> bool:
    return p.is_dir() and ((p / "run.json").is_file() or (p / ALLURE_RESULTS_DIR).is_dir())


def _started(p: Path) -> str:
    info = read_run_info(p)
    return info.started.wall_utc if info is not None else ""


def latest_run(results_dir: Path) -> Path:
    """The run that started last (by ``run.json``; run ids sort by start time otherwise)."""
    if not results_dir.is_dir():
        raise BadInputError(f"{results_dir}: no results folder (run a plan first: `labctl run boot_storm`)")
    runs = [p for p in results_dir.iterdir() if is_run_folder(p)]
    if not runs:
        raise BadInputError(f"{results_dir}: no runs yet (run a plan first: `labctl run boot_storm`)")
    return max(runs, key=lambda p: (_started(p), p.name))


def resolve_run(run: str | Path | None, results_dir: Path) -> Path:
    """A run given as a path, as a run id inside ``results_dir``, or None for the latest."""
    if run is None:
        return latest_run(results_dir)
    p = Path(run)
    for cand in (p, results_dir / p):
        try:
            if is_run_folder(cand):
                return cand
        except OSError as exc:  # a name longer than the file system takes, a loop of links: not a run
            raise BadInputError(
                f"{str(run)[:80]}{'...' if len(str(run)) > 80 else ''}: not a run folder ({exc.strerror}); "
                "give a run id or a run folder's path"
            ) from None
    known = (
        sorted((q.name for q in results_dir.iterdir() if is_run_folder(q)), reverse=True)[:5]
        if (results_dir.is_dir())
        else []
    )
    hint = f" (recent: {', '.join(known)})" if known else ""
    raise BadInputError(f"{run}: not a run folder{hint}")


HISTORY_LIMIT = 100  # builds kept in the history file (a nightly run: about three months)
HISTORY_MARK = ".history-appended"  # in report/: this run is in the history already


def allure_config(
    run: Path, output: Path, history: Path | None, *, append_history: bool = True
) -> dict[str, Any]:
    info = read_run_info(run)
    plan = info.plan if info is not None else "labctl"
    lab = info.lab if info is not None else ""
    name = f"{plan} on {lab} - {run.name}" if lab else f"{plan} - {run.name}"
    cfg: dict[str, Any] = {
        "name": name,
        "output": str(output),
        "plugins": {
            "awesome": {
                "options": {
                    "singleFile": True,
                    "reportName": name,
                    "reportLanguage": "en",
                    "theme": "light",
                    "groupBy": ["epic", "feature"],
                    "stepTreeExpansion": "expand_failed_only",
                }
            },
            # Allure adds its agent plugin unless told: it is for AI agents and writes elsewhere
            "agent": {"enabled": False},
        },
        "categories": [
            {k: v for k, v in c.items() if k in ("name", "matchedStatuses", "messageRegex")}
            for c in CATEGORIES
        ],
    }
    if history is not None:
        cfg["historyPath"] = str(history)
        cfg["historyLimit"] = HISTORY_LIMIT
        # rebuilding a run's report (labctl run, then labctl report) must not count it twice
        cfg["appendHistory"] = append_history
    return cfg


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One report build at a time per history file (two builds would interleave its lines)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _has_results(results: Path) -> int:
    return sum(1 for _ in results.glob("*-result.json")) if results.is_dir() else 0


def _count_results(index: Path | None) -> int:
    """Test results in a built report (what it shows, the added ones included)."""
    if index is None:
        return 0
    summary = index.parent / "allure-summary.json"
    try:
        data = json.loads(summary.read_text(encoding="utf-8"))
        return int(data["stats"]["total"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def build_allure(
    run: Path,
    *,
    history: Path | None = None,
    command: list[str] | None = None,
    timeout_s: float = 300.0,
) -> Path | None:
    """Generate ``report/index.html`` (single file, offline) from ``allure-results`` (what the
    run's Allure sink wrote) and a result for every cell it did not get to (a killed run's last
    cell); None when there is none at all."""
    results = run / ALLURE_RESULTS_DIR
    out = run / REPORT_DIR
    with tempfile.TemporaryDirectory(prefix="labctl-allure-") as tmp:
        added = Path(tmp) / "added-results"
        fill_missing(run, results, added)
        dirs = [d for d in (results, added) if _has_results(d)]
        if not dirs:
            return None
        if results in dirs and not (results / "categories.json").exists():
            write_categories(results)
        out.mkdir(parents=True, exist_ok=True)
        cmd = command or find_allure()
        cfg_path = Path(tmp) / "allurerc.json"
        staging = Path(tmp) / "out"
        append = not (out / HISTORY_MARK).exists()
        cfg = allure_config(run, staging, history, append_history=append)
        cfg_path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")
        argv = [*cmd, "generate", "--config", str(cfg_path), "--output", str(staging), *map(str, dirs)]
        env = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0", "CI": os.environ.get("CI", "")}
        try:
            with _locked(history) if history is not None else contextlib.nullcontext():
                proc = subprocess.run(
                    argv, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
                )
        except FileNotFoundError as exc:
            raise ReportError(f"cannot run Allure ({exc}); run `make install`") from None
        except subprocess.TimeoutExpired:
            raise ReportError(
                f"Allure did not finish within {timeout_s:.0f} s ({' '.join(argv[:3])} ...)"
            ) from None
        index = staging / "index.html"
        if proc.returncode != 0 or not index.is_file():
            tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-8:])
            raise ReportError(
                f"Allure failed (exit {proc.returncode}) for {', '.join(map(str, dirs))}:\n{tail}"
            )
        html = _with_figures_link(
            make_offline(index.read_text(encoding="utf-8")), trends=(out / "trends.html").is_file()
        )
        left = external_references(html)
        if left:
            raise ReportError(f"the report still refers to other hosts: {', '.join(left[:5])}")
        target = out / "index.html"
        tmp_target = out / ".index.html.tmp"
        tmp_target.write_text(html, encoding="utf-8")
        tmp_target.replace(target)
        if history is not None and append:
            (out / HISTORY_MARK).write_text(str(history) + "\n", encoding="utf-8")
        for extra in ("summary.json",):
            if (staging / extra).is_file():
                shutil.copyfile(staging / extra, out / f"allure-{extra}")
    return target


def _tab(href: str, label: str, title: str, top_pct: int) -> str:
    # a tab on the left edge: outside Allure's centred page at any usual width, over nothing it needs
    return (
        f'<a href="{href}" title="{title}" style="position:fixed;left:0;top:{top_pct}%;z-index:9999;'
        "writing-mode:vertical-rl;transform:rotate(180deg);padding:14px 7px;border-radius:0 8px 8px 0;"
        "background:#1f2d3d;color:#fff;font:600 13px/1 sans-serif;letter-spacing:.04em;text-decoration:none;"
        f'box-shadow:0 1px 4px rgba(0,0,0,.25)">{label} &#8599;</a>'
    )


FIGURES_LINK = _tab(
    "figures.html",
    "Figures",
    "The paper's figure set for this run: results by cell, the boot storm, the copy/reboot matrix, "
    "standalone vs HA",
    34,
)
TRENDS_LINK = _tab(
    "trends.html", "Trends", "Trends across nights of this lab and plan, from the results store", 58
)


def _with_figures_link(html: str, *, trends: bool = False) -> str:
    """Links from the Allure report to the figures page next to it, and to the trends page when the
    run has one (nightly runs): relative, local links."""
    tabs = FIGURES_LINK + (TRENDS_LINK if trends else "")
    i = html.rfind("</body>")
    return html[:i] + tabs + html[i:] if i >= 0 else html + tabs


def build_report(
    run: Path,
    *,
    results_dir: Path | None = None,
    history: Path | bool | None = True,
    command: list[str] | None = None,
) -> BuiltReport:
    """The Allure report and the figures page of one run folder."""
    run = Path(run)
    if history is True:
        hist: Path | None = (results_dir or run.parent) / HISTORY_FILE
    elif history is False or history is None:
        hist = None
    else:
        hist = Path(history)
    # the figures page first: it needs only the run folder, so a missing or failing Allure
    # still leaves the engineer the paper's figures
    figures = write_figures_page(run)
    index = build_allure(run, history=hist, command=command)
    info = read_run_info(run)
    state = ""
    if info is not None:
        state = info.outcome.value
        if info.outcome is RunOutcome.RUNNING:
            state += " (no end recorded: killed, or still running; shown as far as it got)"
        elif info.reason:
            state += f": {info.reason}"
    return BuiltReport(run, index, figures, hist if index else None, _count_results(index), state)

"""What a certification reads: one or more run folders, through the typed readers only.

Per run: its ``run.json``, every cell as the reports see it (:func:`labctl.report.run_view.load_run`),
the lab of each configuration it measured (:func:`labctl.recorder.lab_record.resolved_lab`), the
firmware and software versions read from the endpoints, and the SHA-256 of each of its files.

Runs are ordered by when they started. A cell measured in more than one run counts in the verdict
every time (a failure in an earlier run is not hidden by a later pass); the results show its latest
measurement and the method lists the repeats.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from labctl.errors import BadInputError
from labctl.recorder.cell_files import read_cell_summaries
from labctl.recorder.lab_record import ResolvedLab, resolved_lab
from labctl.recorder.runfolder import read_run_info
from labctl.recorder.series import run_path
from labctl.records.run_record import RunInfo
from labctl.report.allure_helpers import read_properties
from labctl.report.certify.checks import check_files, check_one_lab, check_series
from labctl.report.run_view import CellView, RunView, load_run

# Files of a run folder the appendix does not hash: outputs made from the record afterwards (this
# document among them), which change each time a report is built.
NOT_HASHED = ("report", "allure-results", ".pytest_cache")
HASH_CHUNK = 1 << 20
VERSIONS_KEY = "endpoint_versions"  # run.json extra: firmware / software versions read from the endpoints
ENVIRONMENT = "allure-results/environment.properties"  # where older runs kept them


@dataclass(frozen=True)
class FileHash:
    path: str  # relative to the run folder, with /
    size: int
    sha256: str


@dataclass
class RunData:
    path: Path
    view: RunView
    labs: dict[str, ResolvedLab | None]  # configuration ("" the run's own) -> the lab as the run saw it
    versions: dict[str, str]
    files: list[FileHash]

    @property
    def info(self) -> RunInfo | None:
        return self.view.info

    @property
    def run_id(self) -> str:
        return self.info.run_id if self.info is not None else self.path.name

    @property
    def digest(self) -> str:
        """One SHA-256 over the sorted list of the hashed files (path, size, hash): the folder's print."""
        h = hashlib.sha256()
        for f in self.files:
            h.update(f"{f.path}\0{f.size}\0{f.sha256}\n".encode())
        return h.hexdigest()

    def lab(self, configuration: str | None) -> ResolvedLab | None:
        return self.labs.get(configuration or "") or self.labs.get("")


@dataclass
class Inputs:
    runs: list[RunData]
    all_cells: list[CellView]  # every measurement, for the verdict
    cells: list[CellView]  # the latest measurement of each cell id, for the results
    repeats: dict[str, list[CellView]] = field(default_factory=dict)  # cell id -> earlier measurements
    _run_of: dict[int, RunData] = field(default_factory=dict)

    def run_of(self, c: CellView) -> RunData:
        return self._run_of[id(c)]

    def lab(self, configuration: str | None = None) -> ResolvedLab | None:
        """The lab of ``configuration`` from the latest run that recorded it."""
        for r in reversed(self.runs):
            lab = r.lab(configuration)
            if lab is not None and (configuration is None or lab.configuration in (None, configuration)):
                return lab
        return None

    @property
    def configurations(self) -> list[str]:
        seen: list[str] = []
        for c in self.cells:
            if c.configuration and c.configuration not in seen:
                seen.append(c.configuration)
        return sorted(seen, key=lambda x: (x != "standalone", x))

    @property
    def simulated(self) -> bool:
        return any(r.info is not None and r.info.simulated for r in self.runs)


def file_hashes(path: Path) -> list[FileHash]:
    out = []
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path)
        if not p.is_file() or rel.parts[0] in NOT_HASHED or p.name.endswith(".tmp"):
            continue
        h = hashlib.sha256()
        with p.open("rb") as fh:
            while chunk := fh.read(HASH_CHUNK):
                h.update(chunk)
        out.append(FileHash(rel.as_posix(), p.stat().st_size, h.hexdigest()))
    return out


def endpoint_versions(path: Path, info: RunInfo | None) -> dict[str, str]:
    """Firmware and software versions the run read from its endpoints: ``run.json``'s extra, else
    the Allure environment file of runs from before it was recorded there."""
    if info is not None and isinstance(info.extra.get(VERSIONS_KEY), dict):
        return {str(k): str(v) for k, v in info.extra[VERSIONS_KEY].items()}
    env = path / ENVIRONMENT
    if not env.is_file():
        return {}
    props = read_properties(env)
    # the environment file also names the lab, labctl and the configuration: the rest are endpoints
    general = {"lab", "configuration", "simulated lab", "time scale", "inventory sha256", "labctl"}
    return {k: v for k, v in props.items() if k not in general}


def load_runs(paths: Iterable[Path]) -> Inputs:
    runs: list[RunData] = []
    for p in paths:
        path = run_path(p)
        if not (path / "run.json").is_file():
            raise BadInputError(f"{path}: not a run folder (no run.json; give a folder under results/)")
        check_files(path)  # links, special files and sizes before anything is parsed
        check_series(path, read_run_info(path), read_cell_summaries(path))
        view = load_run(path)
        configs = {c.configuration for c in view.cells if c.configuration}
        labs: dict[str, ResolvedLab | None] = {"": resolved_lab(path)}
        for cfg in sorted(configs):
            labs[cfg] = resolved_lab(path, cfg)
        runs.append(RunData(path, view, labs, endpoint_versions(path, view.info), file_hashes(path)))
    if not runs:
        raise BadInputError("no run given (give one or more run folders: labctl certify RUN [RUN ...])")
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        raise BadInputError(
            f"run {next(i for i in ids if ids.count(i) > 1)} given twice (give each run once)"
        )
    check_one_lab([(r.run_id, r.info) for r in runs])
    runs.sort(key=lambda r: (r.info.started.wall_utc if r.info is not None else "", r.run_id))
    return _collect(runs)


def _collect(runs: Sequence[RunData]) -> Inputs:
    all_cells: list[CellView] = []
    run_of: dict[int, RunData] = {}
    latest: dict[str, CellView] = {}
    repeats: dict[str, list[CellView]] = {}
    for r in runs:
        for c in r.view.cells:
            all_cells.append(c)
            run_of[id(c)] = r
            if c.id in latest:
                repeats.setdefault(c.id, []).append(latest[c.id])
            latest[c.id] = c
    cells = [c for c in all_cells if latest[c.id] is c]
    return Inputs(list(runs), all_cells, cells, repeats, run_of)

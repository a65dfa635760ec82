"""What ``labctl certify`` checks of a run folder before it reads a number from it: a certificate
is only as true as its inputs, so a folder that cannot be what a run wrote is refused (one line
naming the file and the fix; the CLI exits 2) instead of certified.

- **Links and special files**: a symbolic link that leads outside the run folder, or anything but
  a plain file or folder (a FIFO would hang the reader, a device never ends), is refused.
- **Sizes**: each file a certificate reads is bounded (:data:`MAX_BYTES`) before it is opened;
  the folder's depth and file count too, and a JSON file's nesting.
- **series.csv**: present, with the recorder's header, not cut short (a run that ended has a
  complete last line; every cell whose summary has series has samples in it), and with at least
  one finite value.
- **One lab**: runs of two labs are never merged into one certificate.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path

from labctl.errors import BadInputError
from labctl.recorder.series import SERIES_COLUMNS
from labctl.records.run_record import CellSummary, RunInfo, RunOutcome
from labctl.records.series import SERIES_FILE

GiB = 1 << 30
MiB = 1 << 20
MAX_BYTES = {  # per file name (or suffix); anything else a certificate may hash: DEFAULT_MAX_BYTES
    SERIES_FILE: 8 * GiB,
    "events.jsonl": 2 * GiB,
    "run.json": 16 * MiB,
    "summary.json": 256 * MiB,
    "verdicts.json": 256 * MiB,
    "inventory.resolved.yaml": 16 * MiB,
}
DEFAULT_MAX_BYTES = 2 * GiB
MAX_DEPTH = 8  # run/cells/<cell>/... ; allure-results and report are skipped
MAX_FILES = 200_000
SKIPPED = ("allure-results", "report", ".pytest_cache")  # outputs, not inputs


def _refuse(path: Path, what: str, fix: str) -> BadInputError:
    return BadInputError(f"{path}: {what} ({fix})")


def _inside(target: Path, root: Path) -> bool:
    try:
        target.relative_to(root)
    except ValueError:
        return False
    return True


def check_files(run: Path) -> None:
    """Links, special files, sizes, depth and count of the files of ``run`` a certificate reads."""
    root = run.resolve()
    count = 0
    for folder, dirs, files in os.walk(run, followlinks=False):
        here = Path(folder)
        depth = len(here.relative_to(run).parts)
        if depth == 0:
            dirs[:] = [d for d in dirs if d not in SKIPPED]
        if depth >= MAX_DEPTH:
            raise _refuse(here, f"nested deeper than {MAX_DEPTH} folders", "give the run folder labctl wrote")
        for name in [*dirs, *files]:
            p = here / name
            count += 1
            if count > MAX_FILES:
                raise _refuse(run, f"more than {MAX_FILES} files", "give the run folder labctl wrote")
            if p.is_symlink():
                target = p.resolve()
                if not _inside(target, root):
                    raise _refuse(
                        p,
                        f"a symbolic link to {target.name or target}, outside the run folder",
                        "replace it with the file the run wrote, or certify another run",
                    )
            if name in dirs:
                continue
            st = p.stat()
            if not p.is_file():
                raise _refuse(p, "not a plain file", "remove it; a run folder holds plain files only")
            limit = MAX_BYTES.get(name, DEFAULT_MAX_BYTES)
            if st.st_size > limit:
                raise _refuse(
                    p, f"{st.st_size} bytes, more than the {limit} a run writes", "certify another run"
                )
            if name.endswith(".json"):
                _check_json_depth(p)


def _check_json_depth(path: Path) -> None:
    """A JSON file nested deeper than the parser's recursion (``[[[[...]]]]``) would stop the readers
    with a traceback; a torn or invalid one is left to them (they skip it, and the verdict names the
    cell without a readable summary)."""
    try:
        json.loads(path.read_bytes())
    except RecursionError:
        raise _refuse(
            path, "nested deeper than a run writes", "restore the file the run wrote, or certify another run"
        ) from None
    except ValueError:
        return


def check_series(run: Path, info: RunInfo | None, summaries: dict[str, CellSummary]) -> None:
    """``series.csv`` is there, whole, and holds numbers."""
    path = run / SERIES_FILE
    if not path.exists():
        raise _refuse(path, "missing", "the run recorded no samples: re-run the plan or certify another run")
    fix = "restore the file the run wrote, or certify another run"
    with path.open(newline="", encoding="utf-8", errors="replace") as fh:
        header = fh.readline()
        if next(csv.reader([header]), []) != list(SERIES_COLUMNS):
            raise _refuse(path, "not a labctl series file (its header is not the recorder's)", fix)
        finite = 0
        rows_of: dict[str, int] = {}
        last = header
        for line in fh:
            last = line
            cells = line.rstrip("\r\n").split(",")
            if len(cells) < len(SERIES_COLUMNS):
                continue
            rows_of[cells[0]] = rows_of.get(cells[0], 0) + 1
            try:
                value = float(cells[-1])
            except ValueError:
                continue
            if math.isfinite(value):
                finite += 1
    killed = info is not None and info.outcome is RunOutcome.RUNNING
    if not last.endswith("\n") and not killed:
        raise _refuse(path, "truncated: its last line is cut short although the run ended", fix)
    for cid, s in summaries.items():
        if s.metrics and not rows_of.get(cid):
            raise _refuse(
                path,
                f"truncated: no sample of cell {cid}, whose summary has {len(s.metrics)} series",
                fix,
            )
    if any(s.metrics for s in summaries.values()) and finite == 0:
        raise _refuse(path, "no finite value (every sample is NaN or empty)", fix)


def check_one_lab(runs: Sequence[tuple[str, RunInfo | None]]) -> None:
    """Runs of two labs are two certificates."""
    labs: dict[str, str] = {}
    for run_id, info in runs:
        if info is not None:
            labs.setdefault(info.lab, run_id)
    if len(labs) > 1:
        (a, ra), (b, rb) = list(labs.items())[:2]
        raise BadInputError(
            f"runs {ra} (lab {a}) and {rb} (lab {b}) are of two labs: certify each lab's runs on their own"
        )

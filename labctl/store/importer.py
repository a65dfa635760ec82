"""``labctl runs import``: a run folder's rows into the store, replacing what the store had of it.

Run folders are the source of truth; importing one again gives the same rows (idempotent), so the
store can be rebuilt from ``results/`` at any time (``labctl runs import --all``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from labctl.store.base import ResultsStore
from labctl.store.folder import RUN_FILE, read_run_folder
from labctl.store.rows import batched, sample_rows

SAMPLE_BATCH_ROWS = 50_000  # rows per write of samples: bounded memory per batch, few files


@dataclass(frozen=True)
class Imported:
    run_id: str
    path: Path
    cells: int
    samples: int
    skipped: dict[str, str] = field(default_factory=dict)  # cell -> why it was not imported

    def line(self) -> str:
        text = f"{self.run_id}: {self.cells} cells, {self.samples} samples"
        if self.skipped:
            text += "; skipped " + "; ".join(f"{c} ({why})" for c, why in sorted(self.skipped.items()))
        return text


def import_run(store: ResultsStore, path: Path) -> Imported:
    """Replace the store's rows of the run in ``path`` by what the folder holds."""
    data = read_run_folder(path)
    run_id = data.info.run_id
    samples = 0
    with store.replace_run(run_id) as w:
        w.add_run(data.info, str(Path(path).resolve()))
        for seq, record in enumerate(data.records.values()):
            w.add_cell(run_id, record, seq)
        for batch in batched(sample_rows(data.series()), SAMPLE_BATCH_ROWS):
            samples += w.add_samples(run_id, batch)
    return Imported(run_id, Path(path), len(data.records), samples, dict(data.skipped))


def run_folders(results_dir: Path) -> list[Path]:
    """The run folders in ``results_dir`` (those with a run.json), oldest first."""
    root = Path(results_dir)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / RUN_FILE).is_file())

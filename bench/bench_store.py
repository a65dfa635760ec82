"""The embedded results store and the comparison, timed on a full boot-storm plan (7 cells, 1 to 100
clients, 24 samples a series). Prints figures: import, a sink writing cell by cell, the queries
`labctl runs` / `runs show` / `compare` make, and a comparison with a 30-night history.

    .venv/bin/python bench/bench_store.py [NIGHTS]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labctl.report.compare import compare  # noqa: E402
from labctl.store import StoreSink, import_run, open_store  # noqa: E402
from labctl.store.folder import read_run_folder  # noqa: E402
from tests.store.runs import make_run  # noqa: E402

GROUPS = (1, 5, 10, 25, 50, 75, 100)


def timed(fn, repeat: int = 1) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(nights: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        folders = [make_run(results, seed=s, night=s, group_sizes=GROUPS) for s in range(1, nights + 1)]
        store = open_store(f"duckdb:{Path(tmp) / 'store'}")
        samples = sum(len(s) for s in read_run_folder(folders[0]).series())
        print(f"one run: {len(GROUPS)} cells, {samples} samples")

        t, _ = timed(lambda: import_run(store, folders[0]))
        print(f"import one run                      {t * 1000:8.0f} ms")
        data = read_run_folder(folders[1])

        def sink() -> None:
            s = StoreSink(store, data.info, folders[1])
            for r in data.records.values():
                s.cell_finished(r)
            s.run_finished(data.info)

        t, _ = timed(sink)
        print(
            f"sink, cell by cell + finish         {t * 1000:8.0f} ms  ({t / len(GROUPS) * 1000:.0f} ms a cell)"
        )
        t0 = time.perf_counter()
        for f in folders[2:]:
            import_run(store, f)
        print(f"import {nights - 2} more runs                {time.perf_counter() - t0:8.1f} s")

        last = read_run_folder(folders[-1]).info
        t, _ = timed(lambda: store.runs(limit=50), 5)
        print(f"runs() of {nights}                         {t * 1000:8.0f} ms")
        t, now = timed(lambda: store.figures(last.run_id), 5)
        print(f"figures() of one run                {t * 1000:8.0f} ms")
        started = store.run(last.run_id).started_utc  # type: ignore[union-attr]
        t, hist = timed(lambda: store.figure_history(last.lab, last.plan, before=started, runs=30), 3)
        print(f"figure_history(30 runs)             {t * 1000:8.0f} ms")
        base = store.figures(read_run_folder(folders[0]).info.run_id)
        t, _ = timed(lambda: compare(now, [base]), 3)  # type: ignore[arg-type]
        print(f"compare, no history                 {t * 1000:8.0f} ms")
        t, result = timed(lambda: compare(now, [base], history=hist), 3)  # type: ignore[arg-type]
        print(f"compare, history of {len(hist)} runs (E-div) {t * 1000:8.0f} ms  -> {result.headline()}")  # type: ignore[union-attr,arg-type]
        files = len(list((Path(tmp) / "store").rglob("*.parquet")))
        size = sum(p.stat().st_size for p in (Path(tmp) / "store").rglob("*.parquet"))
        print(f"store: {files} Parquet files, {size / 1e6:.1f} MB for {nights} runs")
        store.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)

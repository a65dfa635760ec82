"""A week of nights through the store, the baseline and the comparison, the way `labctl nightly`
will compose them: a regression injected on night 5 and a lab fault on night 6; night 5 is flagged
with the right metrics, night 6 is a lab fault, the other nights are clean."""

from __future__ import annotations

from pathlib import Path

from labctl.records.run_record import RunOutcome
from labctl.report.compare import EXIT_LAB_FAULT, EXIT_OK, EXIT_REGRESSION, CellStatus, Comparison, compare
from labctl.store import BaselineSet, ResultsStore, StoreSink
from labctl.store.folder import read_run_folder
from labctl.store.rows import now_utc, utc
from tests.store.runs import cell_id, make_run


def night(store: ResultsStore, results: Path, n: int, **kw: object) -> Comparison:
    """Run night ``n`` into the store (as its sink would) and compare it with the baseline set and
    the history before it."""
    folder = make_run(results, seed=100 + n, night=n, **kw)  # type: ignore[arg-type]
    data = read_run_folder(folder)
    running = data.info.model_copy(update={"outcome": RunOutcome.RUNNING, "ended": None})
    sink = StoreSink(store, running, folder)
    for record in data.records.values():
        sink.cell_finished(record)
    sink.run_finished(data.info)
    now = store.figures(data.info.run_id)
    chosen = store.baseline(now.lab, now.plan)  # type: ignore[union-attr]
    assert now is not None and chosen is not None
    base = [store.figures(r) for r in chosen.run_ids]
    started = utc(now.started_utc)
    assert started is not None
    history = store.figure_history(now.lab, now.plan, before=started, runs=30)
    result = compare(now, [b for b in base if b is not None], history=history, baseline_set=chosen.set_id)
    print(f"--- night {n}: exit {result.exit_code}\n{result.text()}")
    return result


def test_a_week_of_nights(duck_store: ResultsStore, tmp_path: Path) -> None:
    results = tmp_path / "results"
    first = [read_run_folder(make_run(results, seed=s, night=s - 10)).info for s in (1, 2)]
    for info in first:  # two qualification runs become the baseline
        folder = results / info.run_id
        sink = StoreSink(duck_store, info, folder)
        for record in read_run_folder(folder).records.values():
            sink.cell_finished(record)
        sink.run_finished(info)
    duck_store.add_baseline(
        BaselineSet(
            set_id="20261101-000000-base",
            lab="sim-2007",
            plan="boot_storm",
            run_ids=[i.run_id for i in first],
            set_utc=now_utc(),
        )
    )
    week = {
        n: night(duck_store, results, n, **kw)
        for n, kw in [
            (1, {}),
            (2, {}),
            (3, {}),
            (4, {}),
            (5, {"write_cache_spindles": 2}),  # a real regression: half the write-cache disks
            (6, {"faults": {cell_id(100): "never_booted"}}),  # the lab broke: a client never booted
            (7, {}),
        ]
    }
    codes = {n: c.exit_code for n, c in week.items()}
    assert codes == {
        1: EXIT_OK,
        2: EXIT_OK,
        3: EXIT_OK,
        4: EXIT_OK,
        5: EXIT_REGRESSION,
        6: EXIT_LAB_FAULT,
        7: EXIT_OK,
    }
    regressed = week[5].of(CellStatus.REGRESSED)
    assert cell_id(100) in {c.cell for c in regressed}
    for c in regressed:  # the responsible metrics first
        assert c.figures[0].figure.startswith(("disk_queue_len", "retries", "disk_latency_ms")), c.figures[0]
    assert [c.cell for c in week[6].of(CellStatus.LAB_FAULT)] == [cell_id(100)]
    assert "history of 6 runs" in week[5].text() and "outlier" in week[7].text(all_figures=True)
    assert len(duck_store.runs()) == 9

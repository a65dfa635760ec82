"""The nightly compares a night with the baseline of its own kind (profile and plan parameters), and
says so when the only baseline there is was set before baselines had a kind and is not alike."""

from __future__ import annotations

from pathlib import Path

from labctl.cli.compare_cmd import kind_key
from labctl.cli.nightly import judge
from labctl.report.summary_text import text
from labctl.store import BaselineSet, import_run, open_store
from labctl.store.folder import read_run_folder
from labctl.store.rows import now_utc
from tests.store.runs import make_run


def test_a_night_is_compared_with_its_kinds_baseline_and_an_unlike_one_is_named(tmp_path: Path) -> None:
    results = tmp_path / "results"
    store = open_store(f"duckdb:{tmp_path / 'store'}")
    full = make_run(results, seed=1, night=1, profile="full", window_s=600, group_sizes=(5, 25))
    quick = make_run(results, seed=2, night=2, profile="quick", group_sizes=(5, 25))
    tonight = make_run(results, seed=3, night=3, profile="quick", group_sizes=(5, 25))
    for f in (full, quick):
        import_run(store, f)
    # a set made before sets had a kind: the nightly may use it, and must say it is not alike
    store.add_baseline(
        BaselineSet(set_id="20261101-000000-aaaa", lab="sim-2007", plan="boot_storm", run_ids=[full.name],
                    set_utc=now_utc())
    )  # fmt: skip
    verdict, comparison, _, notes = judge(store, tonight, report=False)
    assert comparison is not None and comparison.baseline_runs == [full.name]
    assert any("baseline not alike" in n and "profile quick vs full" in n for n in notes)
    assert "Baseline not alike: baseline" in text(verdict, comparison) and "window_s 120.0 vs 600" in text(
        verdict, comparison
    )
    # a set of tonight's kind is taken over the older kind-less one, and nothing is unlike
    kind = read_run_folder(quick).figures().kind
    store.add_baseline(
        BaselineSet(set_id="20261102-000000-bbbb", lab="sim-2007", plan="boot_storm", run_ids=[quick.name],
                    set_utc=now_utc(), profile="quick", params_key=kind.key, parameters=kind.parameters)
    )  # fmt: skip
    assert kind_key(read_run_folder(tonight).figures()) == kind.key
    verdict, comparison, _, notes = judge(store, tonight, report=False)
    assert comparison is not None and comparison.baseline_runs == [quick.name] and not comparison.unlike
    assert "not alike" not in text(verdict, comparison)
    store.close()

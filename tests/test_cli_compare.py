"""`labctl compare`: the nightly regression gate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from labctl.cli import cli
from tests.report.synthetic import make_run


def test_a_slower_boot_is_a_regression_and_exits_1(tmp_path: Path) -> None:
    base = make_run(tmp_path / "results", run_id="20261120-020000-boot_storm-base")
    run = tmp_path / "results" / "20261121-020000-boot_storm-next"
    shutil.copytree(base, run)
    summary_path = sorted(run.glob("cells/*/summary.json"))[-1]
    summary = json.loads(summary_path.read_text())
    for client in summary["clients"].values():
        if client.get("boot_time_s"):
            client["boot_time_s"] += 30.0  # far outside the 10 % + 2 s tolerance
    summary_path.write_text(json.dumps(summary))

    res = CliRunner().invoke(
        cli,
        ["compare", run.name, base.name, "--results-dir", str(tmp_path / "results")],
        standalone_mode=False,
    )
    assert res.return_value == 1, res.output
    assert summary_path.parent.name in res.output and "boot_time_s" in res.output
    assert json.loads((run / "compare.json").read_text())["regressed"]

    same = CliRunner().invoke(cli, ["compare", str(base), str(base)], standalone_mode=False)
    assert same.return_value == 0, same.output

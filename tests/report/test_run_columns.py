"""`labctl runs show` columns per plan kind (issue 20): a VDI run's cells show desktops logged on,
logon time, the array's peak IOPS and latency, the hosts' CPU and the response-time index read as
VSImax is (never the 2007 boot columns, all "-"); a 2007 storm on a lab with VDI hosts shows its
servers' CPU, not a host's. From the cells' key figures, as the results store keeps them."""

from __future__ import annotations

from pathlib import Path

from labctl.recorder.cell_files import read_cell_summaries, read_cell_verdicts
from labctl.recorder.runfolder import read_run_info
from labctl.records.figures import RunFigures, run_figures
from labctl.report.run_columns import clients, columns, row
from tests.report.synthetic import Synth, make_run
from tests.report.synthetic_vdi import make_vdi_run


def _figures(run: Path) -> RunFigures:
    info = read_run_info(run)
    assert info is not None
    summaries, verdicts = read_cell_summaries(run), read_cell_verdicts(run)
    return run_figures(info, {c: (s, verdicts.get(c)) for c, s in summaries.items()})


def test_vdi_cells_get_vdi_columns(tmp_path: Path) -> None:
    figs = _figures(make_vdi_run(tmp_path, saturate_at=80))
    cols = columns({c.scenario for c in figs.cells.values()})
    titles = [c.title for c in cols]
    assert "boot mean s" not in titles and "never booted" not in titles
    assert titles[:3] == ["logged on", "logon mean s", "logon max s"]
    cell = figs.cells["vdi_storm-default-100"]
    shown = dict(zip(titles, row(cols, cell), strict=True))
    assert shown["logged on"] == "100 of 100"
    assert shown["array IOPS peak"] == "1700"  # the array itself, though it is among the outcomes
    assert shown["response-time index"] == "sat. 80, 80 % good"
    assert shown["host CPU peak %"] != "-"
    assert clients(cell, stored_clients=101) == "100"  # the array is no client


def test_a_2007_storm_keeps_its_columns_and_its_servers_cpu(tmp_path: Path) -> None:
    figs = _figures(make_run(tmp_path, group_sizes=(5,), synth=Synth(vdi_hosts=("vdi-esx-01",))))
    cols = columns({c.scenario for c in figs.cells.values()})
    titles = [c.title for c in cols]
    assert "boot mean s" in titles and "logged on" not in titles
    shown = dict(zip(titles, row(cols, figs.cells["boot_storm-standalone-005"]), strict=True))
    assert shown["CPU peak %"] != "2"  # the idle VDI host's 2 % is not the streaming server's CPU
    assert float(shown["CPU peak %"]) > 20

"""Plan parameters and criteria, checked before anything runs: profiles, overrides, typed models,
the lab's limits and the criteria files; cells and their ids; `-k` by cell; `labctl run
--collect-only` and `--lf`.

Every bad input is refused at collection as a usage error (pytest exit 4, `labctl run` exit 2) with
one line naming the file or option, the item and what is wrong, and nothing is touched: no run
folder is written and no simulator is started (these tests have none running).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labctl.errors import BadInputError
from labctl.plugin.plans import load_plan_params
from tests.labfiles import make_test_lab

pytest_plugins = ["pytester"]

TESTPLANS = Path(__file__).resolve().parents[2] / "testplans"

PLAN = """\
plan: demo
default_profile: full
profiles:
  full: {group_sizes: [1, 5, 50], window_s: 360, splits: [[25, 25], [50, 50]]}
  quick: {group_sizes: [1], window_s: 60, splits: [[2, 2]]}
"""


def _plan(tmp_path: Path) -> Path:
    p = tmp_path / "demo.params.yaml"
    p.write_text(PLAN)
    return p


def test_profile_and_overrides(tmp_path: Path) -> None:
    p = _plan(tmp_path)
    assert load_plan_params(p)["group_sizes"] == [1, 5, 50]
    quick = load_plan_params(p, "quick", ["window_s=90", "group_sizes=25,50", "splits=[[5, 5]]"])
    assert quick.profile == "quick"
    assert quick["window_s"] == 90 and quick["group_sizes"] == [25, 50] and quick["splits"] == [[5, 5]]
    # one value for a list parameter is one cell, not a scalar
    assert load_plan_params(p, None, ["group_sizes=75"])["group_sizes"] == [75]


@pytest.mark.parametrize(
    ("profile", "override", "named"),
    [("nightly", [], "nightly"), (None, ["windows=5"], "windows"), (None, ["window_s"], "KEY=VALUE")],
)
def test_bad_selection_names_what_is_wrong(tmp_path: Path, profile, override, named) -> None:
    with pytest.raises(BadInputError, match=named):
        load_plan_params(_plan(tmp_path), profile, override)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        # an alias bomb grows without bound when expanded: aliases are refused outright
        ('a: &a ["x","x"]\nb: &b [*a,*a]\nc: &c [*b,*b]\nplan: demo\nprofiles: {full: {x: *c}}\n', "aliases"),
        ("plan: demo\nprofiles: {full: {x: " + "[" * 40 + "]" * 40 + "}}\n", "nested deeper"),
        ("- just\n- a list\n", "needs `plan:` and a `profiles:` mapping"),
        ("plan: demo\nprofiles: {full: [1, 2]}\n", "must be a mapping"),
        ("plan: demo\nprofiles: {full: {x: [1, 2}\n", "YAML syntax error"),
    ],
    ids=["alias-bomb", "deep-nesting", "not-a-mapping", "profile-not-a-mapping", "yaml-syntax"],
)
def test_a_hostile_plan_file_is_one_line(tmp_path: Path, text: str, named: str) -> None:
    p = tmp_path / "demo.params.yaml"
    p.write_text(text)
    with pytest.raises(BadInputError) as exc:
        load_plan_params(p)
    assert named in str(exc.value) and "\n" not in str(exc.value)
    assert str(exc.value).startswith(str(p)) or str(exc.value).startswith(p.name)


def test_cells_are_parametrised_with_their_cell_ids(pytester: pytest.Pytester) -> None:
    pytester.makefile(".params.yaml", demo=PLAN)
    pytester.makepyfile(
        test_demo="""
        import pytest
        pytestmark = pytest.mark.plan("demo")

        def test_storm(group_size, plan_params):
            assert group_size in plan_params["group_sizes"]

        def test_matrix(split, group_size):
            assert len(split) == 2
        """
    )
    result = pytester.runpytest("--collect-only", "-q", "-k", "storm and 50")
    result.stdout.fnmatch_lines(["test_demo.py::test_storm[demo-standalone-050]", "*1/9 tests collected*"])
    result = pytester.runpytest("--collect-only", "-q", "--profile", "quick")
    result.stdout.fnmatch_lines(
        [
            "test_demo.py::test_storm[demo-standalone-001]",
            "test_demo.py::test_matrix[demo-standalone-002-002-001]",
        ]
    )
    result = pytester.runpytest("-q", "--plan-param", "group_sizes=5")
    result.assert_outcomes(passed=3)


def _collect(pytester: pytest.Pytester, plan: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--collect-only", "-q", "-p", "no:cacheprovider", str(TESTPLANS / f"test_{plan}.py"), *args
    )


def _ids(result: pytest.RunResult) -> list[str]:
    return [line.split("[", 1)[1].rstrip("]") for line in result.stdout.lines if "::" in line and "[" in line]


def test_k_selects_cells_by_the_number_not_by_a_substring(pytester: pytest.Pytester) -> None:
    assert _ids(_collect(pytester, "boot_storm", "-k", "5")) == ["boot_storm-standalone-005"]
    assert _ids(_collect(pytester, "boot_storm", "-k", "50 or 75")) == [
        "boot_storm-standalone-050",
        "boot_storm-standalone-075",
    ]
    assert _ids(_collect(pytester, "boot_storm", "-k", "boot_storm-standalone-050")) == [
        "boot_storm-standalone-050"
    ]
    assert _ids(_collect(pytester, "boot_storm", "-k", "not 1 and not 100")) == [
        f"boot_storm-standalone-{n:03d}" for n in (5, 10, 25, 50, 75)
    ]
    assert _ids(_collect(pytester, "copy_reboot", "-k", "50x50 and share_to_share")) == [
        "copy_reboot-standalone-050-050-share_to_share"
    ]
    assert (
        len(_ids(_collect(pytester, "copy_reboot", "-k", "25"))) == 12
    )  # splits with 25 copiers or rebooters
    result = _collect(pytester, "boot_storm", "-k", "5 and (")
    assert (
        result.ret == pytest.ExitCode.USAGE_ERROR and "Wrong expression passed to '-k'" in result.stderr.str()
    )


@pytest.fixture
def small_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A 6-client lab with nothing running: anything that reached the lab would fail or start one."""
    monkeypatch.setenv("LABCTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("LABCTL_LEASE_DIR", str(tmp_path / "leases"))
    for var in ("LABCTL_LAB", "LABCTL_CONFIG", "LABCTL_RESULTS", "LABCTL_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    return make_test_lab(tmp_path, clients=6)


def _refused(pytester: pytest.Pytester, lab: Path, plan_module: Path, *args: str) -> str:
    """Run the plan; it must stop as a usage error before anything ran. Returns its one error line."""
    results = pytester.path / "results"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", str(plan_module), "--lab", str(lab), "--results-dir", str(results), *args
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, (
        result.stdout.str()[-2000:] + result.stderr.str()[-2000:]
    )
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1, result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert not results.exists(), "nothing ran: no run folder"
    assert not (Path(os.environ["LABCTL_STATE_DIR"]) / "state.json").exists(), "no simulator was started"
    return errors[0]


BAD_PARAMS = [
    # (plan, --plan-param, what the line must say)
    (
        "boot_storm",
        "group_sizes=-3",
        "--plan-param 'group_sizes=-3': group_sizes.0: Input should be greater than 0",
    ),
    ("boot_storm", "group_sizes=0", "greater than 0"),
    ("boot_storm", "group_sizes=abc", "group_sizes.0: Input should be a valid integer, got 'abc'"),
    ("boot_storm", "group_sizes=true", "group_sizes.0: Input should be a valid integer, got True"),
    ("boot_storm", "group_sizes=2.5", "group_sizes.0: Input should be a valid integer, got 2.5"),
    ("boot_storm", "group_sizes=[]", "at least 1 item"),
    ("boot_storm", "group_sizes=5,5", "5 is listed twice"),
    ("boot_storm", "group_sizes=7", "group_sizes: 7 clients, but group 'clients' of sim-2007"),
    ("boot_storm", "window_s=1e308", "window_s: Input should be less than or equal to 604800"),
    ("boot_storm", "window_s=.inf", "window_s: Input should be a finite number"),
    ("boot_storm", "window_s=-5", "window_s: Input should be greater than 0"),
    ("boot_storm", "window_s=five", "window_s: Input should be a valid number, got 'five'"),
    ("boot_storm", "sample_interval_s=0", "sample_interval_s: Input should be greater than or equal to 0.1"),
    ("boot_storm", "sample_interval_s=100000", "less than or equal to 600"),
    ("boot_storm", "windows=5", "plan 'boot_storm' has no parameter 'windows' (known:"),
    ("boot_storm", "clients=nosuch", "clients: 'nosuch' is not a group of sim-2007"),
    ("boot_storm", "clients=a;rm", "clients: String should match pattern"),
    ("boot_storm", "restore_failure=explode", "restore_failure: Input should be 'note' or 'lab_fault'"),
    ("copy_reboot", "splits=[[1,2,3]]", "splits.0: Tuple should have at most 2 items"),
    ("copy_reboot", "splits=[[0,2]]", "splits.0.0: Input should be greater than 0"),
    ("copy_reboot", "splits=[[4,4]]", "splits: 8 clients, but group 'clients'"),
    ("copy_reboot", "splits=5", "splits.0: Input should be a valid tuple"),
    ("copy_reboot", "copy_paths=local_to_moon", "copy_paths.0: Input should be 'local_to_local'"),
    ("copy_reboot", "cell_timeout_s=1e999", "cell_timeout_s: Input should be a finite number"),
    ("ha_comparison", "configurations=[standalone,nosuch]", "configurations: "),
]


@pytest.mark.parametrize(("plan", "param", "said"), BAD_PARAMS, ids=[p for _, p, _ in BAD_PARAMS])
def test_a_bad_plan_parameter_is_refused_before_anything_runs(
    pytester: pytest.Pytester, small_lab: Path, plan: str, param: str, said: str
) -> None:
    line = _refused(
        pytester, small_lab, TESTPLANS / f"test_{plan}.py", "--profile", "quick", "--plan-param", param
    )
    assert said in line, line


def test_a_bad_value_in_the_plan_file_names_the_file_profile_and_item(
    pytester: pytest.Pytester, small_lab: Path
) -> None:
    plans = pytester.path / "plans"
    shutil.copytree(TESTPLANS, plans)
    params = plans / "boot_storm.params.yaml"
    params.write_text(params.read_text().replace("window_s: 120", "window_s: 0"))
    line = _refused(pytester, small_lab, plans / "test_boot_storm.py", "--profile", "quick")
    assert "plans/boot_storm.params.yaml: quick.window_s: Input should be greater than 0, got 0" in line, line


BAD_CRITERIA = [
    (
        'entity: "{write_cache_disk}"',
        'entity: "{write_cache_dsk}"',
        "select.entity: unknown variable {write_cache_dsk}",
    ),
    ("2 * spindles(write_cache_volume)", "2 * spindle(write_cache_volume)", "write-cache disk queue"),
    ("pass: {max: 95}", "pass: {min: 99, max: 95}", "pass.min: 99 is above pass.max 95"),
    ("marginal: {max: 90}\n", "marginal: {max: 60}\n", "the pass band must lie inside the marginal band"),
    ("statistic: mean\n", "statistic: average\n", "unknown statistic 'average'"),
    (
        "select: {result: boot_time_s, role: storm}",
        "select: {result: boot_time_s, role: storm, metric: x}",
        "either a series (source, entity, metric) or a per-machine result",
    ),
    ("criteria:\n", "criteria: [\n", "YAML syntax error"),
    # selectors naming no recorded series: refused here, not after a storm that ends in "no data"
    (
        "metric: disk_queue_len",
        "metric: disk_que_len",
        "select.metric 'disk_que_len' is not a metric of source",
    ),
    (
        'source: typeperf, entity: "{write_cache_disk}"',
        'source: typeprf, entity: "{write_cache_disk}"',
        "select.source 'typeprf'",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "said"), BAD_CRITERIA, ids=[s.split(" (")[0][:30] for *_, s in BAD_CRITERIA]
)
def test_a_bad_criteria_file_is_refused_at_collection(
    pytester: pytest.Pytester, small_lab: Path, old: str, new: str, said: str
) -> None:
    plans = pytester.path / "plans"
    shutil.copytree(TESTPLANS, plans)
    criteria = plans / "criteria" / "boot_storm.yaml"
    text = criteria.read_text()
    assert old in text
    criteria.write_text(text.replace(old, new, 1))
    line = _refused(
        pytester,
        small_lab,
        plans / "test_boot_storm.py",
        "--profile",
        "quick",
        "--plan-param",
        "group_sizes=1",
    )
    assert said in line and "criteria/boot_storm.yaml" in line, line


LABCTL = [sys.executable, "-m", "labctl"]


def test_labctl_run_refuses_a_group_larger_than_the_lab_with_exit_2(small_lab: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            *LABCTL,
            "run",
            "boot_storm",
            "--lab",
            str(small_lab),
            "--results-dir",
            str(tmp_path / "results"),
            "--param",
            "group_sizes=50",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    err = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and "group_sizes: 50 clients, but group 'clients' of sim-2007" in err[0], err
    assert not list((tmp_path / "results").glob("*/run.json")), "no run folder: nothing ran"


def test_labctl_run_collect_only_and_last_failed(small_lab: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    base = [
        *LABCTL,
        "run",
        "boot_storm",
        "--lab",
        str(small_lab),
        "--results-dir",
        str(results),
        "--profile",
        "quick",
    ]
    proc = subprocess.run([*base, "--collect-only", "-q"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "test_boot_storm[boot_storm-standalone-005]" in proc.stdout and proc.stderr.strip() == ""
    assert not [p for p in results.glob("*") if (p / "run.json").exists()], "nothing ran"
    # --lf reads the plans' own cache beside the run folders: the cell that failed last time
    cache = results / ".pytest_cache" / "v" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    failed = f"{TESTPLANS / 'test_boot_storm.py'}::test_boot_storm[boot_storm-standalone-005]"
    nodeid = os.path.relpath(failed, Path(__file__).resolve().parents[2])
    (cache / "lastfailed").write_text(json.dumps({nodeid: True}))
    proc = subprocess.run(
        [*base, "--lf", "--collect-only", "-q"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    listed = [line for line in proc.stdout.splitlines() if "::" in line]
    assert listed == ["testplans/test_boot_storm.py::test_boot_storm[boot_storm-standalone-005]"], proc.stdout

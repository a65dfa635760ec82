"""Plan parameters: profiles, overrides, errors; cells and their ids from a plan file."""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.errors import BadInputError
from labctl.plugin.plans import load_plan_params

pytest_plugins = ["pytester"]

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


def test_cells_are_parametrised_with_readable_ids(pytester: pytest.Pytester) -> None:
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
    result.stdout.fnmatch_lines(["test_demo.py::test_storm[50]", "*1/9 tests collected*"])
    result = pytester.runpytest("--collect-only", "-q", "--profile", "quick")
    result.stdout.fnmatch_lines(["test_demo.py::test_storm[1]", "test_demo.py::test_matrix[2x2-1]"])
    result = pytester.runpytest("-q", "--plan-param", "group_sizes=5")
    result.assert_outcomes(passed=3)


def test_a_bad_plan_param_stops_the_session_as_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".params.yaml", demo=PLAN)
    pytester.makepyfile(
        test_demo="""
        import pytest
        pytestmark = pytest.mark.plan("demo")

        def test_storm(group_size):
            raise AssertionError("must not run")

        def test_matrix(split, group_size):
            raise AssertionError("must not run")
        """
    )
    result = pytester.runpytest("--plan-param", "windows=5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # not a collection error, not "interrupted"
    err = result.stderr.str()
    assert err.count("--plan-param 'windows=5': plan 'demo' has no parameter 'windows'") == 1, err
    assert "Traceback" not in err + result.stdout.str() and "must not run" not in result.stdout.str()

"""What makes runs alike (labctl.records.run_kind): read from run.json as the plugin writes it, from
older run folders, and from a bare pytest command line."""

from __future__ import annotations

from labctl.records.run_kind import run_kind


def test_the_plugins_record_gives_profile_parameters_and_a_key() -> None:
    def recorded(profile: str, window_s: float) -> dict:
        values = {"group_sizes": [25, 50], "window_s": window_s}
        return {"profile": profile, "plans": {"boot_storm": {"profile": profile, "values": values}}}

    quick, quick2, full = (
        run_kind(recorded("quick", 120)),
        run_kind(recorded("quick", 120)),
        run_kind(recorded("full", 600)),
    )
    assert quick.profile == "quick" and quick.parameters["window_s"] == 120 and quick.recorded
    assert quick.key == quick2.key != full.key
    assert quick.differences(full) == ["profile quick vs full", "window_s 120 vs 600"]
    assert quick.differences(quick2) == []
    longer = run_kind(recorded("quick", 360))
    assert longer.key != quick.key and longer.differences(quick) == ["window_s 360 vs 120"]


def test_several_plans_are_named_and_older_runs_read_back() -> None:
    both = run_kind(
        {
            "plans": {
                "boot_storm": {"profile": "quick", "values": {"window_s": 120}},
                "copy_reboot": {"profile": "quick", "values": {"window_s": 300}},
            }
        }
    )
    assert both.profile == "quick" and both.parameters == {
        "boot_storm.window_s": 120,
        "copy_reboot.window_s": 300,
    }
    top = run_kind({"group_sizes": [1, 5], "window_s": 120.0, "pytest_args": ["-k", "5"]})
    assert (
        top.profile is None and top.parameters == {"group_sizes": [1, 5], "window_s": 120.0} and top.recorded
    )
    args = run_kind({"pytest_args": ["x.py", "--profile", "quick", "--plan-param=window_s=200"]})
    assert args.profile == "quick" and args.parameters == {"window_s": "200"} and not args.recorded
    nothing = run_kind({"pytest_args": []})
    assert nothing.profile is None and not nothing.recorded
    # an unknown side is no difference: only what is known to differ is named
    assert nothing.differences(top) == [] and args.differences(run_kind({"profile": "full"})) == [
        "profile quick vs full"
    ]

"""The copy verb: the command each OS gets and how its answer is read (the copy/reboot matrix's
copies run through it; tests/plans/test_plans_quick.py runs them against the simulated clients)."""

from __future__ import annotations

from labctl.drivers.os_files import copy_argv, copy_outcome
from labctl.drivers.ssh import CommandResult, Shell


def test_windows_copies_with_copy_y_and_is_judged_by_its_line() -> None:
    assert copy_argv(r"C:\labctl\file512.bin", r"\\fs-01\share\copy-a.bin") == [
        "copy",
        "/Y",
        r"C:\labctl\file512.bin",
        r"\\fs-01\share\copy-a.bin",
    ]
    copied = CommandResult("copy", 0, "        1 file(s) copied.\r\n", "", 3.2)
    assert copy_outcome(copied) == (True, "")
    # cmd.exe's copy exits 0 for some failures: the line decides, and its own words are the reason
    none = CommandResult(
        "copy", 0, "The system cannot find the file specified.\r\n        0 file(s) copied.\r\n", "", 0.1
    )
    ok, why = copy_outcome(none)
    assert not ok and why.startswith("The system cannot find the file specified.")
    assert copy_outcome(CommandResult("copy", 1, "", "Access is denied.", 0.1)) == (
        False,
        "Access is denied.",
    )


def test_a_posix_box_copies_with_cp_and_is_judged_by_its_exit_status() -> None:
    assert copy_argv("/srv/a", "/tmp/b", Shell.POSIX) == ["cp", "-f", "/srv/a", "/tmp/b"]
    assert copy_outcome(CommandResult("cp", 0, "", "", 0.1), Shell.POSIX) == (True, "")
    assert copy_outcome(CommandResult("cp", 1, "", "cp: cannot stat '/srv/a'", 0.1), Shell.POSIX) == (
        False,
        "cp: cannot stat '/srv/a'",
    )
    dropped = CommandResult("cp", -1, "", "", 0.1, dropped=True)
    assert copy_outcome(dropped, Shell.POSIX) == (False, "exit -1")

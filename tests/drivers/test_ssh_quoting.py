"""Arguments quoted for cmd.exe stay one argument: a name with a space or & is not two commands."""

from __future__ import annotations

import pytest

from labctl.drivers.ssh import Shell, cmd_quote, join_command


@pytest.mark.parametrize(
    ("arg", "quoted"),
    [
        ("optiplex-001", "optiplex-001"),
        (r"C:\temp\file.bin", r"C:\temp\file.bin"),
        ("lab pc&calc", '"lab pc&calc"'),
        ("a|b", '"a|b"'),
        ("x>y", '"x>y"'),
        ("(paren)", '"(paren)"'),
        ("", '""'),
        (r"C:\dir with space\\", '"C:\\dir with space\\\\\\\\"'),
        (r"\Processor(_Total)\% Processor Time", '"\\Processor(_Total)\\% Processor Time"'),
    ],
)
def test_cmd_quote(arg: str, quoted: str) -> None:
    assert cmd_quote(arg) == quoted


def test_cmd_metacharacters_are_inside_quotes() -> None:
    line = join_command(["copy", "/Y", r"C:\src\a b.bin", r"\\infra-01\copy test&del C:\x"], Shell.CMD)
    assert line == r'copy /Y "C:\src\a b.bin" "\\infra-01\copy test&del C:\x"'
    # outside the quoted spans there is no & | < > that cmd would act on
    outside = "".join(part for i, part in enumerate(line.split('"')) if i % 2 == 0)
    assert not set("&|<>^") & set(outside)


@pytest.mark.parametrize("bad", ['say "hi"', "two\nlines", "cr\rhere", "nul\0"])
def test_unquotable_arguments_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match=r"cmd\.exe"):
        cmd_quote(bad)


def test_posix_quoting_for_a_linux_relay() -> None:
    assert join_command(["wakeonlan", "-i", "10.0.0.255", "a b;rm -rf /"], Shell.POSIX) == (
        "wakeonlan -i 10.0.0.255 'a b;rm -rf /'"
    )


def test_empty_command_is_refused() -> None:
    with pytest.raises(ValueError):
        join_command([])

"""Every bad inventory exits 2 from `labctl inventory validate FILE` with one line per problem:
``file:line: path.to.item: what is wrong (how to fix)``.

Each case edits the text of hardware/sim-2007.yaml (or writes a small file) and states where the
problem is by quoting the offending line, so the expected line number comes from the text, not
from the loader under test.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.errors import InventoryError
from labctl.inventory.load import default_lab_file, load_lab

BASE = default_lab_file().read_text()

# file:line: path: what (fix)  -- path has no spaces; what and fix are free text
LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): (?P<path>\S+): (?P<what>.+) \((?P<fix>[^()]+)\)$")


def edit(old: str, new: str, text: str = BASE) -> str:
    assert text.count(old) == 1, f"test setup: {old!r} must occur exactly once"
    return text.replace(old, new)


def line_no(text: str, needle: str, nth: int = 1) -> int:
    """1-based number of the ``nth`` line containing ``needle``."""
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]
    assert len(hits) >= nth, f"test setup: {needle!r} not found {nth} time(s)"
    return hits[nth - 1]


Validate = Callable[..., tuple[int, list[str], str]]


@pytest.fixture
def validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Validate:
    """Write ``text`` to a file, run `labctl inventory validate` on it: (exit code, stderr lines, path)."""

    def run(text: str, *args: str) -> tuple[int, list[str], str]:
        path = tmp_path / "lab.yaml"
        path.write_text(text)
        code = run_cli(cli, ["inventory", "validate", str(path), *args])
        return code, capsys.readouterr().err.splitlines(), str(path)

    return run


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    at: str  # a piece of the offending line
    path: str  # the item path the message must name
    words: tuple[str, ...]  # what the message must say (item names, values, hints)
    nth: int = 1  # which occurrence of ``at`` (a duplicate is reported on its second writing)


CASES = [
    Case(
        "unknown key with did-you-mean",
        edit("    model: OptiPlex 755\n", "    modle: OptiPlex 755\n"),
        "modle:",
        "clients[0].modle",
        ("unknown key 'modle'", "did you mean 'model'?"),
    ),
    Case(
        "wrong type: text for a number",
        edit("      ram_gb: 1\n", "      ram_gb: lots\n"),
        "ram_gb: lots",
        "clients[0].hardware.ram_gb",
        ("expected a number", "'lots'"),
    ),
    Case(
        "wrong type: text for a list",
        edit("    tags: [streamed, optiplex]\n", "    tags: {streamed: yes}\n"),
        "tags: {streamed",
        "clients[0].tags",
        ("expected a list",),
    ),
    Case(
        "malformed MAC",
        edit("    mac: 00:1a:a0:20:00:11\n", "    mac: 00:1a:a0:20:00:zz\n"),
        "00:1a:a0:20:00:zz",
        "servers[0].mac",
        ("malformed MAC", "00:1a:a0:20:00:zz"),
    ),
    Case(
        "malformed MAC in a client range",
        edit("00:1a:a0:07:00:01..00:1a:a0:07:00:64", "00:1a:a0:07:00:01..00:1a:a0:07:00"),
        "mac: 00:1a:a0:07:00:01..",
        "clients[0].mac",
        ("malformed MAC", "00:1a:a0:07:00"),
    ),
    Case(
        "malformed IP",
        edit("    ip: 127.20.0.11\n", "    ip: 127.20.0.311\n"),
        "127.20.0.311",
        "servers[0].ip",
        ("malformed IPv4 address", "127.20.0.311"),
    ),
    Case(
        "malformed URL",
        edit('url: "https://127.21.0.13:8443"', 'url: "htps//127.21.0.13"'),
        "htps//127.21.0.13",
        "servers[3].bmc.url",
        ("malformed URL", "htps//127.21.0.13", "https://host"),
    ),
    Case(
        "malformed URL: port out of range",
        edit("    url: https://127.23.0.1:8443\n", "    url: https://127.23.0.1:84430\n"),
        "84430",
        "storage[0].url",
        ("malformed URL",),
    ),
    Case(
        "duplicate machine name",
        edit(
            "\nshares:",
            "  - {name: infra-01, role: infrastructure, network: lab-net, ip: 127.20.0.99}\n\nshares:",
        ),
        "name: infra-01",
        "servers[4].name",
        ("duplicate machine name 'infra-01'", f"line {line_no(BASE, '- name: infra-01')}"),
        nth=2,
    ),
    Case(
        "duplicate MAC",
        edit("    mac: 00:1a:a0:20:00:13\n", "    mac: 00:1a:a0:20:00:11\n"),
        "mac: 00:1a:a0:20:00:11",
        "servers[3].mac",
        ("duplicate MAC 00:1a:a0:20:00:11", "'infra-01'", "'pvs-01'"),
        nth=2,
    ),
    Case(
        "duplicate IP with a client of a range",
        edit("    ip: 127.20.0.13\n", "    ip: 127.20.1.50\n"),
        "ip: 127.20.1.50",
        "servers[3].ip",
        ("duplicate IP 127.20.1.50", "'infra-01'", "'optiplex-050'"),
    ),
    Case(
        "duplicate MAC between machines of different configurations",
        edit("    mac: 00:1a:a0:20:00:14\n", "    mac: 00:1a:a0:20:00:12\n"),
        "mac: 00:1a:a0:20:00:12",
        "servers[2].mac",
        ("duplicate MAC 00:1a:a0:20:00:12", "'nas-01'", "'pvs-02'"),
        nth=2,
    ),
    Case(
        "MAC range shorter than the name range",
        edit("00:1a:a0:07:00:64", "00:1a:a0:07:00:63"),
        "00:1a:a0:07:00:63",
        "clients[0].mac",
        ("MAC range", "holds 99 addresses", "100 machines", "end at 00:1a:a0:07:00:64"),
    ),
    Case(
        "IP range longer than the name range",
        edit("127.20.1.1..127.20.1.100", "127.20.1.1..127.20.1.120"),
        "127.20.1.120",
        "clients[0].ip",
        ("IP range", "holds 120 addresses", "100 machines", "end at 127.20.1.100"),
    ),
    Case(
        "group naming an unknown machine",
        edit("  first-10: {", "  broken: {members: [optiplex-001, optiplx-002]}\n  first-10: {"),
        "broken:",
        "groups.broken.members[1]",
        ("group 'broken'", "unknown machine 'optiplx-002'", "did you mean 'optiplex-002'?"),
    ),
    Case(
        "group range beyond the clients",
        edit(
            '  first-10: {members: ["optiplex-[001-010]"]}', '  first-10: {members: ["optiplex-[095-110]"]}'
        ),
        "optiplex-[095-110]",
        "groups.first-10.members[0]",
        ("group 'first-10'", "unknown machine 'optiplex-101'", "and 9 more"),
    ),
    Case(
        "empty group",
        edit("  first-10: {", "  nobody: {tags: [nonesuch]}\n  first-10: {"),
        "nobody:",
        "groups.nobody",
        ("group 'nobody' is empty", "nonesuch"),
    ),
    Case(
        "RAID level the disk count cannot form",
        edit("raid: 10, disks: 4", "raid: 10, disks: 3"),
        "raid: 10, disks: 3",
        "servers[0].hardware.volumes[1].disks",
        ("RAID 10", "3 disk(s)", "volume 'cache'", "even number of disks"),
    ),
    Case(
        "RAID 1 with three disks",
        edit(
            '{name: system, drive: "C:", purposes: [os, share], raid: 1, disks: 2,',
            '{name: system, drive: "C:", purposes: [os, share], raid: 1, disks: 3,',
        ),
        "purposes: [os, share], raid: 1, disks: 3",
        "servers[3].hardware.volumes[0].disks",
        ("RAID 1", "volume 'system'", "exactly 2 disks"),
    ),
    Case(
        "negative hardware figure",
        edit(
            "      ram_gb: 4\n      fs_cache_mb: 960      #",
            "      ram_gb: -4\n      fs_cache_mb: 960      #",
        ),
        "ram_gb: -4",
        "servers[0].hardware.ram_gb",
        ("greater than zero", "-4"),
    ),
    Case(
        "zero hardware figure",
        edit(
            "      fs_cache_mb: 960      # LargeSystemCache=1; the 2003 R2 32-bit maximum\n"
            "      nics: {count: 2, speed_gbps: 1}\n",
            "      fs_cache_mb: 960      # LargeSystemCache=1; the 2003 R2 32-bit maximum\n"
            "      nics: {count: 2, speed_gbps: 0}\n",
        ),
        "speed_gbps: 0",
        "servers[0].hardware.nics.speed_gbps",
        ("greater than zero", "0"),
    ),
    Case(
        "unsupported storage array kind",
        edit("    kind: unity\n", "    kind: netapp\n"),
        "kind: netapp",
        "storage[0].kind",
        ("unsupported storage array kind 'netapp'", "supported kinds: unity, powerstore, sc, equallogic"),
    ),
    Case(
        "unknown network",
        edit(
            "    network: lab-net\n    mac: 00:1a:a0:20:00:13",
            "    network: lab-nett\n    mac: 00:1a:a0:20:00:13",
        ),
        "network: lab-nett",
        "servers[3].network",
        ("unknown network 'lab-nett'", "did you mean 'lab-net'?"),
    ),
    Case(
        "IP outside its network",
        edit("    ip: 127.20.0.13\n", "    ip: 127.99.0.13\n"),
        "ip: 127.99.0.13",
        "servers[3].ip",
        ("127.99.0.13", "outside network 'lab-net'"),
    ),
    Case(
        "unknown configuration on a machine",
        edit(
            "    configurations: [ha]\n    hardware:\n      cpu: {model: Xeon 5160, sockets: 1, cores: 2, ghz: 3.0}\n      ram_gb: 4\n      fs_cache_mb: 960\n",
            "    configurations: [HA]\n    hardware:\n      cpu: {model: Xeon 5160, sockets: 1, cores: 2, ghz: 3.0}\n      ram_gb: 4\n      fs_cache_mb: 960\n",
        ),
        "configurations: [HA]",
        "servers[1].configurations",
        ("unknown configuration 'HA'", "did you mean 'ha'?"),
    ),
    Case(
        "unknown default configuration",
        edit("default_configuration: standalone", "default_configuration: standalon"),
        "default_configuration:",
        "default_configuration",
        ("unknown configuration 'standalon'", "did you mean 'standalone'?"),
    ),
    Case(
        "problem only the HA configuration uses",
        edit("    write_cache_volume: nas-01:data\n", "    write_cache_volume: nas-01:dta\n"),
        "nas-01:dta",
        "configurations.ha.write_cache_volume",
        ("server 'nas-01' has no volume 'dta'", "did you mean 'data'?"),
    ),
    Case(
        "key written twice",
        edit("  first-25: {", "  first-10: {members: [optiplex-001]}\n  first-25: {"),
        "first-10:",
        "groups.first-10",
        ("'first-10' is written twice", f"line {line_no(BASE, 'first-10:')}"),
        nth=2,
    ),
    Case(
        "required key missing",
        edit("    network: lab-net\n    mac: 00:1a:a0:07", "    mac: 00:1a:a0:07"),
        "- name: optiplex-[001-100]",
        "clients[0].network",
        ("required key 'network' is missing", "add network:"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_inventory_gets_one_line_naming_the_item(validate: Validate, case: Case) -> None:
    code, lines, path = validate(case.text)
    assert code == 2
    assert len(lines) == 1, "one problem, one line:\n" + "\n".join(lines)
    m = LINE.match(lines[0])
    assert m, f"not file:line: item: what (fix): {lines[0]!r}"
    assert m["file"] == path
    assert int(m["line"]) == line_no(case.text, case.at, case.nth)
    assert m["path"] == case.path
    for word in case.words:
        assert word in lines[0], f"{word!r} missing from {lines[0]!r}"


def test_credential_written_as_a_value_is_rejected_without_echoing_it(validate: Validate) -> None:
    text = edit('    password: "secret:sim.unity_password"\n', "    password: Hunter2-Unity\n")
    code, lines, _ = validate(text)
    assert code == 2 and len(lines) == 1
    m = LINE.match(lines[0])
    assert m and int(m["line"]) == line_no(text, "Hunter2-Unity") and m["path"] == "storage[0].password"
    assert "must be a reference" in lines[0] and "env:" in lines[0] and "secret:" in lines[0]
    assert "Hunter2-Unity" not in lines[0]


def test_credential_given_as_a_number_is_not_echoed_either(validate: Validate) -> None:
    text = edit('password: "secret:sim.unity_password"', "password: 98765")
    code, lines, _ = validate(text)
    assert code == 2 and len(lines) == 1
    assert "storage[0].password" in lines[0] and "98765" not in lines[0]


def test_yaml_syntax_error_names_the_line(validate: Validate) -> None:
    text = edit("    model: OptiPlex 755\n", "    model: [OptiPlex 755\n")
    code, lines, path = validate(text)
    assert code == 2 and len(lines) == 1
    # the scanner notices on the line after the unclosed bracket, and says where it opened
    assert lines[0].startswith(f"{path}:{line_no(text, 'os: Windows XP')}: YAML syntax error:")
    assert f"line {line_no(text, 'model: [OptiPlex')}" in lines[0]
    assert lines[0].endswith(")")


def test_missing_file(validate: Validate, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-lab.yaml"
    code = run_cli(cli, ["inventory", "validate", str(missing)])
    lines = capsys.readouterr().err.splitlines()
    assert code == 2
    assert lines == [f"{missing}: file not found ({lines[0].split('(', 1)[1]}"]
    assert "check the path" in lines[0]


def test_unknown_configuration_on_the_command_line(validate: Validate) -> None:
    code, lines, _ = validate(BASE, "--config", "hha")
    assert code == 2 and len(lines) == 1
    assert "unknown configuration 'hha'" in lines[0] and "did you mean 'ha'?" in lines[0]


def test_every_type_problem_of_a_file_is_reported_in_line_order(validate: Validate) -> None:
    text = edit("    kind: unity\n", "    kind: netapp\n")
    text = edit("      ram_gb: 1\n", "      ram_gb: lots\n", text)
    text = edit("    model: OptiPlex 755\n", "    modle: OptiPlex 755\n", text)
    code, lines, _ = validate(text)
    assert code == 2
    assert [int(m["line"]) for m in map(LINE.match, lines) if m] == [
        line_no(text, "modle:"),
        line_no(text, "ram_gb: lots"),
        line_no(text, "kind: netapp"),
    ]
    assert len(lines) == 3


def test_every_consistency_problem_of_a_file_is_reported_in_line_order(validate: Validate) -> None:
    # types are checked first; these all pass that and fail the cross-checks, all in one run
    text = edit("  first-10: {", "  nobody: {tags: [nonesuch]}\n  first-10: {")
    text = edit("raid: 10, disks: 4", "raid: 10, disks: 3", text)
    text = edit("    mac: 00:1a:a0:20:00:13\n", "    mac: 00:1a:a0:20:00:11\n", text)
    code, lines, _ = validate(text)
    assert code == 2
    assert [int(m["line"]) for m in map(LINE.match, lines) if m] == [
        line_no(text, "raid: 10, disks: 3"),
        line_no(text, "mac: 00:1a:a0:20:00:11", 2),
        line_no(text, "nobody:"),
    ]
    assert "group 'nobody' is empty" in lines[2]


def test_type_and_consistency_problems_come_in_one_run(validate: Validate) -> None:
    """A type error and a consistency error in one file: both lines in the first run (they took
    two runs of validate, fixing the types first), and the server whose entry has the type error
    is not reported a second time by the groups and configurations that name it."""
    text = edit(
        "fs_cache_mb: 960      # LargeSystemCache=1;", "fs_cache_mb: plenty  #"
    )  # pvs-01 (a type error)
    text = edit("    mac: 00:1a:a0:20:00:13\n", "    mac: 00:1a:a0:20:00:12\n", text)  # a MAC twice
    code, lines, _ = validate(text)
    assert code == 2
    assert [int(m["line"]) for m in map(LINE.match, lines) if m] == [
        line_no(text, "fs_cache_mb: plenty"),
        line_no(text, "mac: 00:1a:a0:20:00:12", 2),
    ]
    assert len(lines) == 2, lines


def test_bad_range_does_not_cascade_into_group_errors(validate: Validate) -> None:
    # the groups name optiplex-001..100; the MAC range is wrong, but the machines still exist
    code, lines, _ = validate(edit("00:1a:a0:07:00:64", "00:1a:a0:07:00:10"))
    assert code == 2 and len(lines) == 1 and "clients[0].mac" in lines[0]


def test_overlapping_ranges_give_one_line_not_one_per_machine(validate: Validate) -> None:
    text = edit(
        "\nservers:",
        "  - {name: 'extra-[01-20]', network: lab-net, mac: '00:1a:a0:07:00:51', ip: 127.20.2.1}\n\nservers:",
    )
    code, lines, _ = validate(text)
    assert code == 2 and len(lines) == 1
    # extra-01..20 get 00:1a:a0:07:00:51..64, the MACs of optiplex-081..100
    assert "duplicate MAC 00:1a:a0:07:00:51 on 'extra-01' and 19 more" in lines[0]
    assert "'optiplex-081'" in lines[0]


def test_group_of_another_configuration_is_not_empty_by_mistake(validate: Validate) -> None:
    # nas-01 only exists in the HA configuration: in standalone the group has no members, which is fine
    code, lines, _ = validate(edit("  first-10: {", "  nas: {members: [nas-01]}\n  first-10: {"))
    assert code == 0, lines


def test_anchor_that_contains_itself_is_a_problem_not_a_traceback(validate: Validate) -> None:
    text = edit("  seed: 2007\n", "  seed: 2007\n  extra: &loop [*loop]\n")
    code, lines, path = validate(text)
    assert code == 2 and len(lines) == 1
    m = LINE.match(lines[0])
    assert m, f"not file:line: item: what (fix): {lines[0]!r}"
    assert m["file"] == path and int(m["line"]) == line_no(text, "extra: &loop")
    assert m["path"] == "lab.extra" and "unknown key 'extra'" in lines[0]


def test_folder_instead_of_a_file(tmp_path: Path) -> None:
    # the CLI refuses a folder itself; callers of the loader get the same one-line problem
    with pytest.raises(InventoryError) as err:
        load_lab(tmp_path)
    assert str(err.value) == f"{tmp_path}: is a folder (name a .yaml file in it)"


def test_file_that_is_not_a_mapping(validate: Validate) -> None:
    code, lines, path = validate("- lab\n- networks\n")
    assert code == 2
    assert lines == [f"{path}:1: the file is not a YAML mapping (start with `lab:` and `networks:`)"]

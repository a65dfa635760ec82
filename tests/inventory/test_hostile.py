"""Hostile inventories, by category: each is refused by `labctl inventory validate` with exit 2
and one line per problem, ``file[:line]: [item:] what is wrong (how to fix)``, before anything
touches a machine; none ends in a traceback, a MemoryError or a RecursionError, and no secret
in the file is ever echoed.

Every case edits hardware/sim-2007.yaml (a renamed machine is renamed everywhere it is named, so
the only problem is the one under test) or writes a small file. The bombs run in a child process
with its memory capped, so a regression fails the test instead of taking the machine down.
"""

from __future__ import annotations

import re
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.inventory.checks import screen
from labctl.inventory.load import default_lab_file

BASE = default_lab_file().read_text()
SECRET = "calvin-7Qx"  # a password a hostile file smuggles in: it must never be printed

# file[:line]: [item:] what (fix)
ONE_LINE = re.compile(
    r"^(?P<file>[^:\s]+)(?::(?P<line>\d+))?: (?:(?P<path>\S+): )?(?P<what>.+) \((?P<fix>.+)\)$"
)


def edit(old: str, new: str, text: str = BASE) -> str:
    assert old in text, f"test setup: {old!r} not in the file"
    return text.replace(old, new, 1)


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000)


def rename(old: str, new: str) -> str:
    """The file with a machine, group, network or configuration renamed everywhere it is named
    (keys, values and inside values such as ``pvs-01:system``), written out again as YAML."""
    token = re.compile(rf"(?<![\w-]){re.escape(old)}(?![\w])")

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return token.sub(lambda _: new, v) if isinstance(v, str) else v

    renamed = walk(yaml.safe_load(BASE))
    assert renamed != yaml.safe_load(BASE), f"test setup: {old!r} not in the file"
    return _dump(renamed)


def change(path: str, value: Any, **more: Any) -> str:
    """The file with the item at ``path`` (``servers.0.model``) set to ``value`` (and more items
    as keyword arguments, with ``__`` for ``.``), written out again as YAML."""
    data = yaml.safe_load(BASE)
    for where, v in [(path, value), *((k.replace("__", "."), x) for k, x in more.items())]:
        *parents, last = where.split(".")
        node: Any = data
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = v
    return _dump(data)


@dataclass(frozen=True)
class Case:
    category: str
    id: str
    text: str | bytes
    says: str  # a fragment of the line that must be printed
    item: str = ""  # the item path the line must name ("" for the whole file)


def alias_bomb() -> str:
    rows = ["lab: {name: bomb}", "networks: []", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    return "\n".join(rows) + "\n"


CASES = [
    # --- size and shape: bounded before anything big is built --------------------------------------
    Case("bounds", "alias bomb", alias_bomb(), "expand to more than"),
    Case("bounds", "deep list", "lab: " + "[" * 20000 + "]" * 20000 + "\n", "nested more than 64 levels"),
    Case("bounds", "deep mapping", "lab: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n", "nested more than"),
    Case("bounds", "file too large", BASE + "# " + "x" * (17 * 2**20) + "\n", "larger than 16 MB"),
    Case(
        "bounds",
        "one range of 100000 machines",
        edit("optiplex-[001-100]", "optiplex-[000001-100000]"),
        "declare 100014 machines",
    ),
    Case(
        "bounds",
        "many ranges",
        edit(
            "clients:\n",
            "clients:\n"
            + "".join(
                f"  - {{name: 'c{i}-[0001-9000]', network: lab-net, mac: '00:1b:{i:02x}:00:00:01', "
                f"ip: '127.20.{100 + i}.1'}}\n"
                for i in range(40)
            ),
        ),
        "declare 360114 machines",
    ),
    # --- encoding and invisible characters --------------------------------------------------------
    Case("encoding", "not UTF-8", BASE.encode().replace(b"sim-2007", b"sim-\xff2007", 1), "not UTF-8"),
    Case("encoding", "NUL byte", edit("name: sim-2007", "name: sim\x002007"), "YAML syntax error"),
    Case(
        "encoding",
        "terminal escape in a model",
        change("servers.0.model", "PowerEdge 2950 \x1b[2J"),
        "invisible character U+001B",
        "servers[0].model",
    ),
    Case(
        "encoding",
        "bidi override in a description",
        change("lab.description", "streaming lab \u202egnp.exe"),
        "invisible character U+202E",
        "lab.description",
    ),
    Case(
        "encoding",
        "zero-width space in a name",
        rename("pvs-01", "pvs-\u200b01"),
        "invisible character U+200B",
        "servers[0].name",
    ),
    # --- YAML types ---------------------------------------------------------------------------------
    Case(
        "yaml",
        "python object tag",
        "lab: !!python/object/apply:os.system ['id']\n",
        "constructor for the tag",
    ),
    Case(
        "yaml",
        "custom tag",
        edit("name: sim-2007", "name: !evil sim-2007"),
        "constructor for the tag '!evil'",
    ),
    Case(
        "yaml", "binary value", edit("name: sim-2007", "name: !!binary c2ltLTIwMDc="), "!!binary", "lab.name"
    ),
    Case("yaml", "two documents", BASE + "\n---\nlab: {name: other}\n", "another document"),
    Case("yaml", "a list at the top", "- lab\n- networks\n", "not a YAML mapping"),
    Case("yaml", "empty file", "", "not a YAML mapping"),
    # --- names: what hosts, shells and files accept -------------------------------------------------
    *(
        Case("names", f"machine name with {what}", rename("pvs-01", bad), "machine name", "servers[0].name")
        for what, bad in [
            ("a double quote", 'pvs"01'),
            ("a semicolon", "pvs;reboot"),
            ("command substitution", "pvs$(id)"),
            ("back-ticks", "pvs`id`"),
            ("a space", "pvs 01"),
            ("a newline", "pvs\n01"),
            ("a leading dash", "-pvs01"),
            ("a slash", "pvs/01"),
            ("a backslash", "pvs\\01"),
            ("dot-dot", ".."),
            ("a glob", "pvs*"),
            ("a full-width digit", "pvs-\uff101"),
            ("64 characters", "p" * 64),
        ]
    ),
    Case(
        "names",
        "client range with a quote",
        rename("optiplex", 'opt"iplex'),
        "machine name",
        "clients[0].name",
    ),
    Case(
        "names",
        "group name with a semicolon",
        rename("first-10", "first;10"),
        "group name",
        "groups.first;10",
    ),
    Case(
        "names", "network name with a space", rename("lab-net", "lab net"), "network name", "networks[0].name"
    ),
    Case(
        "names",
        "lab name with path separators",
        edit("name: sim-2007", "name: ../../etc"),
        "lab name",
        "lab.name",
    ),
    Case(
        "names", "tag with a dollar", edit("tags: [streamed, optiplex]", "tags: ['$HOME', optiplex]"), "tag"
    ),
    Case("names", "volume name with a quote", rename("cache", 'ca"che'), "volume name"),
    Case(
        "names", "configuration name with a quote", rename("standalone", 'stand"alone'), "configuration name"
    ),
    # --- numbers ------------------------------------------------------------------------------------
    Case("numbers", "NaN", edit("time_scale: 60 ", "time_scale: .nan "), "finite number", "lab.time_scale"),
    Case(
        "numbers",
        "infinity",
        edit("ram_gb: 4\n", "ram_gb: .inf\n"),
        "finite number",
        "servers[0].hardware.ram_gb",
    ),
    Case("numbers", "inf written as text", edit("ram_gb: 4\n", "ram_gb: inf\n"), "finite number"),
    Case("numbers", "1e308 written as text", edit("time_scale: 60 ", "time_scale: 1e308 "), "too large"),
    Case(
        "numbers", "a time scale beyond 1000", edit("time_scale: 60 ", "time_scale: 5000 "), "more than 1000"
    ),
    Case(
        "numbers", "a count beyond 64 bits", edit("disks: 4,", "disks: 99999999999999999999999,"), "too large"
    ),
    Case(
        "numbers",
        "true for a port",
        edit("port: 2222, user: Administrator", "port: true, user: Administrator"),
        "expected a number, got true",
    ),
    Case("numbers", "a negative size", edit("ram_gb: 4\n", "ram_gb: -4\n"), "greater than zero"),
    # --- ranges and addresses -----------------------------------------------------------------------
    Case(
        "addresses",
        "IP range past 255.255.255.255",
        change(
            "clients.0.ip",
            "255.255.255.250",
            clients__0__mac="00:1a:a0:07:00:01",
            lab__simulated=False,
            networks__0__subnet="0.0.0.0/0",
            networks__0__broadcast="255.255.255.255",
        ),
        "runs past 255.255.255.255",
        "clients[0].ip",
    ),
    Case(
        "addresses",
        "MAC range past ff:ff:ff:ff:ff:ff",
        edit("mac: 00:1a:a0:07:00:01..00:1a:a0:07:00:64", "mac: ff:ff:ff:ff:ff:f0"),
        "overflows",
    ),
    Case("addresses", "simulated lab off loopback", BASE.replace("127.20.", "10.20."), "not on loopback"),
    Case(
        "addresses",
        "simulated BMC by host name",
        edit('url: "https://127.21.0.11:8443"', 'url: "https://idrac-pvs01.lab:8443"'),
        "is a name",
    ),
    # --- URLs and credentials -----------------------------------------------------------------------
    Case(
        "credentials",
        "password inside a BMC URL",
        edit('url: "https://127.21.0.11:8443"', f'url: "https://root:{SECRET}@127.21.0.11:8443"'),
        "user name or password in it",
        "servers[0].bmc.url",
    ),
    Case(
        "credentials",
        "password inside the vCenter URL",
        edit("url: https://127.22.0.1:8989/sdk", f"url: https://administrator:{SECRET}@127.22.0.1:8989/sdk"),
        "user name or password in it",
        "vcenters[0].url",
    ),
    Case(
        "credentials",
        "password inside the agents' hub URL",
        edit("groups:\n", f"agents:\n  hub: nats://lab:{SECRET}@127.20.0.1:4222\n  sites: []\ngroups:\n"),
        "user name or password in it",
        "agents.hub",
    ),
    Case(
        "credentials",
        "password in a URL query",
        edit('url: "https://127.21.0.11:8443"', f'url: "https://127.21.0.11:8443/?password={SECRET}"'),
        "query or fragment",
    ),
    Case(
        "credentials",
        "a password value instead of a reference",
        edit('password: "secret:sim.bmc_password"', f"password: {SECRET}"),
        "must be a reference",
    ),
    Case(
        "credentials", "a user name with a newline", edit("user: root,", 'user: "root\\nadmin",'), "user name"
    ),
    Case(
        "credentials",
        "a URL with a header smuggled in",
        edit('url: "https://127.21.0.11:8443"', 'url: "https://127.21.0.11:8443\\nX-Evil: 1"'),
        "line break",
    ),
    Case(
        "credentials",
        "a file:// URL",
        edit('url: "https://127.21.0.11:8443"', 'url: "file:///etc/shadow"'),
        "malformed URL",
    ),
    # --- files ----------------------------------------------------------------------------------------
    Case(
        "files",
        "a CA file that does not exist",
        edit("tls: {mode: insecure}}", "tls: {mode: verify, ca_file: /nonexistent/ca.pem}}"),
        "CA file '/nonexistent/ca.pem' does not exist",
        "servers[0].bmc.tls.ca_file",
    ),
    Case(
        "files",
        "a relative CA file that does not exist",
        edit("tls: {mode: insecure}}", "tls: {mode: verify, ca_file: certs/ca.pem}}"),
        "looked at",
    ),
    Case(
        "files",
        "a CA file that is a folder",
        edit("tls: {mode: insecure}}", "tls: {mode: verify, ca_file: /tmp}}"),
        "is a folder",
    ),
    # --- words that reach command lines ---------------------------------------------------------------
    Case(
        "command lines",
        "a drive letter with a command",
        edit('drive: "D:"', 'drive: "D: & calc"'),
        "not a drive letter",
    ),
    Case(
        "command lines",
        "a share path with an operator",
        edit("\\infra-01\\copytest'", "\\infra-01\\copytest&calc'"),
        "share path",
    ),
    Case(
        "command lines",
        "an SSH host that reads as an option",
        change("servers.0.ssh.host", "-oProxyCommand=id"),
        "SSH host",
    ),
    # --- references -----------------------------------------------------------------------------------
    Case(
        "references",
        "a Wake-on-LAN relay that is no machine",
        edit("    wol_port: 40009 ", "    wol_relay: nobody\n    wol_port: 40009 "),
        "Wake-on-LAN relay 'nobody'",
    ),
]


def _validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = run_cli(cli, ["inventory", "validate", "--lab", str(path)])
    return code, capsys.readouterr().err.splitlines()


def _validate_in_child(path: Path) -> tuple[int, list[str]]:
    """`labctl inventory validate` in a child process with at most 1 GB of memory."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    res = subprocess.run(
        [sys.executable, "-c", "from labctl.cli import main; main()", "inventory", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cap,
    )
    return res.returncode, res.stderr.splitlines()


@pytest.mark.parametrize("case", CASES, ids=[f"{c.category}: {c.id}" for c in CASES])
def test_hostile_inventory_is_refused_in_one_line_each(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "lab.yaml"
    if isinstance(case.text, bytes):
        path.write_bytes(case.text)
    else:
        path.write_text(case.text)
    code, lines = _validate_in_child(path) if case.category == "bounds" else _validate(path, capsys)
    shown = "\n".join(lines)
    assert code == 2, shown
    assert lines, "no problem printed"
    for line in lines:
        assert ONE_LINE.match(line), f"not one line naming the file and a fix: {line!r}"
        assert line.startswith(str(path)), line
    assert "Traceback" not in shown and "Error:" not in shown.replace("YAML syntax error:", "")
    assert case.says in shown, shown
    if case.item:
        assert any(ONE_LINE.match(x)["path"] == case.item for x in lines), shown  # type: ignore[index]
    assert SECRET not in shown


def test_the_categories_cover_what_the_hostile_testers_tried() -> None:
    """A guard against the table shrinking: every category keeps several cases."""
    by_category: dict[str, int] = {}
    for c in CASES:
        by_category[c.category] = by_category.get(c.category, 0) + 1
    assert set(by_category) == {
        "bounds",
        "encoding",
        "yaml",
        "names",
        "numbers",
        "addresses",
        "credentials",
        "files",
        "command lines",
        "references",
    }
    assert all(n >= 1 for n in by_category.values()) and len(CASES) >= 60


# --- an SNMP agent's URL: protocol options in the query, never a secret ------------------------------


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("snmp://127.67.4.4:16100?version=3&auth=sha&priv=aes", None),
        ("snmp://127.67.4.4:16100?version=2c", None),
        (f"snmp://127.67.4.4:16100?community={SECRET}", "unknown SNMP option 'community'"),
        ("snmp://127.67.4.4:16100?version=4", "not one of 2c, 3"),
        ("snmp://127.67.4.4:16100?version=3#frag", "query or fragment"),
        (f"https://127.67.4.4/?version=3&x={SECRET}", "query or fragment"),
    ],
)
def test_snmp_urls_take_their_protocol_options_and_nothing_else(url: str, problem: str | None) -> None:
    found = screen({"storage": [{"name": "eql-01", "kind": "equallogic", "url": url}]}, Path("."))
    messages = [f.message for f in found]
    if problem is None:
        assert messages == []
    else:
        assert any(problem in m for m in messages), messages
        assert all(SECRET not in m for m in messages)

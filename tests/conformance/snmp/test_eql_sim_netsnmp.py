"""The simulated EqualLogic agent against an SNMP client this project did not write: net-snmp's
``snmpwalk`` and ``snmpbulkwalk`` (Debian ``snmp``) walk its EqualLogic subtree; every answer is
in increasing OID order (net-snmp stops with "OID not increasing" otherwise) and has the type the
vendor's MIB defines."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conformance.snmp.mibs_loader import Mibs
from tests.sim.arraylabs import SECRETS, array_lab

pytestmark = pytest.mark.integration

# net-snmp's words for the SMI base types (snmplib/mib.c sprint_by_type)
NETSNMP_TYPE = {
    "INTEGER": {"INTEGER"},
    "Integer32": {"INTEGER"},
    "OCTET STRING": {"STRING", "Hex-STRING", '""'},
    "Counter32": {"Counter32"},
    "Gauge32": {"Gauge32"},
    "Unsigned32": {"Gauge32"},
    "Counter64": {"Counter64"},
    "TimeTicks": {"Timeticks"},
    "OBJECT IDENTIFIER": {"OID"},
}
LINE = re.compile(r"^(\.?[\d.]+) = (?:([\w-]+|\"\"): ?)?(.*)$")


def _walk(tool: str, host: str, port: int, community: str) -> list[tuple[tuple[int, ...], str]]:
    exe = shutil.which(tool)
    if exe is None:
        pytest.fail(f"{tool} is not installed: run `make install` (Debian's snmp package)")
    proc = subprocess.run(
        [
            exe,
            "-v2c",
            "-c",
            community,
            "-On",
            "-Oe",
            "-t",
            "3",
            "-r",
            "1",
            "-m",
            "",
            f"{host}:{port}",
            "1.3.6.1.4.1.12740",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MIBS": "", "MIBDIRS": ""},
    )
    assert proc.returncode == 0 and "Error" not in proc.stderr, proc.stderr[-500:]
    out = []
    for line in proc.stdout.splitlines():
        m = LINE.match(line)
        if m and not line.endswith("(It is past the end of the MIB tree)"):  # endOfMibView: the walk's end
            out.append((tuple(int(x) for x in m.group(1).strip(".").split(".")), m.group(2) or '""'))
    return out


@pytest.mark.parametrize("tool", ["snmpwalk", "snmpbulkwalk"])
def test_net_snmp_walks_the_simulated_agent_in_order_with_the_mib_s_types(
    tool: str, tmp_path: Path, eql_mibs: Mibs
) -> None:
    with array_lab(tmp_path, kinds=("equallogic",)) as al:
        agent = al.servers["eql-01"]
        rows = _walk(tool, agent.info.host, agent.info.port, SECRETS["secret:sim.equallogic_community"])
    assert len(rows) > 40
    oids = [oid for oid, _ in rows]
    assert oids == sorted(oids) and len(set(oids)) == len(oids)
    wrong = []
    for oid, word in rows:
        hit = eql_mibs.node(oid)
        assert hit is not None, oid
        node, _ = hit
        if word not in NETSNMP_TYPE[eql_mibs.base_type(node)]:
            wrong.append(f"{node.name}: net-snmp read {word}, the MIB says {eql_mibs.base_type(node)}")
    assert not wrong, "\n".join(wrong)

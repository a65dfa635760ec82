"""Regenerate ``vcenter_counters.json``: the performance counters labctl queries, as a real vCenter
defines them, from govmomi's simulator (``simulator/vpx/performance_manager.go``, recorded from a
vCenter with ``govc object.collect -s -dump PerformanceManager:PerfMgr perfCounter``, and its
VmMetrics/HostMetrics lists: the counters each entity offers).

    python -m tests.conformance.vcenter.extract_counters <govmomi module dir>

Only the counters the driver uses are kept (the catalogue has hundreds).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from labctl.drivers.vsphere_perf import DATASTORE_COUNTERS, HOST_COUNTERS, VM_COUNTERS

OUT = Path(__file__).parent / "vcenter_counters.json"
SOURCE = "simulator/vpx/performance_manager.go"

_COUNTER = re.compile(
    r"\{\s*Key:\s*(\d+),\s*NameInfo:.*?Key:\s*\"([^\"]+)\",\s*\},\s*GroupInfo:.*?Key:\s*\"([^\"]+)\",\s*\},"
    r"\s*UnitInfo:.*?Key:\s*\"([^\"]+)\",\s*\},\s*RollupType:\s*\"([^\"]+)\",\s*StatsType:\s*\"([^\"]+)\","
    r"\s*Level:\s*(\d+),",
    re.S,
)


def _metric_ids(text: str, var: str) -> dict[int, list[str]]:
    start = text.index(f"var {var} = []types.PerfMetricId{{")
    end = text.index("\n}\n", start)
    out: dict[int, list[str]] = {}
    for cid, inst in re.findall(r"CounterId:\s*(\d+),\s*Instance:\s*\"([^\"]*)\"", text[start:end]):
        out.setdefault(int(cid), []).append(inst)
    return out


def extract(govmomi: Path) -> dict[str, object]:
    text = (govmomi / SOURCE).read_text()
    start = text.index("var PerfCounter = []types.PerfCounterInfo{")
    end = text.index("var VmMetrics")
    wanted = set(HOST_COUNTERS) | set(VM_COUNTERS) | set(DATASTORE_COUNTERS)
    vm, host = _metric_ids(text, "VmMetrics"), _metric_ids(text, "HostMetrics")
    counters = {}
    for key, name, group, unit, rollup, stats, level in _COUNTER.findall(text[start:end]):
        full = f"{group}.{name}.{rollup}"
        if full in wanted:
            k = int(key)
            counters[full] = {
                "key": k,
                "unit": unit,
                "rollup": rollup,
                "stats_type": stats,
                "level": int(level),
                "vm_instances": sorted(set(vm.get(k, []))),
                "host_instances": sorted(set(host.get(k, []))),
            }
    return {
        "source": f"github.com/vmware/govmomi {govmomi.name.split('@')[-1]}, {SOURCE}",
        "licence": "Apache-2.0",
        "captured": "govc object.collect -s -dump PerformanceManager:PerfMgr perfCounter (a real vCenter)",
        "counters": dict(sorted(counters.items())),
    }


if __name__ == "__main__":
    OUT.write_text(json.dumps(extract(Path(sys.argv[1])), indent=1) + "\n")
    print(f"wrote {OUT}")

"""Where the VDI plans find their figures among the recorded series: the one mapping to change when
the simulators' (or real endpoints') names move.

Arrays (branch ``vdi-arrays``, one normalised set whatever the kind): source = the array's kind
(``unity``, ``powerstore``, ``sc``, ``equallogic``), entity = the array (its totals),
``<array>/<volume>``, ``<array>/tier:<tier>``, ``<array>/ctrl:<controller>``; metrics
``read_iops``, ``write_iops``, ``iops``, ``read_mb_s``, ``write_mb_s``, ``throughput_mb_s``,
``latency_ms`` (``read_``/``write_``), ``io_size_kb``.

Hosts (branch ``vdi-vcenter``: ``VCenterPerfSource``, 20 s real-time samples): source ``vcenter``,
entity the ESXi host; metrics ``cpu_pct``, ``mem_usage_pct``, ``mem_balloon_kb``, ``net_kbps``, ... .
Before that branch is merged the same source answers with vCenter's counter names
(``cpu.usage.average`` ...): both are listed, the first found wins.

Sessions (this plan's own, from the launchers): source ``sessions``.
"""

from __future__ import annotations

from dataclasses import dataclass

ARRAY_KINDS = ("unity", "powerstore", "sc", "equallogic")
ARRAY_SOURCE = "{" + ",".join(ARRAY_KINDS) + "}"  # documentation only; selection uses ARRAY_KINDS

READ_IOPS = "read_iops"
WRITE_IOPS = "write_iops"
IOPS = "iops"
READ_MB_S = "read_mb_s"
WRITE_MB_S = "write_mb_s"
LATENCY_MS = "latency_ms"

VCENTER_SOURCE = "vcenter"


@dataclass(frozen=True)
class HostMetric:
    """One host figure and the names it goes by (new name first)."""

    key: str  # how the VDI plans and figures call it
    names: tuple[str, ...]
    unit: str


HOST_CPU_PCT = HostMetric("cpu_pct", ("cpu_pct", "cpu.usage.average"), "%")
HOST_MEM_PCT = HostMetric("mem_pct", ("mem_usage_pct", "mem.usage.average"), "%")
HOST_BALLOON_KB = HostMetric("balloon_kb", ("mem_balloon_kb", "mem.vmmemctl.average"), "KB")
HOST_NET_KBPS = HostMetric("net_kbps", ("net_kbps", "net.usage.average"), "KB/s")
HOST_METRICS = (HOST_CPU_PCT, HOST_MEM_PCT, HOST_BALLOON_KB, HOST_NET_KBPS)

# the plan's own series, from the launchers
SESSIONS_SOURCE = "sessions"
ACTIVE_SESSIONS = "active_sessions"  # entity: the pool
LOGGING_IN = "logging_in"  # entity: the pool
LOGIN_S = "login_s"  # entity: the desktop, at its logon
RESPONSE_S = "response_s"  # entity: `group:<name>` (each operation of the group), at its start
INDEX_S = "index_s"  # entity: the pool; the response-time index's samples


def op_entity(group: str) -> str:
    return f"group:{group}"

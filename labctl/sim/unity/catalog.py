"""The metric catalog of the simulated Unity (``/api/types/metric/instances``) and the error
bodies it answers with.

The LUN metric entries copy the ids, names, units and flags of a real Unity's catalog (as captured
in storops' test data). Real-time paths are the raw cumulative LUN counters the lab twin keeps;
the rate and average paths exist on a real array only historically (``isRealtimeAvailable: false``)
and are listed so that a preflight sees the same catalog, but a real-time query refuses them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from labctl.sim.twin.interface import LunCounters

LUN_PREFIX = "sp.*.storage.lun.*."


@dataclass(frozen=True)
class Metric:
    id: int
    path: str
    name: str
    description: str
    unit_display: str
    type: int  # 3: counter, 4: rate, 5: fact (as the real catalog numbers them)
    realtime: bool
    historical: bool

    def content(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "path": self.path,
            "type": self.type,
            "description": self.description,
            "isHistoricalAvailable": self.historical,
            "isRealtimeAvailable": self.realtime,
            "unitDisplayString": self.unit_display,
            "product": 1,
            "unit": 0,
            "visibility": 2,
        }
        if self.historical:
            out["objectType"] = 26  # lun
        return out


METRICS: tuple[Metric, ...] = (
    Metric(14341, LUN_PREFIX + "reads", "Read", "Reads from this LUN", "Counts", 3, True, False),
    Metric(14368, LUN_PREFIX + "writes", "Write", "Writes to this LUN", "Counts", 3, True, False),
    Metric(14337, LUN_PREFIX + "readBlocks", "Read", "Blocks read from this LUN", "Blocks", 3, True, False),
    Metric(
        14364, LUN_PREFIX + "writeBlocks", "Written", "Blocks written to this LUN", "Blocks", 3, True, False
    ),
    Metric(
        14362,
        LUN_PREFIX + "totalIoTime",
        "Total Io Time",
        "Product of difference in time since last change in outstanding IO and the number of "
        "outstanding IO during that time",
        "uSecs",
        3,
        True,
        False,
    ),
    Metric(
        14342,
        LUN_PREFIX + "readsRate",
        "Read",
        "Rate for raw metric: Reads from this LUN",
        "Counts/s",
        4,
        False,
        True,
    ),
    Metric(
        14369,
        LUN_PREFIX + "writesRate",
        "Write",
        "Rate for raw metric: Writes to this LUN",
        "Counts/s",
        4,
        False,
        True,
    ),
    Metric(
        14340,
        LUN_PREFIX + "readBytesRate",
        "Read",
        "Rate for raw metric: Number of bytes read from this LUN",
        "KB/s",
        4,
        False,
        True,
    ),
    Metric(
        14367,
        LUN_PREFIX + "writeBytesRate",
        "Written",
        "Rate for raw metric: Number of bytes written to this LUN",
        "KB/s",
        4,
        False,
        True,
    ),
    Metric(
        14343,
        LUN_PREFIX + "responseTime",
        "Response Time",
        "Average response time, in microseconds, for requests to this LUN",
        "uSecs",
        5,
        False,
        True,
    ),
    Metric(
        14336,
        LUN_PREFIX + "queueLength",
        "Average Queue Length",
        "Average I/O queue length for this LUN",
        "Count",
        5,
        False,
        True,
    ),
)
BY_PATH = {m.path: m for m in METRICS}
BY_ID = {m.id: m for m in METRICS}

# real-time path -> the LunCounters field it reads
COUNTER_FIELDS = {
    LUN_PREFIX + "reads": "reads",
    LUN_PREFIX + "writes": "writes",
    LUN_PREFIX + "readBlocks": "read_blocks",
    LUN_PREFIX + "writeBlocks": "write_blocks",
    LUN_PREFIX + "totalIoTime": "total_io_time_us",
}


def counter_value(c: LunCounters, path: str) -> str:
    """A raw counter as the array writes it: an integer in a string."""
    return str(int(getattr(c, COUNTER_FIELDS[path])))


def unity_time(lab_s: float) -> str:
    """``2016-11-15T08:30:00.000Z``"""
    t = dt.datetime.fromtimestamp(lab_s, tz=dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


# --- errors, in the array's shape -------------------------------------------------------------------
# Codes the captured responses show are reused; the 401 and 400 ones are modelled on them.
E_NOT_FOUND = (131149829, "The requested resource does not exist. (Error Code:0x7d13005)")
E_UNAUTHORIZED = (
    131149826,
    "Unauthorized: the request has no valid session or credentials. (Error Code:0x7d13002)",
)
E_NO_REST_HEADER = (
    131149827,
    "The request is missing the X-EMC-REST-CLIENT: true header required by the REST API. (Error Code:0x7d13003)",
)
E_CSRF = (
    131149830,
    "The request is missing a valid EMC-CSRF-TOKEN header; get it from the response headers of a GET "
    "request in this session. (Error Code:0x7d13006)",
)
E_SESSION_EXPIRED = (131149831, "The login session has expired. Log in again. (Error Code:0x7d13007)")
E_BAD_REQUEST = (131149828, "{}. (Error Code:0x7d13004)")
E_QUERY_NOT_FOUND = (131153932, "Query ID not found: {}. (Error Code:0x7d1400c)")
E_METHOD = (131149833, "The method {} is not supported for this resource. (Error Code:0x7d13009)")


def error_body(status: int, code: tuple[int, str], lab_s: float, *args: object) -> dict[str, Any]:
    return {
        "error": {
            "errorCode": code[0],
            "httpStatusCode": status,
            "messages": [{"en-US": code[1].format(*args)}],
            "created": unity_time(lab_s),
        }
    }

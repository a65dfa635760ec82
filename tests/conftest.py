"""What every test of labctl's own suite shares: nothing of the project's own lab state.

The lab lease and the quarantine live in the project's `.labctl/` by default; a test that ran a
plan there would leave a quarantined client or a lease behind for the developer's next
`labctl run` (and the developer's lease would refuse the tests). Each session gets its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy  # noqa: F401  (see below)
import pytest

# pytester's in-process runs (tests/plans/test_plan_params.py) drop from sys.modules whatever was
# first imported inside them; numpy's C core cannot be loaded twice in one process, so a later
# in-process simulator start would fail. Importing it here, before any such run, keeps it loaded.


@pytest.fixture(autouse=True, scope="session")
def _own_lab_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    state = tmp_path_factory.mktemp("lab-state")
    saved = {k: os.environ.get(k) for k in ("LABCTL_LEASE_DIR", "LABCTL_QUARANTINE_FILE")}
    os.environ["LABCTL_LEASE_DIR"] = str(state / "leases")
    os.environ["LABCTL_QUARANTINE_FILE"] = str(Path(state) / "quarantine.json")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# --- running under pytest-xdist (`make test` runs `pytest -n 2 --dist loadfile`) ------------------
# Each module runs on one worker, in its order, so its module-scoped fixtures (a real plan run, a
# vcsim whose VMs the module's tests power on and off, an xrdp server) are built once and its tests
# see the states they saw in one process. (xdist's `loadgroup` cannot group across modules under
# pytest 9: the group suffix it writes into `item._nodeid` is no longer read.) Resources only one
# process may hold at a time are locked across processes where they are started, e.g. xrdp's fixed
# sesman port in tests/realsessions/xrdp_server.py.

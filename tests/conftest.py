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


# --- running under pytest-xdist (`make test` runs `pytest -n 2 --dist loadgroup`) -----------------
# Each module is one group, so its module-scoped fixtures (a real plan run, an xrdp server) are
# built once, on one worker. Modules that hold a resource only one process may hold at a time share
# a group and so run one after the other on one worker:
_SHARED_GROUPS = {
    # xrdp's sesman listens on the fixed loopback port 3350 (where xrdp looks for it)
    "tests/realsessions/": "xrdp",
    # runs of the shipped labs (hardware/*.yaml): fixed loopback addresses and ports, one lease
    "tests/verdict/test_one_word.py": "shipped_lab",
    "tests/vdi/test_vcenter_labs.py": "shipped_lab",
    "tests/test_plugin.py": "shipped_lab",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        module = Path(str(item.path)).relative_to(root).as_posix()
        group = next((g for prefix, g in _SHARED_GROUPS.items() if module.startswith(prefix)), module)
        item.add_marker(pytest.mark.xdist_group(group))

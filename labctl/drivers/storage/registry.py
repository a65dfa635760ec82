"""Which driver speaks to which kind of storage array: one line per kind.

Adding an array kind is a module beside
:mod:`labctl.drivers.storage.unity` that implements :class:`~labctl.drivers.storage.base.StorageDriver`,
its kind in :class:`labctl.inventory.model.StorageKind`, and one line in :data:`DRIVERS`.
"""

from __future__ import annotations

from collections.abc import Callable

from labctl.drivers.storage.base import StorageDriver
from labctl.drivers.storage.equallogic import EqualLogicDriver
from labctl.drivers.storage.powerstore import PowerStoreDriver
from labctl.drivers.storage.sc import ScDriver
from labctl.drivers.storage.unity import UnityDriver
from labctl.errors import BadInputError
from labctl.inventory.model import StorageArray, StorageKind

# kind -> constructor(array, *, timeout_s=...) of a driver that is not yet logged in
DRIVERS: dict[StorageKind, Callable[..., StorageDriver]] = {
    StorageKind.UNITY: UnityDriver,
    StorageKind.POWERSTORE: PowerStoreDriver,
    StorageKind.SC: ScDriver,
    StorageKind.EQUALLOGIC: EqualLogicDriver,
}


def open_storage(array: StorageArray, **kwargs: object) -> StorageDriver:
    """The driver for ``array.kind`` (not yet logged in)."""
    make = DRIVERS.get(array.kind)
    if make is None:
        raise BadInputError(
            f"storage array {array.name}: no driver for kind {array.kind.value!r} "
            f"(drivers: {', '.join(k.value for k in DRIVERS)}; add one in labctl/drivers/storage/registry.py)"
        )
    return make(array, **kwargs)

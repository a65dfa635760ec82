"""Storage-array drivers behind one interface (:class:`labctl.drivers.storage.base.StorageDriver`),
picked by kind in :mod:`labctl.drivers.storage.registry`."""

from labctl.drivers.storage.base import ArrayInfo, LunDelta, StorageDriver
from labctl.drivers.storage.registry import open_storage

__all__ = ["ArrayInfo", "LunDelta", "StorageDriver", "open_storage"]

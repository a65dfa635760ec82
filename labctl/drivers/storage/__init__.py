"""Storage-array drivers behind one interface (:class:`labctl.drivers.storage.base.StorageDriver`)."""

from labctl.drivers.storage.base import ArrayInfo, LunDelta, StorageDriver, open_storage

__all__ = ["ArrayInfo", "LunDelta", "StorageDriver", "open_storage"]

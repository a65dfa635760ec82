"""A server's file-system cache of one shared file (the vDisk image, a share's source file).

Chunks of ``chunk_kb`` (the cache manager's 256 KB views) are either resident or not. The standard
image is shared, so the first client that reads a chunk faults it in from disk and every later
reader hits RAM. When resident chunks exceed the cap (960 MB on 2003 R2 32-bit), the least
recently used ones are dropped. Chunks untouched for ``trim_s`` leave the working set: still
resident (a later read hits), but counted as available memory, as Windows moves trimmed cache
pages to the standby list.
"""

from __future__ import annotations

import numpy as np


class ChunkCache:
    def __init__(self, file_mb: float, chunk_kb: int, capacity_mb: float, trim_s: float):
        self.chunk_mb = chunk_kb / 1024.0
        self.n = max(1, int(np.ceil(file_mb / self.chunk_mb)))
        self.capacity = max(1, int(capacity_mb / self.chunk_mb))
        self.trim_s = trim_s
        self.resident = np.zeros(self.n, dtype=bool)
        self.last_access = np.full(self.n, -np.inf)
        self.count = 0
        self.loads = 0  # chunks faulted in from disk, cumulative
        self.evictions = 0

    def hit(self, chunks: np.ndarray) -> np.ndarray:
        """Whether each chunk is resident now (no side effect)."""
        return self.resident[np.clip(chunks, 0, self.n - 1)]

    def touch(self, chunks: np.ndarray, now: float) -> int:
        """Clients read ``chunks``: fault in the missing ones, refresh recency. Returns loads."""
        if chunks.size == 0:
            return 0
        chunks = np.clip(chunks, 0, self.n - 1)
        self.last_access[chunks] = now
        new = np.unique(chunks[~self.resident[chunks]])
        if new.size:
            self.resident[new] = True
            self.count += int(new.size)
            self.loads += int(new.size)
            if self.count > self.capacity:
                self._evict(self.count - self.capacity, keep=new)
        return int(new.size)

    def _evict(self, k: int, keep: np.ndarray) -> None:
        idx = np.flatnonzero(self.resident)
        age = self.last_access[idx].copy()
        age[np.isin(idx, keep)] = np.inf  # never drop what was just read
        drop = idx[np.argpartition(age, k - 1)[:k]] if k < idx.size else idx
        self.resident[drop] = False
        self.last_access[drop] = -np.inf
        self.count -= int(drop.size)
        self.evictions += int(drop.size)

    def warm(self, chunks: np.ndarray, now: float) -> None:
        """Make chunks resident without counting disk reads (a cache left warm by earlier runs)."""
        chunks = np.clip(chunks, 0, self.n - 1)
        self.resident[chunks] = True
        self.last_access[chunks] = now - self.trim_s  # resident but outside the working set
        self.count = int(self.resident.sum())
        if self.count > self.capacity:
            self._evict(self.count - self.capacity, keep=np.empty(0, dtype=np.int64))

    def resident_mb(self) -> float:
        return self.count * self.chunk_mb

    def working_set_mb(self, now: float) -> float:
        return float(np.count_nonzero(self.last_access >= now - self.trim_s)) * self.chunk_mb

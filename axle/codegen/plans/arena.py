"""Best-fit placement of temporaries inside one buffer (an arena, or a result buffer
before its value is written), target independent.

Sizes are rounded up to ALIGN bytes. A released block is merged with free neighbours; a
request takes the smallest free block that fits, else fresh room at the end (the arena
grows to its peak; a result buffer has a fixed size and may have no room).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.ir.types import TensorType

ALIGN = 64  # every temporary starts on a cache line (and a vector register's alignment)


def nbytes(t: TensorType) -> int:
    return int(np.prod(t.shape, dtype=np.int64)) * np.dtype(t.dtype).itemsize


def aligned(nbytes_: int) -> int:
    """The bytes a temporary of `nbytes_` takes (at least one ALIGN block)."""
    return (max(nbytes_, 1) + ALIGN - 1) // ALIGN * ALIGN


class Pool:
    """Temporaries within one buffer: table slot `slot`, `limit` bytes (None: grows)."""

    def __init__(self, slot: int, limit: Optional[int] = None, free_until: int = 1 << 62):
        self.slot = slot
        self.limit = limit  # None: grows (the arena)
        self.free_until = free_until  # kernel position from which the buffer holds its result
        self.top = 0
        self.free: list[tuple[int, int]] = []  # (offset, size) of released blocks
        self.live: dict[int, tuple] = {}  # offset -> (size, value)

    def _fit(self, size: int) -> Optional[tuple]:
        """(block size, offset) of the smallest released block that fits, else of the room
        left at the end ((None, top) in the arena, which grows; from the start of a released
        block that ends at the top, which then grows by less); None: no room."""
        fit = [(sz, off) for off, sz in self.free if sz >= size]
        if fit:
            return min(fit)
        tail = next((off for off, sz in self.free if off + sz == self.top), self.top)
        if self.limit is None:
            return None, tail
        return (self.limit - tail, tail) if tail + size <= self.limit else None

    def alloc(self, size: int, value) -> Optional[int]:
        fit = self._fit(size)
        if fit is None:
            return None
        sz, off = fit
        if off + size > self.top:  # the room at the end (a released tail block grown into it)
            self.free = [(o, sz_) for o, sz_ in self.free if o != off]
            self.top = off + size
        else:
            self.free.remove((off, sz))
            if sz > size:
                self.free.append((off + size, sz - size))
        self.live[off] = (size, value)
        return off

    def best_fit(self, size: int) -> Optional[int]:
        """Size of the block alloc(size) would take (None: no room, or the growing arena)."""
        fit = self._fit(size)
        return None if fit is None else fit[0]

    def release(self, off: int) -> None:
        if off not in self.live:
            return
        size, _ = self.live.pop(off)
        self.free.append((off, size))
        self.free.sort()
        merged = []  # coalesce neighbours
        for o, sz in self.free:
            if merged and merged[-1][0] + merged[-1][1] == o:
                merged[-1] = (merged[-1][0], merged[-1][1] + sz)
            else:
                merged.append((o, sz))
        self.free = merged

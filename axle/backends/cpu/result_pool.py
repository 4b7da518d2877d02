"""Result buffers recycled across calls, so that a program's results land in memory whose
pages are already mapped.

A compiled program returns its results in fresh arrays. Freshly allocated memory of more
than a few pages is mapped by the kernel on first touch, one page fault per 4 KiB page
(~0.5-1 us each, zeroing included), and glibc gives large blocks back to the system when
they are freed (mmap / heap trimming), so every call faults on every page of its results
again. A training step that returns its updated parameters and optimizer state writes tens
of MiB of results per call: optax's schedule-free AdamW over 67 MB of results took 11,200
page faults and ~38 ms a call, 10.4 ms without them (XLA: 19.6).

Here a result of MIN_BYTES or more is carved from a block taken from a free list of
blocks of its exact (page-rounded) size, or allocated when there is none. The array views
the block through a small owner object; when the last array or view of it is gone, the
owner's finalizer puts the block back on its list (at most --result_pool_bytes held
there, the rest freed). A loop that calls a program and drops or replaces its results
(params = step(params)) gets the same blocks back on every call. Nothing is shared while
any view of a result lives: the block returns only when numpy drops its last reference.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

MIN_BYTES = 1 << 16  # smaller results come from malloc, which keeps small blocks mapped
PAGE = 4096

_lock = threading.RLock()  # (a finalizer may run inside a locked section: a GC pass on an allocation)
_free: dict = {}  # block size (bytes) -> blocks (np.uint8 arrays) ready for reuse
_state = {"held": 0}  # bytes on the free lists
_owner_types: dict = {}  # block size -> the ctypes array type whose instances own a block


def _limit() -> int:
    from axle.flags import flag
    return int(flag("result_pool_bytes"))


def _give_back(owner) -> None:
    """An owner's finalizer: its block goes back on its free list, if the pool has room."""
    try:
        block = owner._block
        size = block.nbytes
        with _lock:
            if _state["held"] + size <= _limit():
                _free.setdefault(size, []).append(block)
                _state["held"] += size
    except Exception:  # (interpreter shutdown: the module's globals may be gone)
        pass


def _owner_type(size: int) -> type:
    t = _owner_types.get(size)
    if t is None:
        if len(_owner_types) >= 4096:  # (many result sizes: the types live on in their owners)
            _owner_types.clear()
        t = type("AxleResultMemory", (ctypes.c_uint8 * size,), {"__del__": _give_back})
        _owner_types[size] = t
    return t


def empty(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """An uninitialized C-contiguous array, on a recycled block where it is large enough."""
    count = 1
    for d in shape:
        count *= int(d)
    nbytes = count * dtype.itemsize
    if nbytes < MIN_BYTES or _limit() <= 0:
        return np.empty(shape, dtype)
    size = -(-nbytes // PAGE) * PAGE
    with _lock:
        blocks = _free.get(size)
        block = blocks.pop() if blocks else None
        if block is not None:
            _state["held"] -= size
    if block is None:
        block = np.empty(size, np.uint8)
    owner = _owner_type(size).from_address(block.ctypes.data)
    owner._block = block
    return np.frombuffer(owner, dtype=dtype, count=count).reshape(shape)


def held_bytes() -> int:
    """Bytes of free blocks the pool holds now."""
    return _state["held"]


def clear() -> None:
    """Free every block the pool holds (blocks still in use return later, as usual)."""
    with _lock:
        _free.clear()
        _state["held"] = 0

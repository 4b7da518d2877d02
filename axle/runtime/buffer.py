"""Buffers: arrays that live on a device, as PJRT's PjRtBuffer.

On the CPU a Buffer holds a numpy array in host memory: `np.asarray(buffer)` is that array
(no copy), so is `buffer.to_numpy()`. A Buffer made by `execute_async` is filled when its
execution finishes: reading it (np.asarray, to_numpy, passing it to execute) waits.
A donated Buffer is deleted: its memory became an output's, and using it again raises
BufferDeletedError saying where it went.
"""
from __future__ import annotations

from typing import Optional

import numpy as np


class BufferDeletedError(RuntimeError):
    """A Buffer was used after `delete()` or after it was donated to an execution.

    Fix: keep using the execution's output (the donated memory is now there), or do not
    donate the argument (`donate_argnums`), or copy it first (`axle.device_put(np.array(b))`)."""


def _fmt(shape, dtype) -> str:
    from axle.ir.types import element_type_of
    try:
        name = element_type_of(np.dtype(dtype)).name
    except Exception:
        name = str(dtype)
    return f"{name}[{','.join(map(str, shape))}]"


class Buffer:
    """An array on a device. shape, dtype, device, nbytes; delete(), is_deleted,
    block_until_ready(), is_ready(); np.asarray(buffer) without a copy on host memory."""

    __slots__ = ("_array", "_device", "_future", "_index", "_deleted", "_shape", "_dtype", "__weakref__")

    def __init__(self, array: Optional[np.ndarray], device, future=None, index: int = 0,
                 shape=None, dtype=None):
        self._array = array
        self._device = device
        self._future = future  # execute_async: a concurrent Future of the output list
        self._index = index
        self._deleted: Optional[str] = None
        self._shape = tuple(array.shape) if array is not None else tuple(shape)
        self._dtype = array.dtype if array is not None else np.dtype(dtype)

    @classmethod
    def _wrap(cls, array: np.ndarray, device) -> "Buffer":
        """A ready Buffer over `array` (an execution's fresh output; no checks, no copy)."""
        b = cls.__new__(cls)
        b._array, b._device, b._future, b._index, b._deleted = array, device, None, 0, None
        b._shape, b._dtype = array.shape, array.dtype
        return b

    # -- what it is
    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    @property
    def device(self):
        return self._device

    def devices(self) -> set:
        return {self._device}

    # -- lifetime
    @property
    def is_deleted(self) -> bool:
        return self._deleted is not None

    def delete(self) -> None:
        """Free the memory now (waits for a pending execution that writes it)."""
        if self._deleted is None:
            if self._future is not None:
                self._future.exception()  # wait; its error stays with the execution
            self._deleted = "deleted by delete()"
            self._array = None
            self._future = None

    def is_ready(self) -> bool:
        return self._future is None or self._future.done()

    def block_until_ready(self) -> "Buffer":
        """Wait until the value is computed; raise the execution's error if it failed."""
        self._value()
        return self

    def _value(self) -> np.ndarray:
        if self._deleted is not None:
            raise BufferDeletedError(f"{self!r} was {self._deleted}; it cannot be used again")
        if self._future is not None:
            outs = self._future.result()
            self._array = outs[self._index]
            self._future = None
        return self._array

    def _detach(self, reason: str) -> "Buffer":
        """A new Buffer holding this one's value (ready or pending); this one is deleted."""
        b = Buffer.__new__(Buffer)
        b._array, b._device, b._future, b._index, b._deleted = self._array, self._device, self._future, \
            self._index, None
        b._shape, b._dtype = self._shape, self._dtype
        self._deleted, self._array, self._future = reason, None, None
        return b

    # -- numpy
    def to_numpy(self) -> np.ndarray:
        """The value as a numpy array (host memory: the Buffer's own array, no copy)."""
        return self._value()

    def __array__(self, dtype=None, copy=None):
        a = self._value()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        if copy:
            return a.copy()
        return a

    def __repr__(self) -> str:
        state = " deleted" if self._deleted is not None else ("" if self.is_ready() else " pending")
        return f"Buffer({_fmt(self._shape, self._dtype)}, {self._device}{state})"


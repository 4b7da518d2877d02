"""A bounded mapping for caches: the least recently used entries go first.

Every cache axle keeps for the life of a process is bounded (caches that grow with each
new program are a leak in a long-running server): the compiled-program cache of the CPU
executable, the per-function caches of axle.jax.jit, the torch backend and the TensorFlow
bridge. Their sizes are flags (`axle flags`); 0 means no limit.

    cache = LRU(lambda: flag("jit_cache_entries"))
    cache[key] = value          # evicts the least recently used entry beyond the bound
    cache.get(key)              # a hit makes the entry the most recently used

This module is the bottom layer: it imports nothing of axle. It is not thread-safe by
itself: a cache shared between threads is used under its owner's lock.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Union

_MISSING = object()


class LRU(OrderedDict):
    """An OrderedDict (oldest first) holding at most `maxsize` entries: an int, or a
    function returning the current bound (read on every insertion, so that a changed flag
    takes effect); a bound of 0 or less means no limit. `evictions` counts the entries
    dropped."""

    def __init__(self, maxsize: Union[int, Callable[[], int]] = 128):
        super().__init__()
        self._maxsize = maxsize
        self.evictions = 0

    @property
    def maxsize(self) -> int:
        m = self._maxsize() if callable(self._maxsize) else self._maxsize
        return int(m or 0)

    def __getitem__(self, key):
        value = super().__getitem__(key)
        self.move_to_end(key)
        return value

    def get(self, key, default=None):
        value = super().get(key, _MISSING)
        if value is _MISSING:
            return default
        self.move_to_end(key)
        return value

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        bound = self.maxsize
        if bound > 0:
            while len(self) > bound:
                self.popitem(last=False)
                self.evictions += 1

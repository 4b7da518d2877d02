"""Loop kernels that one backend lends another, reached by name, never by import.

A kernel here is `fn(ctx, op)`: it emits op's LLVM IR through `ctx.em` (an Emitter) and a
small context protocol (`ctx.buffer(v)`, `has_buffer`, `same_buffer`, `temp`, `resolve`,
`release`, `copy`, `b`, `mod`; see backends/gpu/serial.py for the least a caller must
provide). The CPU backend's kernels are written this way; the GPU backend runs some of them
over its thread grid or in one thread where it has no kernel of its own.

A library is registered with a loader (axle/backends/__init__.py registers the CPU
backend's) and loaded on first use. Nothing here imports a backend, and a backend that
borrows kernels still works, for fewer ops, when the library is absent (`library` returns
None): deleting one backend's folder never breaks another's imports.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from axle import forks


@dataclass(frozen=True)
class KernelLibrary:
    # op name -> kernel definition (.fn(ctx, op), .memory_operands, .check(op) or None)
    kernels: Mapping[str, object]
    # the IR rewrites the kernels expect before emission (module -> module, not in place)
    prepare: Callable


_LOADERS: dict = {}
_LOADED: dict = {}
_LOCK = forks.lock()  # (made by axle/forks.py: unlocked again in a forked child)


def register_library(name: str, loader: Optional[Callable[[], KernelLibrary]]) -> None:
    """Make library `name` available through `loader()` (None: withdraw it)."""
    with _LOCK:
        _LOADED.pop(name, None)
        if loader is None:
            _LOADERS.pop(name, None)
        else:
            _LOADERS[name] = loader


def library(name: str) -> Optional[KernelLibrary]:
    """Library `name`, loaded once; None when none is registered under that name or its
    backend cannot be imported."""
    with _LOCK:
        if name in _LOADED:
            return _LOADED[name]
        loader = _LOADERS.get(name)
    lib = None
    if loader is not None:
        try:
            lib = loader()
        except ImportError:  # the lending backend is not installed
            lib = None
    with _LOCK:
        _LOADED.setdefault(name, lib)
        return _LOADED[name]

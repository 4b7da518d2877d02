"""Resource limits a user can set (AXLE_FLAGS), checked before memory is taken or time spent.

    AXLE_FLAGS="--max_constant_bytes=1000000 --max_buffer_bytes=4000000000 --compile_time_budget_s=30"

A program that would exceed one raises ResourceLimitError naming the limit, the op and what
it needed, instead of being killed by the kernel's out-of-memory killer or compiling for an
unbounded time. The flags' help text is in axle/flags.py (`axle flags` lists them).

- max_constant_bytes: the largest constant that may be materialized (a splat such as
  `dense<true> : tensor<9511627776xi1>` is held as one element until a consumer needs it
  whole; the interpreter and the CPU backend check before they do).
- max_buffer_bytes: the largest single tensor (argument, result or temporary) the
  interpreter computes or the CPU backend allocates; 0 means half of the physical memory
  (or of the process's address-space limit, when lower).
- compile_time_budget_s: seconds one compilation (passes and code generation) may take;
  checked between passes and between top-level kernels; 0 means no budget.
"""
from __future__ import annotations

import functools
import os
import threading
import time
from contextlib import contextmanager
from typing import Optional

import numpy as np

__all__ = ["ResourceLimitError", "check_constant", "check_buffer", "tensor_bytes",
           "compile_budget", "check_compile_time"]


from axle.errors import ResourceLimitError  # noqa: E402


def _flag(name: str):
    from axle.flags import flag
    return flag(name)


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not Linux
        return 16 << 30


def max_buffer_bytes() -> int:
    """--max_buffer_bytes, or half of what this process may use: the physical memory, or
    its address-space limit (ulimit -v) when that is lower."""
    from axle.flags import flags_text
    return _buffer_limit(flags_text())


@functools.lru_cache(maxsize=8)
def _buffer_limit(flags_text: str) -> int:  # (the interpreter asks once per op: keep it cheap)
    v = int(_flag("max_buffer_bytes"))
    if v > 0:
        return v
    total = _physical_memory()
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            total = min(total, soft)
    except (ImportError, ValueError, OSError):  # pragma: no cover - not POSIX
        pass
    return total // 2


_ITEMSIZE: dict = {}


def tensor_bytes(t) -> Optional[int]:
    """Bytes of a statically shaped tensor type (None for anything else)."""
    shape = getattr(t, "shape", None)
    et = getattr(t, "element_type", None)
    if shape is None or et is None or any(d is None for d in shape):
        return None
    item = _ITEMSIZE.get(et)
    if item is None:
        try:
            item = _ITEMSIZE[et] = np.dtype(et.np_dtype).itemsize
        except (AttributeError, TypeError):
            return None
    n = 1
    for d in shape:
        n *= int(d)
    return n * item


def _where(op) -> str:
    if op is None:
        return ""
    where = getattr(op, "where", None)
    return f" ({where()})" if callable(where) else f" ({op})"


def check_constant(nbytes: int, what: str, op=None) -> None:
    limit = int(_flag("max_constant_bytes"))
    if limit > 0 and nbytes > limit:
        raise ResourceLimitError(f"{what}{_where(op)} needs {nbytes} bytes, over the largest constant "
                                 f"allowed ({limit} bytes; AXLE_FLAGS=--max_constant_bytes=N sets it)")


def check_buffer(nbytes: Optional[int], what: str, op=None) -> None:
    if nbytes is None:
        return
    limit = max_buffer_bytes()
    if nbytes > limit:
        raise ResourceLimitError(f"{what}{_where(op)} needs {nbytes} bytes, over the largest buffer "
                                 f"allowed ({limit} bytes; AXLE_FLAGS=--max_buffer_bytes=N sets it)")


# ---------------------------------------------------------------- compile time

_deadline = threading.local()


@contextmanager
def compile_budget(what: str = "compilation"):
    """Compilation inside this block must end within --compile_time_budget_s (if set);
    nested blocks keep the outermost deadline."""
    budget = float(_flag("compile_time_budget_s"))
    outer = getattr(_deadline, "value", None)
    if outer is None and budget > 0:
        _deadline.value = (time.monotonic() + budget, budget, what)
    try:
        yield
    finally:
        if outer is None:
            _deadline.value = None


def check_compile_time(stage: str) -> None:
    d = getattr(_deadline, "value", None)
    if d is not None and time.monotonic() > d[0]:
        raise ResourceLimitError(f"{d[2]} ran past its budget of {d[1]:g} s (at {stage}; "
                                 f"AXLE_FLAGS=--compile_time_budget_s=N sets it, 0 for none)")


def check_program(module) -> None:
    """Every statically shaped value of `module` (arguments, results, temporaries) within
    max_buffer_bytes: checked before compiling, since compiled code allocates them all."""
    limit = max_buffer_bytes()
    stack = list(module.operations)
    while stack:  # an explicit stack: programs may be long chains or deeply nested
        op = stack.pop()
        for r in op.results:
            n = tensor_bytes(r.type)
            if n is not None and n > limit:
                check_buffer(n, f"the result {r.type}", op)
        for region in op.regions:
            for block in region.blocks:
                for a in block.arguments:
                    n = tensor_bytes(a.type)
                    if n is not None and n > limit:
                        check_buffer(n, f"the argument {a.type}", op)
                stack.extend(block.operations)

"""Checking a function's arguments against its signature (count, dtype, shape, bounds).

Every layer that runs a function needs this before any work starts: the interpreter, the
CPU executable's checking path, the GPU backend. It lives here, below them, so that a
backend does not import the interpreter to check its arguments. The error raised is
axle.errors.ArgumentError (the bottom layer every layer may raise from), naming the
argument and what was expected.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from axle.errors import ArgumentError
from axle.ir.core import Operation
from axle.ir.types import TensorType, Type

__all__ = ["check_arguments", "format_type", "ArgumentError"]


def format_type(t: Type) -> str:
    if isinstance(t, TensorType):
        dims = ",".join("?" if d is None else str(d) for d in t.shape)
        return f"{t.element_type}[{dims}]"
    return str(t)


def check_arguments(fn: Operation, args: Sequence, where: str = "") -> list:
    """Convert and check the arguments of function `fn`; raise ArgumentError naming the bad one."""
    types = fn.function_type.inputs
    name = fn.sym_name
    if len(args) != len(types):
        raise ArgumentError(f"@{name}{where} takes {len(types)} argument(s) "
                            f"({', '.join(format_type(t) for t in types)}), got {len(args)}")
    out = []
    for i, (a, t) in enumerate(zip(args, types)):
        if isinstance(t, TensorType):
            if not isinstance(a, np.ndarray):
                if isinstance(a, (bool, int, float, complex, list, tuple, np.generic)):
                    try:
                        a = np.asarray(a, dtype=t.dtype)
                    except (TypeError, ValueError, OverflowError) as e:
                        raise ArgumentError(f"argument {i} of @{name}: cannot convert {a!r} to "
                                            f"{format_type(t)}: {e}") from None
                elif hasattr(a, "__array__"):
                    # an array of another library that converts to numpy (a jax.Array on the
                    # CPU, a torch tensor): its own dtype, checked below
                    try:
                        a = np.asarray(a)
                    except Exception as e:  # noqa: BLE001 - the library's own conversion error
                        raise ArgumentError(f"argument {i} of @{name}: cannot convert a "
                                            f"{type(a).__name__} to a numpy array "
                                            f"({format_type(t)} expected): {e}") from None
                else:
                    raise ArgumentError(f"argument {i} of @{name}: expected an array of {format_type(t)}, "
                                        f"got {type(a).__name__}")
            if a.dtype != t.dtype:
                raise ArgumentError(f"argument {i} of @{name}: expected dtype {t.dtype} ({format_type(t)}), "
                                    f"got {a.dtype} with shape {list(a.shape)}")
            if len(a.shape) != len(t.shape) or any(d is not None and d != s for d, s in zip(t.shape, a.shape)):
                raise ArgumentError(f"argument {i} of @{name}: expected shape {format_type(t)}, "
                                    f"got {list(a.shape)}")
            if t.bounds is not None:
                for d, (s, b) in enumerate(zip(a.shape, t.bounds)):
                    if b is not None and s > b:
                        raise ArgumentError(f"argument {i} of @{name}: dimension {d} is {s}, "
                                            f"over its bound {b}")
        out.append(a)
    return out

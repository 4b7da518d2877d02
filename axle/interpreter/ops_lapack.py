"""The jaxlib LAPACK custom calls (`lapack_sgetrf_ffi`, ...) in the interpreter.

The semantics are LAPACK's, as jaxlib's CPU kernels call it: the plan of the call
(lapack_builders.py) names SciPy's routine and its arguments; this module copies each
operand into column-major storage per batch element, calls the routine once per batch
element (through ctypes), applies jaxlib's extra steps (geev's finite check and
eigenvector unpacking) and copies the results back into row-major arrays. Matrices are
the logical ones: LAPACK sees exactly the matrix the program holds (the layouts are
column-major), so e.g. getrf's pivots are 1-based, as LAPACK writes them.
"""
from __future__ import annotations

import numpy as np

from axle.interpreter.lapack_builders import make_plan
from axle.interpreter.lapack_plans import LapackError, Plan, is_lapack_target, run_plan
from axle.interpreter.registry import InterpreterError, OpCall


def to_columns(x: np.ndarray, batch: int, rank: int) -> np.ndarray:
    """(batch..., r, c) row-major -> (batch, r*c) with each matrix column-major."""
    x = np.asarray(x).reshape((batch,) + x.shape[x.ndim - rank:])
    if rank == 2:
        x = np.swapaxes(x, -1, -2)
    return np.ascontiguousarray(x).reshape(batch, -1)


def from_columns(mem: np.ndarray, shape: tuple, rank: int) -> np.ndarray:
    """The inverse of to_columns, for a result of `shape`."""
    per = tuple(shape[len(shape) - rank:])
    x = mem.reshape((-1,) + (per[::-1] if rank == 2 else per))
    if rank == 2:
        x = np.swapaxes(x, -1, -2)
    return x.reshape(shape)


def unpack_eigenvectors(wi: np.ndarray, packed: np.ndarray, n: int) -> np.ndarray:
    """jaxlib's UnpackEigenvectors: real geev's eigenvectors (a complex pair in columns j,
    j+1 as real and imaginary parts) as complex columns, column-major (n*n,)."""
    cols = packed.reshape(n, n)  # row j = column j of the matrix (column-major storage)
    out = np.zeros((n, n), np.result_type(packed.dtype, np.complex64))
    j = 0
    while j < n:
        if wi[j] == 0.0 or np.isnan(wi[j]) or j + 1 == n:
            out[j] = cols[j]
            j += 1
        else:
            out[j] = cols[j] + 1j * cols[j + 1]
            out[j + 1] = cols[j] - 1j * cols[j + 1]
            j += 2
    return out.reshape(-1)


def plan_of(call: OpCall) -> Plan:
    ops = [(tuple(t.shape), np.dtype(t.dtype)) for t in call.operand_types]
    res = [(tuple(t.shape), np.dtype(t.dtype)) for t in call.result_types]
    try:
        return make_plan(call.name, ops, res, call.attrs)
    except LapackError as e:
        raise InterpreterError(f"{call.location}: {e}") from None


def lapack_call(call: OpCall) -> list:
    """Run one jaxlib LAPACK custom call on numpy arrays."""
    plan = plan_of(call)
    mems = {}
    for a in plan.arrays:
        if not a.per_batch:
            mems[a.name] = np.zeros(max(a.size, 1), a.dtype)
            continue
        mem = np.zeros((plan.batch, max(a.size, 1)), a.dtype)
        if a.source is not None and a.size and plan.batch:
            mem[:, :a.size] = to_columns(call.operands[a.source], plan.batch, len(a.shape))
        mems[a.name] = mem
    if not plan.skip:
        run_plan(plan, mems)
        for packed, wi, _ in plan.unpack:
            n = plan.array(packed).shape[0]
            target = mems.setdefault("unpacked_" + packed, np.zeros((plan.batch, n * n), np.complex128))
            for b in range(plan.batch):
                if mems[plan.info][b][0] == 0:
                    target[b] = unpack_eigenvectors(mems[wi][b], mems[packed][b], n)
    results = [np.zeros(t.shape, t.dtype) for t in call.result_types]
    for a in plan.arrays:
        if a.result is not None and a.size:
            shape = tuple(call.result_types[a.result].shape)
            results[a.result] = from_columns(mems[a.name][:, :a.size], shape, len(a.shape)).astype(
                call.result_types[a.result].dtype)
    for packed, _, r in plan.unpack:
        if not plan.skip:
            t = call.result_types[r]
            results[r] = from_columns(mems["unpacked_" + packed], tuple(t.shape), 2).astype(t.dtype)
    return results


class _Targets(dict):
    """target name -> implementation, for every jaxlib LAPACK target (looked up by pattern)."""

    def get(self, target, default=None):
        return lapack_call if is_lapack_target(str(target)) else default

    def __contains__(self, target) -> bool:
        return is_lapack_target(str(target))


LAPACK_TARGETS = _Targets()

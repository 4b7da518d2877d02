"""The LAPACK custom calls JAX emits on the CPU (`lapack_sgetrf_ffi`, ...), as call plans.

A plan says, for one `stablehlo.custom_call` with static shapes, which LAPACK (or BLAS)
routine of SciPy's library runs once per batch element and with which arguments, exactly
as jaxlib's kernels (jaxlib/cpu/lapack_kernels.cc) call it: the same routine, the same
leading dimensions, the same workspace sizes (queried with lwork = -1 where jaxlib
queries). The interpreter (ops_lapack.py) runs a plan through ctypes; the CPU backend
(backends/cpu/kernels_lapack.py) emits native code for the same plan. Both find the
routines through `scipy.linalg.cython_lapack.__pyx_capi__` (`cython_blas` for trsm),
whose functions take every argument by pointer (Fortran convention, 32-bit integers).

Memory: each matrix LAPACK works on is a per-batch `Array` in column-major order (the
`operand_layouts` / `result_layouts` JAX attaches are column-major matrices, batch
dimensions major: `check_layouts` insists). An array may be filled from an operand
(`source`) and copied to a result (`result`); arrays without a source start zeroed, and
results no array produces (u and vt of an SVD without vectors) are zeros, where jaxlib
leaves whatever the buffer held. `info` arrays receive LAPACK's info per batch element.

Special steps jaxlib adds around the call are flags of the plan: `finite_check` (geev
skips a matrix that holds an Inf or NaN and reports info = -4) and `unpack` (real geev
turns LAPACK's packed real eigenvectors into complex ones, only where info == 0).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

import numpy as np

PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
REAL = {"float32": np.float32, "float64": np.float64, "complex64": np.float32, "complex128": np.float64}
I32 = np.dtype(np.int32)

# jaxlib target family -> what its routine is called in SciPy (complex variants differ)
FAMILIES = ("trsm", "getrf", "geqrf", "geqp3", "orgqr", "ormqr", "potrf", "gesdd", "gesvd", "syevd",
            "geev", "gees", "gehrd", "sytrd", "gtsv")
_COMPLEX_NAME = {"orgqr": "ungqr", "ormqr": "unmqr", "syevd": "heevd", "sytrd": "hetrd"}


class LapackError(Exception):
    """A LAPACK custom call axle cannot run as written (shapes, layouts, attributes)."""


@dataclass
class Array:
    name: str
    shape: tuple  # per batch element; LAPACK sees it column-major
    dtype: np.dtype
    source: Optional[int] = None  # operand index copied in
    result: Optional[int] = None  # result index copied out to
    per_batch: bool = True  # False: one scratch array shared by every batch element (workspace)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass
class Plan:
    target: str
    routine: str  # the name in cython_lapack / cython_blas
    library: str  # "lapack" or "blas"
    batch: int
    arrays: list
    args: list  # ("char", c) | ("int", v) | ("one", dtype) | ("array", name, element offset) | ("null",)
    info: Optional[str] = None  # the array LAPACK writes info into (per batch)
    finite_check: Optional[str] = None
    unpack: list = field(default_factory=list)  # (packed array, imaginary parts array, result index)
    skip: bool = False  # a zero-sized matrix: no call, zero results

    def array(self, name: str) -> Array:
        return next(a for a in self.arrays if a.name == name)


def split_target(target: str) -> Optional[tuple]:
    """'lapack_sgetrf_ffi' -> ('s', 'getrf'); None for targets that are not jaxlib LAPACK ones."""
    if not (target.startswith("lapack_") and target.endswith("_ffi")):
        return None
    core = target[len("lapack_"):-len("_ffi")]
    p, fam = core[:1], core[1:]
    if p not in "sdcz" or not p:
        return None
    for f, c in _COMPLEX_NAME.items():
        if fam == c:
            fam = f
    return (p, fam) if fam in FAMILIES else None


def is_lapack_target(target: str) -> bool:
    return split_target(str(target)) is not None


# ---------------------------------------------------------------- SciPy's routines


@lru_cache(maxsize=1024)  # (one entry per LAPACK/BLAS routine: a few hundred at most)
def routine_address(library: str, name: str) -> int:
    """The address of SciPy's `name` (cython_lapack or cython_blas capsule)."""
    if library == "blas":
        from scipy.linalg import cython_blas as mod
    else:
        from scipy.linalg import cython_lapack as mod
    cap = mod.__pyx_capi__.get(name)
    if cap is None:
        raise LapackError(f"SciPy's {library} has no routine {name}")
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return api.PyCapsule_GetPointer(cap, api.PyCapsule_GetName(cap))


def call_routine(library: str, name: str, pointers: list) -> None:
    """Call SciPy's routine with every argument a pointer (as Fortran takes them)."""
    fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(pointers)))(routine_address(library, name))
    fn(*pointers)


def _scalar_bytes(kind: str, value) -> np.ndarray:
    if kind == "char":
        return np.frombuffer(bytes([value]), dtype=np.uint8).copy()
    return np.array([value], dtype=np.int32)


def run_plan(plan: Plan, mems: dict) -> None:
    """Run `plan` over its batch on numpy storage: mems[name] is an array (batch, size) for
    per-batch arrays, (size,) for shared ones. Used by the interpreter and the work query."""
    scalars = [_scalar_bytes(*a) if a[0] in ("char", "int") else
               np.ones(1, a[1]) if a[0] == "one" else
               np.array([-1], np.int32) if a[0] == "lwork" else None for a in plan.args]
    for b in range(plan.batch):
        ptrs = []
        for a, s in zip(plan.args, scalars):
            if s is not None:
                ptrs.append(s.ctypes.data)
            elif a[0] == "null":
                ptrs.append(None)
            else:
                arr = plan.array(a[1])
                m = mems[a[1]][b] if arr.per_batch else mems[a[1]]
                ptrs.append(m.ctypes.data + a[2] * m.itemsize)
        if plan.finite_check is not None and not np.all(np.isfinite(mems[plan.finite_check][b])):
            mems[plan.info][b][0] = -4
            continue
        call_routine(plan.library, plan.routine, ptrs)


def query_lwork(plan: Plan, work: str = "work") -> int:
    """The optimal workspace size LAPACK reports for `plan` (its call with lwork = -1)."""
    arrays = [Array(a.name, a.shape, a.dtype, per_batch=a.per_batch) for a in plan.arrays]
    q = Plan(plan.target, plan.routine, plan.library, 1, arrays, list(plan.args), plan.info)
    mems = {a.name: (np.zeros((1, max(a.size, 1)), a.dtype) if a.per_batch else np.zeros(max(a.size, 1), a.dtype))
            for a in arrays}
    run_plan(q, mems)
    if plan.info is not None and int(mems[plan.info][0][0]) != 0:
        raise LapackError(f"{plan.target}: the workspace query of {plan.routine} failed "
                          f"(info {int(mems[plan.info][0][0])})")
    return max(int(np.real(mems[work][0])), 1)


def finish(plan: Plan, work_names=("work",)) -> Plan:
    """Replace ("lwork", name) arguments with the queried size and size the workspace."""
    for w in work_names:
        if ("lwork", w) not in plan.args:
            continue
        n = 1 if plan.skip else query_lwork(plan, w)
        arr = plan.array(w)
        arr.shape = (n,)
        plan.args = [("int", n) if a == ("lwork", w) else a for a in plan.args]
    return plan

"""GEMM through BLAS: large dot_generals become calls of ?gemm.

The BLAS is the one SciPy ships (OpenBLAS, multi-threaded, tuned for the host CPU). Its
routines are reached through the function pointers SciPy exports for Cython
(`scipy.linalg.cython_blas.__pyx_capi__`); the JIT binds the names `axle_blas_sgemm`, ...
to those addresses at link time (llvm_env.EXTERNAL_SYMBOLS), so object code stays free of
process addresses and can live in the disk cache.

Layout: our buffers are row-major, BLAS is column-major. A row-major [M, N] = [M, K] x [K, N]
is the column-major [N, M] = [N, K] x [K, M] with the operands swapped, so every call is
gemm('N', 'N', N, M, K, 1, rhs, N, lhs, K, 0, out, N) — no copies. Batched dots
([B, M, K] x [B, K, N], the canonical form dot-canonicalize leaves) loop over B.

Operands stored transposed ([K, M] lhs, [N, K] rhs; transpose-fold leaves dots reading
transposed data in place) pass BLAS's 'T' flag instead of being copied.

Eligible: dot_generals with at most one (leading) batch dimension, one contracting and
one free dimension per operand, whose operands and result share one of f32, f64,
complex64, complex128, with every dimension below 2**31 and M*N*K at least MIN_WORK
(below that a call costs more than the loop). Everything else keeps the generated loop.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache
from typing import Optional

from llvmlite import ir

from axle.backends.cpu.llvm_env import EXTERNAL_SYMBOLS
from axle.codegen import scalar as S
from axle.codegen.emitter import _ty
from axle.ir.core import Operation

MIN_WORK = 8 * 8 * 8
I32 = ir.IntType(32)
PREFIX = {"f32": "s", "f64": "d", "complex<f32>": "c", "complex<f64>": "z"}


@lru_cache(maxsize=None)
def available() -> dict:
    """{'s': address, ...} of the gemm routines SciPy exports (empty without SciPy)."""
    try:
        from scipy.linalg import cython_blas
    except ImportError:
        return {}
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    out = {}
    for p in "sdcz":
        cap = cython_blas.__pyx_capi__.get(p + "gemm")
        if cap is not None:
            out[p] = api.PyCapsule_GetPointer(cap, api.PyCapsule_GetName(cap))
    for p, addr in out.items():
        EXTERNAL_SYMBOLS[f"axle_blas_{p}gemm"] = addr
    local = _openblas_thread_setter()
    if local:
        EXTERNAL_SYMBOLS["axle_blas_set_num_threads_local"] = local
    return out


def _openblas_thread_setter() -> int:
    """Address of OpenBLAS's `openblas_set_num_threads_local` in SciPy's BLAS, or 0.

    Generated code calls it (with 1) before every gemm: GEMMs run in the calling thread
    only, and large ones are split across the threads of axle's own pool (parallel.py).
    Two thread pools on the same cores (OpenBLAS's workers keep spinning after a call)
    slowed whole programs down several times; one pool does not. The setting is per
    thread, so SciPy's BLAS elsewhere in the process keeps its own threads."""
    lib = _openblas()
    if lib is None:
        return 0
    _prefer_avx512_kernels(lib)
    try:
        return ctypes.cast(lib.openblas_set_num_threads_local, ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


@lru_cache(maxsize=None)
def _openblas():
    """SciPy's OpenBLAS as a ctypes library (already loaded by cython_blas), or None."""
    import glob
    import os

    import scipy
    libs = os.path.join(os.path.dirname(os.path.dirname(scipy.__file__)), "scipy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "libscipy_openblas*.so*"))):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


AVX512_CORES = ("SkylakeX", "Cooperlake", "SapphireRapids")  # OpenBLAS cores with AVX-512 kernels
AVX512_NEEDS = ("+avx512f", "+avx512cd", "+avx512bw", "+avx512dq", "+avx512vl")  # what SkylakeX's use


def _prefer_avx512_kernels(lib) -> str:
    """On a host with AVX-512 whose CPU OpenBLAS does not recognize, switch OpenBLAS to its
    SkylakeX kernels; returns the core OpenBLAS uses afterwards ('' if it cannot say).

    OpenBLAS built with DYNAMIC_ARCH picks its kernels by CPU model. Models newer than the
    build (AMD Zen 5 for SciPy's OpenBLAS 0.3.30) fall back to the Haswell kernels, which
    use 256-bit AVX2: on the Zen 5 development machine an sgemm ran at 123 GFLOPS per core
    with them and 242 with the SkylakeX kernels (XLA's own GEMM: about 230 per core). The
    library re-selects its kernels when `gotoblas_dynamic_init` runs again after
    `gotoblas_dynamic_quit`, honouring OPENBLAS_CORETYPE; that is done here once, before
    axle's first GEMM. Left alone: a user's own OPENBLAS_CORETYPE, a library without
    those entry points, a host without the AVX-512 subsets the kernels use, a core that
    already has AVX-512 kernels, and AXLE_FLAGS=--cpu_blas_avx512=false. Results are
    unchanged up to rounding (the same BLAS, another kernel)."""
    from axle.backends.cpu import llvm_env
    from axle.flags import env, flag, scoped_env
    try:
        name_of = lib.scipy_openblas_get_corename
    except AttributeError:
        try:
            name_of = lib.openblas_get_corename
        except AttributeError:
            return ""
    name_of.restype = ctypes.c_char_p
    core = (name_of() or b"").decode()
    if core in AVX512_CORES or env("OPENBLAS_CORETYPE") or not flag("cpu_blas_avx512"):
        return core
    features = llvm_env.host_cpu()[1].split(",")
    if not all(f in features for f in AVX512_NEEDS):
        return core
    try:
        quit_, init = lib.gotoblas_dynamic_quit, lib.gotoblas_dynamic_init
    except AttributeError:
        return core
    with scoped_env(OPENBLAS_CORETYPE="SkylakeX"):
        quit_()
        init()
    return (name_of() or b"").decode()


def gemm_shape(op: Operation) -> Optional[tuple]:
    """(batch, M, N, K, prefix, lhs_transposed, rhs_transposed) when op is a dot_general BLAS
    can run, else None. Operands may be stored transposed ([K, M] / [N, K], as transpose-fold
    leaves them); a batch dimension, if any, leads."""
    lhs, rhs = op.operands
    lt, rt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    key = str(ot.element_type)
    if key not in PREFIX or str(lt.element_type) != key or str(rt.element_type) != key:
        return None
    if PREFIX[key] not in available():
        return None
    dn = op.attr("dot_dimension_numbers")
    lb, rb = list(dn["lhs_batching_dimensions"]), list(dn["rhs_batching_dimensions"])
    lc, rc = list(dn["lhs_contracting_dimensions"]), list(dn["rhs_contracting_dimensions"])
    nb = len(lb)
    if nb > 1 or (nb == 1 and (lb != [0] or rb != [0])) or lt.rank != nb + 2 or rt.rank != nb + 2:
        return None
    if len(lc) != 1 or len(rc) != 1:
        return None
    lhs_t = lc[0] == nb  # lhs stored [K, M]
    rhs_t = rc[0] == nb + 1  # rhs stored [N, K]
    batch = lt.shape[0] if nb else 1
    k = lt.shape[lc[0]]
    m = lt.shape[nb + 1] if lhs_t else lt.shape[nb]
    n = rt.shape[nb] if rhs_t else rt.shape[nb + 1]
    if min(batch, m, n, k) < 1 or max(m, n, k) >= 2 ** 31 or m * n * k < MIN_WORK:
        return None
    return batch, m, n, k, PREFIX[key], lhs_t, rhs_t


def _gemm_function(ctx, p: str):
    p8 = ir.IntType(8).as_pointer()
    i32p = I32.as_pointer()
    fnty = ir.FunctionType(ir.VoidType(), [p8, p8, i32p, i32p, i32p, p8, p8, i32p, p8, i32p, p8, p8, i32p])
    name = f"axle_blas_{p}gemm"
    return ctx.mod.globals.get(name) or ir.Function(ctx.mod, fnty, name)



def set_threads(mod: ir.Module, b: ir.IRBuilder, threads: int) -> None:
    """Emit the call that sets OpenBLAS's thread count for the calling thread's next
    routines (no-op where this OpenBLAS has no per-thread setter)."""
    if "axle_blas_set_num_threads_local" in EXTERNAL_SYMBOLS:
        setter = mod.globals.get("axle_blas_set_num_threads_local") or ir.Function(
            mod, ir.FunctionType(I32, [I32]), "axle_blas_set_num_threads_local")
        b.call(setter, [ir.Constant(I32, threads)])

def call_gemm(ctx, p: str, et, m: int, n: int, k: int, lhs, rhs, out, lhs_offset=None, rhs_offset=None,
              out_offset=None, lhs_t: bool = False, rhs_t: bool = False, m_count=None, threads: int = 1,
              n_count=None, ldc: int = 0) -> None:
    """Row-major out[m, n] = lhs[m, k] @ rhs[k, n] (contiguous buffers; byte offsets optional);
    lhs_t / rhs_t: that operand is stored transposed ([k, m] / [n, k]). `m_count` (an i64
    value) computes only that many rows, starting at the offsets (a partial tile).
    `threads`: how many threads this call may use (OpenBLAS's own). `n_count` (an i64
    value) computes only that many columns (a block of columns; the leading dimensions stay
    those of the whole [m, n] / [k, n] matrices). `ldc`: the output's row length when it is
    not n (a block of columns of a wider matrix)."""
    em, b = ctx.em, ctx.b
    p8 = ir.IntType(8).as_pointer()

    def slot(t, value):
        s = em.alloca(t)
        b.store(value, s)
        return s

    def flag(t):
        return slot(ir.IntType(8), ir.Constant(ir.IntType(8), ord("T" if t else "N")))
    # a call runs in its calling thread only unless told otherwise (a large GEMM, run while
    # axle's own pool is idle)
    set_threads(ctx.mod, b, threads)
    dims = {v: slot(I32, ir.Constant(I32, v)) for v in {m, n, k, ldc or n}}
    rows = dims[m] if m_count is None else slot(I32, b.trunc(m_count, I32))
    cols = dims[n] if n_count is None else slot(I32, b.trunc(n_count, I32))
    alpha = b.bitcast(slot(S.reg_type(et), S.constant(et, 1)), p8)
    beta = b.bitcast(slot(S.reg_type(et), S.constant(et, 0)), p8)

    def at(base, off):
        base = b.bitcast(base, p8)
        return base if off is None else b.gep(base, [off], inbounds=True)
    # column-major view: out^T[n, m] = op(rhs^T) @ op(lhs^T)
    b.call(_gemm_function(ctx, p), [flag(rhs_t), flag(lhs_t), cols, rows, dims[k], alpha,
                                    at(rhs, rhs_offset), dims[k] if rhs_t else dims[n],
                                    at(lhs, lhs_offset), dims[m] if lhs_t else dims[k],
                                    beta, at(out, out_offset), dims[ldc or n]])


def emit_gemm(ctx, op: Operation, shape: tuple) -> None:
    """One gemm per batch. Batched GEMMs share their batches across the pool's threads; a
    large single GEMM is split into blocks on the pool (gemm_on_pool)."""
    import numpy as np

    from axle.backends.cpu.parallel import split_ranges
    batch, m, n, k, p, lhs_t, rhs_t = shape
    em = ctx.em
    et = _ty(op.results[0]).element_type
    itemsize = np.dtype(et.dtype).itemsize
    i64 = ir.IntType(64)

    def bufs():
        return ctx.buffer(op.operands[0]), ctx.buffer(op.operands[1]), ctx.buffer(op.results[0])

    def one(bi):
        b = ctx.b
        lhs, rhs, out = bufs()

        def off(elems):
            return b.mul(bi, ir.Constant(i64, elems * itemsize))
        call_gemm(ctx, p, et, m, n, k, lhs, rhs, out, off(m * k), off(k * n), off(m * n), lhs_t, rhs_t)
    if batch == 1:
        gemm_on_pool(ctx, p, et, m, n, k, lambda: bufs()[0], lambda: bufs()[1], lambda: bufs()[2], lhs_t, rhs_t)
    else:
        # split only large batches (at least ~64M multiply-adds): smaller ones ran slower on
        # two threads than on one
        split_ranges(ctx, batch, batch * m * n * k // 256, lambda lo, hi: em.for_range_dynamic(lo, hi, one))
    ctx.mark_library(f"blas.{p}gemm")


BLOCK_MIN = 128  # fewest rows / columns of a block of a GEMM split across the pool
BLOCKS = 8  # blocks of a split GEMM (fixed: results do not depend on the thread count)


def gemm_on_pool(ctx, p: str, et, m: int, n: int, k: int, lhs, rhs, out, lhs_t: bool = False,
                 rhs_t: bool = False) -> None:
    """Row-major out[m, n] = lhs[m, k] @ rhs[k, n] (lhs, rhs, out: functions giving the
    buffers in the function being emitted), split into blocks that the threads of axle's
    pool claim, each one single-threaded gemm call. Blocks of columns when the lhs is the
    smaller operand (each block packs all of lhs and its part of rhs), else blocks of rows.

    OpenBLAS's own threads are never used: with another process busy on one of two cores,
    a 256x1024x1024 sgemm on OpenBLAS's two threads took 56-83 ms against 9 ms on one
    thread (its threads wait for each other); blocks claimed from axle's pool are taken
    by whichever thread is running, so a descheduled thread costs at most its block."""
    import numpy as np

    from axle.backends.cpu.parallel import parallel_ok, split_ranges
    em = ctx.em
    itemsize = np.dtype(et.dtype).itemsize
    i64 = ir.IntType(64)
    by_cols = m * k <= k * n
    extent = n if by_cols else m
    blocks = max(1, min(BLOCKS, extent // BLOCK_MIN))
    if blocks < 2 or not parallel_ok(ctx, m * n * k // 8):
        call_gemm(ctx, p, et, m, n, k, lhs(), rhs(), out(), lhs_t=lhs_t, rhs_t=rhs_t)
        return

    def emit(lo, hi):
        def one(j):
            b = ctx.b
            first = b.udiv(b.mul(j, ir.Constant(i64, extent)), ir.Constant(i64, blocks))
            last = b.udiv(b.mul(b.add(j, ir.Constant(i64, 1)), ir.Constant(i64, extent)), ir.Constant(i64, blocks))
            count = b.sub(last, first)

            def off(elems_per):
                return b.mul(first, ir.Constant(i64, elems_per * itemsize))
            if by_cols:  # columns [first, last): rhs at column first, out at column first
                call_gemm(ctx, p, et, m, n, k, lhs(), rhs(), out(), None, off(k if rhs_t else 1), off(1),
                          lhs_t, rhs_t, n_count=count)
            else:  # rows [first, last)
                call_gemm(ctx, p, et, m, n, k, lhs(), rhs(), out(), off(1 if lhs_t else k), None, off(n),
                          lhs_t, rhs_t, m_count=count)
        em.for_range_dynamic(lo, hi, one)
    split_ranges(ctx, blocks, m * n * k // 8, emit, chunks=blocks)

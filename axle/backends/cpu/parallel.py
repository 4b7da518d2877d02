"""Both cores for large kernels: loops split across threads of the OpenMP runtime.

A kernel whose loop nest is large enough (PARALLEL_MIN_WORK element-operations) runs as
`GOMP_parallel(body, table, 0, 0)` (through a variable: see available()): libgomp (GCC's OpenMP runtime, present wherever gcc
is) keeps a pool of threads, so a parallel kernel costs a wake-up (microseconds), not a
thread start. Each thread runs `body(table)` on its own contiguous share of one loop
dimension (`omp_get_thread_num` / `omp_get_num_threads`). Shares never overlap and each
writes only the output elements of its range, so results do not depend on the thread
count: every output element is computed by one thread in the same order as serially.

Thread count: libgomp's default (OMP_NUM_THREADS, else one per core). If libgomp cannot
be loaded the code is simply serial. The runtime's symbols are bound by the JIT at link
time (llvm_env.EXTERNAL_SYMBOLS), so object code in the disk cache stays valid.
Off by default (`AXLE_FLAGS=--cpu_parallel=true` turns it on): on the 2-core development
machine, shared with other work, a split kernel waits for its slowest thread and whole
programs ran 1.5-3x slower than serial code; on a quiet machine with more cores the split
pays. GEMMs always run single-threaded per call (blas.py), so that BLAS's own thread pool
never competes with anything.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from functools import lru_cache

from llvmlite import ir

from axle.backends.cpu.llvm_env import EXTERNAL_SYMBOLS
from axle.backends.cpu.scalar import I8, I64

PARALLEL_MIN_WORK = 1 << 16  # elements x ops per element below which a kernel stays serial
I32 = ir.IntType(32)
SYMBOLS = ("GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads")


@lru_cache(maxsize=None)
def available() -> bool:
    """Load libgomp (once) and register its entry points; False when it is missing."""
    # idle workers spin this many iterations before sleeping: short, so that spinning
    # threads do not steal the cores from BLAS calls that follow a parallel kernel
    os.environ.setdefault("GOMP_SPINCOUNT", "10000")
    name = ctypes.util.find_library("gomp") or "libgomp.so.1"
    try:
        lib = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        addrs = {s: ctypes.cast(getattr(lib, s), ctypes.c_void_p).value for s in SYMBOLS}
    except (OSError, AttributeError):
        return False
    for s, a in addrs.items():
        EXTERNAL_SYMBOLS["axle_" + s] = a
    # Generated code calls the runner through this variable, not GOMP_parallel directly:
    # libgomp's thread pool does not survive fork(), so a forked child (multiprocessing
    # workers) switches the variable to a serial runner that calls the body once, as thread
    # 0 of 1 (what omp_get_thread_num / omp_get_num_threads answer outside a parallel region).
    _RUNNER.value = addrs["GOMP_parallel"]
    EXTERNAL_SYMBOLS["axle_parallel_runner"] = ctypes.addressof(_RUNNER)
    os.register_at_fork(after_in_child=_serial_after_fork)
    return True


_RUNNER = ctypes.c_void_p(0)
_SERIAL: list = []


def _serial_runner_address() -> int:
    if not _SERIAL:
        from axle.backends.cpu.llvm_env import compile_ir
        text = """
define void @axle_serial_runner(void (i8*)* %fn, i8* %data, i32 %n, i32 %flags) {
  call void %fn(i8* %data)
  ret void
}"""
        handle, addrs, _ = compile_ir(text, ["axle_serial_runner"])
        _SERIAL.extend([handle, addrs["axle_serial_runner"]])
    return _SERIAL[1]


def _serial_after_fork() -> None:
    _RUNNER.value = _serial_runner_address()


def enabled() -> bool:
    from axle.flags import flag
    return bool(flag("cpu_parallel")) and available()


def max_threads() -> int:
    """Upper bound on the threads a kernel with per-thread scratch space uses."""
    return max(1, min(os.cpu_count() or 1, 16))


def outer_dim(shape) -> int:
    """The dimension to share: the first one longer than 1."""
    for d, n in enumerate(shape):
        if n > 1:
            return d
    return 0


def _declare(mod: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    return mod.globals.get(name) or ir.Function(mod, fnty, name)


def split_loop(ctx, shape: list, dim: int, body, work_per_element: int = 1) -> None:
    """Emit `for idx in ndindex(shape): body(idx)`, with dimension `dim` shared across
    threads when the nest is big enough (and we are in a top-level kernel function)."""
    total = 1
    for d in shape:
        total *= d
    if any(d == 0 for d in shape):
        return
    if not shape:
        ctx.em.loop_nest([], body)
        return
    split_ranges(ctx, shape[dim], total * work_per_element,
                 lambda lo, hi: ctx.em.loop_nest_range(list(shape), dim, lo, hi, body))


def split_ranges(ctx, n: int, work: int, emit, max_threads: int = 0) -> None:
    """emit(lo, hi) emits the loops for indices [lo, hi) of a dimension of extent n. Runs
    once over [0, n) serially, or in each thread over its share when `work` is large.
    With `max_threads`, at most that many threads get work and emit(lo, hi, tid) also
    receives the thread's number (below max_threads: an index into per-thread scratch)."""
    em = ctx.em
    if not ctx.in_kernel_function or work < PARALLEL_MIN_WORK or n < 2 or not enabled():
        if max_threads:
            emit(em.const_i64(0), em.const_i64(n), em.const_i64(0))
        else:
            emit(em.const_i64(0), em.const_i64(n))
        return
    p8 = I8.as_pointer()
    outer = ctx.b
    fn = ir.Function(ctx.mod, ir.FunctionType(ir.VoidType(), [p8.as_pointer()]),
                     ctx.mod.get_unique_name(outer.function.name + ".par"))
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    with ctx.function_scope(fn, call=False):
        b = ctx.b
        tid = b.zext(b.call(_declare(ctx.mod, "axle_omp_get_thread_num", ir.FunctionType(I32, [])), []), I64)
        nt = b.zext(b.call(_declare(ctx.mod, "axle_omp_get_num_threads", ir.FunctionType(I32, [])), []), I64)
        total = em.const_i64(n)
        if max_threads:
            cap = em.const_i64(max_threads)
            nt = b.select(b.icmp_unsigned("<", nt, cap), nt, cap)
        chunk = b.udiv(b.add(total, b.sub(nt, em.const_i64(1))), nt)
        lo = b.mul(tid, chunk)  # threads numbered nt and above get an empty range
        hi = b.add(lo, chunk)
        lo = b.select(b.icmp_unsigned("<", lo, total), lo, total)
        hi = b.select(b.icmp_unsigned("<", hi, total), hi, total)
        if max_threads:
            emit(lo, hi, b.select(b.icmp_unsigned("<", tid, cap), tid, em.const_i64(0)))
        else:
            emit(lo, hi)
    fnty = ir.FunctionType(ir.VoidType(), [p8])
    runner_ty = ir.FunctionType(ir.VoidType(), [fnty.as_pointer(), p8, I32, I32]).as_pointer()
    var = ctx.mod.globals.get("axle_parallel_runner")
    if var is None:
        var = ir.GlobalVariable(ctx.mod, runner_ty, "axle_parallel_runner")  # external: bound at link
    b = ctx.b
    runner = b.load(var)
    b.call(runner, [b.bitcast(fn, fnty.as_pointer()), b.bitcast(ctx.table, p8), ir.Constant(I32, 0),
                    ir.Constant(I32, 0)])

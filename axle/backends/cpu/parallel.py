"""Both cores for large kernels: loops split into chunks that threads of axle's own pool claim.

A kernel whose loop nest is large enough (PARALLEL_MIN_WORK element-operations) has one
dimension cut into chunks, and its loop over a chunk becomes a function
`body(table, chunk, n_chunks, worker)`. The kernel calls `axle_pool_run(body, table,
n_chunks)`: the calling thread publishes the job and, like every worker, claims chunks
one at a time (a compare-and-swap on one word holding the job's generation and the next
chunk) until none are left, then waits only for the chunks other threads have claimed.

Why not OpenMP (libgomp, used before): its fork/join waits for every thread of the team.
On a virtual machine whose second core is often taken away by the host (the development
machine shows 20-35% steal time under load), a static split waits milliseconds for a
thread that has not even started; a sleeping thread takes ~0.4 ms to wake. Here a thread
that arrives late finds no chunk left and costs nothing, so a split kernel is never much
slower than the serial one, and up to the thread count faster.

Workers spin (with `pause`) for about 0.1 ms after their last chunk, then sleep on
a futex that the next job wakes. A thread that claimed a chunk can still be taken away
mid-chunk; the caller then waits, spinning for about WAIT_SPIN pauses and then yielding
its core (sched_yield) between looks, so that the descheduled thread (or another process
on a busy machine) runs instead of a spinning caller. When the caller waited longer than half the time it
worked itself, the next BACKOFF_MIN split kernels run serially, doubling on further stalls
(up to BACKOFF_MAX) and halving after clean jobs: on a machine where the host keeps taking
a core away, kernels run about as fast as serial code instead of waiting for it. Each output element is computed by one chunk, in the
serial order within it, so results do not depend on the number of threads or on which
thread ran what (tested bit for bit). Thread count: AXLE_NUM_THREADS, else one per core
the process may run on (at most 16). In a fork()ed child (multiprocessing workers) the
pool has no workers and the calling thread runs every chunk itself; so does a thread that
finds the pool busy with another thread's kernel (programs run from several threads, as
the CPU devices of a collective do). The pool's entry
point is bound by the JIT at link time (llvm_env.EXTERNAL_SYMBOLS), so object code in the
disk cache stays valid. GEMMs run single-threaded per call (blas.py): rows are split
here, so BLAS's own thread pool never competes with this one.
"""
from __future__ import annotations

import ctypes
import os
import threading

from llvmlite import ir

from axle import forks
from axle.backends.cpu.llvm_env import EXTERNAL_SYMBOLS
from axle.codegen.scalar import I8, I64

PARALLEL_MIN_WORK = 1 << 18  # elements x ops per element below which a kernel stays serial (~0.1 ms)
CHUNKS = 16  # chunks of a split loop (fewer when the dimension is shorter)
SPIN = 2000  # pause instructions a worker spins through before sleeping (~0.1 ms): longer spins slowed the serial GEMMs that follow a split kernel (the two cores of the development VM behave like hyperthreads of one)
SYS_FUTEX, FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 202, 128, 129  # x86-64 Linux
SYS_SCHED_YIELD = 24  # x86-64 Linux
WAIT_SPIN = 1000  # pause instructions the caller spins through waiting for claimed chunks before yielding the core
STALL_SLACK = 20000  # cycles (~10 us) of waiting for other threads that are never a stall
BACKOFF_MIN, BACKOFF_MAX = 16, 4096  # split kernels run serially after a stall (doubling)

_POOL_IR = r"""
@pool_state = internal global i64 0, align 64
@pool_fn = internal global ptr null, align 64
@pool_data = internal global ptr null, align 8
@pool_n = internal global i64 0, align 8
@pool_done = internal global i64 0, align 64
@pool_seq = internal global i32 0, align 64
@pool_sleepers = internal global i32 0, align 64
@pool_workers = internal global i64 0, align 64
@pool_spin = internal global i64 0, align 8
@pool_busy = internal global i32 0, align 64
@pool_backoff = internal global i64 0, align 64
@pool_penalty = internal global i64 BACKOFF_MIN, align 8

declare i64 @axle_syscall(i64, ptr, i64, i64, ptr)
declare void @llvm.x86.sse2.pause()
declare i64 @llvm.readcyclecounter()

define internal void @pause() {
  PAUSE
  ret void
}

; run chunks of job `gen` until none is left (or a newer job replaced it)
define internal void @claim(i64 %gen, i64 %wid) {
entry:
  br label %loop
loop:
  %s = load atomic i64, ptr @pool_state acquire, align 8
  %g = lshr i64 %s, 32
  %same = icmp eq i64 %g, %gen
  br i1 %same, label %check, label %out
check:
  %i = and i64 %s, 4294967295
  %n = load atomic i64, ptr @pool_n monotonic, align 8
  %more = icmp ult i64 %i, %n
  br i1 %more, label %try, label %out
try:
  %s1 = add i64 %s, 1
  %r = cmpxchg ptr @pool_state, i64 %s, i64 %s1 acq_rel acquire
  %ok = extractvalue { i64, i1 } %r, 1
  br i1 %ok, label %run, label %loop
run:
  %fn = load atomic ptr, ptr @pool_fn monotonic, align 8
  %data = load atomic ptr, ptr @pool_data monotonic, align 8
  call void %fn(ptr %data, i64 %i, i64 %n, i64 %wid)
  %old = atomicrmw add ptr @pool_done, i64 1 release
  br label %loop
out:
  ret void
}

; one job at a time: a caller that finds the pool busy (another thread's program is
; running a split kernel) runs its chunks itself
define void @axle_pool_run(ptr %fn, ptr %data, i64 %n) {
entry:
  %w = load atomic i64, ptr @pool_workers monotonic, align 8
  %solo = icmp eq i64 %w, 0
  br i1 %solo, label %serial, label %lock
lock:
  %l = cmpxchg ptr @pool_busy, i32 0, i32 1 acquire monotonic
  %mine = extractvalue { i32, i1 } %l, 1
  br i1 %mine, label %backoff, label %serial
backoff:
  %bo = load i64, ptr @pool_backoff, align 8
  %calm = icmp eq i64 %bo, 0
  br i1 %calm, label %publish, label %skip
skip:
  %bo1 = sub i64 %bo, 1
  store i64 %bo1, ptr @pool_backoff, align 8
  store atomic i32 0, ptr @pool_busy release, align 4
  br label %serial
serial:
  %c = phi i64 [ 0, %entry ], [ 0, %lock ], [ 0, %skip ], [ %c1, %serial.body ]
  %more = icmp ult i64 %c, %n
  br i1 %more, label %serial.body, label %exit
serial.body:
  call void %fn(ptr %data, i64 %c, i64 %n, i64 0)
  %c1 = add i64 %c, 1
  br label %serial
publish:
  %s = load atomic i64, ptr @pool_state monotonic, align 8
  %g = lshr i64 %s, 32
  %g1 = add i64 %g, 1
  %gen = and i64 %g1, 4294967295
  store atomic ptr %fn, ptr @pool_fn monotonic, align 8
  store atomic ptr %data, ptr @pool_data monotonic, align 8
  store atomic i64 %n, ptr @pool_n monotonic, align 8
  store atomic i64 0, ptr @pool_done monotonic, align 8
  %ns = shl i64 %gen, 32
  store atomic i64 %ns, ptr @pool_state seq_cst, align 8
  %g32 = trunc i64 %gen to i32
  store atomic i32 %g32, ptr @pool_seq seq_cst, align 4
  %sl = load atomic i32, ptr @pool_sleepers seq_cst, align 4
  %any = icmp ne i32 %sl, 0
  br i1 %any, label %wake, label %work
wake:
  %x = call i64 @axle_syscall(i64 SYS_FUTEX, ptr @pool_seq, i64 FUTEX_WAKE, i64 2147483647, ptr null)
  br label %work
work:
  %t0 = call i64 @llvm.readcyclecounter()
  call void @claim(i64 %gen, i64 0)
  %t1 = call i64 @llvm.readcyclecounter()
  br label %wait
wait:
  %wc = phi i64 [ 0, %work ], [ %wc1, %spin ], [ 0, %yield ]
  %d = load atomic i64, ptr @pool_done acquire, align 8
  %fin = icmp uge i64 %d, %n
  br i1 %fin, label %judge, label %spin
spin:
  ; a thread that claimed a chunk is still at it: spin briefly, then give the core away
  ; (sched_yield) while waiting, so that a thread that was descheduled, or another
  ; process, gets to run instead of this one spinning
  call void @pause()
  %wc1 = add i64 %wc, 1
  %long = icmp ugt i64 %wc1, WAIT_SPIN
  br i1 %long, label %yield, label %wait
yield:
  %y = call i64 @axle_syscall(i64 SYS_YIELD, ptr null, i64 0, i64 0, ptr null)
  br label %wait
judge:
  ; waiting longer than half our own work (plus STALL_SLACK cycles) means a thread that
  ; claimed a chunk was not running: run the next jobs serially (backoff), doubling the
  ; backoff while stalls continue and shrinking it again after clean jobs
  %t2 = call i64 @llvm.readcyclecounter()
  %worked = sub i64 %t1, %t0
  %waited = sub i64 %t2, %t1
  %half = lshr i64 %worked, 1
  %limit = add i64 %half, STALL_SLACK
  %stalled = icmp ugt i64 %waited, %limit
  %pen = load i64, ptr @pool_penalty, align 8
  br i1 %stalled, label %stall, label %clean
stall:
  store i64 %pen, ptr @pool_backoff, align 8
  %pen2 = shl i64 %pen, 1
  %big = icmp ugt i64 %pen2, BACKOFF_MAX
  %pen3 = select i1 %big, i64 BACKOFF_MAX, i64 %pen2
  store i64 %pen3, ptr @pool_penalty, align 8
  br label %unlock
clean:
  %penh = lshr i64 %pen, 1
  %small = icmp ult i64 %penh, BACKOFF_MIN
  %pen4 = select i1 %small, i64 BACKOFF_MIN, i64 %penh
  store i64 %pen4, ptr @pool_penalty, align 8
  br label %unlock
unlock:
  store atomic i32 0, ptr @pool_busy release, align 4
  ret void
exit:
  ret void
}

define void @axle_pool_worker(i64 %wid) {
entry:
  %seenp = alloca i64, align 8
  %cnt = alloca i64, align 8
  %s0 = load atomic i64, ptr @pool_state acquire, align 8
  %g0 = lshr i64 %s0, 32
  store i64 %g0, ptr %seenp
  store i64 0, ptr %cnt
  br label %poll
poll:
  %s = load atomic i64, ptr @pool_state acquire, align 8
  %g = lshr i64 %s, 32
  %seen = load i64, ptr %seenp
  %new = icmp ne i64 %g, %seen
  br i1 %new, label %job, label %idle
job:
  store i64 %g, ptr %seenp
  call void @claim(i64 %g, i64 %wid)
  store i64 0, ptr %cnt
  br label %poll
idle:
  %c = load i64, ptr %cnt
  %c1 = add i64 %c, 1
  store i64 %c1, ptr %cnt
  %lim = load atomic i64, ptr @pool_spin monotonic, align 8
  %long = icmp ugt i64 %c1, %lim
  br i1 %long, label %sleep, label %relax
relax:
  call void @pause()
  br label %poll
sleep:
  %o = atomicrmw add ptr @pool_sleepers, i32 1 seq_cst
  %s2 = load atomic i64, ptr @pool_state seq_cst, align 8
  %g2 = lshr i64 %s2, 32
  %seen2 = load i64, ptr %seenp
  %new2 = icmp ne i64 %g2, %seen2
  br i1 %new2, label %awake, label %wait
wait:
  %seen32 = and i64 %seen2, 4294967295
  %r = call i64 @axle_syscall(i64 SYS_FUTEX, ptr @pool_seq, i64 FUTEX_WAIT, i64 %seen32, ptr null)
  br label %awake
awake:
  %o2 = atomicrmw sub ptr @pool_sleepers, i32 1 seq_cst
  store i64 0, ptr %cnt
  br label %poll
}

define void @axle_pool_configure(i64 %workers, i64 %spin) {
  store atomic i64 %spin, ptr @pool_spin monotonic, align 8
  store atomic i64 %workers, ptr @pool_workers seq_cst, align 8
  ret void
}
"""

_LOCK = forks.lock(rlock=True)  # unlocked again in a forked child (axle/forks.py)
_STATE: dict = {}  # "ready": bool once tried; "handle", "configure", "threads"


def thread_count() -> int:
    """Threads a split kernel may use: AXLE_NUM_THREADS, else the cores this process may
    run on, at most max_threads()."""
    from axle.flags import env as _env
    env = _env("AXLE_NUM_THREADS")
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"AXLE_NUM_THREADS: expected a positive integer, got {env!r}") from None
        if n < 1:
            raise ValueError(f"AXLE_NUM_THREADS: expected a positive integer, got {env!r}")
        return min(n, max_threads())
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, max_threads()))


PRELOADED: dict = {}  # "pool": the pool runtime's object code, given by an AOT artifact (no LLVM)


def pool_object():
    """The pool runtime's object code (None when the pool does not run here)."""
    return _STATE.get("object") if available() else None


def available() -> bool:
    """Build the pool's runtime and start its workers (once per process); False where it
    cannot run (one core, not x86-64 Linux)."""
    if "ready" in _STATE:
        return _STATE["ready"]
    with _LOCK:
        if "ready" in _STATE:
            return _STATE["ready"]
        _STATE["ready"] = False  # while building: the link below asks again and must not recurse
        try:
            _STATE["ready"] = _start()
        except (OSError, AttributeError, RuntimeError):
            _STATE["ready"] = False
        return _STATE["ready"]


def _start() -> bool:
    import platform
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    workers = thread_count() - 1
    if workers < 1:
        return False
    libc = ctypes.CDLL(None)
    EXTERNAL_SYMBOLS["axle_syscall"] = ctypes.cast(libc.syscall, ctypes.c_void_p).value
    text = (_POOL_IR.replace("PAUSE", "call void @llvm.x86.sse2.pause()")
            .replace("SYS_FUTEX", str(SYS_FUTEX)).replace("FUTEX_WAKE", str(FUTEX_WAKE_PRIVATE))
            .replace("FUTEX_WAIT", str(FUTEX_WAIT_PRIVATE)).replace("STALL_SLACK", str(STALL_SLACK))
            .replace("BACKOFF_MIN", str(BACKOFF_MIN)).replace("BACKOFF_MAX", str(BACKOFF_MAX))
            .replace("WAIT_SPIN", str(WAIT_SPIN)).replace("SYS_YIELD", str(SYS_SCHED_YIELD)))
    from axle.backends.cpu.llvm_env import compile_to_object, link_object
    obj = PRELOADED.get("pool") or compile_to_object(text, 1)[1]  # an AOT artifact carries it
    handle, addrs = link_object(obj, ["axle_pool_run", "axle_pool_worker", "axle_pool_configure"])
    _STATE["object"] = obj
    configure = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64)(addrs["axle_pool_configure"])
    worker = ctypes.CFUNCTYPE(None, ctypes.c_int64)(addrs["axle_pool_worker"])
    configure(workers, SPIN)
    threads = []
    for wid in range(1, workers + 1):  # they run native code forever, without the GIL
        t = threading.Thread(target=worker, args=(wid,), name=f"axle-pool-{wid}", daemon=True)
        t.start()
        threads.append(t)
    _STATE.update(handle=handle, configure=configure, worker=worker, threads=threads)
    EXTERNAL_SYMBOLS["axle_pool_run"] = addrs["axle_pool_run"]
    os.register_at_fork(after_in_child=_no_workers_after_fork)
    return True


def _no_workers_after_fork() -> None:
    """A fork()ed child has no worker threads: its caller runs every chunk."""
    configure = _STATE.get("configure")
    if configure is not None:
        configure(0, SPIN)


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


def split_ranges(ctx, n: int, work: int, emit, max_threads: int = 0, chunks: int = 0) -> None:
    """emit(lo, hi) emits the loops for indices [lo, hi) of a dimension of extent n. Runs
    once over [0, n) serially, or as chunks claimed by the pool's threads when `work` is
    large (`chunks` of them, default CHUNKS; never more than n).
    With `max_threads` (at least max_threads(): per-thread scratch slots), emit(lo, hi, w)
    also gets the number w < max_threads of the thread running the chunk (0 when serial):
    an index into per-thread scratch space."""
    em = ctx.em
    if n < 2 or not parallel_ok(ctx, work):
        if max_threads:
            emit(em.const_i64(0), em.const_i64(n), em.const_i64(0))
        else:
            emit(em.const_i64(0), em.const_i64(n))
        return
    n_chunks = min(n, chunks or CHUNKS)

    def body(chunk, w, frame):
        b = ctx.b
        # chunk k covers [k n / n_chunks, (k + 1) n / n_chunks): sizes differ by at most one
        lo = b.udiv(b.mul(chunk, em.const_i64(n)), em.const_i64(n_chunks))
        hi = b.udiv(b.mul(b.add(chunk, em.const_i64(1)), em.const_i64(n)), em.const_i64(n_chunks))
        if max_threads:
            emit(lo, hi, b.select(b.icmp_unsigned("<", w, em.const_i64(max_threads)), w, em.const_i64(0)))
        else:
            emit(lo, hi)
    _pool_call(ctx, n_chunks, body)


def parallel_ok(ctx, work: int) -> bool:
    """Whether a loop of `work` would be shared across the pool's threads here."""
    return ctx.in_kernel_function and work >= PARALLEL_MIN_WORK and enabled()


def split_parts(ctx, parts: int, work: int, frame_bytes: int, emit_part):
    """Run emit_part(k, frame) for the parts k = 0 .. parts - 1: as chunks claimed by the
    pool's threads when `work` is large enough here, else one after another. `frame`
    points to frame_bytes (64-byte aligned) on the calling kernel's stack, shared by the
    parts: per-part partial results that the caller combines after this returns (the
    frame pointer is returned for that). What a part computes must not depend on the
    thread running it, so the results are the same serial or split."""
    if parallel_ok(ctx, work) and parts > 1:
        return _pool_call(ctx, parts, lambda chunk, w, frame: emit_part(chunk, frame), frame_bytes)
    em = ctx.em
    frame = _frame(ctx, frame_bytes)
    em.for_range_dynamic(em.const_i64(0), em.const_i64(parts), lambda k: emit_part(k, frame))
    return frame


def _frame(ctx, frame_bytes: int):
    slot = ctx.em.alloca(ir.ArrayType(I8, frame_bytes))
    slot.align = 64
    return ctx.b.bitcast(slot, I8.as_pointer())


def _pool_call(ctx, n_chunks: int, body, frame_bytes: int = 0):
    """Outline body(chunk, thread number, frame) into a chunk function and call the pool on
    it. The chunk function's first argument is the buffer table, or with a frame a pointer
    to {table, frame} (the frame lives on this kernel's stack)."""
    em = ctx.em
    p8 = I8.as_pointer()
    outer = ctx.b
    fn = ir.Function(ctx.mod, ir.FunctionType(ir.VoidType(), [p8.as_pointer(), I64, I64, I64]),
                     ctx.mod.get_unique_name(outer.function.name + ".par"))
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    with ctx.function_scope(fn, call=False):
        frame = None
        if frame_bytes:
            pb = ctx._prologue
            ctx.table = pb.bitcast(pb.load(fn.args[0]), p8.as_pointer())
            frame = pb.load(pb.gep(fn.args[0], [em.const_i64(1)], inbounds=True))
        # chunk number, thread number (the pool numbers its threads 0 (the caller) ..
        # thread_count() - 1), frame
        body(fn.args[1], fn.args[3], frame)
    run = ctx.mod.globals.get("axle_pool_run")
    if run is None:  # external: bound at link time
        run = ir.Function(ctx.mod, ir.FunctionType(ir.VoidType(), [p8, p8, I64]), "axle_pool_run")
    b = ctx.b
    arg = b.bitcast(ctx.table, p8)
    frame = None
    if frame_bytes:
        frame = _frame(ctx, frame_bytes)
        pair = em.alloca(ir.ArrayType(p8, 2))
        b.store(arg, b.gep(pair, [em.const_i64(0), em.const_i64(0)], inbounds=True))
        b.store(frame, b.gep(pair, [em.const_i64(0), em.const_i64(1)], inbounds=True))
        arg = b.bitcast(pair, p8)
    b.call(run, [b.bitcast(fn, p8), arg, em.const_i64(n_chunks)])
    return frame

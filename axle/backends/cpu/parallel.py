"""Both cores for large kernels: loops split into chunks that threads of axle's own pool claim.

A kernel whose loop nest is large enough (PARALLEL_MIN_WORK element-operations) has one
dimension cut into chunks, and its loop over a chunk becomes a function
`body(table, chunk, n_chunks, worker)`. The kernel calls `axle_pool_run(body, table,
n_chunks)`: the calling thread publishes the job and, like every worker, claims chunks
one at a time (a compare-and-swap on one word holding the job's generation and how many
chunks were taken from each end: the caller takes them from the front, workers from the
back, so that where both run each keeps about the same rows from kernel to kernel) until
none are left, then waits only for the chunks other threads have claimed.

Why not OpenMP (libgomp, used before): its fork/join waits for every thread of the team.
On a virtual machine whose second core is often taken away by the host (the development
machine shows 20-35% steal time under load), a static split waits milliseconds for a
thread that has not even started; a sleeping thread takes ~0.4 ms to wake. Here a thread
that arrives late finds no chunk left and costs nothing, so a split kernel is never much
slower than the serial one, and up to the thread count faster.

Workers spin (with `pause`) for about 0.1 ms after their last chunk, then sleep on
a futex that the next job wakes.

A busy machine (another process on one of two cores: three runnable threads on two
cores) takes cores away at any moment. Where that happens decides what it costs:
* a worker that wakes late, or is descheduled between chunks, costs nothing: the
  caller claims the chunks it does not take;
* a worker descheduled while it holds a chunk makes the caller wait for that chunk.
  The caller spins for two of its own chunk times (at most ~0.1 ms), which covers a
  running worker finishing its chunk, then sleeps on a futex that the thread
  finishing the job's last chunk wakes. A sleeping caller frees its core: the scheduler
  moves the descheduled worker (or the other process) onto it, where a spinning or
  sched_yield-ing caller kept it busy and took time from the other process.
A job *stalls* when it took longer than the caller alone would have (its own time per
chunk times the chunk count): waiting that still beat running alone is a gain. After a
stall, split kernels run serially for the time the stall lost times a factor (FACTOR_MIN,
doubling while stalls continue up to FACTOR_MAX, halving after clean jobs; at most
BACKOFF_MAX_CYCLES): where the host keeps a core away, kernels run about as fast as
serial code, and where a stall was a passing event, the next kernels use both cores
again. (The previous scheme counted kernels: 16 to 4096 serial kernels after a caller
waited more than half its own work, which under one busy process kept most large
kernels serial, a 2x slowdown, whatever share of the second core was left.)
Counters (stats(), `axle bench --pool-stats`) say how often each of these happened.

Each output element is computed by one chunk, in the
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
MAX_CHUNKS = 65535  # the pool counts claimed chunks in 16 bits
SPIN = 2000  # pause instructions a worker spins through before sleeping (~0.1 ms): longer spins slowed the serial GEMMs that follow a split kernel (the two cores of the development VM behave like hyperthreads of one)
SYS_FUTEX, FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 202, 128, 129  # x86-64 Linux
WAIT_SLACK = 40000  # time-stamp counter cycles (~15 us): how much longer than two of its own chunks the caller spins waiting for a claimed chunk before it sleeps (waking a sleeping thread on a VM takes tens of us), and the margin of the stall test
FACTOR_MIN, FACTOR_MAX = 2, 256  # after a stall, kernels run serially for the time it lost times this factor (doubling while stalls continue)
BACKOFF_MAX_CYCLES = 1 << 28  # the longest serial stretch after a stall (~0.1 s)
WAIT_SPIN_MAX = 200000  # cycles (~80 us): the caller never spins longer than this (plus WAIT_SLACK) waiting for a chunk
WAIT_TIMEOUT_NS = 1_000_000  # a sleeping caller looks again after this at the latest
STAT_NAMES = ("jobs", "serial_backoff", "serial_busy", "stalls", "work_cycles", "wait_cycles",
              "caller_chunks", "caller_sleeps")


def stats() -> dict:
    """The pool's counters since the process started (zeros where the pool does not run)."""
    if not available() or not _STATE.get("stats"):
        return dict.fromkeys(STAT_NAMES, 0)
    arr = (ctypes.c_int64 * len(STAT_NAMES)).from_address(_STATE["stats"])
    return dict(zip(STAT_NAMES, list(arr)))

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
@pool_until = internal global i64 0, align 64
@pool_factor = internal global i64 FACTOR_MIN, align 8
@pool_fin = internal global i32 0, align 64
@pool_waiter = internal global i32 0, align 64
@pool_stat = internal global [8 x i64] zeroinitializer, align 64
@pool_timeout = internal constant [2 x i64] [i64 0, i64 WAIT_TIMEOUT_NS], align 8

declare i64 @axle_syscall(i64, ptr, i64, i64, ptr)
declare void @llvm.x86.sse2.pause()
declare i64 @llvm.readcyclecounter()

; counters: 0 jobs split, 1 jobs serial by backoff, 2 jobs serial (pool busy), 3 stalls,
; 4 caller's own work (cycles), 5 caller's wait (cycles), 6 chunks run by the caller, 7 caller sleeps
define internal void @stat(i64 %k, i64 %v) {
  %p = getelementptr [8 x i64], ptr @pool_stat, i64 0, i64 %k
  %o = atomicrmw add ptr %p, i64 %v monotonic
  ret void
}

define ptr @axle_pool_stats() {
  ret ptr @pool_stat
}

define internal void @pause() {
  PAUSE
  ret void
}

; run chunks of job `gen` until none is left (or a newer job replaced it). The caller
; (wid 0) takes chunks from the front, workers from the back: where every thread runs,
; each takes about the same rows of consecutive kernels, so data a kernel wrote stays in
; the cache of the core that reads it next (200 steps of a 256 x 256 FDTD loop:
; 10.1-10.9 -> 8.6-8.9 ms on two threads against one shared counter)
define internal i64 @claim(i64 %gen, i64 %wid) {
entry:
  br label %loop
loop:
  %ran = phi i64 [ 0, %entry ], [ %ran, %retry ], [ %ran1, %ran.next ]
  %s = load atomic i64, ptr @pool_state acquire, align 8
  %g = lshr i64 %s, 32
  %same = icmp eq i64 %g, %gen
  br i1 %same, label %check, label %out
check:
  ; the caller claims chunks from the front (low 16 bits: how many), workers from the
  ; back (the next 16 bits)
  %f = and i64 %s, 65535
  %bk.s = lshr i64 %s, 16
  %bk = and i64 %bk.s, 65535
  %n = load atomic i64, ptr @pool_n monotonic, align 8
  %claimed = add i64 %f, %bk
  %more = icmp ult i64 %claimed, %n
  br i1 %more, label %try, label %out
try:
  %front = icmp eq i64 %wid, 0
  %step = select i1 %front, i64 1, i64 65536
  %s1 = add i64 %s, %step
  %last.i = sub i64 %n, 1
  %back.i = sub i64 %last.i, %bk
  %i = select i1 %front, i64 %f, i64 %back.i
  %r = cmpxchg ptr @pool_state, i64 %s, i64 %s1 acq_rel acquire
  %ok = extractvalue { i64, i1 } %r, 1
  br i1 %ok, label %run, label %retry
retry:
  br label %loop
run:
  %fn = load atomic ptr, ptr @pool_fn monotonic, align 8
  %data = load atomic ptr, ptr @pool_data monotonic, align 8
  call void %fn(ptr %data, i64 %i, i64 %n, i64 %wid)
  %old = atomicrmw add ptr @pool_done, i64 1 seq_cst
  %old1 = add i64 %old, 1
  %last = icmp eq i64 %old1, %n
  br i1 %last, label %notify, label %ran.next
notify:
  ; the last chunk of the job: wake the caller if it sleeps waiting for it
  %f0 = atomicrmw add ptr @pool_fin, i32 1 seq_cst
  %wt = load atomic i32, ptr @pool_waiter seq_cst, align 4
  %sleeping = icmp ne i32 %wt, 0
  br i1 %sleeping, label %wakecaller, label %ran.next
wakecaller:
  %wk = call i64 @axle_syscall(i64 SYS_FUTEX, ptr @pool_fin, i64 FUTEX_WAKE, i64 1, ptr null)
  br label %ran.next
ran.next:
  %ran1 = add i64 %ran, 1
  br label %loop
out:
  ret i64 %ran
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
  br i1 %mine, label %backoff, label %taken
taken:
  call void @stat(i64 2, i64 1)
  br label %serial
backoff:
  ; after a stall, split kernels run serially until the time-stamp counter passes
  ; @pool_until
  %now = call i64 @llvm.readcyclecounter()
  %until = load i64, ptr @pool_until, align 8
  %calm = icmp uge i64 %now, %until
  br i1 %calm, label %publish, label %skip
skip:
  store atomic i32 0, ptr @pool_busy release, align 4
  call void @stat(i64 1, i64 1)
  br label %serial
serial:
  %c = phi i64 [ 0, %entry ], [ 0, %taken ], [ 0, %skip ], [ %c1, %serial.body ]
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
  %mine.n = call i64 @claim(i64 %gen, i64 0)
  %t1 = call i64 @llvm.readcyclecounter()
  %worked = sub i64 %t1, %t0
  %mine.nz = icmp eq i64 %mine.n, 0
  %mine1 = select i1 %mine.nz, i64 1, i64 %mine.n
  %per.chunk = udiv i64 %worked, %mine1
  %per.chunk2 = shl i64 %per.chunk, 1
  %spin.big = icmp ugt i64 %per.chunk2, WAIT_SPIN_MAX
  %spin.ch = select i1 %spin.big, i64 WAIT_SPIN_MAX, i64 %per.chunk2
  %spin.lim = add i64 %spin.ch, WAIT_SLACK
  br label %wait
wait:
  %d = load atomic i64, ptr @pool_done acquire, align 8
  %fin = icmp uge i64 %d, %n
  br i1 %fin, label %judge, label %spin
spin:
  ; a thread that runs finishes the chunk it holds within about one of our chunk times:
  ; spin twice that long (chunks differ), at most WAIT_SPIN_MAX cycles; longer means it
  ; was descheduled mid-chunk, so sleep instead
  call void @pause()
  %tn = call i64 @llvm.readcyclecounter()
  %el = sub i64 %tn, %t1
  %late = icmp ugt i64 %el, %spin.lim
  br i1 %late, label %sleep, label %wait
sleep:
  ; until the thread that finishes the last chunk wakes us (or WAIT_TIMEOUT_NS): our core
  ; goes idle, the scheduler can move the descheduled thread onto it, and we take no
  ; time from other processes
  %fv = load atomic i32, ptr @pool_fin seq_cst, align 4
  store atomic i32 1, ptr @pool_waiter seq_cst, align 4
  %d2 = load atomic i64, ptr @pool_done seq_cst, align 8
  %fin2 = icmp uge i64 %d2, %n
  br i1 %fin2, label %woke, label %dosleep
dosleep:
  call void @stat(i64 7, i64 1)
  %fv64 = zext i32 %fv to i64
  %zz = call i64 @axle_syscall(i64 SYS_FUTEX, ptr @pool_fin, i64 FUTEX_WAIT, i64 %fv64, ptr @pool_timeout)
  br label %woke
woke:
  store atomic i32 0, ptr @pool_waiter seq_cst, align 4
  br label %wait
judge:
  ; a stall: the job took longer than we alone would have taken (our time per chunk
  ; times n). A thread that started late or was descheduled between chunks costs
  ; nothing (we took its chunks), and waiting that still beat running alone is a gain.
  ; After a stall, split kernels run serially for the time the stall lost times
  ; @pool_factor, which doubles while stalls continue and halves after clean jobs
  %t2 = call i64 @llvm.readcyclecounter()
  %waited = sub i64 %t2, %t1
  call void @stat(i64 0, i64 1)
  call void @stat(i64 4, i64 %worked)
  call void @stat(i64 5, i64 %waited)
  call void @stat(i64 6, i64 %mine.n)
  %took = sub i64 %t2, %t0
  %alone = mul i64 %per.chunk, %n
  %alone1 = add i64 %alone, WAIT_SLACK
  %slow = icmp ugt i64 %took, %alone1
  ; (a caller that ran no chunk was itself away while the others ran them: no stall)
  %stalled = select i1 %mine.nz, i1 false, i1 %slow
  %f = load i64, ptr @pool_factor, align 8
  br i1 %stalled, label %stall, label %clean
stall:
  call void @stat(i64 3, i64 1)
  %lost = sub i64 %took, %alone
  %win = mul i64 %lost, %f
  %winbig = icmp ugt i64 %win, BACKOFF_MAX_CYCLES
  %win1 = select i1 %winbig, i64 BACKOFF_MAX_CYCLES, i64 %win
  %until1 = add i64 %t2, %win1
  store i64 %until1, ptr @pool_until, align 8
  %f2 = shl i64 %f, 1
  %fbig = icmp ugt i64 %f2, FACTOR_MAX
  %f3 = select i1 %fbig, i64 FACTOR_MAX, i64 %f2
  store i64 %f3, ptr @pool_factor, align 8
  br label %unlock
clean:
  %fh = lshr i64 %f, 1
  %fsmall = icmp ult i64 %fh, FACTOR_MIN
  %f4 = select i1 %fsmall, i64 FACTOR_MIN, i64 %fh
  store i64 %f4, ptr @pool_factor, align 8
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
  %wn = call i64 @claim(i64 %g, i64 %wid)
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
            .replace("FUTEX_WAIT", str(FUTEX_WAIT_PRIVATE)).replace("WAIT_SLACK", str(WAIT_SLACK))
            .replace("WAIT_SPIN_MAX", str(WAIT_SPIN_MAX))
            .replace("FACTOR_MIN", str(FACTOR_MIN)).replace("FACTOR_MAX", str(FACTOR_MAX))
            .replace("BACKOFF_MAX_CYCLES", str(BACKOFF_MAX_CYCLES))
            .replace("WAIT_TIMEOUT_NS", str(WAIT_TIMEOUT_NS)))
    from axle.backends.cpu.llvm_env import compile_to_object, link_object
    obj = PRELOADED.get("pool") or compile_to_object(text, 1)[1]  # an AOT artifact carries it
    entries = ["axle_pool_run", "axle_pool_worker", "axle_pool_configure"]
    try:
        handle, addrs = link_object(obj, entries + ["axle_pool_stats"])
        _STATE["stats"] = ctypes.CFUNCTYPE(ctypes.c_void_p)(addrs["axle_pool_stats"])()
    except RuntimeError:  # the pool of an artifact saved by an earlier axle: no counters
        handle, addrs = link_object(obj, entries)
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


def split_loop(ctx, shape: list, dim: int, body, work_per_element: int = 1, unroll_inner: int = 0) -> None:
    """Emit `for idx in ndindex(shape): body(idx)`, with dimension `dim` shared across
    threads when the nest is big enough (and we are in a top-level kernel function).
    unroll_inner: see Emitter.loop_nest_range."""
    total = 1
    for d in shape:
        total *= d
    if any(d == 0 for d in shape):
        return
    if not shape:
        ctx.em.loop_nest([], body)
        return
    split_ranges(ctx, shape[dim], total * work_per_element,
                 lambda lo, hi: ctx.em.loop_nest_range(list(shape), dim, lo, hi, body, unroll_inner=unroll_inner))


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
    n_chunks = min(n, chunks or CHUNKS, MAX_CHUNKS)

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
    if parallel_ok(ctx, work) and 1 < parts <= MAX_CHUNKS:
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

"""Native per-kernel timing for the CPU backend: `axle.compile(m, backend="cpu", profile=True)`.

Code generation (compile_function(..., profile=True)) brackets every top-level kernel (the
kernels of the entry function; a while/if/case counts as one, its body included) with two
reads of CLOCK_MONOTONIC through libc's `clock_gettime` (resolved by the JIT in this
process; the vDSO makes a read about 20 ns) and stores the two nanosecond times in a
region after the program's temporaries in the arena: times[2k] before kernel k, times[2k+1]
after it. The region's offset is an internal constant of the module. Without `profile` no
clock is read and the code is exactly the unprofiled code.

The arena is per thread and the region is read back right after each call, so profiled
executables may be called from several threads. Profiled programs are not put in the
disk cache (they are kept in memory like any other program): their metadata (the kernels'
ops, fusion, bytes and flops) is what the profile is for.

`ProfiledExecutable` (what `compile(..., profile=True)` returns) records every call: its
start and end and the start and end of each top-level kernel (`calls`, `kernel_durations`),
and, inside an `axle.profiler.trace`, writes one event per call and per kernel.
"""
from __future__ import annotations

import collections
import ctypes
from dataclasses import dataclass
from typing import Optional

import numpy as np

from axle import profiler as _profiler
from axle.backends.cpu.executable import CpuExecutable
from axle.backends.cpu.kernel_timer import TIMESPEC, KernelTimer  # noqa: F401  (emitted by the compiler)
from axle.backends.cpu.program import KernelInfo, Program

def top_level_kernels(program: Program) -> list:
    """The kernels the profile times, in program order (one pair of times each)."""
    return [k for k in program.kernels if k.depth == 0]


def short_name(op_name: str) -> str:
    return op_name.split(".", 1)[1] if op_name.startswith("stablehlo.") else op_name


def kernel_label(k: KernelInfo, position: Optional[int] = None) -> str:
    """A short, stable name: `k<position> <op>` (position among the top-level kernels)."""
    return f"k{k.index if position is None else position} {short_name(k.name)}"


def location(k: KernelInfo) -> str:
    """Where the kernel's op is in the source (`file:line:col`), or '' when unknown."""
    where = k.where()
    prefix = f"'{k.name}' at "
    return where[len(prefix):] if where.startswith(prefix) else ""


def fused_summary(k: KernelInfo) -> str:
    """`multiply x5, add x3, tanh` for the ops fused into a kernel, most frequent first."""
    counts = collections.Counter(short_name(o.name) for o in k.fused)
    return ", ".join(n if c == 1 else f"{n} x{c}" for n, c in counts.most_common())


def kernel_args(k: KernelInfo, position: int) -> dict:
    """What a trace event says about a kernel."""
    fused = [short_name(o.name) for o in k.fused]
    return {"kernel": position, "op": k.name, "location": location(k), "shape": k.shape,
            "fused_ops": len(fused), "fused": fused, "bytes": int(k.bytes_moved()), "flops": int(k.flops()),
            "library": k.library}


@dataclass
class CallProfile:
    """One call of a profiled executable: CLOCK_MONOTONIC ns times of the call and of each
    top-level kernel (`starts[k]`, `ends[k]` for kernels[k])."""
    start_ns: int
    end_ns: int
    program: Program
    starts: np.ndarray
    ends: np.ndarray

    @property
    def kernels(self) -> list:
        return top_level_kernels(self.program)

    @property
    def durations_ns(self) -> np.ndarray:
        return self.ends - self.starts


class ProfiledExecutable(CpuExecutable):
    """A CPU executable whose native code times its top-level kernels on every call.

    `calls` keeps the last `max_calls` CallProfiles; `kernel_durations()` gives them as an
    array (calls x kernels, seconds); `kernels` lists the timed kernels (KernelInfo)."""

    max_calls = 100_000

    def __init__(self, module, entry: str = "main", pipeline=None, **options):
        options["profile"] = True
        self.calls: collections.deque = collections.deque(maxlen=self.max_calls)
        self._timed: list = []  # (program, its top-level kernels' labels), one per compiled program
        super().__init__(module, entry, pipeline, **options)

    @property
    def kernels(self) -> list:
        return top_level_kernels(self.program)

    def reset_profile(self) -> None:
        self.calls.clear()

    def kernel_durations(self, program: Optional[Program] = None) -> np.ndarray:
        """Seconds per call (rows) and top-level kernel (columns) of `program` (default: the
        first compiled program; a dynamic executable has one per argument shape)."""
        program = program or self.program
        rows = [c.durations_ns for c in self.calls if c.program is program]
        n = len(top_level_kernels(program))
        return (np.stack(rows) if rows else np.zeros((0, n), np.int64)) * 1e-9

    def _ran(self, args):
        if self._static is not None:
            return self._static
        return self._programs[tuple(np.shape(a) for a in args)]

    def execute(self, args, _traced: bool = False, donate=()) -> list:
        t0 = _profiler.now_ns()
        out = CpuExecutable.execute(self, args, True, donate)
        t1 = _profiler.now_ns()
        native = self._ran(args)
        program = native.program
        n = len(top_level_kernels(program))
        times = np.frombuffer(ctypes.string_at(native._local.arena_ptr + program.profile_offset, 16 * n),
                              np.int64)
        call = CallProfile(t0, t1, program, times[0::2], times[1::2])
        self.calls.append(call)
        prof = _profiler.ACTIVE
        if prof is not None and not _traced:
            record_call(prof, self, call, args)
        return out


def record_call(prof, ex: ProfiledExecutable, call: CallProfile, args) -> None:
    """Write a call and its kernels into a trace (kernel events nest inside the call's)."""
    prof.complete(f"execute @{ex.entry}", "execute", call.start_ns, call.end_ns,
                  dict(_profiler.call_args(args), profiled=True))
    meta = next((m for p, m in ex._timed if p is call.program), None)
    if meta is None:
        meta = [(kernel_label(k, i), kernel_args(k, i)) for i, k in enumerate(call.kernels)]
        ex._timed.append((call.program, meta))
    for (name, kargs), s, e in zip(meta, call.starts.tolist(), call.ends.tolist()):
        prof.complete(name, "kernel", s, e, kargs)

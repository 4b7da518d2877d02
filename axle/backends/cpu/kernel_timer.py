"""The clock reads code generation emits around each top-level kernel when profiling
(profile=True; profiling.py reads the times back and records them)."""
from __future__ import annotations

import ctypes

from llvmlite import ir

from axle import profiler as _profiler
from axle.codegen.scalar import I32, I64, Unsupported
from axle.codegen.plans.arena import ALIGN

TIMESPEC = ir.LiteralStructType([I64, I64])  # struct timespec on 64-bit Unix: {time_t tv_sec; long tv_nsec}


class KernelTimer:
    """Emits the clock reads around top-level kernels (Context.timer while profiling)."""

    def __init__(self, ctx):
        if _profiler.CLOCK_ID is None or ctypes.sizeof(ctypes.c_long) != 8:
            raise Unsupported("profile=True needs clock_gettime and a 64-bit timespec (64-bit Unix)")
        self.ctx = ctx
        self.count = 0
        b, mod = ctx.b, ctx.mod
        self.ts = b.alloca(TIMESPEC, name="profile_ts")
        self.offset = ir.GlobalVariable(mod, I64, "axle_profile_offset")  # set by finish()
        self.offset.global_constant = True
        self.offset.linkage = "internal"
        base = b.gep(ctx.arena, [b.load(self.offset)], inbounds=True)
        self.base = b.bitcast(base, I64.as_pointer(), name="profile_times")
        self.clock = ir.Function(mod, ir.FunctionType(I32, [I32, TIMESPEC.as_pointer()]), "clock_gettime")

    def _stamp(self, slot: int) -> None:
        b = self.ctx.b
        b.call(self.clock, [ir.Constant(I32, _profiler.CLOCK_ID), self.ts])
        zero = ir.Constant(I32, 0)
        sec = b.load(b.gep(self.ts, [zero, zero], inbounds=True))
        nsec = b.load(b.gep(self.ts, [zero, ir.Constant(I32, 1)], inbounds=True))
        t = b.add(b.mul(sec, ir.Constant(I64, 1_000_000_000)), nsec)
        b.store(t, b.gep(self.base, [ir.Constant(I64, slot)], inbounds=True))

    def start(self) -> None:
        self._stamp(2 * self.count)

    def stop(self) -> None:
        self._stamp(2 * self.count + 1)
        self.count += 1

    def finish(self) -> int:
        """Reserve the times after the temporaries; returns their arena offset."""
        ctx = self.ctx
        off = (ctx.offset + ALIGN - 1) // ALIGN * ALIGN
        ctx.offset = off + max(16 * self.count, 8)
        self.offset.initializer = ir.Constant(I64, off)
        ctx.cacheable = False  # keep profiled programs (and their kernel metadata) out of the disk cache
        return off

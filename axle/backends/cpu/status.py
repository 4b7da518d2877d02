"""The status word: errors from host callbacks stop compiled code at once.

Native code calls back into Python for custom calls, collectives, FFTs, side effects and
failed run-time checks. A callback cannot unwind through native frames, so it records its
exception (kernels_collective.record_error) and sets the status word of the call; the
compiled code then stops:

- every while loop whose body (or condition) calls back checks the word at the end of each
  iteration and leaves the loop when it is set (a custom call that raised inside a loop
  used to leave the loop running forever on an uninitialized result);
- the entry checks it after each top-level kernel of a program with callbacks and returns;
- the executable raises the recorded exception in the caller's thread (check_errors).

The word is 8 bytes at the end of the arena (per thread, like every temporary), at an
offset fixed when code generation ends (a global constant, as profiling.py does for its
timestamps). The entry clears it first; the executable tells the callbacks where it is.
Programs with callbacks are never cached on disk, so the offset needs no cache header.
"""
from __future__ import annotations

from llvmlite import ir

from axle.codegen.scalar import I64

_GLOBAL = "axle_status_offset"


def _word(ctx):
    """An i64* to the status word, in the function being emitted."""
    g = ctx.mod.globals.get(_GLOBAL)
    if g is None:
        g = ir.GlobalVariable(ctx.mod, I64, _GLOBAL)
        g.global_constant = True
        g.linkage = "internal"
    b = ctx.b
    return b.bitcast(b.gep(ctx.arena, [b.load(g)], inbounds=True), I64.as_pointer())


def failed(ctx):
    """An i1: a callback of this call has raised."""
    return ctx.b.icmp_unsigned("!=", ctx.b.load(_word(ctx)), ir.Constant(I64, 0))


def clear(ctx) -> None:
    """At the start of the entry: no error yet."""
    ctx.b.store(ir.Constant(I64, 0), _word(ctx))


def return_if_failed(ctx) -> None:
    """In the entry, after a top-level kernel: stop when a callback raised."""
    with ctx.b.if_then(failed(ctx), likely=False):
        ctx.b.ret_void()


def finish(ctx):
    """Place the word after every temporary; returns its arena offset (None: not used)."""
    g = ctx.mod.globals.get(_GLOBAL)
    if g is None:
        return None
    offset = (ctx.offset + 63) // 64 * 64
    g.initializer = ir.Constant(I64, offset)
    ctx.offset = offset + 64
    return offset

"""Cumulative reductions as prefix scans: reduce_window with a window as long as its axis.

JAX writes cumsum, cumprod, cummax, cummin and cumlogsumexp as reduce_window whose window
covers the whole axis d (length n), stride 1, no dilation, padding (n - 1, 0) on d (or
(0, n - 1) with reverse=True) and none elsewhere. Computed window by window that is
O(n^2) per row; here it is one pass:

* forward (padding (n - 1, 0)): out[i] = body(out[i - 1], x[i]), out[-1] = init. The
  window kernel skips padding positions and combines the window's elements in order
  from init, so for output i it computes body(...body(body(init, x[0]), x[1])..., x[i]):
  exactly this recurrence, bit for bit, whatever the body.
* reverse (padding (0, n - 1)): out[i] = body(x[i], out[i + 1]), out[n] = init. That is
  the elements x[i], ..., x[n - 1] then init, in order, combined right to left: one of
  the schedules the spec allows for a window reduction (the order of the values is
  kept, their grouping is the implementation's).

bf16 scans are the exception to "bit for bit": their partial results stay in f32 (a row of
them per lane) and only what is stored is rounded to bf16, the excess precision XLA's CPU
backend also takes; a bf16 cumsum of 4096 values rounded at every step ended tens of ulps
from the exact sums.

The scan runs along d with the dimensions after d innermost (contiguous: a cumprod over
rows vectorizes), the dimensions before d shared across the pool's threads (or, when d
leads, the first dimension after it).
"""
from __future__ import annotations

from typing import Optional

from axle.codegen import scalar as S
from axle.codegen.emitter import _ty
from axle.ir.core import Operation


CARRY_MAX = 16384  # most f32 partial results a bf16 scan keeps per lane (64 KiB of stack)


def scan_plan(op: Operation) -> Optional[tuple]:
    """(axis, reverse) when reduce_window `op` is a cumulative reduction, else None."""
    n_res = len(op.results)
    inputs = op.operands[:n_res]
    it = _ty(inputs[0])
    rank = it.rank
    if rank == 0 or any(tuple(_ty(r).shape) != tuple(it.shape) for r in op.results):
        return None
    if any(tuple(_ty(v).shape) != tuple(it.shape) for v in inputs):
        return None
    wdims = list(op.attr("window_dimensions"))
    ones = [1] * rank
    if list(op.attr("window_strides") or ones) != ones or list(op.attr("base_dilations") or ones) != ones \
            or list(op.attr("window_dilations") or ones) != ones:
        return None
    pad = op.attr("padding")
    pads = [(int(pad[d][0]), int(pad[d][1])) for d in range(rank)] if pad is not None else [(0, 0)] * rank
    axes = [d for d in range(rank) if wdims[d] != 1]
    if len(axes) != 1:
        return None
    d = axes[0]
    n = it.shape[d]
    if wdims[d] != n or n < 2 or any(pads[k] != (0, 0) for k in range(rank) if k != d):
        return None
    if pads[d] == (n - 1, 0):
        return d, False
    if pads[d] == (0, n - 1):
        return d, True
    return None


def emit_scan(ctx, op: Operation, axis: int, reverse: bool) -> None:
    from axle.backends.cpu.parallel import split_ranges
    em = ctx.em
    n_res = len(op.results)
    inputs, inits = op.operands[:n_res], op.operands[n_res:]
    shape = list(_ty(inputs[0]).shape)
    n = shape[axis]
    outer, inner = shape[:axis], shape[axis + 1:]
    ets = [_ty(r).element_type for r in op.results]
    region = op.regions[0]
    c64 = em.const_i64
    if 0 in shape:
        return

    inner_count = 1
    for s_ in inner:
        inner_count *= s_
    # bf16 scans carry f32 partial results (in a row of f32 per lane) and round only what
    # they store, as XLA's CPU backend does (a bf16 cumsum of 4096 rounded at every step
    # was 10x further from the exact sums than XLA's)
    wide = all(et.name == "bf16" for et in ets) and inner_count * n_res <= CARRY_MAX

    def step(pre, i, post, prev_i, carry=None):
        """out[pre, i, post] from out[pre, prev_i, post] (None: from the init values);
        carry: the f32 row of partial results (wide), indexed by post."""
        b = em.b
        full = list(pre) + [i] + list(post)
        xs = [em.value_at(v, full) for v in inputs]
        slot = None
        if carry is not None:
            k = em.linear(list(post), inner) if inner else c64(0)
            slot = [b.gep(carry, [b.add(b.mul(c64(j), c64(inner_count)), k)]) for j in range(n_res)]
        if prev_i is None:
            accs = [em.value_at(v, []) for v in inits]
        elif slot is not None:
            accs = [b.load(p) for p in slot]
        else:
            at = em.linear(list(pre) + [prev_i] + list(post), shape)
            accs = [S.load(b, em.element_ptr(ctx.buffer(r), et, at), et) for r, et in zip(op.results, ets)]
        new = em.region_scalars(region, xs + accs if reverse else accs + xs, bf16_in_f32=slot is not None)
        at = em.linear(full, shape)
        for j, (r, et, x) in enumerate(zip(op.results, ets, new)):
            if slot is not None:
                b.store(x, slot[j])
                x = S.finish(b, x, et)  # rounded to bf16 where it is stored
            S.store(em.b, x, em.element_ptr(ctx.buffer(r), et, at), et)

    def lane(pre, post_lo=None, post_hi=None):
        """The whole scan of the rows with leading index `pre` (and, when given, only
        inner-dimension-0 indices [post_lo, post_hi))."""
        def inner_loop(body):
            if post_lo is None:
                em.loop_nest(inner, body)
            else:
                em.loop_nest_range(inner, 0, post_lo, post_hi, body)
        carry = None
        if wide:  # this lane's partial results, on the stack of the thread running it
            from llvmlite import ir as _ir

            from axle.codegen.emitter import entry_alloca
            carry = em.b.bitcast(entry_alloca(em.b, _ir.ArrayType(_ir.FloatType(), inner_count * n_res)),
                                 _ir.FloatType().as_pointer())
        first = c64(n - 1 if reverse else 0)
        inner_loop(lambda post: step(pre, first, post, None, carry))

        def at(k):  # k = 1 .. n - 1: position i and the one before it in scan order
            b = em.b
            if reverse:
                i = b.sub(c64(n - 1), k)
                return i, b.add(i, c64(1))
            return k, b.sub(k, c64(1))

        def one(k):
            i, prev = at(k)
            inner_loop(lambda post: step(pre, i, post, prev, carry))
        em.for_range_dynamic(c64(1), c64(n), one)

    body_cost = 1 + sum(1 for _ in region.blocks[0].operations)
    total = 1
    for s in shape:
        total *= s
    if outer:
        def rows(lo, hi):
            em.loop_nest_range(outer, 0, lo, hi, lambda pre: lane(pre))
        split_ranges(ctx, outer[0], total * body_cost, rows)
    elif inner:
        split_ranges(ctx, inner[0], total * body_cost, lambda lo, hi: lane([], lo, hi))
    else:
        lane([])

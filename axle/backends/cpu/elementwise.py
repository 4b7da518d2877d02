"""The loop kernel: an op without a kernel of its own whose value needs a buffer (an
elementwise op, a broadcast, a slice... with the ops fused into it) is written by one
loop nest over its result, split across threads (parallel.py). A row fusion (row_fusion.py)
gives that loop an outer loop over rows that first computes the fused reductions.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.codegen import scalar as S
from axle.backends.cpu.costs import MOVES
from axle.codegen.emitter import _ty
from axle.backends.cpu.kernels import Accumulators, _simple_float_add, reads_buffer_of, scoped_accesses  # noqa: F401
from axle.backends.cpu.parallel import outer_dim, split_loop
from axle.backends.cpu.registry import loop_kernel
from axle.ir.core import Operation, Value


@loop_kernel
def emit_elementwise(ctx, op: Operation) -> None:
    r = op.results[0]
    t = _ty(r)
    et = t.element_type
    em = ctx.em

    def body(idx, mine=None, other=None):
        dst = ctx.buffer(r)  # resolved in whichever function the loop lands in
        em.read_metadata = other
        try:
            v = em.op_at(op, idx)
        finally:
            em.read_metadata = None
        S.store(em.b, v, em.element_ptr(dst, et, em.linear(idx, t.shape)), et, mine)
    work = 1 + sum(1 for o in ctx.kernels[-1].fused if o.name not in MOVES) if ctx.kernels else 1
    rows = ctx.row_fusions.get(op)
    if rows is None:
        mine, other = scoped_accesses(ctx, op.operands, [r])
        src = op.operands[0] if op.name == "stablehlo.reshape" else None
        if src is not None and _ty(src).is_static and _ty(src).rank > 0:
            # a reshape keeps the row-major order: loop over its operand's shape, store at
            # the same linear index (no division of the result index per element to find
            # the fused operand's: kron's broadcast product, a merge of heads)
            shape = list(_ty(src).shape)

            def flat(idx):
                dst = ctx.buffer(r)
                em.read_metadata = other
                try:
                    v = em.value_at(src, idx)
                finally:
                    em.read_metadata = None
                S.store(em.b, v, em.element_ptr(dst, et, em.linear(idx, shape)), et, mine)
            split_loop(ctx, shape, outer_dim(shape), flat, work)
            return
        split_loop(ctx, list(t.shape), outer_dim(t.shape), lambda idx: body(idx, mine, other), work)
        return
    # row fusion: per row of the outer `k` dimensions, the fused reductions, then the row
    k, reds, maps, kept = rows.rows, rows.reductions, rows.maps, rows.kept
    shape = list(t.shape)
    if kept is not None and reads_buffer_of(ctx, list(op.operands), r):
        kept = None  # the result shares a buffer with a value this kernel reads (in place)

    def row(outer):
        for red in reds:
            emit_row_reduction(ctx, red, outer, maps[red.results[0]], r if red is kept else None)
        if kept is not None:  # the row of the reduction's input, kept in the result row
            em.buffers[kept.operands[0]] = em.buffers.raw(r)
        em.loop_nest(shape[k:], lambda inner: body(outer + inner))
        if kept is not None:
            del em.buffers[kept.operands[0]]
        for red in reds:
            del em.scalars[red.results[0]]
    inner = int(np.prod(shape[k:], dtype=np.int64))
    split_loop(ctx, shape[:k], outer_dim(shape[:k]), row, work * inner * (1 + len(reds)))


def emit_row_reduction(ctx, red: Operation, row: list, index_map: tuple, keep: Optional[Value] = None) -> None:
    """Compute reduction `red` at the element its index map picks from the host's outer
    indices `row`, into a stack slot that value_at reads (ctx.em.scalars). With `keep`
    (the host's result; see _row_kept), each input value is also stored into it at the
    input's index."""
    em = ctx.em
    n = len(red.results)
    inputs, inits = red.operands[:n], red.operands[n:]
    dims = sorted(red.attr("dimensions"))
    in_t = _ty(inputs[0])
    kept = [d for d in range(in_t.rank) if d not in dims]
    out_idx = [em.const_i64(0) if d < 0 else row[d] for d in index_map]
    acc = Accumulators(ctx, red, inits)
    reassoc = _simple_float_add(red) and dims[-1] == in_t.rank - 1

    def inner(red_idx):
        full: list = [None] * in_t.rank
        for d, i in zip(kept, out_idx):
            full[d] = i
        for d, i in zip(dims, red_idx):
            full[d] = i
        values = [em.value_at(v, full) for v in inputs]
        if keep is not None:  # at the input's row-major position: the same in keep (_row_kept)
            et = _ty(keep).element_type
            S.store(em.b, values[0], em.element_ptr(ctx.buffer(keep), et, em.linear(full, in_t.shape)), et)
        if reassoc:
            b = em.b
            total = b.fadd(b.load(acc.slots[0]), values[0])
            total.flags.append("reassoc")
            b.store(total, acc.slots[0])
        else:
            acc.combine(values)
    em.loop_nest([in_t.shape[d] for d in dims], inner)
    em.scalars[red.results[0]] = acc.slots[0]

"""Indexing ops of the CPU backend: dynamic_update_slice and scatter (kernels; dynamic_slice
and gather fuse: their element mappers are in axle/codegen/elemental.py). Index arithmetic
follows the spec's formulas; start indices are clamped where the spec clamps, and scatter
skips updates whose target is out of bounds, so no access can leave its buffer.
"""
from __future__ import annotations

from llvmlite import ir

from axle.codegen import scalar as S
from axle.codegen.elemental import clamp as _clamp
from axle.codegen.elemental import start_index as _start_index
from axle.codegen.elemental import start_vector as _start_vector
from axle.codegen.emitter import _ty
from axle.codegen.scalar import I1
from axle.errors import Unsupported
from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import kernel
from axle.backends.cpu.kernels import scoped_accesses
from axle.ir.core import Operation


@kernel("stablehlo.dynamic_update_slice", in_place=0)
def dynamic_update_slice(ctx: Context, op: Operation) -> None:
    """Copy the operand (unless the result took over its buffer: then only the update is
    written), then write the update at the clamped start."""
    em, b = ctx.em, ctx.b
    operand, update = op.operands[0], op.operands[1]
    r = op.results[0]
    t, ut = _ty(r), _ty(update)
    if not ctx.same_buffer(operand, r):  # a large copy (a KV cache) is shared across the pool
        from axle.backends.cpu.parallel import outer_dim, split_loop
        et, shape = t.element_type, list(t.shape)
        split_loop(ctx, shape, outer_dim(shape), lambda idx: S.store(
            em.b, em.value_at(operand, idx), em.element_ptr(ctx.buffer(r), et, em.linear(idx, shape)), et))
    b = ctx.b
    dst = ctx.buffer(r)
    starts = [_clamp(em, _start_index(em, v, []), 0, t.shape[d] - ut.shape[d]) for d, v in enumerate(op.operands[2:])]

    mine, other = scoped_accesses(ctx, [update], [r])  # the starts are read before the loop

    def body(ui):
        ri = [b.add(i, s) for i, s in zip(ui, starts)]
        with em.reading(other):
            v = em.value_at(update, ui)
        S.store(b, v, em.element_ptr(dst, t.element_type, em.linear(ri, t.shape)), t.element_type, mine)

    em.loop_nest(list(ut.shape), body)


def _check_scatter(op: Operation) -> None:
    from axle.backends.cpu.kernels import SCALAR_BODY_OPS
    from axle.codegen.scalar_ops import RULES
    for o in op.regions[0].blocks[0].operations:
        if o.name not in RULES and o.name not in SCALAR_BODY_OPS:
            raise Unsupported(f"{o.where()} inside the update computation of {op.where()}")


@kernel("stablehlo.scatter", check=_check_scatter, in_place=0)
def scatter(ctx: Context, op: Operation) -> None:
    """Copy the inputs to the results, then apply the update computation at every in-bounds
    target of every update element (out-of-bounds updates are skipped, as the spec says)."""
    em, b = ctx.em, ctx.b
    n = len(op.results)
    inputs, indices, updates = op.operands[:n], op.operands[n], op.operands[n + 1:]
    rt = _ty(op.results[0])
    ut = _ty(updates[0])
    dn = op.attr("scatter_dimension_numbers")
    uwd, inserted = dn["update_window_dims"], dn["inserted_window_dims"]
    ibatch, sbatch = dn["input_batching_dims"], dn["scatter_indices_batching_dims"]
    to_operand, ivd = dn["scatter_dims_to_operand_dims"], dn["index_vector_dim"]
    dsts = [ctx.buffer(r) for r in op.results]
    for v, r, d in zip(inputs, op.results, dsts):
        if not ctx.same_buffer(v, r):  # in place: the result took over the input's buffer
            ctx.copy(v, d)
    region = op.regions[0]

    scatter_dims = [d for d in range(ut.rank) if d not in uwd]
    window_of = {}  # operand dimension -> the update dimension of its window
    wdims = iter(uwd)
    for d in range(rt.rank):
        if d not in inserted and d not in ibatch:
            window_of[d] = next(wdims)

    def per_update(sidx, widx=None):
        # the operand index of the window's first element, once per update (the index
        # loads and bounds out of the window's loop, which then vectorizes)
        start = _start_vector(em, indices, sidx, ivd)
        first = [em.const_i64(0)] * rt.rank
        for d_start, d_operand in enumerate(to_operand):
            first[d_operand] = start[d_start]
        for d_operand, d_start in zip(ibatch, sbatch):
            first[d_operand] = sidx[d_start - (0 if d_start < ivd else 1)]
        whole = ir.Constant(I1, 1)  # every element of the window lands inside
        for d, x in enumerate(first):  # unsigned compare: negative indices are huge
            extent = ut.shape[window_of[d]] if d in window_of else 1
            whole = b.and_(whole, b.icmp_unsigned("<=", b.add(x, em.const_i64(extent)), em.const_i64(rt.shape[d])))
            whole = b.and_(whole, b.icmp_unsigned("<", x, em.const_i64(rt.shape[d])))

        def element(widx, checked):
            ui = [None] * ut.rank
            for d, x in zip(scatter_dims, sidx):
                ui[d] = x
            for d, x in zip(uwd, widx):
                ui[d] = x
            full = [b.add(x, ui[window_of[d]]) if d in window_of else x for d, x in enumerate(first)]

            def apply():
                lin = em.linear(full, rt.shape)
                ptrs = [em.element_ptr(d, _ty(r).element_type, lin) for d, r in zip(dsts, op.results)]
                cur = [S.load(b, p, _ty(r).element_type) for p, r in zip(ptrs, op.results)]
                upd = [em.value_at(u, ui) for u in updates]
                new = em.region_scalars(region, cur + upd)
                for p, v, r in zip(ptrs, new, op.results):
                    S.store(b, v, p, _ty(r).element_type)
            if not checked:
                apply()
                return
            inside = ir.Constant(I1, 1)
            for d, x in enumerate(full):
                inside = b.and_(inside, b.icmp_unsigned("<", x, em.const_i64(rt.shape[d])))
            with b.if_then(inside):  # out-of-bounds elements are skipped, as the spec says
                apply()
        if widx is not None:  # one element (update dimensions in another order)
            element(widx, True)
            return
        window_shape = [ut.shape[d] for d in uwd]
        with b.if_else(whole) as (fast, edge):
            with fast:
                em.loop_nest(window_shape, lambda w: element(w, False))
            with edge:
                em.loop_nest(window_shape, lambda w: element(w, True))

    if list(uwd) == list(range(ut.rank - len(uwd), ut.rank)):
        # windows last in the updates (as JAX writes them): updates in row-major order are
        # one update's window after another, so this order applies them as the spec's does
        em.loop_nest([ut.shape[d] for d in scatter_dims], per_update)
    else:  # element by element in the updates' row-major order (equal targets: that order)
        em.loop_nest(list(ut.shape), lambda ui: per_update([ui[d] for d in scatter_dims], [ui[d] for d in uwd]))


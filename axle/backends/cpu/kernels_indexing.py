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
from axle.codegen.scalar import I1, I64
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
    if not ctx.same_buffer(operand, r):
        copy_operand(ctx, operand, r)
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


def copy_operand(ctx: Context, v, r) -> None:
    """Write every element of v (with the ops fused into it) into r's buffer, shared across
    the pool when large: a KV cache copied before its update, the computed field a scatter
    adds a point source to in a simulation loop."""
    from axle.backends.cpu.costs import fused_work
    from axle.backends.cpu.index_boxes import emit_boxes
    from axle.backends.cpu.parallel import outer_dim, split_loop
    em = ctx.em
    t = _ty(r)
    et, shape = t.element_type, list(t.shape)
    work = fused_work(ctx.kernels[-1].fused) if ctx.kernels and ctx.kernels[-1].fused else 1

    def body(idx):
        S.store(em.b, em.value_at(v, idx), em.element_ptr(ctx.buffer(r), et, em.linear(idx, shape)), et)
    o = getattr(v, "owner", None)
    if isinstance(o, Operation) and not ctx.has_buffer(v) and len(o.results) == 1 and t.is_static \
            and emit_boxes(ctx, o, body, work):  # a fused stencil: box by box, as loop kernels run
        return
    split_loop(ctx, shape, outer_dim(shape), body, work)


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
    for v, r in zip(inputs, op.results):
        if not ctx.same_buffer(v, r):  # in place: the result took over the input's buffer
            copy_operand(ctx, v, r)
    dsts = [ctx.buffer(r) for r in op.results]
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
        b = em.b  # (the builder of the function the loop is in: _private_copies outlines it)
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
                if run is not None:
                    _apply_running(em, region, run, dsts[0], rt.element_type, lin,
                                   [em.value_at(u, ui) for u in updates])
                    return
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

    run = None
    if list(uwd) == list(range(ut.rank - len(uwd), ut.rank)):
        # windows last in the updates (as JAX writes them): updates in row-major order are
        # one update's window after another, so this order applies them as the spec's does
        outer = [ut.shape[d] for d in scatter_dims]
        if _private_copies(ctx, op, outer, dsts, per_update):
            return
        if RUNNING and _sorted(op) and len(op.results) == 1 and all(ut.shape[d] == 1 for d in uwd):
            run = _running_start(em, rt.element_type)
        window = [ut.shape[d] for d in uwd]
        if run is None and _window_outside(rt, window_of, to_operand, ibatch, window, outer):
            # each element of the window on its own plane: the window's loop outside, the
            # updates inside (the order at each target is kept: distinct window elements
            # have distinct targets)
            em.loop_nest(window, lambda w: em.loop_nest(outer, lambda s: per_update(s, w)))
            return
        em.loop_nest(outer, per_update)
        if run is not None:
            _running_flush(em, run, dsts[0], rt.element_type)
    else:  # element by element in the updates' row-major order (equal targets: that order)
        em.loop_nest(list(ut.shape), lambda ui: per_update([ui[d] for d in scatter_dims], [ui[d] for d in uwd]))



WINDOW_OUTSIDE_MIN = 8  # window elements from which a strided window's loop goes outside...
WINDOW_OUTSIDE_UPDATES = 64  # ...for this many updates or more...
WINDOW_OUTSIDE_STRIDE = 1024  # ...whose window elements lie at least this many bytes apart


def _window_outside(rt, window_of: dict, to_operand, ibatch, window: list, outer: list) -> bool:
    """Whether a scatter's window should be the outer loop: its elements lie far apart in
    the operand (the operand's last dimension is not in the window: a gradient of a
    gather over H, W whose window is N x C, PyTorch's upsampling backward) and no window
    dimension is also indexed (then distinct window elements have distinct targets, and
    each target still sees its updates in order). Update by update, every update wrote a
    cache line (and a page) per window element: a bicubic upsampling's backward, 16 such
    scatters of [96, 128] updates of 4 x 16 at 0.4 GB/s; with the window outside, the
    updates of one plane stay in the cache. Per (window element, update) the update's
    indices are loaded and checked again: only for many updates whose window elements lie
    far apart."""
    vol, updates = 1, 1
    for n in window:
        vol *= n
    for n in outer:
        updates *= n
    last = rt.rank - 1
    if vol < WINDOW_OUTSIDE_MIN or updates < WINDOW_OUTSIDE_UPDATES or rt.rank < 2 or last in window_of \
            or any(d in to_operand or d in ibatch for d in window_of):
        return False
    inner = max(window_of)  # the window's innermost operand dimension: its elements' distance
    stride = rt.element_type.bitwidth // 8
    for d in range(inner + 1, rt.rank):
        stride *= rt.shape[d]
    return stride >= WINDOW_OUTSIDE_STRIDE  # (nearer, the old order's stores share cache lines)


# Scatters of one element per update with indices_are_sorted keep the element last updated
# in a register: the next update to the same element combines into it, and it is stored
# when an update goes elsewhere (and after the last). Runs of one index (a segment_sum or
# segment_min over sorted segment ids) otherwise chain every update through a store and a
# reload of one address: 262144 updates into 4096 segments, segment_sum 0.66 -> 0.26 ms,
# segment_min 1.69 -> 1.14 ms (its minimum's own latency is left). Each element sees the
# same combines in the same order: the same bits. Unflagged scatters keep the plain
# load-combine-store per update: with random indices the running element cost 0.16 ->
# 0.29 ms (the store of the previous element and the branch on every update).


def _sorted(op) -> bool:
    a = op.attributes.get("indices_are_sorted")
    return bool(getattr(a, "value", a)) if a is not None else False


RUNNING = True  # (False: every update loads and stores; benchmarks compare)


def _running_start(em, et):
    """Stack slots (promoted to registers) for the element last updated: its linear index
    (-1: none yet) and its value."""
    cur, acc = em.alloca(I64), em.alloca(S.mem_type(et))
    em.b.store(em.const_i64(-1), cur)
    return cur, acc


def _apply_running(em, region, run, dst, et, lin, upd) -> None:
    cur_slot, acc_slot = run
    b = em.b
    cur = b.load(cur_slot)
    with b.if_else(b.icmp_signed("==", lin, cur)) as (same, other):
        with same:
            acc = S.load(b, acc_slot, et)
            S.store(b, em.region_scalars(region, [acc] + upd)[0], acc_slot, et)
        with other:
            with b.if_then(b.icmp_signed(">=", cur, em.const_i64(0))):
                S.store(b, S.load(b, acc_slot, et), em.element_ptr(dst, et, cur), et)
            old = S.load(b, em.element_ptr(dst, et, lin), et)
            S.store(b, em.region_scalars(region, [old] + upd)[0], acc_slot, et)
            b.store(lin, cur_slot)


def _running_flush(em, run, dst, et) -> None:
    cur_slot, acc_slot = run
    b = em.b
    cur = b.load(cur_slot)
    with b.if_then(b.icmp_signed(">=", cur, em.const_i64(0))):
        S.store(b, S.load(b, acc_slot, et), em.element_ptr(dst, et, cur), et)


PRIVATE_MAX_BYTES = 256 << 10  # a result small enough for a copy per thread...
PRIVATE_MIN_RATIO = 8  # ...read by at least this many updates per element and thread
UPDATE_WORK = 8  # simple ops per update (index load, bounds, load, combine, store)
# integer combiners whose result does not depend on the order the updates come in (so a
# copy per thread, combined at the end, gives the serial result bit for bit); the
# idempotent ones start each copy from the input, add from zero
_EXACT = {"stablehlo.maximum": True, "stablehlo.minimum": True, "stablehlo.or": True, "stablehlo.and": True,
          "stablehlo.add": False}


def _private_copies(ctx, op: Operation, outer: list, dsts: list, per_update) -> bool:
    """A scatter of many updates into a small integer result whose combiner is exact in
    any order (a histogram, HyperLogLog's scatter-max of 1M ranks into 16K registers,
    segment counts): each thread scatters its share of the updates into its own copy of
    the result, and the copies are combined with the same op at the end. Serial, 1M
    updates took 1.4 ms."""
    from axle.backends.cpu.parallel import max_threads, parallel_ok, split_ranges
    from axle.ir.types import TensorType
    em = ctx.em
    body = op.regions[0].blocks[0].operations
    rt = _ty(op.results[0])
    et = rt.element_type
    if len(op.results) != 1 or len(body) != 2 or body[0].name not in _EXACT or et.is_float or not outer:
        return False
    args = list(op.regions[0].blocks[0].arguments)
    if set(body[0].operands) != set(args) or body[1].operands[0] is not body[0].results[0]:
        return False
    n_el, n_upd = 1, 1
    for d in rt.shape:
        n_el *= d
    for d in outer:
        n_upd *= d
    slots = max_threads()
    size = n_el * max(et.bitwidth // 8, 1)
    if size > PRIVATE_MAX_BYTES or n_upd < PRIVATE_MIN_RATIO * n_el * slots or slots < 2 or not parallel_ok(ctx, n_upd * UPDATE_WORK):
        return False
    token = object()
    scratch = ctx.temp_ref(TensorType((slots * n_el,), et), token)
    i8p = ir.IntType(8).as_pointer()
    memcpy = em.module.declare_intrinsic("llvm.memcpy", [i8p, i8p, ir.IntType(64)])
    memset = em.module.declare_intrinsic("llvm.memset", [i8p, ir.IntType(64)])
    c64 = em.const_i64
    idem = _EXACT[body[0].name]

    def slot(w):
        b = ctx.b
        return b.gep(b.bitcast(ctx.resolve(scratch), i8p), [b.mul(w, c64(size))], inbounds=True)
    for w in range(slots):  # each copy: the input (idempotent combiners), else zeros
        b = ctx.b
        if idem:
            b.call(memcpy, [slot(c64(w)), b.bitcast(ctx.buffer(op.results[0]), i8p), c64(size), ir.Constant(I1, 0)])
        else:
            b.call(memset, [slot(c64(w)), ir.Constant(ir.IntType(8), 0), c64(size), ir.Constant(I1, 0)])

    def chunk(lo, hi, w):
        dsts[0] = slot(w)
        em.for_range_dynamic(lo, hi, lambda i: em.loop_nest(outer[1:], lambda rest: per_update([i] + rest)))
    split_ranges(ctx, outer[0], n_upd * UPDATE_WORK, chunk, max_threads=slots)
    dsts[0] = ctx.buffer(op.results[0])

    def combine(e):
        b = ctx.b
        out = em.element_ptr(ctx.buffer(op.results[0]), et, e[0])
        acc = S.load(b, out, et)
        for w in range(slots):
            part = S.load(b, em.element_ptr(slot(c64(w)), et, e[0]), et)
            acc = em.region_scalars(op.regions[0], [acc, part])[0]
        S.store(b, acc, out, et)
    em.loop_nest([n_el], combine)
    ctx.release(token)
    return True

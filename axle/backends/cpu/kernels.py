"""Kernels of the CPU backend that are not plain elementwise loops: reduce, dot_general.

Each is registered with `@kernel(op name)`; see compiler.py for the contract.
"""
from __future__ import annotations

import math

import numpy as np

from axle.codegen import elemental  # noqa: F401  (real, imag, complex fuse: registers their element mappers)
from axle.codegen import scalar as S
from axle.codegen.dot import DotDims, accumulator_type, check_dot
from axle.codegen.emitter import _ty
from axle.codegen.scalar_ops import RULES, convert
from axle.errors import Unsupported
from axle.backends.cpu.arg_lanes import row_values
from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import kernel
from axle.codegen.plans.arena import nbytes
from axle.backends.cpu.scopes import _result_scopes, reads_buffer_of, scoped_accesses  # noqa: F401
from axle.ir.core import Operation


# ops a scalar region body may hold besides the elementwise RULES (see Emitter.region_scalars)
SCALAR_BODY_OPS = ("stablehlo.return", "stablehlo.convert", "stablehlo.constant", "stablehlo.real",
                   "stablehlo.imag", "stablehlo.complex", "stablehlo.bitcast_convert")


def _check_reduce(op: Operation) -> None:
    """Every region of op must be scalar code the emitter can inline."""
    for o in (o for r in op.regions for o in r.blocks[0].operations):
        if o.name not in RULES and o.name not in SCALAR_BODY_OPS:
            raise Unsupported(f"{o.where()} inside the body of {op.where()}")


class Accumulators:
    """Stack slots for the running values of a reduction-like kernel (reduce,
    reduce_window): initialized from the init operands, combined by the body region,
    stored into the results at the end."""

    def __init__(self, ctx: Context, op: Operation, inits):
        em, b = ctx.em, ctx.b
        self.ctx, self.op = ctx, op
        region = op.regions[0]
        self.slots = []
        for init, arg in zip(inits, region.blocks[0].arguments):
            slot = em.alloca(S.reg_type(arg.type.element_type))
            b.store(em.value_at(init, []), slot)
            self.slots.append(slot)

    def combine(self, elements: list) -> None:
        b = self.ctx.b
        new = self.ctx.em.region_scalars(self.op.regions[0], [b.load(s) for s in self.slots] + elements)
        for s, v in zip(self.slots, new):
            b.store(v, s)

    def store(self, out_idx: list) -> None:
        em, b = self.ctx.em, self.ctx.b
        for s, r in zip(self.slots, self.op.results):
            t = _ty(r)
            S.store(b, b.load(s), em.element_ptr(self.ctx.buffer(r), t.element_type, em.linear(out_idx, t.shape)),
                    t.element_type)


def _zero_init(op: Operation) -> bool:
    """The reduction's init values are constant zeros (the sum's identity)."""
    n = len(op.results)
    for v in op.operands[n:]:
        o = getattr(v, "owner", None)
        if not isinstance(o, Operation) or o.name != "stablehlo.constant":
            return False
        arr = o.attributes["value"].array
        if arr.size != 1 or float(arr.reshape(-1)[0]) != 0.0:
            return False
    return True


def _simple_float_add(op: Operation) -> bool:
    """The body is `return add(a, b)` of the two block arguments, on f32/f64."""
    blk = op.regions[0].blocks[0]
    ops = blk.operations
    if len(op.results) != 1 or len(ops) != 2 or ops[0].name != "stablehlo.add":
        return False
    et = _ty(op.results[0]).element_type
    return (et.name in ("f32", "f64") and set(map(id, ops[0].operands)) == set(map(id, blk.arguments))
            and ops[1].operands[0] is ops[0].results[0])


def _extreme_lanes(red: Operation, dims: list, in_t) -> int:
    """W when row reduction `red` is a max or min of f32 / f64 over the innermost dimension
    alone, at least 2 W long (W: the host's vector lanes of the type), else 0. Such a
    reduction is exact in any order (max and min are associative, NaN and signed zeros
    included), so it runs as W interleaved partial results (_lanewise_extreme)."""
    from axle.backends.cpu.conv_runtime import vector_floats
    blk = red.regions[0].blocks[0]
    ops = blk.operations
    et = in_t.element_type
    if len(red.results) != 1 or len(ops) != 2 or ops[0].name not in ("stablehlo.maximum", "stablehlo.minimum") \
            or et.name not in ("f32", "f64") or dims != [in_t.rank - 1] or not in_t.is_static \
            or set(map(id, ops[0].operands)) != set(map(id, blk.arguments)) or ops[1].operands[0] is not ops[0].results[0]:
        return 0
    w = vector_floats() // (2 if et.name == "f64" else 1)
    return w if in_t.shape[-1] >= 2 * w else 0


def _selected(ctx, v) -> bool:
    """Whether fused value v is computed through a select (a mask): then LLVM does not
    vectorize a running max / min over it; without one, its own vectorized reduction beats
    _lanewise_extreme (a plain softmax's row max: 0.80 against 1.16 ms)."""
    seen, stack = set(), [v]
    while stack:
        x = stack.pop()
        o = getattr(x, "owner", None)
        if x in ctx.em.buffers or ctx.has_buffer(x) or not isinstance(o, Operation) or o in seen:
            continue
        if o.name == "stablehlo.select":
            return True
        seen.add(o)
        stack.extend(o.operands)
    return False


def _lanewise_extreme(ctx, red: Operation, acc, w: int, inputs: list, kept: list, out_idx: list, dims: list, in_t):
    """A row's max / min as w partial results, element j of each chunk of w into the j-th,
    combined at the end. One running value through the row is a chain LLVM does not
    vectorize when the values are masked (max(acc, select(m, x, -inf)) becomes a select of
    acc): a causal softmax's row maximum ran element by element, 7x the unmasked one."""
    em = ctx.em
    c64 = em.const_i64
    n = in_t.shape[-1]
    parts = [acc] + [Accumulators(ctx, red, red.operands[1:]) for _ in range(w - 1)]

    def at(i):
        return row_values(em, inputs, kept, out_idx, dims[0], i, in_t.rank)

    def chunk(c):
        base = em.b.mul(c, c64(w))
        for j in range(w):
            parts[j].combine(at(em.b.add(base, c64(j))))
    em.for_range_dynamic(c64(0), c64(n // w), chunk)
    if n % w:
        em.for_range_dynamic(c64(n - n % w), c64(n), lambda i: parts[0].combine(at(i)))
    step = 1
    while step < w:
        for j in range(0, w, 2 * step):
            parts[j].combine([em.b.load(parts[j + step].slots[0])])
        step *= 2


ROWS_PER_BLOCK = 16  # rows of a cascaded float sum added up before their block joins the total


def cascaded_rows(ctx, acc, x, kept: list, out_idx: list, dims: list, in_t) -> None:
    """A float sum over several dimensions, the innermost among them (a batch norm's
    statistics over N, H, W of NCHW): each row along the innermost dimension summed on
    its own (vectorized, with partial sums), ROWS_PER_BLOCK row sums added into a block
    sum, the block sums into the total. One running total through every element rounded
    once per row onto a large sum: 1.1e-6 relative error over 2 x 75 x 99 elements
    against 8e-8 for XLA and PyTorch, which a batch norm's backward (sum dy (x - mean))
    magnified into gradients 2000x less accurate than eager's."""
    em = ctx.em
    c64 = em.const_i64
    ft = acc.slots[0].type.pointee
    outer = [in_t.shape[d] for d in dims[:-1]]
    rows = 1
    for n in outer:
        rows *= n
    length = in_t.shape[dims[-1]]
    block_sum = em.alloca(ft)
    row_sum = em.alloca(ft)

    def block(k):
        bb = em.b
        bb.store(ft(0.0), block_sum)
        lo = bb.mul(k, c64(ROWS_PER_BLOCK))

        def row(r):
            rb = em.b
            ridx = em.delinear(r, outer)
            rb.store(ft(0.0), row_sum)

            def element(j):
                eb = em.b
                full: list = [None] * in_t.rank
                for d, i in zip(kept, out_idx):
                    full[d] = i
                for d, i in zip(dims[:-1], ridx):
                    full[d] = i
                full[dims[-1]] = j
                total = eb.fadd(eb.load(row_sum), em.value_at(x, full))
                total.flags.append("reassoc")
                eb.store(total, row_sum)
            em.for_range_dynamic(c64(0), c64(length), element)
            rb = em.b
            rb.store(rb.fadd(rb.load(block_sum), rb.load(row_sum)), block_sum)
        em.for_range_dynamic(lo, em.tile_end(lo, ROWS_PER_BLOCK, rows), row)
        bb = em.b
        bb.store(bb.fadd(bb.load(acc.slots[0]), bb.load(block_sum)), acc.slots[0])
    em.for_range_dynamic(c64(0), c64(-(-rows // ROWS_PER_BLOCK)), block)


@kernel("stablehlo.reduce", check=_check_reduce)
def emit_reduce(ctx: Context, op: Operation) -> None:
    """Three loop orders, all giving each output element its inputs in increasing index order
    (the naive order) except the vectorized sum:

    * innermost input dimension kept: walk the input in memory order, combining into the
      result buffers (initialized with the init values); the inner loop runs along
      contiguous inputs and outputs and vectorizes;
    * innermost dimension reduced, body a float add: per output element, a sum whose adds
      may be reassociated, so LLVM vectorizes it with partial sums (like XLA's vectorized
      row reductions; the rounding differs from the sequential order by a few ulp);
    * otherwise: per output element, the reduced elements in order.
    """
    em = ctx.em
    n = len(op.results)
    inputs, inits = op.operands[:n], op.operands[n:]
    dims = sorted(op.attr("dimensions"))
    in_t = _ty(inputs[0])
    out_ts = [_ty(r) for r in op.results]
    kept = [d for d in range(in_t.rank) if d not in dims]
    if dims and kept and kept[-1] == in_t.rank - 1 and in_t.shape[-1] > 1:
        _reduce_in_memory_order(ctx, op, inputs, inits, kept, in_t, out_ts)
        return
    reassoc = _simple_float_add(op) and dims and dims[-1] == in_t.rank - 1
    lanes = _extreme_lanes(op, dims, in_t) if _selected(ctx, inputs[0]) else 0
    from axle.backends.cpu.arg_lanes import arg_lanes, lanewise_arg
    arg_w = arg_lanes(op, dims, in_t)

    def body(out_idx):
        if arg_w:  # an argmax / argmin: w partial (value, index) pairs (arg_lanes.py)
            lanewise_arg(ctx, op, arg_w, inputs, kept, out_idx, dims, in_t, inits)
            return
        acc = Accumulators(ctx, op, inits)
        if lanes:  # a masked max / min: w partial results (_lanewise_extreme)
            _lanewise_extreme(ctx, op, acc, lanes, inputs, kept, out_idx, dims, in_t)
            acc.store(out_idx)
            return

        def inner(red_idx):
            full = [None] * in_t.rank
            for d, i in zip(kept, out_idx):
                full[d] = i
            for d, i in zip(dims, red_idx):
                full[d] = i
            if reassoc:
                b = em.b  # the builder of the function the loop is in (parallel.py may outline it)
                slot = acc.slots[0]
                total = b.fadd(b.load(slot), em.value_at(inputs[0], full))
                total.flags.append("reassoc")
                b.store(total, slot)
            else:
                acc.combine([em.value_at(v, full) for v in inputs])

        if reassoc and len(dims) >= 2:
            cascaded_rows(ctx, acc, inputs[0], kept, out_idx, dims, in_t)
        else:
            em.loop_nest([in_t.shape[d] for d in dims], inner)
        acc.store(out_idx)

    from axle.backends.cpu.parallel import outer_dim, split_loop
    n_red = 1
    for d in dims:
        n_red *= in_t.shape[d]
    split_loop(ctx, list(out_ts[0].shape), outer_dim(out_ts[0].shape), body, n_red * _input_work(ctx, op))


def _input_work(ctx: Context, op: Operation) -> int:
    """Simple ops per input element of a reduction kernel: what is fused into it (costs.py)."""
    from axle.backends.cpu.costs import fused_work
    return fused_work([o for o in ctx.kernels[-1].fused if o is not op]) if ctx.kernels else 1


def _reduce_in_memory_order(ctx: Context, op: Operation, inputs, inits, kept, in_t, out_ts) -> None:
    """Initialize the results, then combine every input element into its result element in
    memory order. Threads (parallel.py) share the work: when the leading axis is reduced
    and the results are small, each takes whole parts of the leading axis (see
    _reduce_leading_in_parts); otherwise each owns a range of result columns."""
    em = ctx.em
    rank = in_t.rank
    out_rank = len(out_ts[0].shape)

    def init(targets):
        def at(out_idx):
            b = em.b
            for v, r, t in zip(inits, targets, out_ts):
                S.store(b, em.value_at(v, []), em.element_ptr(r, t.element_type,
                                                                em.linear(out_idx, t.shape)), t.element_type)
        return at

    # The results are read and written in the loop, element by element: without knowing
    # that no operand lives in their memory, LLVM reloads whatever it reads after each
    # store (a fused gather's index, every element) and cannot vectorize. When no buffer
    # the operands read shares the results' (reads_buffer_of), the results'
    # accesses get an alias scope of their own and every operand read a noalias of it.
    scopes = None
    if not any(reads_buffer_of(ctx, list(op.operands), r) for r in op.results):
        scopes = _result_scopes(ctx)

    def step(targets):
        def at(full):
            b = em.b
            out_idx = [full[d] for d in kept]
            ptrs = [em.element_ptr(r, t.element_type, em.linear(out_idx, t.shape)) for r, t in zip(targets, out_ts)]
            mine = {"alias.scope": scopes} if scopes is not None else None
            accs = [S.load(b, p, t.element_type, mine) for p, t in zip(ptrs, out_ts)]
            with em.reading({"noalias": scopes} if scopes is not None else None):
                xs = [em.value_at(v, full) for v in inputs]
            if reassoc:
                new = [b.fadd(accs[0], xs[0])]
                new[0].flags.append("reassoc")
            else:
                new = em.region_scalars(op.regions[0], accs + xs)
            for p, t, x in zip(ptrs, out_ts, new):
                S.store(b, x, p, t.element_type, mine)
        return at

    # A float sum whose innermost kept axis is a few elements (unrolled by the emitter: the
    # sum over the middle axis of N x M x 3 points) may be reassociated, as the vectorized
    # row sums of emit_reduce are: LLVM then vectorizes along the reduced axis, with partial
    # sums, and everything fused into it (the per-pair power of an N-body force) with it.
    reassoc = _simple_float_add(op) and in_t.shape[-1] <= SHORT_KEPT
    from axle.backends.cpu.parallel import split_ranges, thread_count
    total = _input_work(ctx, op)
    for d in in_t.shape:
        total *= d
    if _reduce_leading_in_parts(ctx, op, in_t, out_ts, total, init, step):
        return
    if 0 in kept and in_t.shape[0] >= ROW_SPLIT_MIN:
        # the leading axis is kept: each thread owns whole leading rows of the results and
        # reads its own contiguous part of the input (a sum over the middle axis of an
        # N x M x 3 array split by its 3 columns gave one thread twice the other's work,
        # and both walked all of the input)
        def rows(lo, hi):
            results = [ctx.buffer(r) for r in op.results]
            em.loop_nest_range(list(out_ts[0].shape), 0, lo, hi, init(results))
            em.loop_nest_range(list(in_t.shape), 0, lo, hi, step(results))
        split_ranges(ctx, in_t.shape[0], total, rows)
        return
    # one wide block of columns per thread: narrow blocks read each row in short pieces
    def columns(lo, hi):
        results = [ctx.buffer(r) for r in op.results]  # resolved in the chunk's function
        em.loop_nest_range(list(out_ts[0].shape), out_rank - 1, lo, hi, init(results))
        em.loop_nest_range(list(in_t.shape), rank - 1, lo, hi, step(results))
    split_ranges(ctx, in_t.shape[-1], total, columns, chunks=thread_count())


SHORT_KEPT = 4  # innermost kept extent up to which a sum over outer axes is reassociated (see _reduce_in_memory_order)
ROW_SPLIT_MIN = 8  # leading extent from which a reduction keeping its leading axis is split by rows
REDUCE_PARTS = 4  # parts of the leading axis of a split reduction (fixed: results do not depend on threads)
REDUCE_FRAME_BYTES = 48 * 1024  # most stack for the parts' partial results


def _reduce_leading_in_parts(ctx: Context, op: Operation, in_t, out_ts, total: int, init, step) -> bool:
    """A reduction over the leading axis (among others) with small results, like a sum over
    the rows of a matrix: the leading axis is cut into REDUCE_PARTS contiguous parts, claimed
    by the pool's threads; each streams its part in memory order into partial results (part
    0 into the results, the others into a frame on the kernel's stack), which are then
    combined in part order. That is one of the schedules the spec allows (a binary tree
    over the elements in order, init values interspersed: each part starts from them, so an
    init value that is not the body's identity counts once per part, as the spec and XLA
    permit), fixed whatever the thread count.
    Splitting columns instead makes each thread read every row in pieces, which reads
    memory at about half the speed on the machines measured. False when it does not apply
    (the caller splits columns)."""
    from axle.backends.cpu.parallel import PARALLEL_MIN_WORK, split_parts
    dims = op.attr("dimensions")
    lead = 0  # the leading dimensions, all reduced, are the parts' rows (N, H, W of NHWC statistics)
    while lead < in_t.rank - 1 and lead in dims:
        lead += 1
    lead_shape = list(in_t.shape[:max(lead, 1)])
    rows = int(np.prod(lead_shape, dtype=np.int64))
    out_bytes = sum(nbytes(t) for t in out_ts)
    # a float sum from zero: about sqrt(rows) parts, for accuracy (each column summed in
    # sequence over all rows: 4e-6 relative error over 14850 rows, XLA's 9e-8)
    accurate = _simple_float_add(op) and _zero_init(op) and rows >= 4 * REDUCE_PARTS ** 2
    want = max(REDUCE_PARTS, math.isqrt(rows)) if accurate else REDUCE_PARTS
    parts = min(want, rows, 1 + REDUCE_FRAME_BYTES // max(out_bytes, 1))
    if 0 not in dims or parts < 2 or (total < PARALLEL_MIN_WORK and not accurate):
        return False
    em = ctx.em
    offsets = []
    off = 0
    for t in out_ts:
        offsets.append(off)
        off += -(-nbytes(t) // 64) * 64
    part_bytes = off
    out_shape = list(out_ts[0].shape)

    def partials(frame, k):  # part k >= 1's partial results (for k = 0: not an address to use)
        b = em.b
        base = b.gep(frame, [b.mul(b.sub(k, em.const_i64(1)), em.const_i64(part_bytes))])
        return [b.gep(base, [em.const_i64(o)]) for o in offsets]

    def part(k, frame):
        b = em.b
        lo = b.udiv(b.mul(k, em.const_i64(rows)), em.const_i64(parts))
        hi = b.udiv(b.mul(b.add(k, em.const_i64(1)), em.const_i64(rows)), em.const_i64(parts))
        results = [ctx.buffer(r) for r in op.results]
        mine = partials(frame, k)
        first = b.icmp_unsigned("==", k, em.const_i64(0))
        targets = [b.select(first, r, b.bitcast(m, r.type)) for r, m in zip(results, mine)]
        em.loop_nest(out_shape, init(targets))
        at = step(targets)
        em.loop_nest_range([rows] + list(in_t.shape[len(lead_shape):]), 0, lo, hi,
                           lambda idx: at(em.delinear(idx[0], lead_shape) + list(idx[1:])))
    frame = split_parts(ctx, parts, total, (parts - 1) * part_bytes, part)

    results = [ctx.buffer(r) for r in op.results]

    def combine_part(k):  # results = body(results, part k), for k = 1 .. parts - 1 in order
        mine = partials(frame, k)

        def combine(out_idx):
            b = em.b
            ptrs = [em.element_ptr(r, t.element_type, em.linear(out_idx, t.shape)) for r, t in zip(results, out_ts)]
            part_ptrs = [em.element_ptr(b.bitcast(m, r.type), t.element_type, em.linear(out_idx, t.shape))
                         for m, r, t in zip(mine, results, out_ts)]
            accs = [S.load(b, p, t.element_type) for p, t in zip(ptrs, out_ts)]
            more = [S.load(b, p, t.element_type) for p, t in zip(part_ptrs, out_ts)]
            new = em.region_scalars(op.regions[0], accs + more)
            for p, t, x in zip(ptrs, out_ts, new):
                S.store(b, x, p, t.element_type)
        em.loop_nest(out_shape, combine)
    em.for_range_dynamic(em.const_i64(1), em.const_i64(parts), combine_part)  # one copy of the code
    return True


@kernel("stablehlo.dot_general", memory_operands=True, check=check_dot)
def emit_dot(ctx: Context, op: Operation) -> None:
    from axle.backends.cpu.kernels_dot_lowp import emit_lowp_dot, lowp_plan
    lowp = lowp_plan(op, ctx)
    if lowp is not None:  # int8 / bf16 with the host's dot-product instructions
        emit_lowp_dot(ctx, op, lowp)
        return
    from axle.backends.cpu.kernels_dot_skinny import emit_skinny_dot, skinny_plan
    skinny = skinny_plan(op, ctx)
    if skinny is not None:  # fewer than 8 rows: matrix-vector, decode attention
        emit_skinny_dot(ctx, op, skinny)
        return
    from axle.backends.cpu import blas
    shape = blas.gemm_shape(op)
    if shape is not None:
        blas.emit_gemm(ctx, op, shape)
        return
    from axle.backends.cpu.kernels_dot_packed import emit_packed_dot, packed_plan
    plan = packed_plan(op)
    if plan is not None:  # other element types and dimension orders: packed for BLAS
        emit_packed_dot(ctx, op, plan)
        return
    from axle.backends.cpu.kernels_dot_rows import emit_rows_dot, rows_plan
    rows = rows_plan(op)
    if rows is not None:  # int32 / int64 and small real dots: vectorized rows, the same sums
        emit_rows_dot(ctx, op, rows)
        return
    em, b = ctx.em, ctx.b
    lhs, rhs = op.operands
    lt, rt_, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    dims = DotDims(op)
    oet = ot.element_type
    acc_et = accumulator_type(oet)
    add, mul = RULES["stablehlo.add"], RULES["stablehlo.multiply"]
    dst = ctx.buffer(op.results[0])

    def body(oidx):
        bidx, li, ri = dims.split_result_index(oidx)
        acc = em.alloca(S.reg_type(acc_et))
        b.store(S.constant(acc_et, 0), acc)

        def inner(cidx):
            lfull, rfull = dims.operand_indices(bidx, li, ri, cidx)
            x = convert(em, lt.element_type, acc_et, em.value_at(lhs, lfull))
            y = convert(em, rt_.element_type, acc_et, em.value_at(rhs, rfull))
            b.store(add(em, acc_et, [b.load(acc), mul(em, acc_et, [x, y], op)], op), acc)

        em.loop_nest([lt.shape[d] for d in dims.lc], inner)
        out = S.finish(b, convert(em, acc_et, oet, b.load(acc)), oet)
        S.store(b, out, em.element_ptr(dst, oet, em.linear(oidx, ot.shape)), oet)

    em.loop_nest(list(ot.shape), body)

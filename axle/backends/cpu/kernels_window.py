"""Windowed ops and sorting of the CPU backend: reduce_window, select_and_scatter, sort.

For each output index and each window position, the input index in the padded and
base-dilated input is out * stride + w * window_dilation - pad_low; positions that fall
in padding or between dilated elements contribute the init value (the spec's padding
value), others the input element. The body runs inline on scalars.
"""
from __future__ import annotations

from llvmlite import ir

from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import kernel
from axle.backends.cpu.kernels import Accumulators, _check_reduce, _result_scopes, reads_buffer_of
from axle.codegen import scalar as S
from axle.codegen.emitter import _ty
from axle.codegen.scalar import I1, I64
from axle.ir.core import Operation


@kernel("stablehlo.reduce_window", check=_check_reduce)
def reduce_window(ctx: Context, op: Operation) -> None:
    em = ctx.em
    n = len(op.results)
    inputs, inits = op.operands[:n], op.operands[n:]
    it = _ty(inputs[0])
    rank = it.rank
    wdims = op.attr("window_dimensions")
    strides = op.attr("window_strides") or [1] * rank
    base = op.attr("base_dilations") or [1] * rank
    wdil = op.attr("window_dilations") or [1] * rank
    pad = op.attr("padding")
    pad_lo = [int(pad[d][0]) for d in range(rank)] if pad is not None else [0] * rank
    out_ts = [_ty(r) for r in op.results]
    # dimensions whose every window position is an input element (no padding below, no
    # base dilation, the last window inside): no checks (VALID pooling's every dimension)
    inside = [base[d] == 1 and pad_lo[d] == 0 and
              (out_ts[0].shape[d] - 1) * strides[d] + (wdims[d] - 1) * wdil[d] < it.shape[d] for d in range(rank)]

    def body(oidx, inside=inside):
        acc = Accumulators(ctx, op, inits)

        def window(widx):
            b = em.b  # the builder of the function the loop is in (parallel.py may outline it)
            ok = ir.Constant(I1, 1)
            src = []
            for d in range(rank):
                if inside[d]:
                    if wdims[d] == 1 and strides[d] == 1 and pad_lo[d] == 0:
                        src.append(oidx[d])
                    else:
                        src.append(b.sub(b.add(b.mul(oidx[d], em.const_i64(strides[d])),
                                               b.mul(widx[d], em.const_i64(wdil[d]))), em.const_i64(pad_lo[d])))
                    continue
                p = b.sub(b.add(b.mul(oidx[d], em.const_i64(strides[d])), b.mul(widx[d], em.const_i64(wdil[d]))),
                          em.const_i64(pad_lo[d]))
                ok = b.and_(ok, b.icmp_signed(">=", p, em.const_i64(0)))
                if base[d] != 1:
                    ok = b.and_(ok, b.icmp_unsigned("==", b.urem(p, em.const_i64(base[d])), em.const_i64(0)))
                    p = b.udiv(p, em.const_i64(base[d]))
                ok = b.and_(ok, b.icmp_signed("<", p, em.const_i64(it.shape[d])))
                src.append(p)
            if all(inside):
                acc.combine([em.value_at(v, src) for v in inputs])
                return
            with b.if_then(ok):
                acc.combine([em.value_at(v, src) for v in inputs])

        em.loop_nest(list(wdims), window)
        acc.store(oidx)

    from axle.backends.cpu.parallel import outer_dim, split_loop
    window_size = 1
    for w in wdims:
        window_size *= w
    shape = list(out_ts[0].shape)
    conv = ctx.conv_rows.get(op)
    if conv is not None:
        _pool_convolution_rows(ctx, op, conv, body, window_size)
        return
    from axle.backends.cpu.kernels_cumulative import emit_scan, scan_plan
    scan = scan_plan(op)
    if scan is not None:  # cumsum, cummax, ...: a prefix scan, O(n) instead of O(n^2)
        emit_scan(ctx, op, *scan)
        return
    if window_size > TILED_MIN_WINDOW and shape[-1] >= TILED_MIN_ROW and base[-1] == 1:
        _reduce_window_tiled(ctx, op, inputs, inits, it, out_ts, wdims, strides, base, wdil, pad_lo, inside,
                             window_size)
        return
    if not all(inside) and _interior_boxes(ctx, it, shape, wdims, strides, base, wdil, pad_lo, body, window_size):
        return
    split_loop(ctx, shape, outer_dim(shape), body, window_size)


def _interior_boxes(ctx: Context, it, shape: list, wdims, strides, base, wdil, pad_lo, body, window_size: int) -> bool:
    """Padded windows (3 x 3 SAME max pooling, a dilation step of morphological
    reconstruction) box by box: in the interior box, where every window position lies in
    the input, the window is unrolled without a test per position and the loop
    vectorizes across results; the slabs around it keep the tests. False (nothing
    emitted) when no dimension has an interior."""
    from axle.backends.cpu.index_boxes import SCALAR_SHARE_CHEAP, emit_ranged, interior
    rank = len(shape)
    inner = []  # per dimension the results whose windows lie in the input, or None
    for d in range(rank):
        if base[d] != 1:
            inner.append(None)
            continue
        lo = max(0, -(-pad_lo[d] // strides[d]))
        hi = min(shape[d], (it.shape[d] - 1 + pad_lo[d] - (wdims[d] - 1) * wdil[d]) // strides[d] + 1)
        inner.append((lo, hi) if hi > lo else None)
    if all(r is None for r in inner):
        return False
    found = [[c for c in r if 0 < c < n] if r is not None else [] for r, n in zip(inner, shape)]
    cut = interior(shape, found, SCALAR_SHARE_CHEAP)  # (the window's reducer: no transcendental)
    if cut is None:
        return False
    box, rest = cut

    def flags(bx):
        return [r is not None and r[0] <= lo and hi <= r[1] for r, (lo, hi) in zip(inner, bx)]
    emit_ranged(ctx, shape, [box], lambda idx: body(idx, flags(box)), window_size)
    for slab in rest:
        emit_ranged(ctx, shape, [slab], lambda idx, slab=slab: body(idx, flags(slab)), window_size)
    return True


TILED_MIN_WINDOW = 16  # windows up to this size: per output element (LLVM unrolls the window, vectorizes across outputs)
TILED_MIN_ROW = 8  # results' last dimension at least this long for the tiled loop order
GROUP = 8  # window positions along the last dimension combined per pass over a tile (inside the input only)
TILE = 512  # results of a row combined together (2 KiB of f32: stays in L1 across the window)


def _reduce_window_tiled(ctx: Context, op: Operation, inputs, inits, it, out_ts, wdims, strides, base, wdil,
                         pad_lo, inside, window_size: int) -> None:
    """reduce_window with a large window (moving sums and averages, big pooling windows):
    the window loop outside, a tile of the results' last dimension inside. Per tile the
    results are initialized, then for each window position every result of the tile
    combines its input element, so the inner loop runs along contiguous results (and
    inputs, strided by the window stride) and vectorizes; each result still gets its
    window's elements in the spec's order (the same bits as per element). Positions in
    padding are skipped by bounds on the inner loop (last dimension) or a test per
    window position (the others)."""
    em = ctx.em
    rank = it.rank
    last = rank - 1
    shape = list(out_ts[0].shape)
    row_shape = shape[:-1]
    rows = 1
    for d in row_shape:
        rows *= d
    length = shape[-1]
    n_tiles = -(-length // TILE)
    c64 = em.const_i64
    scopes = None
    if not any(reads_buffer_of(ctx, list(op.operands), r) for r in op.results):
        scopes = _result_scopes(ctx)
    mine = {"alias.scope": scopes} if scopes is not None else None
    s_last, d_last, p_last, n_last = strides[last], wdil[last], pad_lo[last], it.shape[last]

    def units(lo, hi):
        results = [ctx.buffer(r) for r in op.results]  # resolved in the chunk's function

        def unit(u):
            b = em.b
            row = em.delinear(b.udiv(u, c64(n_tiles)), row_shape) if row_shape else []
            tlo = b.mul(b.urem(u, c64(n_tiles)), c64(TILE))
            thi = em.tile_end(tlo, TILE, length)

            def ptrs(j):
                lin = em.linear(row + [j], shape)
                return [em.element_ptr(r, t.element_type, lin) for r, t in zip(results, out_ts)]

            def init(j):
                for v, ptr, t in zip(inits, ptrs(j), out_ts):
                    S.store(em.b, em.value_at(v, []), ptr, t.element_type, mine)
            em.for_range_dynamic(tlo, thi, init)

            def window(widx, group: int = 1):
                """Window position widx, and with `group` > 1 (last dimension inside the
                input) the next group - 1 positions along the last dimension too, combined
                in order in one pass (one load and store of each result per group)."""
                b = em.b
                ok = ir.Constant(I1, 1)
                src = []
                for d in range(last):
                    q = b.add(b.mul(row[d], c64(strides[d])), b.mul(widx[d], c64(wdil[d])))
                    if inside[d]:
                        src.append(q)
                        continue
                    q = b.sub(q, c64(pad_lo[d]))
                    ok = b.and_(ok, b.icmp_signed(">=", q, c64(0)))
                    if base[d] != 1:
                        ok = b.and_(ok, b.icmp_unsigned("==", b.urem(q, c64(base[d])), c64(0)))
                        q = b.udiv(q, c64(base[d]))
                    ok = b.and_(ok, b.icmp_signed("<", q, c64(it.shape[d])))
                    src.append(q)
                off = b.sub(b.mul(widx[last], c64(d_last)), c64(p_last))  # input index of result 0
                jlo, jhi = tlo, thi
                if not inside[last]:  # results j with 0 <= j * stride + off < n_last
                    jlo, jhi = em.strided_range(off, s_last, n_last, tlo, thi)

                def element(j):
                    bb = em.b
                    ps = ptrs(j)
                    accs = [S.load(bb, p, t.element_type, mine) for p, t in zip(ps, out_ts)]
                    at = bb.add(bb.mul(j, c64(s_last)), off)
                    for k in range(group):
                        with em.reading({"noalias": scopes} if scopes is not None else None):
                            xs = [em.value_at(v, src + [bb.add(at, c64(k * d_last))]) for v in inputs]
                        accs = em.region_scalars(op.regions[0], accs + xs)
                    for p, t, x in zip(ps, out_ts, accs):
                        S.store(bb, x, p, t.element_type, mine)

                if all(inside[:last]):
                    em.for_range_dynamic(jlo, jhi, element)
                else:
                    with b.if_then(ok):
                        em.for_range_dynamic(jlo, jhi, element)

            wl = wdims[last]
            if not inside[last] or wl < 2 * GROUP:
                em.loop_nest(list(wdims), window)
            else:  # groups of GROUP positions along the last dimension, then the rest
                def grouped(widx):
                    window(widx[:last] + [em.b.mul(widx[last], c64(GROUP))], GROUP)
                em.loop_nest(list(wdims[:last]) + [wl // GROUP], grouped)
                if wl % GROUP:
                    em.loop_nest(list(wdims[:last]),
                                 lambda widx: window(list(widx) + [c64(wl - wl % GROUP)], wl % GROUP))
        em.for_range_dynamic(lo, hi, unit)

    from axle.backends.cpu.parallel import split_ranges
    split_ranges(ctx, rows * n_tiles, rows * length * window_size, units)


def _pool_convolution_rows(ctx: Context, op: Operation, conv: Operation, body, window_size: int) -> None:
    """reduce_window over an elementwise epilogue of a convolution that has no buffer
    (fusion.pooled_convolution): per output row (n, py), the window's convolution rows
    py * stride .. + window - 1 are computed into scratch on the stack (DirectConv.row), the
    epilogue and the pooling read them there (Emitter.row_windows). Rows are shared across
    threads; each convolution row is computed once."""
    from axle.backends.cpu.kernels_conv import DirectConv, _direct_plan
    from axle.backends.cpu.parallel import split_ranges
    em = ctx.em
    c64 = em.const_i64
    d = DirectConv(ctx, conv, _direct_plan(conv))
    d.prepare()
    n_, ph, pw, f = _ty(op.results[0]).shape
    wh = op.attr("window_dimensions")[1]
    sh = (op.attr("window_strides") or [1] * 4)[1]
    row_floats = d.ow * d.f
    value = conv.results[0]
    f32 = ir.FloatType()

    def rows(lo, hi):
        slot = em.alloca(ir.ArrayType(f32, wh * row_floats))
        slot.align = 64

        def row(r):
            b = ctx.b
            n, py = b.udiv(r, c64(ph)), b.urem(r, c64(ph))
            scratch = b.bitcast(slot, f32.as_pointer())
            first = b.mul(py, c64(sh))
            em.for_range_dynamic(c64(0), c64(wh), lambda j: d.row(  # one copy of the row code
                n, ctx.b.add(first, j), ctx.b.gep(scratch, [ctx.b.mul(j, c64(row_floats))], inbounds=True)))
            em.row_windows[value] = (scratch, first, wh)
            em.loop_nest([pw, f], lambda inner: body([n, py] + list(inner)))
            del em.row_windows[value]
        em.for_range_dynamic(lo, hi, row)
    split_ranges(ctx, n_ * ph, d.work + n_ * ph * pw * f * window_size, rows)
    d.release()


@kernel("cpu.top_k", check=_check_reduce)
def top_k(ctx: Context, op: Operation) -> None:
    """The first k of a sort (lower_top_k.py), by partial selection (kernels_sort.py)."""
    from axle.backends.cpu.kernels_sort import emit_top_k
    emit_top_k(ctx, op)


@kernel("stablehlo.sort", check=_check_reduce)  # the comparator must be scalar code too
def sort(ctx: Context, op: Operation) -> None:
    """Stable insertion sort of every 1-D slice along `dimension`, moving all operands
    together; the comparator region runs inline on (lhs0, rhs0, lhs1, rhs1, ...). Used for
    short slices; longer ones are merge-sorted, top-k reads partially selected
    (kernels_sort.py)."""
    from axle.backends.cpu.kernels_sort import emit_sort
    if emit_sort(ctx, op):
        return
    em, b = ctx.em, ctx.b
    t = _ty(op.results[0])
    dim = op.attr("dimension", -1)
    dim = dim if dim >= 0 else t.rank + dim
    n = t.shape[dim]
    dsts = [ctx.buffer(r) for r in op.results]
    ets = [_ty(r).element_type for r in op.results]
    for v, d in zip(op.operands, dsts):
        ctx.copy(v, d)
    if n < 2:
        return
    region = op.regions[0]
    outer = [t.shape[d] for d in range(t.rank) if d != dim]

    def per_slice(oidx):
        def ptrs(j):
            full = list(oidx[:dim]) + [j] + list(oidx[dim:])
            lin = em.linear(full, t.shape)
            return [em.element_ptr(d, et, lin) for d, et in zip(dsts, ets)]

        jslot = em.alloca(I64)

        def insert(k):
            b.store(b.add(k, em.const_i64(1)), jslot)
            check = b.append_basic_block("sort.check")
            compare = b.append_basic_block("sort.compare")
            swap = b.append_basic_block("sort.swap")
            done = b.append_basic_block("sort.done")
            b.branch(check)
            b.position_at_end(check)
            j = b.load(jslot)
            b.cbranch(b.icmp_signed(">", j, em.const_i64(0)), compare, done)
            b.position_at_end(compare)
            j = b.load(jslot)
            jm = b.sub(j, em.const_i64(1))
            pj, pm = ptrs(j), ptrs(jm)
            vj = [S.load(b, p, et) for p, et in zip(pj, ets)]
            vm = [S.load(b, p, et) for p, et in zip(pm, ets)]
            args = [x for pair in zip(vj, vm) for x in pair]
            (less,) = em.region_scalars(region, args)
            b.cbranch(less, swap, done)
            b.position_at_end(swap)
            for p, q, x, y, et in zip(pj, pm, vj, vm, ets):
                S.store(b, y, p, et)
                S.store(b, x, q, et)
            b.store(jm, jslot)
            b.branch(check)
            b.position_at_end(done)

        em.for_range(n - 1, insert)

    em.loop_nest(outer, per_slice)


@kernel("stablehlo.select_and_scatter", memory_operands=True, check=_check_reduce)
def select_and_scatter(ctx: Context, op: Operation) -> None:
    """For each window, pick an element with the select region (padding is never picked;
    the first of equals wins, as the spec's order), then combine the source value into
    the result at that position with the scatter region; the result starts as init."""
    em, b = ctx.em, ctx.b
    operand, source, init = op.operands
    ot, st = _ty(operand), _ty(source)
    rank = ot.rank
    wdims = op.attr("window_dimensions") or [1] * rank
    strides = op.attr("window_strides") or [1] * rank
    pad = op.attr("padding")
    pad_lo = [int(pad[d][0]) for d in range(rank)] if pad is not None else [0] * rank
    r = op.results[0]
    rt = _ty(r)
    et = rt.element_type
    dst = ctx.buffer(r)
    em.loop_nest(list(rt.shape), lambda idx: S.store(b, em.value_at(init, []),
                                                      em.element_ptr(dst, et, em.linear(idx, rt.shape)), et))
    select_region, scatter_region = op.regions
    oet = ot.element_type

    def per_source(sidx):
        have = em.alloca(I1)
        best_val = em.alloca(S.reg_type(oet))
        best_idx = [em.alloca(I64) for _ in range(rank)]
        b.store(ir.Constant(I1, 0), have)

        def window(widx):
            ok = ir.Constant(I1, 1)
            pos = []
            for d in range(rank):
                p = b.sub(b.add(b.mul(sidx[d], em.const_i64(strides[d])), widx[d]), em.const_i64(pad_lo[d]))
                ok = b.and_(ok, b.icmp_unsigned("<", p, em.const_i64(ot.shape[d])))
                pos.append(p)
            with b.if_then(ok):
                cand = em.value_at(operand, pos)
                first = b.not_(b.load(have))
                with b.if_else(first) as (then, other):
                    with then:
                        b.store(ir.Constant(I1, 1), have)
                        b.store(cand, best_val)
                        for s_, p in zip(best_idx, pos):
                            b.store(p, s_)
                    with other:
                        (keep,) = em.region_scalars(select_region, [b.load(best_val), cand])
                        with b.if_then(b.not_(keep)):
                            b.store(cand, best_val)
                            for s_, p in zip(best_idx, pos):
                                b.store(p, s_)

        em.loop_nest(list(wdims), window)
        with b.if_then(b.load(have)):
            at = [b.load(s_) for s_ in best_idx]
            ptr = em.element_ptr(dst, et, em.linear(at, rt.shape))
            (new,) = em.region_scalars(scatter_region, [S.load(b, ptr, et), em.value_at(source, sidx)])
            S.store(b, new, ptr, et)

    em.loop_nest(list(st.shape), per_source)

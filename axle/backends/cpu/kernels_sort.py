"""Sorting on the CPU in O(n log n), and top-k by partial selection.

The comparator region runs inline on (lhs0, rhs0, lhs1, rhs1, ...), as in the window
kernels; LLVM folds JAX's comparators (NaN and -0.0 canonicalisation, total order) into
a few instructions. All operands move together.

* Merge sort (stable, for every sort): each 1-D slice along `dimension` is gathered into
  contiguous scratch, sorted bottom-up with runs of width 1, 2, 4, ... merged between two
  scratch buffers, and written back. The merge step is branch-free: both candidates are
  loaded (from clamped, always valid positions), the comparator decides, selects pick the
  element: `take the right run's element iff it is strictly less than the left one's`,
  which keeps equal elements in input order (stable, as is_stable asks and as is allowed
  when it does not). Slices are shared across the pool's threads, each with its own
  scratch.
* Partial selection (top-k): when every reader of the sort's results is a slice of the
  first k < n elements along the sorted dimension (chlo.top_k expands to exactly that;
  the lowering pass lower_top_k.py makes it a `cpu.top_k` whose results are k long),
  only those k are computed: per slice the first k operand elements are insertion-sorted
  into the result, then each later element that is strictly less (by the comparator)
  than the current k-th is inserted, the k-th dropped. Equal elements keep input order,
  so the first k are those a stable full sort puts first. O(n + accepted * k) per slice
  instead of O(n log n), and no buffer of the full sorted size.
* Memory: a merge sort of contiguous slices needs one scratch run per operand (and per
  thread of the pool); strided slices two. Top-k needs none.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from llvmlite import ir

from axle.codegen import scalar as S
from axle.codegen.emitter import _ty
from axle.ir.core import Operation, Region
from axle.ir.types import TensorType, element_type

I64 = ir.IntType(64)
MIN_MERGE = 8  # slices shorter than this keep the insertion sort (kernels_window.sort)


def _root(op: Operation) -> Operation:
    o = op
    while True:
        blk = o.parent
        reg = getattr(blk, "parent", None) if blk is not None else None
        up = getattr(reg, "parent", None) if reg is not None else None
        if up is None:
            return o
        o = up


def top_k_reads(op: Operation, dim: int) -> Optional[int]:
    """k when every reader of op's results (anywhere in the function) is a stride-1 slice of
    positions [0, k) along `dim` and all of the other dimensions, the same k for all; else None."""
    mine = set(op.results)
    k = None
    for o in _root(op).walk():
        for v in o.operands:
            if v not in mine:
                continue
            if o.name != "stablehlo.slice":
                return None
            t = _ty(v)
            start, limit = list(o.attr("start_indices")), list(o.attr("limit_indices"))
            strides = list(o.attr("strides") or [1] * t.rank)
            if any(s != 1 for s in strides) or any(x != 0 for x in start):
                return None
            if any(limit[d] != t.shape[d] for d in range(t.rank) if d != dim):
                return None
            if k is not None and limit[dim] != k:
                return None
            k = limit[dim]
    if k is None or k >= _ty(op.results[0]).shape[dim]:
        return None
    return k


def emit_sort(ctx, op: Operation) -> bool:
    """Emit op as a merge sort or a partial selection; False when the slices are too short
    (the caller's insertion sort runs)."""
    t = _ty(op.results[0])
    dim = op.attr("dimension", -1)
    dim = dim if dim >= 0 else t.rank + dim
    n = t.shape[dim]
    if n < 2 or 0 in t.shape:
        return False
    k = top_k_reads(op, dim)
    if k is not None and k >= 1:
        _partial(ctx, op, dim, k)
        return True
    if n < MIN_MERGE or n >= 2 ** 31:
        return False
    _merge_sort(ctx, op, dim)
    return True


class _Slices:
    """Linear positions of the 1-D slices along dim: slice s starts at
    (s // stride) * n * stride + s % stride, element p is stride further per p."""

    def __init__(self, ctx, op, dim, shape=None):
        self.ctx = ctx
        shape = _ty(op.results[0]).shape if shape is None else shape
        self.n = shape[dim]
        self.stride = 1
        for d in shape[dim + 1:]:
            self.stride *= d
        total = 1
        for d in shape:
            total *= d
        self.count = total // self.n

    def base(self, s):
        b, c = self.ctx.em.b, self.ctx.em.const_i64
        if self.stride == 1:
            return b.mul(s, c(self.n))
        return b.add(b.mul(b.udiv(s, c(self.stride)), c(self.n * self.stride)), b.urem(s, c(self.stride)))

    def at(self, base, p):
        b, c = self.ctx.em.b, self.ctx.em.const_i64
        return b.add(base, p if self.stride == 1 else b.mul(p, c(self.stride)))


def _scratch_runs(ctx, ref, w, slot_bytes: int, sizes: list, two: bool) -> tuple:
    """Thread w's scratch in the temporary `ref` (slot_bytes per thread): one run of each
    size per operand, or two side by side (`two`); ([first runs], [second runs or none])."""
    b, c64 = ctx.b, ctx.em.const_i64
    mine = b.gep(ctx.resolve(ref), [b.mul(w, c64(slot_bytes))], inbounds=True)
    first, second = [], []
    off = 0
    for size in sizes:
        first.append(b.gep(mine, [c64(off)], inbounds=True))
        if two:
            second.append(b.gep(mine, [c64(off + size)], inbounds=True))
        off += size * (2 if two else 1)
    return first, second


def _less(em, region: Region, lhs: list, rhs: list):
    (r,) = em.region_scalars(region, [x for pair in zip(lhs, rhs) for x in pair])
    return r


def _merge_sort(ctx, op: Operation, dim: int) -> None:
    from axle.backends.cpu.parallel import max_threads, split_ranges
    em = ctx.em
    region, ets, sl = op.regions[0], [_ty(r).element_type for r in op.results], _Slices(ctx, op, dim)
    c64, n = em.const_i64, sl.n
    # where the passes run: contiguous slices (stride 1) merge between the result itself and
    # one scratch run per operand, the first pass reading the operands' buffers (no copy in
    # first) and the parity chosen so that the last pass writes the result; strided slices
    # are gathered into two scratch runs and scattered back
    contiguous = sl.stride == 1
    # the first pass can read the operands where they are (not a fused producer's value,
    # not a buffer the result shares); else they are copied into the results first
    read_operands = all(ctx.has_buffer(v) and not ctx.same_buffer(v, r) for v, r in zip(op.operands, op.results))
    if not read_operands:
        for v, r in zip(op.operands, op.results):
            ctx.copy(v, ctx.buffer(r))
    sizes = [-(-n * np.dtype(et.dtype).itemsize // 64) * 64 for et in ets]
    slot_bytes = (1 if contiguous else 2) * sum(sizes)
    slots = max_threads() if sl.count > 1 else 1
    token = object()
    ref = ctx.temp_ref(TensorType((slots * slot_bytes,), element_type("i8")), token)
    passes = (n - 1).bit_length()
    cost = 4 + sum(1 for _ in region.blocks[0].operations)

    def slices(lo, hi, w):
        scratch_a, scratch_b = _scratch_runs(ctx, ref, w, slot_bytes, sizes, not contiguous)
        par = em.alloca(ir.IntType(1))
        islot, jslot = em.alloca(I64), em.alloca(I64)

        def one_slice(s):
            b = ctx.b
            base = sl.base(s)
            results = [ctx.buffer(r) for r in op.results]
            sources = [ctx.buffer(v) for v in op.operands] if read_operands else results

            def at_base(ptrs):  # the slice's first element (i8*: as a buffer)
                return [b.bitcast(em.element_ptr(p, et, base), ir.IntType(8).as_pointer()) for p, et in zip(ptrs, ets)]
            if contiguous:
                # A: the result's slice, B: scratch; pass q writes A when par is set
                bufs_a, bufs_b, first = at_base(results), scratch_a, at_base(sources)
                # the last pass (passes - 1) must write A: par alternates from its first value
                # (reading the results themselves: the first pass must write the scratch)
                start = (passes % 2 == 1) if read_operands else False
            else:
                bufs_a, bufs_b, first = scratch_a, scratch_b, None
                start = False

                def gather(p):
                    at = sl.at(base, p)
                    for r, a, et in zip(sources, bufs_a, ets):
                        S.store(em.b, S.load(em.b, em.element_ptr(r, et, at), et), em.element_ptr(a, et, p), et)
                em.for_range_dynamic(c64(0), c64(n), gather)
            b.store(ir.Constant(ir.IntType(1), int(start)), par)

            _merge_passes(em, region, ets, bufs_a, bufs_b, c64(n), c64(passes), par, islot, jslot, first)
            if contiguous and start == ((passes - 1) % 2 == 0):
                return  # the last pass wrote the result
            b = em.b
            flip = b.load(par)
            final = [b.select(flip, y, x) for x, y in zip(bufs_a, bufs_b)]

            def scatter(p):
                at = sl.at(base, p) if not contiguous else p
                outs = results if not contiguous else bufs_a
                for r, f, et in zip(outs, final, ets):
                    S.store(em.b, S.load(em.b, em.element_ptr(f, et, p), et), em.element_ptr(r, et, at), et)
            em.for_range_dynamic(c64(0), c64(n), scatter)
        em.for_range_dynamic(lo, hi, one_slice)

    split_ranges(ctx, sl.count, sl.count * n * max(passes, 1) * cost, slices, max_threads=slots)
    ctx.release(token)


def _clamp(b, x, n):
    return b.select(b.icmp_unsigned("<", x, n), x, n)


def _merge_two(em, region, ets, src: list, dst: list, lo, mid, hi, end, islot, jslot) -> None:
    """Merge the sorted runs src[lo:mid] and src[mid:hi] into dst[lo:end] (end <= hi: the
    first end - lo of the merged run), branch-free: both candidates are loaded from
    always-valid positions, the comparator decides, selects pick the element; the right
    run's element is taken iff it is strictly less (stable)."""
    em.b.store(lo, islot)
    em.b.store(mid, jslot)

    def step(kk):
        b = em.b
        i, j = b.load(islot), b.load(jslot)
        left_ok = b.icmp_unsigned("<", i, mid)
        right_ok = b.icmp_unsigned("<", j, hi)
        ic = b.select(left_ok, i, lo)  # always valid positions
        jc = b.select(right_ok, j, lo)
        xl = [S.load(b, em.element_ptr(p, et, ic), et) for p, et in zip(src, ets)]
        xr = [S.load(b, em.element_ptr(p, et, jc), et) for p, et in zip(src, ets)]
        less = _less(em, region, xr, xl)
        b = em.b
        take_r = b.and_(right_ok, b.or_(b.not_(left_ok), less))
        for p, et, x, y in zip(dst, ets, xl, xr):
            S.store(b, b.select(take_r, y, x), em.element_ptr(p, et, kk), et)
        b.store(b.add(j, b.zext(take_r, I64)), jslot)
        b.store(b.add(i, b.zext(b.not_(take_r), I64)), islot)
    em.for_range_dynamic(lo, end, step)


def _merge_passes(em, region, ets, a: list, b_: list, n, passes, par, islot, jslot, first=None) -> None:
    """Passes 0 .. passes - 1 of a bottom-up merge sort of n elements (run-time values):
    pass q merges runs of width 2^q between a and b_, the direction read from and flipped
    in `par` (set: b_ -> a). `first`: what pass 0 reads instead (the operands in place)."""
    c64 = em.const_i64

    def merge_pass(q):
        b = em.b
        width = b.shl(c64(1), q)
        flip = b.load(par)
        src = [b.select(flip, y, x) for x, y in zip(a, b_)]
        dst = [b.select(flip, x, y) for x, y in zip(a, b_)]
        if first is not None:
            src = [b.select(b.icmp_unsigned("==", q, c64(0)), f, x) for f, x in zip(first, src)]
        runs = b.udiv(b.add(b.sub(n, c64(1)), b.shl(width, c64(1))), b.shl(width, c64(1)))

        def merge(ri):
            b = em.b
            lo_ = b.mul(ri, b.shl(width, c64(1)))
            mid = _clamp(b, b.add(lo_, width), n)
            hi_ = _clamp(b, b.add(mid, width), n)
            _merge_two(em, region, ets, src, dst, lo_, mid, hi_, hi_, islot, jslot)
        em.for_range_dynamic(c64(0), runs, merge)
        em.b.store(em.b.not_(flip), par)
    em.for_range_dynamic(c64(0), passes, merge_pass)


def _sort_run(em, region, ets, a: list, b_: list, m, par, islot, jslot) -> None:
    """Bottom-up merge sort of a[0:m] (m a run-time length), between a and the scratch
    b_ (same size); the sorted run ends in a."""
    c64 = em.const_i64
    b = em.b
    one = b.icmp_unsigned(">", m, c64(1))
    # passes: bit_length(m - 1) when m > 1
    ctlz = em.module.declare_intrinsic("llvm.ctlz", [I64], ir.FunctionType(I64, [I64, ir.IntType(1)]))
    lz = b.call(ctlz, [b.sub(m, c64(1)), ir.Constant(ir.IntType(1), 0)])
    passes = b.select(one, b.sub(c64(64), lz), c64(0))
    b.store(ir.Constant(ir.IntType(1), 0), par)
    _merge_passes(em, region, ets, a, b_, m, passes, par, islot, jslot)
    with em.b.if_then(em.b.load(par)):  # an odd number of passes: the run is in b_
        em.for_range_dynamic(c64(0), m, lambda p: [
            S.store(em.b, S.load(em.b, em.element_ptr(y, et, p), et), em.element_ptr(x, et, p), et)
            for x, y, et in zip(a, b_, ets)])


def emit_top_k(ctx, op: Operation) -> None:
    """`cpu.top_k` (lower_top_k.py): the first k of each sorted slice along `dimension`, by
    partial selection from the operands into results k long."""
    t = _ty(op.operands[0])
    dim = op.attr("dimension", -1)
    dim = dim if dim >= 0 else t.rank + dim
    _partial(ctx, op, dim, op.attr("k"))


STAGE = 256  # candidates computed per block when the operands are fused values


def _each_candidate(ctx, op: Operation, ets: list, o_idx: list, i_idx: list, start: int, n: int, consider) -> None:
    """consider(i, candidate i's values) for i in [start, n) of the slice at o_idx / i_idx.
    When an operand is a fused value (log-softmax before a top-k, Gumbel noise added to
    logits), its elements are computed a block of STAGE at a time into arrays on the stack
    by a loop of their own, which LLVM vectorizes, and the selection reads them there: in
    the selection loop itself (a branch per candidate) they would run one at a time."""
    em = ctx.em
    c64 = em.const_i64

    def candidate(p):
        return [em.value_at(v, o_idx + [p] + i_idx) for v in op.operands]
    if all(v in em.buffers for v in op.operands) or n - start < 2 * STAGE:
        em.for_range_dynamic(c64(start), c64(n), lambda i: consider(i, candidate(i)))
        return
    stage = []
    for et in ets:
        slot = em.alloca(ir.ArrayType(ir.IntType(8), STAGE * np.dtype(et.dtype).itemsize))
        slot.align = 64
        stage.append(em.b.bitcast(slot, ir.IntType(8).as_pointer()))

    def block(bi):
        b = em.b
        lo = b.add(c64(start), b.mul(bi, c64(STAGE)))
        hi = em.tile_end(lo, STAGE, n)

        def compute(i):
            at = em.b.sub(i, lo)
            for q, et, x in zip(stage, ets, candidate(i)):
                S.store(em.b, x, em.element_ptr(q, et, at), et)
        em.for_range_dynamic(lo, hi, compute)

        def select(i):
            at = em.b.sub(i, lo)
            consider(i, [S.load(em.b, em.element_ptr(q, et, at), et) for q, et in zip(stage, ets)])
        em.for_range_dynamic(lo, hi, select)
    em.for_range_dynamic(c64(0), c64(-(-(n - start) // STAGE)), block)


BUFFERED_K = 32  # top-k with k above this selects through a buffer of 2k candidates


def _partial(ctx, op: Operation, dim: int, k: int) -> None:
    if k > BUFFERED_K:
        _buffered(ctx, op, dim, k)
    else:
        _insertion(ctx, op, dim, k)


def _buffered(ctx, op: Operation, dim: int, k: int) -> None:
    """Partial selection for larger k: per slice, the first k candidates are merge-sorted
    into a buffer; each later candidate strictly less than the buffer's k-th is appended
    after the first k; when 2k are held, the appended ones are merge-sorted and merged with
    the first k, of which the first k are kept (and after the last candidate). Random
    input accepts about k ln(n / k) candidates, so this costs O(n + k log k log(n / k))
    against the insertion's O(n + k^2 log(n / k)); sorted input O(n log k) against O(n k).
    Candidates are accepted only when strictly less than the k-th, and every merge is
    stable over a buffer kept in input order after its sorted head: equal elements keep
    input order, the first k are those a stable full sort puts first."""
    from axle.backends.cpu.parallel import max_threads, split_ranges
    em = ctx.em
    region = op.regions[0]
    ets = [_ty(r).element_type for r in op.results]
    t = _ty(op.operands[0])
    src = _Slices(ctx, op, dim, t.shape)
    dst = _Slices(ctx, op, dim)
    c64, n = em.const_i64, src.n
    outer = list(t.shape[:dim])
    inner = list(t.shape[dim + 1:])
    cost = 2 + sum(1 for _ in region.blocks[0].operations)
    cap = 2 * k
    sizes = [-(-cap * np.dtype(et.dtype).itemsize // 64) * 64 for et in ets]
    slot_bytes = 2 * sum(sizes)
    slots = max_threads() if src.count > 1 else 1
    token = object()
    ref = ctx.temp_ref(TensorType((slots * slot_bytes,), element_type("i8")), token)

    def slices(lo, hi, w):
        A, B = _scratch_runs(ctx, ref, w, slot_bytes, sizes, True)
        count, par, islot, jslot = em.alloca(I64), em.alloca(ir.IntType(1)), em.alloca(I64), em.alloca(I64)

        def tail(ptrs):
            return [em.b.bitcast(em.element_ptr(p, et, c64(k)), ir.IntType(8).as_pointer())
                    for p, et in zip(ptrs, ets)]

        def put(ptrs, p, xs):
            for q, et, x in zip(ptrs, ets, xs):
                S.store(em.b, x, em.element_ptr(q, et, p), et)

        def compact():
            # the appended candidates sorted, merged with the sorted first k: the first k kept
            b = em.b
            m = b.sub(b.load(count), c64(k))
            _sort_run(em, region, ets, tail(A), tail(B), m, par, islot, jslot)
            _merge_two(em, region, ets, A, B, c64(0), c64(k), em.b.add(m, c64(k)), c64(k), islot, jslot)
            em.for_range_dynamic(c64(0), c64(k), lambda p: put(
                A, p, [S.load(em.b, em.element_ptr(y, et, p), et) for y, et in zip(B, ets)]))
            em.b.store(c64(k), count)

        def one_slice(s):
            b = em.b
            o_idx = _unravel(em, b.udiv(s, c64(src.stride)), outer)
            i_idx = _unravel(em, b.urem(s, c64(src.stride)), inner)

            def candidate(p):
                return [em.value_at(v, o_idx + [p] + i_idx) for v in op.operands]
            em.for_range_dynamic(c64(0), c64(k), lambda p: put(A, p, candidate(p)))
            _sort_run(em, region, ets, A, B, c64(k), par, islot, jslot)
            em.b.store(c64(k), count)

            def consider(i, cand):
                b = em.b
                kth = [S.load(b, em.element_ptr(p, et, c64(k - 1)), et) for p, et in zip(A, ets)]
                less = _less(em, region, cand, kth)
                with em.b.if_then(less):
                    b = em.b
                    c = b.load(count)
                    put(A, c, cand)
                    c1 = b.add(c, c64(1))
                    b.store(c1, count)
                    with b.if_then(b.icmp_unsigned("==", c1, c64(cap))):
                        compact()
            _each_candidate(ctx, op, ets, o_idx, i_idx, k, n, consider)
            with em.b.if_then(em.b.icmp_unsigned(">", em.b.load(count), c64(k))):
                compact()
            base = dst.base(s)
            results = [ctx.buffer(r) for r in op.results]

            def out(p):
                at = dst.at(base, p)
                for r, a, et in zip(results, A, ets):
                    S.store(em.b, S.load(em.b, em.element_ptr(a, et, p), et), em.element_ptr(r, et, at), et)
            em.for_range_dynamic(c64(0), c64(k), out)
        em.for_range_dynamic(lo, hi, one_slice)

    split_ranges(ctx, src.count, src.count * n * cost, slices, max_threads=slots)
    ctx.release(token)


def _insertion(ctx, op: Operation, dim: int, k: int) -> None:
    """Partial selection: per slice along dim, the first k operand elements insertion-sorted
    into the results, then each later one that is strictly less than the k-th inserted (the
    k-th dropped). Candidates are read from the operands (computed in place when fused),
    so the results need only their first k positions: a sort's (positions k.. never read)
    or cpu.top_k's (k long)."""
    from axle.backends.cpu.parallel import split_ranges
    em = ctx.em
    region = op.regions[0]
    ets = [_ty(r).element_type for r in op.results]
    t = _ty(op.operands[0])
    src = _Slices(ctx, op, dim, t.shape)  # the operands' slices (n long)
    dst = _Slices(ctx, op, dim)  # the results' (n or k long)
    c64, n = em.const_i64, src.n
    outer = list(t.shape[:dim])
    inner = list(t.shape[dim + 1:])
    cost = 2 + sum(1 for _ in region.blocks[0].operations)

    def slices(lo, hi):
        jslot = em.alloca(I64)

        def one_slice(s):
            b = em.b
            base = dst.base(s)
            results = [ctx.buffer(r) for r in op.results]
            # the slice's indices in the other dimensions (operands may be fused values)
            o_idx = _unravel(em, b.udiv(s, c64(src.stride)), outer)
            i_idx = _unravel(em, b.urem(s, c64(src.stride)), inner)

            def candidate(p):
                return [em.value_at(v, o_idx + [p] + i_idx) for v in op.operands]

            def load(p):
                at = dst.at(base, p)
                return [S.load(em.b, em.element_ptr(r, et, at), et) for r, et in zip(results, ets)]

            def put(p, xs):
                at = dst.at(base, p)
                for r, et, x in zip(results, ets, xs):
                    S.store(em.b, x, em.element_ptr(r, et, at), et)

            def insert(cand, start):
                """Shift positions < start that cand is strictly less than one up, put cand
                in the hole (insertion sort's step; position start is overwritten)."""
                b = em.b
                b.store(start, jslot)
                check = b.append_basic_block("topk.check")
                shift = b.append_basic_block("topk.shift")
                done = b.append_basic_block("topk.done")
                b.branch(check)
                b.position_at_end(check)
                j = b.load(jslot)
                more = b.icmp_signed(">", j, c64(0))
                cmp = b.append_basic_block("topk.cmp")
                b.cbranch(more, cmp, done)
                b.position_at_end(cmp)
                jm = b.sub(j, c64(1))
                prev = load(jm)
                less = _less(em, region, cand, prev)
                b = em.b
                b.cbranch(less, shift, done)
                b.position_at_end(shift)
                put(j, prev)
                b.store(jm, jslot)
                b.branch(check)
                b.position_at_end(done)
                put(b.load(jslot), cand)

            em.for_range_dynamic(c64(0), c64(k), lambda i: insert(candidate(i), i))

            def consider(i, cand):
                last = load(c64(k - 1))
                less = _less(em, region, cand, last)
                with em.b.if_then(less):
                    insert(cand, c64(k - 1))
            _each_candidate(ctx, op, ets, o_idx, i_idx, k, n, consider)
        em.for_range_dynamic(lo, hi, one_slice)

    split_ranges(ctx, src.count, src.count * n * cost, slices)


def _unravel(em, lin, shape: list) -> list:
    """Row-major indices of linear position `lin` in `shape`."""
    b, c64 = em.b, em.const_i64
    out = []
    for d in reversed(shape):
        out.append(b.urem(lin, c64(d)))
        lin = b.udiv(lin, c64(d))
    return list(reversed(out))

"""The loop kernel: an op without a kernel of its own whose value needs a buffer (an
elementwise op, a broadcast, a slice... with the ops fused into it) is written by one
loop nest over its result, split across threads (parallel.py). A row fusion (row_fusion.py)
gives that loop an outer loop over rows that first computes the fused reductions.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.codegen import scalar as S
from axle.backends.cpu.costs import fused_work
from axle.backends.cpu.index_boxes import emit_boxes
from axle.codegen.emitter import _ty
from axle.backends.cpu.kernels import (Accumulators, cascaded_rows, _simple_float_add,  # noqa: F401
                                      reads_buffer_of, scoped_accesses)
from axle.backends.cpu.scopes import scoped_accesses_but_shared
from axle.backends.cpu.parallel import outer_dim, split_loop
from axle.backends.cpu.registry import is_elementwise, loop_kernel
from axle.ir.core import Operation, Value


@loop_kernel
def emit_elementwise(ctx, op: Operation) -> None:
    r = op.results[0]
    t = _ty(r)
    et = t.element_type
    em = ctx.em

    shared: set = set()  # buffers read that are the result's own (in place): no noalias on them

    def body(idx, mine=None, other=None):
        dst = ctx.buffer(r)  # resolved in whichever function the loop lands in
        with em.reading(other, shared):
            v = em.op_at(op, idx)
        S.store(em.b, v, em.element_ptr(dst, et, em.linear(idx, t.shape)), et, mine)
    # the ops computed per element: the fused ones and this kernel's own op
    work = fused_work([*ctx.kernels[-1].fused, op]) if ctx.kernels else fused_work([op])
    rows = ctx.row_fusions.get(op)
    if rows is None:
        mine = other = None
        if _reads_through_pointers(ctx, op):
            mine, other, both = scoped_accesses_but_shared(ctx, op.operands, [r])
            shared.update(both)
        src = op.operands[0] if op.name == "stablehlo.reshape" else None
        if src is not None and _ty(src).is_static and _ty(src).rank > 0:
            # a reshape keeps the row-major order: loop over its operand's shape, store at
            # the same linear index (no division of the result index per element to find
            # the fused operand's: kron's broadcast product, a merge of heads)
            shape = list(_ty(src).shape)

            def flat(idx):
                dst = ctx.buffer(r)
                with em.reading(other, shared):
                    v = em.value_at(src, idx)
                S.store(em.b, v, em.element_ptr(dst, et, em.linear(idx, shape)), et, mine)
            tr = getattr(src, "owner", None)  # a transpose reshaped (its unit dimensions dropped)
            if isinstance(tr, Operation) and tr.name == "stablehlo.transpose" and not ctx.has_buffer(src) \
                    and _tiled_transpose(ctx, op, tr, flat, work):
                return
            split_loop(ctx, shape, outer_dim(shape), flat, work)
            return
        cat = _at_same_index(ctx, op, "stablehlo.concatenate")
        if cat is not None and _concat_parts(ctx, op, cat, lambda idx: body(idx, mine, other), work):
            return
        tr = _at_same_index(ctx, op, "stablehlo.transpose")
        if tr is not None and _tiled_transpose(ctx, op, tr, lambda idx: body(idx, mine, other), work):
            return
        if emit_boxes(ctx, op, lambda idx: body(idx, mine, other), work):
            return
        if _refined_loop(ctx, op, lambda idx: body(idx, mine, other), work):
            return
        if _merged_loop(ctx, op, lambda idx: body(idx, mine, other), work):
            return
        shape = list(t.shape)
        # a short last dimension that could not merge (cos(x - mu) over [65536, 8], mu
        # broadcast along rows) is emitted straight, for the SLP vectorizer: a loop of 8
        # trips stayed scalar (1.9 ms, against 0.45 for cos(x) alone)
        short = SHORT_ROW if (len(shape) >= 2 and shape[-1] * work <= SHORT_ROW_WORK
                              and int(np.prod(shape, dtype=np.int64)) >= SHORT_ROW_MIN_ELEMENTS
                              and _plain_reads(ctx, op)) else 0
        split_loop(ctx, shape, outer_dim(t.shape), lambda idx: body(idx, mine, other), work, unroll_inner=short)
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


INDIRECT = ("stablehlo.dynamic_slice", "stablehlo.gather", "stablehlo.dynamic_update_slice")


# buffers read from which a loop gets alias scopes (_reads_through_pointers): LLVM's loop
# vectorizer gives up past 128 run-time overlap checks (one per buffer read against the one
# written) and leaves such a loop scalar; with scopes it needs none, but below that count
# they cost 15-25% (a 121-buffer sum: 1.22 -> 1.3-1.7 ms)
MANY_BUFFERS = 96


def _reads_through_pointers(ctx, op: Operation) -> bool:
    """Whether op's loop reads at run-time positions (a dynamic slice or gather fused into
    it) or a scalar buffer (a loop counter), or reads MANY_BUFFERS buffers or more: then
    alias scopes let LLVM keep those loads out of the loop, or vectorize without a run-time
    overlap check per buffer (the sum of a scan's padded step gradients in Mamba's
    backward: 121 buffers at 48 steps, 1.25 ms; 141 at 56, left scalar, 38 ms). A loop reading a few operands at its own index gains nothing from
    them (LLVM's run-time overlap check is cheap there), and measured slower with them (an
    elementwise GELU, 0.80 -> 0.91-1.01 ms: the vectorizer chose another shape)."""
    seen, stack = set(), [op]
    read = set()
    while stack:
        o = stack.pop()
        if o.name in INDIRECT:
            return True
        for v in o.operands:
            if v in ctx.em.buffers:
                if _ty(v).rank == 0:
                    return True
                read.add(v)
                if len(read) >= MANY_BUFFERS:
                    return True
                continue
            if ctx.has_buffer(v):  # a constant
                continue
            p = getattr(v, "owner", None)
            if isinstance(p, Operation) and p not in seen:
                seen.add(p)
                stack.append(p)
    return False


TRANSPOSE_TILE = 16  # a transpose moving the innermost dimension runs over tiles of 16 x 16
PAGE_BYTES = 4096


def _at_same_index(ctx, op: Operation, name: str) -> Optional[Operation]:
    """An op `name` computed in op's loop at op's own index (op itself, or reached through
    fused same-shaped elementwise ops: x.T + 1), or None."""
    from axle.backends.cpu.fusion import _same_index
    shape = list(_ty(op.results[0]).shape)
    stack, seen = [op], set()
    while stack:
        o = stack.pop()
        if o.name == name:
            return o
        if o is not op and not _same_index(o, o.results[0]):
            continue
        for v in o.operands:
            p = getattr(v, "owner", None)
            if (isinstance(p, Operation) and p not in seen and not ctx.has_buffer(v)
                    and len(p.results) == 1 and list(_ty(v).shape) == shape):
                seen.add(p)
                stack.append(p)
    return None


def refine(a: list, b: list):
    """The coarsest shape of which both a and b (same product) are row-major merges of
    adjacent dimensions ([1024, 2048] and [1024, 64, 32]: [1024, 64, 32]), or None ([4, 6]
    and [6, 4] have none: their dimensions' boundaries do not nest)."""
    def cuts(shape):  # products of the trailing dimensions
        out, p = {1}, 1
        for n in reversed(shape):
            p *= n
            out.add(p)
        return out
    total = int(np.prod(a, dtype=np.int64))
    if total != int(np.prod(b, dtype=np.int64)) or total == 0:
        return None
    points = sorted(cuts(a) | cuts(b))
    if any(q % p for p, q in zip(points, points[1:])):
        return None
    return [q // p for p, q in reversed(list(zip(points, points[1:])))] or [1]


def _refined_loop(ctx, op: Operation, body, work: int) -> bool:
    """op's loop over a finer shape when it computes, at its own index, a reshape that
    splits its dimensions (a block quantizer's [N, K] result of values computed as
    [N, K / 32, 32]): each of op's indices is then a linear combination of the finer
    loop's indices, and the reshape reads its operand at those indices (Emitter
    index_digits) where a loop over op's own shape divides every index by 32, which keeps
    the loop from vectorizing (2.3 against 1.8 ms for 2M elements, 7.7 with an fp8 round
    trip)."""
    from axle.backends.cpu.parallel import outer_dim, split_loop
    r = _at_same_index(ctx, op, "stablehlo.reshape")
    t = _ty(op.results[0])
    if r is None or not t.is_static or not _ty(r.operands[0]).is_static:
        return False
    shape = [int(n) for n in t.shape]
    fine = refine(shape, [int(n) for n in _ty(r.operands[0]).shape])
    if fine is None or len([n for n in fine if n > 1]) <= len([n for n in shape if n > 1]):
        return False
    em = ctx.em
    groups, j = [], 0  # fine dimensions of each of op's dimensions
    for n in shape:
        g, p = [], 1
        while p < n or (n == 1 and not g and j < len(fine) and fine[j] == 1):
            g.append(j)
            p *= fine[j]
            j += 1
        groups.append(g)

    def fine_body(fidx):
        idx = []
        for g in groups:
            if not g:
                idx.append(em.const_i64(0))
            elif len(g) == 1:
                idx.append(fidx[g[0]])
            else:
                v = em.linear([fidx[d] for d in g], [fine[d] for d in g])
                em.index_digits[v] = [(fidx[d], fine[d]) for d in g]
                idx.append(v)
        body(idx)
    saved = em.index_digits
    em.index_digits = {}
    try:
        split_loop(ctx, fine, outer_dim(fine), fine_body, work)
    finally:
        em.index_digits = saved
    return True


MERGE_BELOW = 128  # innermost dimensions shorter than this are merged with the ones before (_merged_loop)


def _merged_loop(ctx, op: Operation, body, work: int) -> bool:
    """op's trailing dimensions d.. as one loop when every element the kernel reads is at
    the same row-major offset of those dimensions: elementwise ops over buffers and
    constants, and broadcasts that either keep all of those dimensions (as their operand's
    trailing ones, read the same way) or none of them (a per-channel scale, whatever
    computes it). The loop passes index 0 for the
    merged dimensions but the last, which runs over their product, so every address
    computed from the index is the right one. An NCHW activation over 14 x 14 maps ran a
    14-iteration innermost loop that LLVM left scalar (SiLU over 4 x 240 x 14 x 14: 0.94
    ms; 196 iterations vectorize). False (nothing emitted) when nothing merges."""
    from axle.backends.cpu.parallel import outer_dim, split_loop
    t = _ty(op.results[0])
    shape = [int(n) for n in t.shape] if t.is_static else []
    r = len(shape)
    if r < 2 or not 1 < shape[-1] < MERGE_BELOW:  # (a unit last dimension would pass its index on)
        return False
    em = ctx.em
    bcasts = []  # (operand shape, broadcast dimensions) of the broadcasts read at the kernel's shape
    seen: dict = {}  # (value, at the kernel's shape) -> answer: a DAG (a Chebyshev series) is walked once

    def uniform(v, level: list) -> bool:
        key = (v, level is shape)
        if key not in seen:
            seen[key] = False  # (no cycles in SSA; a placeholder while walking)
            seen[key] = _uniform(v, level)
        return seen[key]

    def _uniform(v, level: list) -> bool:
        """v's elements read at the index of a loop over `level` (a shape) are at its own
        row-major offset: v a buffer, a constant, or elementwise over such values."""
        vt = _ty(v)
        if not vt.is_static or (list(vt.shape) != level and vt.rank != 0):
            return False
        if v in em.buffers or ctx.has_buffer(v):
            return v not in em.scalars and v not in em.row_windows and v not in em.tiles
        o = getattr(v, "owner", None)
        if not isinstance(o, Operation):
            return False
        if o.name == "stablehlo.broadcast_in_dim" and level is shape and vt.rank:
            # (read at a real index when it does not vary along the merged dimensions: any
            # fused producer; else it must itself be read at its own offsets)
            st = list(_ty(o.operands[0]).shape)
            bcasts.append((st, list(o.attr("broadcast_dimensions")), uniform(o.operands[0], st)))
            return True
        if vt.rank == 0 and o.name != "stablehlo.constant":
            return False
        return is_elementwise(o) and all(uniform(x, level) for x in o.operands)
    if not (is_elementwise(op) and all(uniform(x, shape) for x in op.operands)):
        return False

    def fits(d: int) -> bool:
        tail = [j for j in range(d, r) if shape[j] != 1]
        for st, dims, flat in bcasts:
            varying = [j for j in tail if j in dims and st[dims.index(j)] == shape[j]]
            if not varying:
                continue
            if varying != tail or not flat:
                return False
            first = dims.index(tail[0])  # the operand's dimensions from there: the tail's, or 1
            mapped = {dims.index(j) for j in tail}
            if any(i not in mapped and st[i] != 1 for i in range(first, len(st))):
                return False
        return True
    d = next((d for d in range(r - 1) if fits(d)), r - 1)
    if d >= r - 1 or all(n == 1 for n in shape[d:-1]):
        return False
    loop = shape[:d] + [int(np.prod(shape[d:], dtype=np.int64))]
    zeros = [em.const_i64(0)] * (r - 1 - d)
    split_loop(ctx, loop, outer_dim(loop), lambda idx: body(list(idx[:d]) + zeros + [idx[d]]), work)
    return True


def _concat_parts(ctx, op: Operation, cat: Operation, body, work: int) -> bool:
    """op's loop when it computes concatenate `cat` at its own index: one loop per operand
    over that operand's part of the result, so that each element reads one operand (a
    single loop chooses among the operands per element, and once vectorized computes every
    operand's fused expression for every element: 32 tanh per element for 32 operands).
    Fused concatenates along the same dimension inside it (jnp.concatenate of many
    arrays nests them) are split the same way. The dimensions before the concatenated
    one are split across threads, the parts run inside; when those dimensions hold a
    single row, each part is split on its own."""
    t = _ty(op.results[0])
    shape = list(t.shape)
    dim = cat.attr("dimension")
    if not t.is_static:
        return False
    parts = []  # (offset, size, {concatenate: the operand this part reads})

    def collect(c, base, choice):
        off = base
        for k, v in enumerate(c.operands):
            n = _ty(v).shape[dim]
            inner = getattr(v, "owner", None)
            pick = {**choice, c: k}
            if (isinstance(inner, Operation) and inner.name == "stablehlo.concatenate"
                    and inner.attr("dimension") == dim and v not in ctx.em.buffers and not ctx.has_buffer(v)):
                collect(inner, off, pick)
            elif n:
                parts.append((off, n, pick))
            off += n
    collect(cat, 0, {})
    if len(parts) < 2:
        return False
    if dim == len(shape) - 1 and min(n for _, n, _ in parts) < SHORT_PART \
            and all(_cheap(ctx, v) for v in cat.operands):
        # a part shorter than a vector along the innermost dimension (a shift: a column of
        # padding before a row's slice) would run the whole fused loop in scalar tails;
        # choosing among cheap operands per element vectorizes (a 16 x 64 logaddexp scan step)
        return False
    em = ctx.em
    c64 = em.const_i64

    def element(idx, off, choice):
        # the choice holds where `cat` is read at the loop's own index (Emitter._concat_at);
        # a nested concatenate's is bound to the index its parent reads it at
        idx = idx[:dim] + [em.b.add(idx[dim], c64(off)) if off else idx[dim]] + idx[dim + 1:]
        em.concat_parts.update({c: (k, tuple(map(id, idx)) if c is cat else None) for c, k in choice.items()})
        try:
            body(idx)
        finally:
            for c in choice:
                del em.concat_parts[c]
    rows = int(np.prod(shape[:dim], dtype=np.int64))
    if rows > 1:
        def row(outer):
            for off, n, choice in parts:
                em.loop_nest([n] + shape[dim + 1:], lambda inner, off=off, choice=choice: element(
                    outer + inner, off, choice))
        split_loop(ctx, shape[:dim], outer_dim(shape[:dim]), row,
                   work * (int(np.prod(shape, dtype=np.int64)) // rows))
        return True
    for off, n, choice in parts:
        pshape = shape[:dim] + [n] + shape[dim + 1:]
        split_loop(ctx, pshape, outer_dim(pshape), lambda idx, off=off, choice=choice: element(idx, off, choice), work)
    return True


SHORT_PART = 8  # concatenated parts shorter than this along the innermost dimension: one loop
CHEAP_OPS = 4  # fused ops of a concatenate operand that still count as cheap to compute per element


def _cheap(ctx, v) -> bool:
    """Whether v's fused expression is a few simple ops (slices, broadcasts, constants, an
    add): cheap enough to compute for every element and select."""
    from axle.backends.cpu.costs import MOVES, TRANSCENDENTAL
    seen, stack, ops = set(), [v], 0
    while stack:
        x = stack.pop()
        if x in seen or x in ctx.em.buffers or ctx.has_buffer(x):
            continue
        seen.add(x)
        o = getattr(x, "owner", None)
        if not isinstance(o, Operation):
            continue
        if o.name in TRANSCENDENTAL or o.regions:
            return False
        ops += o.name not in MOVES
        if ops > CHEAP_OPS:
            return False
        stack.extend(o.operands)
    return True


_PLAIN = ("stablehlo.broadcast_in_dim", "stablehlo.constant", "stablehlo.iota")


def _plain_reads(ctx, op: Operation) -> bool:
    """Whether the kernel's ops are elementwise, broadcasts and constants only: its straight
    code reads each operand at the row's own positions. With shifted or gathered reads (a
    lattice-Boltzmann step's streaming over [N, N, 9] by slices and concatenates) the SLP
    vectorizer's packing of the 9 copies ran slower than the loop (36.8 -> 40.6 ms)."""
    from axle.backends.cpu.registry import is_elementwise
    ops = [*ctx.kernels[-1].fused, op] if ctx.kernels else [op]
    return all(o.name in _PLAIN or is_elementwise(o) for o in ops)


def _reshaped(op: Operation, tr: Operation) -> bool:
    return op is not tr and op.name == "stablehlo.reshape" and op.operands[0] is tr.results[0]


def _tiled_transpose(ctx, op: Operation, tr: Operation, body, work: int) -> bool:
    """op's loop when it computes transpose `tr` at its own index and tr's last dimension
    is not its operand's: over tiles of the two dimensions that are innermost on either
    side (the result's last, and the one that reads the operand's last), the other
    dimensions outside. A plain nest reads the operand with a stride of a whole row per
    element (a new cache line, and past a few KiB a new page, every element); a 16 x 16
    tile reads and writes whole cache lines. Dimensions next to either of the two that
    are consecutive in the operand too are merged with it ([H, W] of NCHW -> NHWC and of
    NHWC -> NCHW): whole tiles where W alone (56, 7) would leave edges or be too short to
    tile; a tile's row and column find their places in the merged dimensions once each."""
    # (op a reshape of tr: the loop runs over tr's shape, the order both store in)
    t = _ty(tr.results[0] if _reshaped(op, tr) else op.results[0])
    shape = list(t.shape)
    perm = [int(p) for p in tr.attr("permutation")]
    rank = len(shape)
    if rank < 2 or not t.is_static:
        return False
    # dimensions of size 1 take no part: the innermost runs are the last longer dimensions
    # on either side ([512, 2048, 1, 1] -> [2048, 512, 1, 1], a 1x1 kernel's transpose, is
    # a 2-D one; the unit dimensions stay outside, loops of one step)
    src = _ty(tr.operands[0]).shape
    long_src = [d for d in range(rank) if src[d] != 1]
    long_out = [d for d in range(rank) if shape[d] != 1]
    if len(long_out) < 2:
        return False
    a, last = perm.index(long_src[-1]), long_out[-1]
    if a == last:
        return False
    block = [a]  # result dimensions read along the operand's innermost run, outer first
    while block[0] > 0 and perm[block[0] - 1] == perm[block[0]] - 1:
        block.insert(0, block[0] - 1)
    tail = [last]  # the result's innermost dimensions that are consecutive in the operand
    while tail[0] - 1 not in block and tail[0] > 0 and perm[tail[0] - 1] == perm[tail[0]] - 1:
        tail.insert(0, tail[0] - 1)
    tile = TRANSPOSE_TILE
    # an operand run shorter than two tiles (OIHW -> HWIO: the 3 x 3 window, 9 values) takes
    # in the operand's next dimensions outward, wherever they sit in the result: rows of a
    # tile are then I x 3 x 3 consecutive operand values ([512, 512, 3, 3] weights: 4.3 ->
    # 2.3 ms on one thread)
    while int(np.prod([shape[d] for d in block], dtype=np.int64)) < 2 * tile and perm[block[0]] > 0:
        d = perm.index(perm[block[0]] - 1)
        if d in tail:
            break
        block.insert(0, d)
    m = int(np.prod([shape[d] for d in block], dtype=np.int64))
    n = int(np.prod([shape[d] for d in tail], dtype=np.int64))
    if m < 2 * tile or n < 2 * tile:
        return False
    em = ctx.em
    c64 = em.const_i64
    outer = [d for d in range(rank) if d not in block and d not in tail]
    # The tile order. Along the walk, one side reads (or writes) its rows in sequence; the
    # other moves a row's length per tile row: m elements for the operand's rows (columns
    # innermost), n for the result's (rows innermost). A hardware prefetcher follows such
    # a stride within a page only: take the shorter one, and where both pass a page, the
    # walk touching fewer pages (n or m rows). Rows innermost for NCHW -> NHWC with 64
    # channels (n = 64, m = H W = 3136: 6.7 -> 4.1 ms on one thread), columns for a
    # [1024, 8192] operand (n = 1024: 13.9 -> 11.6 ms).
    el = t.element_type.bitwidth // 8
    if min(m, n) * el < PAGE_BYTES:
        rows_inner = n < m
    else:
        rows_inner = m < n
    grid = [shape[d] for d in outer] + ([-(-n // tile), -(-m // tile)] if rows_inner else [-(-m // tile), -(-n // tile)])
    units = int(np.prod(grid, dtype=np.int64))

    def split(v, dims):  # a merged index -> the indices of the dimensions merged
        return [v] if len(dims) == 1 else em.delinear(v, [shape[d] for d in dims])

    def index(out: list, i, j):  # the result index at (outer, merged row i, merged column j)
        idx = [None] * rank
        for d, v in zip(outer + block + tail, out + split(i, block) + split(j, tail)):
            idx[d] = v
        return idx
    registers = _register_transpose(ctx, op, tr, index, tile)

    def unit(u):
        b = em.b
        g = em.delinear(u, grid)
        out = g[:-2]
        gi, gj = (g[-1], g[-2]) if rows_inner else (g[-2], g[-1])
        i0, j0 = b.mul(gi, c64(tile)), b.mul(gj, c64(tile))

        def row(i):
            em.for_range_dynamic(j0, em.tile_end(j0, tile, n), lambda j: body(index(out, i, j)))
        if registers is None:
            em.for_range_dynamic(i0, em.tile_end(i0, tile, m), row)
            return
        whole = b.and_(b.icmp_signed("<=", b.add(i0, c64(tile)), c64(m)),
                       b.icmp_signed("<=", b.add(j0, c64(tile)), c64(n)))
        with b.if_else(whole) as (full, edge):
            with full:
                registers(out, i0, j0, body)
            with edge:
                em.for_range_dynamic(i0, em.tile_end(i0, tile, m), row)

    from axle.backends.cpu.parallel import split_ranges
    split_ranges(ctx, units, work * int(np.prod(shape, dtype=np.int64)),
                 lambda lo, hi: em.for_range_dynamic(lo, hi, unit))
    return True


REGISTER_TRANSPOSE = True  # whole tiles of a 4-byte transpose through vector registers


def _register_transpose(ctx, op: Operation, tr: Operation, index, tile: int):
    """For op's loop over tiles of the 4-byte transpose tr, fn(outer, i0, j0, body)
    computing the whole tile at merged row i0, column j0, else None. Element by element
    the tile reads tr's operand a column at a time (gathers): a 2048 x 1024 f32 transpose
    ran at 5 GB/s on one thread. Here W x W blocks (W the host's f32 lanes) are transposed
    in registers: log2 W rounds of two-operand shuffles swap the blocks' off-diagonal
    halves. The operand's rows are loaded, or computed into a stack tile in the operand's
    own order (exp(x).T). A transpose that is the kernel's own op stores the shuffled rows
    as the result's; under a consumer (x.T + y) they go to a second stack tile, from which
    op's loop over the tile reads tr at op's own index (ctx.em.tiles). index(outer, i, j) is the result index at merged row i, column j.
    (fusion's _register_transposed plans buffers for plain transposes' operands on the
    same limits.)"""
    from axle.backends.cpu.conv_runtime import vector_floats
    from axle.backends.cpu.lowp_f32_pack import transpose_square
    from llvmlite import ir
    src = tr.operands[0]
    t, st = _ty(tr.results[0]), _ty(src)
    w = vector_floats()
    if not REGISTER_TRANSPOSE or t.element_type.bitwidth != 32 or not t.is_static or tile % w:
        return None
    em = ctx.em
    c64 = em.const_i64
    perm = [int(p) for p in tr.attr("permutation")]
    et = t.element_type
    mt = S.mem_type(et)
    vt = ir.VectorType(mt, w)
    def operand_at(out, i, j):  # the operand's w elements at result rows i ..., column j
        idx = index(out, i, j)
        ptr = em.element_ptr(ctx.buffer(src), et, em.linear([idx[perm.index(d)] for d in range(t.rank)], st.shape))
        return em.b.load(em.b.bitcast(ptr, vt.as_pointer()), align=4)

    def shuffle(load_row, store_row):
        """load_row(bi, bj, r): the operand's w elements for tile column bj + r, rows
        bi ...; store_row(bi, bj, r, vec): tile row bi + r, columns bj ..."""
        for bi in range(0, tile, w):
            for bj in range(0, tile, w):
                rows = transpose_square(em.b, [load_row(bi, bj, r) for r in range(w)])
                for r in range(w):
                    store_row(bi, bj, r, rows[r])

    def at(base, row: int, col: int):  # a w-vector of a stack tile
        return em.b.bitcast(em.b.gep(base, [c64(0), c64(row * tile + col)]), vt.as_pointer())

    def move(out: list, i0, j0, body):
        b = em.b  # (the stack tiles in the function the loop lands in: a parallel task's own)
        stage, done = [em.alloca(ir.ArrayType(mt, tile * tile)) for _ in range(2)]
        if ctx.has_buffer(src):
            def load_row(bi, bj, r):
                return operand_at(out, b.add(i0, c64(bi)), b.add(j0, c64(bj + r)))
        else:  # the operand's tile computed in its own order: row r of stage is tile column r
            def fill(r):
                def one(c):
                    idx = index(out, b.add(i0, c), b.add(j0, r))
                    v = em.value_at(src, [idx[perm.index(d)] for d in range(t.rank)])
                    S.store(b, v, b.gep(stage, [c64(0), b.add(b.mul(r, c64(tile)), c)]), et)
                em.for_range(tile, one)
            em.for_range(tile, fill)

            def load_row(bi, bj, r):
                return b.load(at(stage, bj + r, bi), align=4)
        if op is tr or _reshaped(op, tr):  # the tile's rows are the result's (in the same order)
            def dst_at(i, j):
                ptr = em.element_ptr(ctx.buffer(op.results[0]), et, em.linear(index(out, i, j), t.shape))
                return b.bitcast(ptr, vt.as_pointer())
            shuffle(load_row, lambda bi, bj, r, v: b.store(v, dst_at(b.add(i0, c64(bi + r)), b.add(j0, c64(bj))), align=4))
            return
        shuffle(load_row, lambda bi, bj, r, v: b.store(v, at(done, bi + r, bj), align=4))
        here = {}

        def read(idx):  # tr at op's own index inside the tile: from the stack tile
            if len(idx) != len(here["idx"]) or any(x is not y for x, y in zip(idx, here["idx"])):
                return None
            return S.load(b, b.gep(done, [c64(0), here["at"]]), et)

        def row(li):
            i = b.add(i0, li)

            def col(lj):
                here["idx"] = index(out, i, b.add(j0, lj))
                here["at"] = b.add(b.mul(li, c64(tile)), lj)
                body(here["idx"])
            em.for_range(tile, col)
        em.tiles[tr.results[0]] = read
        try:
            em.for_range(tile, row)
        finally:
            del em.tiles[tr.results[0]]
    return move


# Rows of at most this many elements are reduced by straight code (Emitter.loop_nest's
# unroll), which the SLP vectorizer packs: a softmax over rows of 8 (a router over 8
# experts, mixture weights) ran its exponentials one at a time in a loop of 8 trips. LLVM's
# loop vectorizer takes loops of 16 trips or more: those stay loops (a Hessian's
# [545, 256, 16] loop, unrolled, lost its vectors: 0.73 -> 3.8 ms)
SHORT_ROW = 15
SHORT_ROW_WORK = 1024  # ...while the straight code holds at most this many ops (compile time)...
SHORT_ROW_MIN_ELEMENTS = 1 << 15  # ...and the kernel has this many elements: a small one (an MLP's
# [256, 10] logits) runs in microseconds either way, and its straight code cost LLVM ~10 ms


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
    from axle.backends.cpu.kernels import _extreme_lanes, _lanewise_extreme, _selected
    lanes = _extreme_lanes(red, dims, in_t)
    if lanes and keep is None and _selected(ctx, inputs[0]):
        _lanewise_extreme(ctx, red, acc, lanes, inputs, kept, out_idx, dims, in_t)
        em.scalars[red.results[0]] = acc.slots[0]
        return

    short = (int(np.prod([in_t.shape[d] for d in dims], dtype=np.int64)) <= SHORT_ROW
             and int(np.prod(in_t.shape, dtype=np.int64)) >= SHORT_ROW_MIN_ELEMENTS)
    pending: list = []  # a short row's stores into keep, made after all its loads (below)

    def inner(red_idx):
        full: list = [None] * in_t.rank
        for d, i in zip(kept, out_idx):
            full[d] = i
        for d, i in zip(dims, red_idx):
            full[d] = i
        values = [em.value_at(v, full) for v in inputs]
        if keep is not None:  # at the input's row-major position: the same in keep (_row_kept)
            et = _ty(keep).element_type
            ptr = em.element_ptr(ctx.buffer(keep), et, em.linear(full, in_t.shape))
            if short:  # (a store between two loads that may alias it keeps them unpacked)
                pending.append((values[0], ptr, et))
            else:
                S.store(em.b, values[0], ptr, et)
        if reassoc:
            b = em.b
            total = b.fadd(b.load(acc.slots[0]), values[0])
            total.flags.append("reassoc")
            b.store(total, acc.slots[0])
        else:
            acc.combine(values)
    if reassoc and keep is None and len(dims) >= 2:  # (a batch norm's statistics: cascaded)
        cascaded_rows(ctx, acc, inputs[0], kept, out_idx, dims, in_t)
    else:
        em.loop_nest([in_t.shape[d] for d in dims], inner, unroll=SHORT_ROW if short else 0)
        for v, ptr, et in pending:  # each at its own element's position, loaded before
            S.store(em.b, v, ptr, et)
    em.scalars[red.results[0]] = acc.slots[0]

"""Index boxes: a loop kernel cut where its fused concatenates and pads change their minds.

A fused concatenate or pad chooses per element which operand (or the padding value) an
element comes from. Read at the loop's own index (x = concat(a, b)) the loop is split per
operand (elementwise.py _concat_parts); read through slices, the choice moves with the
slice: jnp.roll is a concatenate of two slices, and a stencil sums the rolls (or slices of
a padded array) in several directions, so one loop holds many concatenates, each switching
operands at another column. Emitted per element, every choice is a branch; the loop does
not vectorize (4 ns per cell of Conway's life on uint8, 2.5x XLA's time).

Each fused read is followed from the loop's index as an offset of one loop dimension
(`index = loop_index[L] + c` through elementwise ops, broadcasts, transposes, unit
reshapes, unit-stride slices, concatenates and pads). A concatenate along a dimension read
that way switches operands at known loop positions, a pad enters and leaves its padding at
known positions: those are the cuts. The loop nest runs box by box (the product of each
dimension's segments), and the emitter, told the range of each loop index in the box,
picks the one operand (or padding) a concatenate or pad can read there: no branch, and the
box vectorizes. Where the analysis stops (a gather, a strided slice, a reshape that splits
dimensions) nothing is cut; the emitter still chooses per element where a range is not
known, so a missed cut costs speed, never correctness.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.backends.cpu.registry import is_elementwise
from axle.codegen.emitter import _ty
from axle.ir.core import Operation

MAX_BOXES = 64  # more boxes than this (many cuts in several dimensions): the interior box alone (emit_boxes)
CODE_BUDGET = 2048  # fused operations in all the boxes' copies of the body together (more: the interior alone)
VECTOR = 8  # elements of a vector (f32 on AVX2) for the innermost dimension's cuts
SCALAR_SHARE = 16  # ...cut only while at most 1/16 of a row is left to scalar segments and tails
# 1/4 where the loop computes no transcendental function: choosing per element kept a
# stencil's rows scalar (LLVM threads a pad's upper bound test into the loop's exit)
SCALAR_SHARE_CHEAP = 4
MAX_VISITS = 4096  # (op, index map) pairs followed; a huge fused DAG is not cut


def cuts(ctx, op: Operation, chooses: Optional[set] = None) -> Optional[list]:
    """Per dimension of op's loop, the sorted positions (0 < p < extent) where a fused
    concatenate or pad read at an offset of that dimension changes what it reads; None
    when there are none. `chooses`, when given, gets the loop dimensions where a
    concatenate changes operands."""
    shape = list(_ty(op.results[0]).shape)
    found = [set() for _ in shape]
    chooses = set() if chooses is None else chooses
    seen: set = set()
    # per dimension of a value read: (loop dimension L, offset c, lo, hi): the value's index
    # there is loop_index[L] + c, read only while loop_index[L] is in [lo, hi); or None
    stack = [(op, tuple((d, 0, 0, n) for d, n in enumerate(shape)))]

    def push(v, m):
        if v in ctx.em.buffers or ctx.has_buffer(v) or v in ctx.em.scalars or v in ctx.em.row_windows:
            return
        o = getattr(v, "owner", None)
        if isinstance(o, Operation) and not o.regions and len(o.results) == 1 and _ty(v).is_static:
            stack.append((o, tuple(m)))

    def cut(m, k):
        if m is not None and m[2] < k - m[1] < m[3]:
            found[m[0]].add(k - m[1])

    def within(m, start, n):
        """m for an operand holding positions [start, start + n) of the value's dimension."""
        loop_dim, c, lo, hi = m
        return (loop_dim, c - start, max(lo, start - c), min(hi, start + n - c))
    while stack and len(seen) < MAX_VISITS:
        o, m = stack.pop()
        if (o, m) in seen:
            continue
        seen.add((o, m))
        name = o.name
        rt = _ty(o.results[0])
        if name == "stablehlo.concatenate":
            dim = o.attr("dimension")
            off = 0
            for v in o.operands:
                n = _ty(v).shape[dim]
                if m[dim] is None:
                    push(v, m)
                else:
                    cut(m[dim], off)
                    cut(m[dim], off + n)
                    chooses.add(m[dim][0])
                    push(v, m[:dim] + (within(m[dim], off, n),) + m[dim + 1:])
                off += n
        elif name == "stablehlo.pad":
            lo, interior = o.attr("edge_padding_low"), o.attr("interior_padding")
            st = _ty(o.operands[0])
            om = []
            for d, md in enumerate(m):
                if md is None or interior[d]:
                    om.append(None)
                    continue
                cut(md, lo[d])
                cut(md, lo[d] + st.shape[d])
                om.append(within(md, lo[d], st.shape[d]))
            push(o.operands[0], om)
        elif name == "stablehlo.slice":
            starts, strides = o.attr("start_indices"), o.attr("strides")
            push(o.operands[0], [None if md is None or st != 1 else (md[0], md[1] + s0, md[2], md[3])
                                 for md, s0, st in zip(m, starts, strides)])
        elif name == "stablehlo.broadcast_in_dim":
            st = _ty(o.operands[0])
            push(o.operands[0], [m[d] if st.shape[i] == rt.shape[d] else None
                                 for i, d in enumerate(o.attr("broadcast_dimensions"))])
        elif name == "stablehlo.transpose":
            om = [None] * len(m)
            for i, p in enumerate(o.attr("permutation")):
                om[p] = m[i]
            push(o.operands[0], om)
        elif name == "stablehlo.reverse":
            rev = set(o.attr("dimensions"))
            push(o.operands[0], [None if d in rev else md for d, md in enumerate(m)])
        elif name == "stablehlo.reshape":
            om = _unit_reshape(m, list(rt.shape), list(_ty(o.operands[0]).shape))
            if om is not None:
                push(o.operands[0], om)
        elif is_elementwise(o) or (name == "stablehlo.bitcast_convert" and _ty(o.operands[0]).shape == rt.shape
                                   and _ty(o.operands[0]).element_type.bitwidth == rt.element_type.bitwidth):
            for v in o.operands:
                if list(_ty(v).shape) == list(rt.shape):
                    push(v, m)
    if not any(found):
        return None
    return [sorted(f) for f in found]


def _unit_reshape(m, out_shape: list, in_shape: list):
    """The operand's index map of a reshape that only adds or drops unit dimensions, else None."""
    big_o = [d for d, n in enumerate(out_shape) if n != 1]
    big_i = [d for d, n in enumerate(in_shape) if n != 1]
    if [out_shape[d] for d in big_o] != [in_shape[d] for d in big_i]:
        return None
    om = [None] * len(in_shape)
    for do, di in zip(big_o, big_i):
        om[di] = m[do]
    return om


def segments(shape: list, found: list, share: int = SCALAR_SHARE) -> list:
    """Per dimension, the segments [(lo, hi)] its cuts make. The innermost dimension is cut
    only where its segments keep it vectorized: at most 1/share of a row left to scalar
    code (segments shorter than a vector, and each segment's tail). Rows of 3 (a cross
    product's components) or a column of padding before 63 under an exp (a scan's shift)
    are cheaper choosing per element, which LLVM vectorizes with selects and masked f32
    loads where it can; `share` is SCALAR_SHARE_CHEAP for loops without transcendental
    functions, whose scalar tails cost little, and 1 where a concatenate chooses along the
    innermost dimension (a roll: per element, branches between two loads that LLVM does
    not vectorize, 2-8x slower than the cut row)."""
    out = []
    for d, (n, f) in enumerate(zip(shape, found)):
        edges = [0] + list(f) + [n]
        segs = [(a, b) for a, b in zip(edges, edges[1:]) if b > a]
        if d == len(shape) - 1 and len(segs) > 1:
            scalar = sum((b - a) % VECTOR for a, b in segs)
            if scalar * share > n:
                segs = [(0, n)]
        out.append(segs)
    return out


def scalar_share(ops, concatenates: bool) -> int:
    """segments' share for a loop computing `ops`; `concatenates`: a concatenate chooses
    along its innermost dimension."""
    from axle.backends.cpu.costs import TRANSCENDENTAL
    if concatenates:
        return 1
    return SCALAR_SHARE if any(o.name in TRANSCENDENTAL for o in ops) else SCALAR_SHARE_CHEAP


def boxes(shape: list, found: list, share: int = SCALAR_SHARE) -> Optional[list]:
    """The boxes [(lo, hi) per dimension] that the cuts make of `shape` (`segments`), or
    None when there would be more than MAX_BOXES (or only one)."""
    segs_ = segments(shape, found, share)
    if int(np.prod([len(s) for s in segs_], dtype=np.int64)) > MAX_BOXES:
        return None
    if all(len(segs) == 1 for segs in segs_):
        return None
    out = [[]]
    for segs in segs_:
        out = [box + [s] for box in out for s in segs]
    return out


def interior(shape: list, found: list, share: int = SCALAR_SHARE) -> Optional[tuple]:
    """(the box of every dimension's longest segment, the slabs around it [(lo, hi) per
    dimension]: at most two per cut dimension), or None when nothing is cut."""
    segs_ = segments(shape, found, share)
    if all(len(segs) == 1 for segs in segs_):
        return None
    box = [max(segs, key=lambda s: s[1] - s[0]) for segs in segs_]
    rest = []
    for d, (lo, hi) in enumerate(box):
        for a, b in ((0, lo), (hi, shape[d])):
            if b > a:
                rest.append(box[:d] + [(a, b)] + [(0, n) for n in shape[d + 1:]])
    return box, rest


def emit_boxes(ctx, op: Operation, body, work: int) -> bool:
    """op's loop, box by box, when fused concatenates or pads cut it (see the module
    docstring); False (nothing emitted) otherwise. Boxes that differ only in the innermost
    dimension share one loop over their rows (split across threads once, the segments of
    each row one after another). Each box is a copy of the fused body: where the copies
    would hold more than CODE_BUDGET operations (a 7 x 7 bilateral filter over a reflect
    pad: 49 boxes of 514 operations, 31 s to compile), or there are more than MAX_BOXES,
    only the box of the longest segments gets its own copy; the slabs around it share
    one, with run-time bounds, choosing per element."""
    from axle.backends.cpu.parallel import split_ranges
    t = _ty(op.results[0])
    shape = list(t.shape)
    if not shape or not t.is_static:
        return False
    chooses: set = set()
    found = cuts(ctx, op, chooses)
    if not found:
        return False
    ops = [*ctx.kernels[-1].fused, op] if ctx.kernels else [op]
    n_ops = len(ops)
    share = scalar_share(ops, len(shape) - 1 in chooses)
    bx = boxes(shape, found, share)
    if bx and len(bx) * n_ops <= CODE_BUDGET:
        emit_ranged(ctx, shape, bx, body, work)
        return True
    inner = interior(shape, found, share)
    if inner is None:
        return False
    box, rest = inner
    emit_ranged(ctx, shape, [box], body, work)
    em = ctx.em
    c64 = em.const_i64

    def pick(bi, values):  # values[bi] for a run-time slab number bi
        v = c64(values[-1])
        for j in range(len(values) - 2, -1, -1):
            v = em.b.select(em.b.icmp_unsigned("==", bi, c64(j)), c64(values[j]), v)
        return v

    def slabs(lo, hi):
        def one(bi):
            bounds = [(pick(bi, [r[d][0] for r in rest]), pick(bi, [r[d][1] for r in rest])) for d in range(len(shape))]

            def nest(d, idx):
                if d == len(shape):
                    body(idx)
                else:
                    em.for_range_dynamic(bounds[d][0], bounds[d][1], lambda i: nest(d + 1, idx + [i]))
            nest(0, [])
        em.for_range_dynamic(lo, hi, one)
    volume = sum(int(np.prod([b - a for a, b in r], dtype=np.int64)) for r in rest)
    saved = em.index_ranges
    em.index_ranges = {}
    try:
        split_ranges(ctx, len(rest), volume * work, slabs)
    finally:
        em.index_ranges = saved
    return True


def emit_ranged(ctx, shape: list, bx: list, body, work: int) -> None:
    """The boxes bx, each loop index known to lie in its box's range (emitter.ranged_index)."""
    from axle.backends.cpu.parallel import outer_dim, split_loop
    em = ctx.em
    rows: dict = {}  # the outer dimensions' ranges -> the innermost segments
    for box in bx:
        rows.setdefault(tuple(box[:-1]), []).append(box[-1])
    whole = int(np.prod(shape, dtype=np.int64))
    for outer, segments_ in rows.items():
        # a box holding most of the kernel is split across threads when the kernel as a
        # whole would be (255 of 256 rows past a pad stayed serial where 256 were split)
        vol = int(np.prod([hi - lo for lo, hi in outer], dtype=np.int64)) * sum(hi - lo for lo, hi in segments_)
        box_work = -(-work * whole // vol) if 2 * vol >= whole else work

        def row(idx, outer=outer, segments_=segments_):
            full = [em.ranged_index(i, lo, hi) for i, (lo, hi) in zip(idx, outer)]
            for lo, hi in segments_:
                em.loop_nest([hi - lo], lambda j, lo=lo, hi=hi: body(full + [em.ranged_index(j[0], lo, hi)]))
        saved = em.index_ranges
        em.index_ranges = {}
        try:
            if outer:
                ext = [hi - lo for lo, hi in outer]
                split_loop(ctx, ext, outer_dim(ext), row, box_work * shape[-1])
            else:
                for lo, hi in segments_:
                    split_loop(ctx, [hi - lo], 0, lambda j, lo=lo, hi=hi: body([em.ranged_index(j[0], lo, hi)]),
                               box_work)
        finally:
            em.index_ranges = saved

"""Arg-max / arg-min reductions in vector lanes (jnp.argmax, torch's max with indices).

An argmax is a variadic reduce of (values, iota) whose body picks one of its two (value,
index) pairs. Folded element by element it is one chain through the row: a compare, two
selects and a branch-free update per element, which LLVM leaves scalar (a [256, 1024] argmax:
2.4 ns per element; a global max pool's 32 x 32 planes with indices: 1.3 ms against eager's
0.09). Here the row is folded as W interleaved partial results (element j of every chunk of W
into the j-th: LLVM packs the W independent chains into vectors), and the partials are merged
at the end, each merge applying the body to the two pairs in index order, then to the init.

That gives the sequential fold's answer exactly when the body is a *selection*: it returns
one of its two pairs, chosen by the values alone, and keeps the earlier one (the left, with
the smaller index) among equivalent values. Then the fold's answer is the first element of
the best class, and so is each partial's within its lane, and so is a merge of two partials
taken in index order. `_selection` checks this by evaluating the body (compares, boolean
logic and selects only: its result depends on the values only through how they compare,
which the sample covers: orders, equality, signed zeros, infinities, NaNs of both signs) on
every pair of sample values with the left index smaller. A value result that is read must
come from the same pair as the index (JAX's argmax picks the value with a looser predicate:
for -0.0 against +0.0 it returns the right value with the left index; its value result is
never read). The init must come first: an index init of at most 0 (iota starts at 0).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.codegen.emitter import _ty
from axle.ir.core import Operation

_BODY_OPS = ("stablehlo.compare", "stablehlo.and", "stablehlo.or", "stablehlo.not", "stablehlo.xor",
             "stablehlo.select", "stablehlo.constant", "stablehlo.return")
_FLOATS = np.array([-np.inf, -2.5, -1.0, -0.0, 0.0, 1.0, 2.5, np.inf, np.nan, -np.nan])
_INTS = [-7, -1, 0, 1, 7]


def arg_lanes(op: Operation, dims: list, in_t) -> int:
    """W (the host's vector lanes of the value type) when reduce `op` is an arg-max / arg-min
    of a row along its innermost dimension, at least 2 W long, that _lanewise_arg computes
    exactly; else 0."""
    from axle.backends.cpu.conv_runtime import vector_floats
    if len(op.results) != 2 or dims != [in_t.rank - 1] or not in_t.is_static:
        return 0
    values, index = op.operands[:2]
    vt, it = _ty(values).element_type, _ty(index).element_type
    if vt.name not in ("f32", "f64", "i32", "i64") or it.name not in ("i32", "i64"):
        return 0
    if not _iota(index, dims[0]):
        return 0
    init = _constant(op.operands[3])
    if init is None or init > 0:
        return 0
    w = vector_floats() // (2 if vt.bitwidth == 64 else 1)
    if in_t.shape[-1] < 2 * w or not _selection(op, vt, value_read=bool(op.results[0].users)):
        return 0
    return w


def _iota(v, dim: int) -> bool:
    """v counts 0, 1, ... along dim: an iota there, or a constant folded from one."""
    o = getattr(v, "owner", None)
    if not isinstance(o, Operation):
        return False
    if o.name == "stablehlo.iota":
        return int(o.attr("iota_dimension")) == dim
    if o.name != "stablehlo.constant":
        return False
    a = o.attributes["value"].array
    t = _ty(v)
    if a.size == 1 and t.shape[dim] != 1:
        return False
    a = np.broadcast_to(a.reshape(a.shape if a.ndim == t.rank else (1,) * t.rank), t.shape) if a.size == 1 \
        else a.reshape(t.shape)
    shape = [1] * t.rank
    shape[dim] = t.shape[dim]
    return bool(np.array_equal(a, np.broadcast_to(np.arange(t.shape[dim]).reshape(shape), t.shape)))


def _constant(v) -> Optional[int]:
    o = getattr(v, "owner", None)
    if not isinstance(o, Operation) or o.name != "stablehlo.constant":
        return None
    a = o.attributes["value"].array
    return int(a.reshape(-1)[0]) if a.size == 1 else None


def _selection(op: Operation, vt, value_read: bool) -> bool:
    """Whether op's body, applied to (left, right) pairs with the left index smaller, picks
    the first element of the best class of some ordering of the values (see the module
    docstring), on every pair of sample values."""
    block = op.regions[0].blocks[0]
    if any(o.name not in _BODY_OPS for o in block.operations):
        return False
    from axle.interpreter.evaluator import Evaluator
    samples = _FLOATS.astype(vt.dtype) if vt.is_float else np.array(_INTS, dtype=vt.dtype)
    n = len(samples)
    lv = np.repeat(samples, n)  # every (left, right) pair of samples
    rv = np.tile(samples, n)
    it = _ty(op.operands[1]).element_type.dtype
    li = np.full(n * n, 3, dtype=it)
    ri = np.full(n * n, 8, dtype=it)
    try:
        from types import SimpleNamespace
        outs = Evaluator(SimpleNamespace(functions={})).run_block(block, [lv, li, rv, ri], {}, None, batched=True)
    except Exception:  # noqa: BLE001  (a body the batched evaluation does not take: not ours)
        return False
    if len(outs) != 2:
        return False
    val, idx = np.asarray(outs[0]), np.asarray(outs[1])
    if val.shape != lv.shape or idx.shape != li.shape or not np.all((idx == 3) | (idx == 8)):
        return False
    left = idx == 3
    if value_read and not np.array_equal(np.where(left, lv, rv).view(np.uint8), val.view(np.uint8)):
        return False
    # the picks must be a selection by a total preorder of the samples, left on ties: the
    # relation "x beats y" (x on the right replaces y on the left) must be a strict weak
    # order, and x keeps its place against an equivalent y on its left
    beats = (~left).reshape(n, n)  # beats[a, b]: right value b replaces left value a
    for a in range(n):
        if beats[a, a]:  # an equal value on the right must not replace the left
            return False
        for b in range(n):
            if beats[a, b] and beats[b, a]:  # both beat each other: not an order
                return False
    # transitivity of "b beats a" and of equivalence (neither beats the other)
    better = beats  # better[a, b]: b is strictly better than a
    for a in range(n):
        for b in range(n):
            for c in range(n):
                if better[a, b] and better[b, c] and not better[a, c]:
                    return False
                eq_ab = not better[a, b] and not better[b, a]
                eq_bc = not better[b, c] and not better[c, b]
                if eq_ab and eq_bc and (better[a, c] or better[c, a]):
                    return False
    return True


def row_values(em, inputs: list, kept: list, out_idx: list, dim: int, i, rank: int) -> list:
    """The inputs' values at element i of the row along `dim` whose other indices are
    out_idx (over the `kept` dimensions)."""
    full: list = [None] * rank
    for d, x in zip(kept, out_idx):
        full[d] = x
    full[dim] = i
    return [em.value_at(v, full) for v in inputs]


def lanewise_arg(ctx, op: Operation, w: int, inputs: list, kept: list, out_idx: list, dims: list, in_t, inits):
    """The row's (value, index) as w partial results folded by op's body, merged in index
    order, then the init applied first; stored into op's results at out_idx."""
    from axle.codegen import scalar as S
    em = ctx.em
    b = em.b
    c64 = em.const_i64
    n = in_t.shape[-1]
    region = op.regions[0]
    args = region.blocks[0].arguments
    slots = [[em.alloca(S.reg_type(a.type.element_type)) for a in args[:2]] for _ in range(w)]

    def at(i):
        return row_values(em, inputs, kept, out_idx, dims[0], i, in_t.rank)

    for j in range(w):  # each lane starts from its first element
        for s, v in zip(slots[j], at(c64(j))):
            em.b.store(v, s)

    def chunk(c):
        base = em.b.mul(c, c64(w))
        for j in range(w):
            cur = [em.b.load(s) for s in slots[j]]
            new = em.region_scalars(region, cur + at(em.b.add(base, c64(j))))
            for s, v in zip(slots[j], new):
                em.b.store(v, s)
    em.for_range_dynamic(c64(1), c64(n // w), chunk)
    if n % w:  # the tail into lane 0 (its elements after all of lane 0's)
        def tail(i):
            cur = [em.b.load(s) for s in slots[0]]
            new = em.region_scalars(region, cur + at(i))
            for s, v in zip(slots[0], new):
                em.b.store(v, s)
        em.for_range_dynamic(c64(n - n % w), c64(n), tail)

    def merge(p, q):  # body(first, second) with first the pair of the smaller index
        bb = em.b
        pv, pi = [bb.load(s) for s in p]
        qv, qi = [bb.load(s) for s in q]
        first = bb.icmp_signed("<=", pi, qi)
        a = [bb.select(first, pv, qv), bb.select(first, pi, qi)]
        c = [bb.select(first, qv, pv), bb.select(first, qi, pi)]
        for s, v in zip(p, em.region_scalars(region, a + c)):
            bb.store(v, s)
    step = 1
    while step < w:
        for j in range(0, w, 2 * step):
            merge(slots[j], slots[j + step])
        step *= 2
    bb = em.b
    init = [em.value_at(v, []) for v in inits]
    final = em.region_scalars(region, init + [bb.load(s) for s in slots[0]])
    for v, r in zip(final, op.results):
        t = _ty(r)
        S.store(bb, v, em.element_ptr(ctx.buffer(r), t.element_type, em.linear(out_idx, t.shape)), t.element_type)

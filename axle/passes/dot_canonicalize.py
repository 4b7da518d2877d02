"""dot_general canonicalization (pass "dot-canonicalize").

Guarantees: afterwards every non-quantized `dot_general` (and legacy `dot`, which is
rewritten to dot_general) has the form backends want:
    [M, K] x [K, N] -> [M, N]           (no batch dimensions), or
    [B, M, K] x [B, K, N] -> [B, M, N]  (one batch dimension, leading)
with exactly one contracting dimension. Operands are brought there with explicit
`transpose` (only when the dimensions are out of order) and `reshape` (only when
several dimensions are merged, or a size-1 contracting dimension is added when there
was none); the result is reshaped back to the original type. Already-canonical dots
are left alone (the pass then reports no change); precision config and the result
element type are kept.
Batched matrix-vector products (one operand has no free dimensions of extent > 1) are
not dots afterwards: batched_vector_dot makes them a multiply and a reduce.
Leaves alone: quantized dot_generals.
"""
from __future__ import annotations

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Operation
from axle.ir.types import TensorType, i64
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Builder, Patterns, apply_patterns, sum_reduce

P = Patterns("dot-canonicalize")


def _ints(xs):
    return A.ArrayAttr(tuple(A.IntegerAttr(int(x)) for x in xs))


def _dense(xs):
    return A.DenseArrayAttr(i64, tuple(int(x) for x in xs))


def _prod(xs) -> int:
    return int(np.prod(xs, dtype=np.int64)) if len(xs) else 1


def dot_numbers(batch: bool, lhs_contract: int, rhs_contract: int) -> A.StructAttr:
    fields = []
    if batch:
        fields += [("lhs_batching_dimensions", _ints([0])), ("rhs_batching_dimensions", _ints([0]))]
    fields += [("lhs_contracting_dimensions", _ints([lhs_contract])),
               ("rhs_contracting_dimensions", _ints([rhs_contract]))]
    return A.StructAttr("stablehlo.dot", tuple(fields))


def _arrange(b: Builder, v, order: list, shape2: list):
    """transpose v to `order` (skipped when it is the identity), then reshape to shape2."""
    t = v.type
    if order != list(range(t.rank)):
        v = b.create("stablehlo.transpose", [v], [TensorType(tuple(t.shape[d] for d in order), t.element_type)],
                     {"permutation": A.DenseArrayAttr(i64, tuple(order))}).result
    if list(v.type.shape) != shape2:
        v = b.create("stablehlo.reshape", [v], [TensorType(tuple(shape2), t.element_type)]).result
    return v


def _is_canonical(op, lb, rb, lc, rc, lt, rt) -> bool:
    if len(lb) > 1 or len(lc) != 1:
        return False
    if lb:
        return lt.rank == 3 and rt.rank == 3 and lb == [0] and rb == [0] and lc == [2] and rc == [1]
    return lt.rank == 2 and rt.rank == 2 and lc == [1] and rc == [0]


@P.on("stablehlo.dot_general")
def batched_vector_dot(op: Operation, b: Builder):
    """A batched dot_general where one operand has no free dimensions longer than 1 (a
    matrix times a vector per batch element: capsule routing's agreement, per-example
    products) and the batch dimensions are not in front of both -> multiply by the vector
    broadcast over the matrix, then reduce(add) over the contracting dimensions, arranged
    as the dot's result: one fused pass over the matrix in its own layout (XLA's dot
    strength reduction), where canonical GEMMs of M = 1 per batch element first copied the
    matrix to put the batch dimensions in front (80 calls on a 6 MB copy: 2.5 ms against
    XLA's 0.9). Operands of one type, the result that type or an exact widening (products
    exact, as the dot's)."""
    from axle.passes.simplify import elementwise_dot
    d = elementwise_dot(op)
    if d is None:
        return None
    x, y, tx, ty, out, et, rt, (lb, rb, lc, rc) = d
    lfree = [i for i in range(tx.rank) if i not in lb and i not in lc]
    rfree = [i for i in range(ty.rank) if i not in rb and i not in rc]
    lvec = all(tx.shape[i] == 1 for i in lfree)
    rvec = all(ty.shape[i] == 1 for i in rfree)
    if not lb or not lc or not (lvec or rvec) or _prod([tx.shape[i] for i in lc]) == 1:
        return None
    if rvec and not (lvec and not rfree):  # the matrix m and the vector v
        m, tm, mb, mc, mfree, v, tv, vb, vc, vfree = x, tx, lb, lc, lfree, y, ty, rb, rc, rfree
    else:
        m, tm, mb, mc, mfree, v, tv, vb, vc, vfree = y, ty, rb, rc, rfree, x, tx, lb, lc, lfree
    if list(mb) == list(range(len(mb))) and list(vb) == list(range(len(vb))):
        return None  # batch dimensions in front: each element's matrix is one block, which
        # the skinny kernels read in place (a decode step's q . K^T, a scan's projection)
    if rt != et:
        m = b.create("stablehlo.convert", [m], [TensorType(tm.shape, rt)]).result
        v = b.create("stablehlo.convert", [v], [TensorType(tv.shape, rt)]).result
    # v without its unit free dimensions, its dimensions ordered as their places in m
    target = {**dict(zip(vb, mb)), **dict(zip(vc, mc))}
    order = sorted(target, key=lambda i: target[i])
    if vfree:
        v = b.create("stablehlo.reshape", [v], [TensorType(tuple(tv.shape[i] for i in sorted(target)), rt)]).result
    rank_of = {d: k for k, d in enumerate(sorted(target))}
    perm = [rank_of[i] for i in order]
    if perm != list(range(len(perm))):
        v = b.create("stablehlo.transpose", [v], [TensorType(tuple(tv.shape[i] for i in order), rt)],
                     {"permutation": _dense(perm)}).result
    mt = TensorType(tm.shape, rt)
    v = b.create("stablehlo.broadcast_in_dim", [v], [mt],
                 {"broadcast_dimensions": _dense(sorted(target.values()))}).result
    prod = b.create("stablehlo.multiply", [m, v], [mt]).result
    kept = [d for d in range(tm.rank) if d not in mc]
    red = sum_reduce(b, prod, sorted(mc))
    want = list(mb) + mfree  # the dot's order: batch, then the free dimensions
    perm = [kept.index(d) for d in want]
    if perm != list(range(len(perm))):
        red = b.create("stablehlo.transpose", [red], [TensorType(tuple(tm.shape[d] for d in want), rt)],
                       {"permutation": _dense(perm)}).result
    if [tm.shape[d] for d in want] != list(out.shape):  # the vector's unit free dimensions
        red = b.create("stablehlo.reshape", [red], [out]).result
    return [red]


def _contracting_order(lt, rt, lb, rb, lc, rc, lf, rf):
    """The contracting dimension pairs in the order that moves the fewest elements: the
    merged K may take them in any order (the sum is the same), and an order in which an
    operand's contracting dimensions already run as in memory needs no transpose of it
    (ragged_dot's [E, T, D] x [E, D, F] contracted over (D, E): ordered (E, D), the
    weights are used in place and the tokens move in whole rows)."""
    pairs = list(zip(lc, rc))
    options = [pairs, sorted(pairs), sorted(pairs, key=lambda p: p[1])]

    def moved(order):
        lo, ro = lb + lf + [p[0] for p in order], rb + [p[1] for p in order] + rf
        return (lo != sorted(lo)) * _prod(lt.shape) + (ro != sorted(ro)) * _prod(rt.shape)
    best = min(options, key=moved)  # the first of equals: the given order
    return [p[0] for p in best], [p[1] for p in best]


@P.on("stablehlo.dot", "stablehlo.dot_general")
def canonicalize(op: Operation, b: Builder):
    lhs, rhs = op.operands
    lt, rt, ot = lhs.type, rhs.type, op.results[0].type
    if not all(isinstance(t, TensorType) and t.is_static and not t.is_quantized for t in (lt, rt, ot)):
        return None
    if op.name == "stablehlo.dot":
        dn = {"lhs_batching_dimensions": [], "rhs_batching_dimensions": [],
              "lhs_contracting_dimensions": [lt.rank - 1], "rhs_contracting_dimensions": [0] if rt.rank else []}
        if lt.rank == 0 or rt.rank == 0:
            return None
    else:
        dn = op.attr("dot_dimension_numbers")
    lb, rb = list(dn["lhs_batching_dimensions"]), list(dn["rhs_batching_dimensions"])
    lc, rc = list(dn["lhs_contracting_dimensions"]), list(dn["rhs_contracting_dimensions"])
    if op.name == "stablehlo.dot_general" and _is_canonical(op, lb, rb, lc, rc, lt, rt):
        return None
    if op.name == "stablehlo.dot_general" and all(lt.shape[d] == 1 for d in lc):
        # one product per element (no contraction, or only over unit dimensions): a multiply
        # of the operands broadcast in their own dimensions. Canonical first, its merged
        # batch dimensions stayed as reshapes inside the multiply's fused loops (c[a, b] *
        # P[a, b, i] over [81, N]: an index division per element, 16 -> 1.5 ms)
        from axle.passes.simplify import dot_of_one_product
        done = dot_of_one_product(op, b)
        if done is not None:
            return done
    lf = [d for d in range(lt.rank) if d not in lb and d not in lc]
    rf = [d for d in range(rt.rank) if d not in rb and d not in rc]
    lc, rc = _contracting_order(lt, rt, lb, rb, lc, rc, lf, rf)
    B = _prod([lt.shape[d] for d in lb])
    M = _prod([lt.shape[d] for d in lf])
    N = _prod([rt.shape[d] for d in rf])
    K = _prod([lt.shape[d] for d in lc])
    batch = bool(lb)
    lshape = ([B] if batch else []) + [M, K]
    rshape = ([B] if batch else []) + [K, N]
    l2 = _arrange(b, lhs, lb + lf + lc, lshape)
    r2 = _arrange(b, rhs, rb + rc + rf, rshape)
    out_t = TensorType(tuple(([B] if batch else []) + [M, N]), ot.element_type)
    attrs = {"dot_dimension_numbers": dot_numbers(batch, 2 if batch else 1, 1 if batch else 0)}
    if "precision_config" in op.attributes:
        attrs["precision_config"] = op.attributes["precision_config"]
    if "algorithm" in op.attributes:
        attrs["algorithm"] = op.attributes["algorithm"]
    d = b.create("stablehlo.dot_general", [l2, r2], [out_t], attrs).result
    if list(out_t.shape) != list(ot.shape):
        d = b.create("stablehlo.reshape", [d], [ot]).result
    return [d]


@register_pass
class DotCanonicalize(Pass):
    name = "dot-canonicalize"

    def run(self, module) -> bool:
        return apply_patterns(module, P)

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
Leaves alone: quantized dot_generals.
"""
from __future__ import annotations

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Operation
from axle.ir.types import TensorType, i64
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Builder, Patterns, apply_patterns

P = Patterns("dot-canonicalize")


def _ints(xs):
    return A.ArrayAttr(tuple(A.IntegerAttr(int(x)) for x in xs))


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
    lf = [d for d in range(lt.rank) if d not in lb and d not in lc]
    rf = [d for d in range(rt.rank) if d not in rb and d not in rc]
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

"""Expansion of CHLO and composite ops into StableHLO (pass "chlo-expand").

Guarantees: afterwards no `stablehlo.composite` is left (each becomes its decomposition,
inlined), and these CHLO ops are rewritten into StableHLO with the same results:
the `chlo.broadcast_*` binary ops (numpy-style broadcasting, or explicit
`broadcast_dimensions`) into `broadcast_in_dim` + the StableHLO op; `constant`,
`constant_like`, `conj`, `square`, `tan`, `atan`, `is_inf`, `is_pos_inf`, `is_neg_inf`,
`mulhi` (for integers up to 32 bits: widen, multiply, shift), and `top_k` (a stable sort
in IEEE total order with iota indices, then a slice).
Leaves alone (kept as CHLO ops, which the interpreter implements): the special functions
whose accurate decompositions are long polynomial/rational programs — acos, acosh,
asin, asinh, atanh, cosh, sinh, erf, erfc, erf_inv, lgamma, digamma, polygamma, zeta,
bessel_i1e, next_after — plus mulhi on 64-bit integers, ragged_dot and scan.
"""
from __future__ import annotations

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Block, Operation, Region
from axle.ir.types import TensorType, element_type, i1, i32, i64
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Builder, Patterns, apply_patterns

P = Patterns("chlo-expand", erase_replaced=("stablehlo.composite",))

_BINARY = ["add", "and", "atan2", "complex", "divide", "maximum", "minimum", "multiply", "or", "power",
           "remainder", "shift_left", "shift_right_arithmetic", "shift_right_logical", "subtract", "xor"]


def _bcast(b: Builder, v, shape, dims=None):
    t = v.type
    if tuple(t.shape) == tuple(shape):
        return v
    if dims is None:  # numpy-style: align trailing dimensions
        dims = list(range(len(shape) - t.rank, len(shape)))
    return b.create("stablehlo.broadcast_in_dim", [v], [TensorType(tuple(shape), t.element_type)],
                    {"broadcast_dimensions": A.DenseArrayAttr(i64, tuple(dims))}).result


def _broadcast_operands(op, b):
    shape = op.results[0].type.shape
    if any(d is None for d in shape) or any(not v.type.is_static for v in op.operands):
        return None
    dims = op.attr("broadcast_dimensions")
    out = []
    for v in op.operands:
        d = dims if (dims is not None and v.type.rank < len(shape) and v.type.rank == len(dims)) else None
        out.append(_bcast(b, v, shape, d))
    return out


def _binary(name):
    def pattern(op, b):
        """chlo.broadcast_<op> -> broadcast_in_dim + stablehlo.<op>."""
        ops = _broadcast_operands(op, b)
        if ops is None:
            return None
        return [b.create("stablehlo." + name, ops, [op.results[0].type]).result]
    return pattern


for _n in _BINARY:
    P.on("chlo.broadcast_" + _n)(_binary(_n))


@P.on("chlo.broadcast_compare")
def _bcompare(op, b):
    """chlo.broadcast_compare -> broadcast_in_dim + stablehlo.compare."""
    ops = _broadcast_operands(op, b)
    if ops is None:
        return None
    attrs = {"comparison_direction": A.EnumAttr("stablehlo", "comparison_direction", op.attr("comparison_direction"))}
    if op.attr("compare_type") is not None:
        attrs["compare_type"] = A.EnumAttr("stablehlo", "comparison_type", op.attr("compare_type"))
    return [b.create("stablehlo.compare", ops, [op.results[0].type], attrs).result]


@P.on("chlo.broadcast_select")
def _bselect(op, b):
    """chlo.broadcast_select -> broadcast_in_dim + stablehlo.select."""
    ops = _broadcast_operands(op, b)
    return None if ops is None else [b.create("stablehlo.select", ops, [op.results[0].type]).result]


@P.on("chlo.constant")
def _constant(op, b):
    """chlo.constant -> stablehlo.constant."""
    return [b.create("stablehlo.constant", [], [op.results[0].type], {"value": op.attributes["value"]}).result]


@P.on("chlo.constant_like")
def _constant_like(op, b):
    """chlo.constant_like(x) -> a splat constant of x's type."""
    t = op.results[0].type
    if not t.is_static:
        return None
    return [b.splat(op.attr("value"), t)]


@P.on("chlo.square")
def _square(op, b):
    """square(x) -> x * x."""
    x = op.operands[0]
    return [b.create("stablehlo.multiply", [x, x], [op.results[0].type]).result]


@P.on("chlo.tan")
def _tan(op, b):
    """chlo.tan -> stablehlo.tan."""
    return [b.create("stablehlo.tan", op.operands, [op.results[0].type]).result]


@P.on("chlo.atan")
def _atan(op, b):
    """atan(x) -> atan2(x, 1) for real x."""
    x = op.operands[0]
    if not getattr(x.type.element_type, "is_float", False) or not x.type.is_static:
        return None
    one = b.splat(1, x.type)
    return [b.create("stablehlo.atan2", [x, one], [op.results[0].type]).result]


@P.on("chlo.conj")
def _conj(op, b):
    """conj(x) -> complex(real(x), -imag(x)); identity for real x."""
    x = op.operands[0]
    et = x.type.element_type
    if not getattr(et, "is_complex", False):
        return [x]
    part = x.type.with_element_type(et.component)
    re = b.create("stablehlo.real", [x], [part]).result
    im = b.create("stablehlo.imag", [x], [part]).result
    neg = b.create("stablehlo.negate", [im], [part]).result
    return [b.create("stablehlo.complex", [re, neg], [op.results[0].type]).result]


def _is_inf(sign):
    def pattern(op, b):
        """is_inf(x) -> abs(x) == inf; is_pos_inf(x) -> x == inf; is_neg_inf(x) -> x == -inf."""
        x = op.operands[0]
        if not x.type.is_static or not getattr(x.type.element_type, "is_float", False):
            return None
        v = x if sign != 0 else b.create("stablehlo.abs", [x], [x.type]).result
        inf = b.splat(-np.inf if sign < 0 else np.inf, x.type)
        return [b.create("stablehlo.compare", [v, inf], [op.results[0].type],
                         {"comparison_direction": A.EnumAttr("stablehlo", "comparison_direction", "EQ")}).result]
    return pattern


P.on("chlo.is_inf")(_is_inf(0))
P.on("chlo.is_pos_inf")(_is_inf(1))
P.on("chlo.is_neg_inf")(_is_inf(-1))


@P.on("chlo.mulhi")
def _mulhi(op, b):
    """mulhi(x, y) for N <= 32 bit ints -> high N bits of the 2N-bit product."""
    x, y = op.operands
    et = x.type.element_type
    if not x.type.is_static or not getattr(et, "is_int", False) or et.bitwidth > 32 or et.bitwidth < 8:
        return None
    wide_et = element_type(("ui" if et.is_unsigned else "i") + str(2 * et.bitwidth))
    wide = x.type.with_element_type(wide_et)
    xw = b.create("stablehlo.convert", [x], [wide]).result
    yw = b.create("stablehlo.convert", [y], [wide]).result
    p = b.create("stablehlo.multiply", [xw, yw], [wide]).result
    shift = b.splat(et.bitwidth, wide)
    hi = b.create("stablehlo.shift_right_arithmetic" if not et.is_unsigned else "stablehlo.shift_right_logical",
                  [p, shift], [wide]).result
    return [b.create("stablehlo.convert", [hi], [op.results[0].type]).result]


@P.on("chlo.top_k")
def _top_k(op, b):
    """top_k(x, k) -> stable sort (descending, IEEE total order) of (x, iota) along the last
    dimension, then the first k of each."""
    x = op.operands[0]
    t = x.type
    if not t.is_static or t.rank == 0:
        return None
    k = op.attr("k")
    last = t.rank - 1
    idx_t = TensorType(t.shape, i32)
    iota = b.create("stablehlo.iota", [], [idx_t], {"iota_dimension": A.IntegerAttr(last, i64)}).result
    scalar = TensorType((), t.element_type)
    block = Block([scalar, scalar, TensorType((), i32), TensorType((), i32)])
    direction = "GT"
    ctype = "TOTALORDER" if t.element_type.is_float else ("UNSIGNED" if (t.element_type.is_unsigned or
                                                                         t.element_type.is_bool) else "SIGNED")
    cmp = Operation("stablehlo.compare", block.arguments[:2], [TensorType((), i1)],
                    {"comparison_direction": A.EnumAttr("stablehlo", "comparison_direction", direction),
                     "compare_type": A.EnumAttr("stablehlo", "comparison_type", ctype)})
    block.append(cmp)
    block.append(Operation("stablehlo.return", cmp.results))
    sort = b.create("stablehlo.sort", [x, iota], [t, idx_t],
                    {"dimension": A.IntegerAttr(last, i64), "is_stable": A.BoolAttr(True)}, [Region([block])])
    outs = []
    for v, rt in zip(sort.results, op.result_types):
        limits = list(t.shape[:-1]) + [k]
        outs.append(b.create("stablehlo.slice", [v], [rt],
                             {"start_indices": A.DenseArrayAttr(i64, (0,) * t.rank),
                              "limit_indices": A.DenseArrayAttr(i64, tuple(limits)),
                              "strides": A.DenseArrayAttr(i64, (1,) * t.rank)}).result)
    return outs


@P.on("stablehlo.composite")
def _composite(op, b):
    """composite -> a call of its decomposition (inlined by the pass afterwards)."""
    callee = op.attributes["decomposition"]
    return list(b.create("func.call", op.operands, op.result_types, {"callee": callee}).results)


@register_pass
class ChloExpand(Pass):
    name = "chlo-expand"

    def run(self, module) -> bool:
        had_composite = any(op.name == "stablehlo.composite" for op in module.walk())
        changed = apply_patterns(module, P)
        if had_composite:
            from axle.passes.inline import Inline
            Inline().run(module)
        return changed

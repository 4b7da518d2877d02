"""The algebraic simplifier (pass "simplify"): local identities as a pattern table.

Guarantees: every rewrite computes exactly what the original computed, bit for bit,
for every element type (floats included: x + 0.0 is not x when x is -0.0, so only
x + (-0.0) folds; x * 0 never folds; x - x folds for integers only). Each pattern is one
identity with a one-line docstring. Works inside regions too.
Leaves alone: anything whose soundness would depend on values (NaN, signed zero,
overflow) and rewrites that would grow the program.
"""
from __future__ import annotations

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Operation
from axle.ir.types import TensorType, i64, int_range
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Patterns, apply_patterns

P = Patterns("simplify")


def splat(v):
    """The scalar a splat constant holds (as a numpy scalar), also through a broadcast of
    one (a large splat is not folded into a constant), else None."""
    o = getattr(v, "owner", None)
    while isinstance(o, Operation) and o.name == "stablehlo.broadcast_in_dim":
        o = getattr(o.operands[0], "owner", None)
    if isinstance(o, Operation) and o.name == "stablehlo.constant":
        a = o.attributes["value"]
        if isinstance(a, A.DenseElementsAttr) and a.array.size and (a.is_splat or a.array.size == 1):
            return a.array.reshape(-1)[0]
    return None


def _et(v):
    return v.type.element_type if isinstance(v.type, TensorType) else None


def _is(x, value) -> bool:
    """x is exactly `value` (bitwise for floats, so -0.0 differs from 0.0)."""
    if x is None:
        return False
    if isinstance(x, (np.floating,)) or getattr(x, "dtype", None) is not None and x.dtype.kind not in "iub":
        try:
            return np.array(x).tobytes() == np.array(value, dtype=x.dtype).tobytes()
        except (TypeError, ValueError):
            return False
    return bool(x == value)


def _int(v) -> bool:
    et = _et(v)
    return et is not None and getattr(et, "is_int", False)


def _same(a, b) -> bool:
    return a.type == b.type


def _arr(vals):
    return A.DenseArrayAttr(i64, tuple(int(x) for x in vals))


# ---------------------------------------------------------------- arithmetic identities


@P.on("stablehlo.multiply")
def mul_one(op, b):
    """x * 1 -> x and 1 * x -> x."""
    x, y = op.operands
    if _is(splat(y), 1) and _same(x, op.results[0]):
        return [x]
    if _is(splat(x), 1) and _same(y, op.results[0]):
        return [y]
    return None


@P.on("stablehlo.add")
def add_zero(op, b):
    """x + 0 -> x for integers; x + (-0.0) -> x for floats (x + 0.0 would turn -0.0 into 0.0)."""
    x, y = op.operands
    for a, c in ((x, y), (y, x)):
        s = splat(c)
        if s is None or not _same(a, op.results[0]):
            continue
        if _int(a) and s == 0:
            return [a]
        if getattr(_et(a), "is_float", False) and _is(s, -0.0):
            return [a]
    return None


@P.on("stablehlo.subtract")
def sub_zero_or_self(op, b):
    """x - 0 -> x (also for floats: -0.0 - 0.0 is -0.0); x - x -> 0 for integers."""
    x, y = op.operands
    s = splat(y)
    if s is not None and _same(x, op.results[0]) and (
            (_int(x) and s == 0) or (getattr(_et(x), "is_float", False) and _is(s, 0.0))):
        return [x]
    if x is y and _int(x):
        return [b.splat(0, op.results[0].type)]
    return None


@P.on("stablehlo.divide")
def div_one(op, b):
    """x / 1 -> x."""
    x, y = op.operands
    if _is(splat(y), 1) and _same(x, op.results[0]):
        return [x]
    return None


@P.on("stablehlo.power")
def power_small(op, b):
    """x ** 1 -> x and x ** 2 -> x * x for floats (both correctly rounded, as pow is; a
    StarReLU's backward differentiates relu(x) ** 2 into relu(x) ** 1 * 2)."""
    x, y = op.operands
    et = _et(x)
    if et is None or not getattr(et, "is_float", False):
        return None
    c = splat(y)
    if _is(c, 1.0):
        return [x]
    if _is(c, 2.0):
        return [b.create("stablehlo.multiply", [x, x], [op.results[0].type]).result]
    return None


@P.on("stablehlo.negate", "stablehlo.not")
def involution(op, b):
    """negate(negate(x)) -> x, not(not(x)) -> x."""
    inner = getattr(op.operands[0], "owner", None)
    if isinstance(inner, Operation) and inner.name == op.name:
        return [inner.operands[0]]
    return None


@P.on("stablehlo.and", "stablehlo.or", "stablehlo.maximum", "stablehlo.minimum")
def idempotent(op, b):
    """and(x, x), or(x, x), max(x, x), min(x, x) -> x."""
    x, y = op.operands
    return [x] if x is y else None


@P.on("stablehlo.compare")
def compare_self(op, b):
    """Integer x compared with itself: EQ/LE/GE -> true, NE/LT/GT -> false."""
    x, y = op.operands
    if x is not y or not (_int(x) or getattr(_et(x), "is_bool", False)):
        return None
    value = op.attr("comparison_direction") in ("EQ", "LE", "GE")
    return [b.splat(value, op.results[0].type)]


@P.on("stablehlo.select")
def select_known(op, b):
    """select(true/false splat, a, b) -> a/b; select(p, x, x) -> x."""
    p, t, f = op.operands
    if t is f:
        return [t]
    s = splat(p)
    if s is not None and _same(t, op.results[0]):
        return [t if bool(s) else f]
    return None


# ---------------------------------------------------------------- shapes


def _owner(v, name):
    o = getattr(v, "owner", None)
    return o if isinstance(o, Operation) and o.name == name else None


@P.on("stablehlo.transpose")
def transpose(op, b):
    """transpose(transpose(x)) -> one transpose; identity transpose -> x."""
    perm = op.attr("permutation")
    inner = _owner(op.operands[0], "stablehlo.transpose")
    if inner is not None:
        first = inner.attr("permutation")
        composed = [first[p] for p in perm]
        if composed == list(range(len(composed))):
            return [inner.operands[0]]
        return [b.create("stablehlo.transpose", [inner.operands[0]], [op.results[0].type],
                         {"permutation": _arr(composed)}).result]
    if perm == list(range(len(perm))) and _same(op.operands[0], op.results[0]):
        return [op.operands[0]]
    return None


@P.on("stablehlo.reshape")
def reshape(op, b):
    """reshape(reshape(x)) -> one reshape; reshape to the same type -> x."""
    x = op.operands[0]
    if _same(x, op.results[0]):
        return [x]
    inner = _owner(x, "stablehlo.reshape")
    if inner is not None:
        if _same(inner.operands[0], op.results[0]):
            return [inner.operands[0]]
        return [b.create("stablehlo.reshape", [inner.operands[0]], [op.results[0].type]).result]
    return None


RESHAPES = Patterns("reshape-chains")
RESHAPES.on("stablehlo.reshape")(reshape)


def reshape_chains(module) -> bool:
    """Only the reshape rule above, to a fixed point (for passes that leave reshape chains)."""
    return apply_patterns(module, RESHAPES)


@P.on("stablehlo.broadcast_in_dim")
def broadcast(op, b):
    """broadcast_in_dim(broadcast_in_dim(x)) -> one; identity broadcast -> x."""
    x = op.operands[0]
    dims = op.attr("broadcast_dimensions")
    if _same(x, op.results[0]) and dims == list(range(len(dims))):
        return [x]
    inner = _owner(x, "stablehlo.broadcast_in_dim")
    if inner is not None:
        composed = [dims[d] for d in inner.attr("broadcast_dimensions")]
        return [b.create("stablehlo.broadcast_in_dim", [inner.operands[0]], [op.results[0].type],
                         {"broadcast_dimensions": _arr(composed)}).result]
    return None


def _exact_convert(src, dst) -> bool:
    """Converting src -> dst keeps every value exactly."""
    if getattr(src, "is_float", False) and getattr(dst, "is_float", False):
        order = {"f16": ("f32", "f64"), "bf16": ("f32", "f64"), "f32": ("f64",)}
        return dst.name in order.get(src.name, ())
    if getattr(src, "is_int", False) and getattr(dst, "is_int", False):
        if src.is_unsigned == dst.is_unsigned:
            return dst.bitwidth >= src.bitwidth
        return src.is_unsigned and dst.bitwidth > src.bitwidth
    if getattr(src, "is_bool", False):
        return True
    return False


@P.on("stablehlo.convert")
def convert(op, b):
    """convert to the same type -> x; convert(convert(x)) -> one convert when the first is exact."""
    x = op.operands[0]
    if _same(x, op.results[0]):
        return [x]
    inner = _owner(x, "stablehlo.convert")
    if inner is not None and _exact_convert(_et(inner.operands[0]), _et(x)) \
            and not getattr(_et(inner.operands[0]), "is_bool", False):
        return [b.create("stablehlo.convert", [inner.operands[0]], [op.results[0].type]).result]
    return None


@P.on("stablehlo.dot_general")
def dot_of_widened_ints(op, b):
    """dot_general(convert(a), convert(b)) with integers of at most 16 bits widened exactly to
    the integer result type -> dot_general of a and b (of b and a widened to int16 when
    their types differ: uint8 x int8): the same products and sums (wrapping in the result
    type). JAX writes mixed int8 / uint8 einsums so; the narrow form is what the backends'
    integer GEMMs take."""
    rt = _et(op.results[0])
    if not getattr(rt, "is_int", False) or rt.bitwidth < 32:
        return None
    narrow = []
    for v in op.operands:
        inner = _owner(v, "stablehlo.convert")
        src = _et(inner.operands[0]) if inner is not None else None
        if src is None or not getattr(src, "is_int", False) or src.bitwidth > 16 or _et(v) != rt \
                or not _exact_convert(src, rt):
            return None
        narrow.append(inner.operands[0])
    if _et(narrow[0]) != _et(narrow[1]):
        from axle.ir.types import element_type
        i16 = element_type("i16")
        if not all(_exact_convert(_et(x), i16) for x in narrow):
            return None
        narrow = [x if _et(x) == i16 else
                  b.create("stablehlo.convert", [x], [TensorType(x.type.shape, i16)]).result for x in narrow]
    return [b.create("stablehlo.dot_general", narrow, [op.results[0].type], dict(op.attributes)).result]


def elementwise_dot(op):
    """A dot_general that may be rewritten into elementwise multiplies (and sums): static,
    unquantized tensors of one integer or float type, the result that type or an exact
    widening of it (bf16 x bf16 -> f32: each product exact in the wider type, as the dot's).
    Returns (x, y, x's type, y's type, the result type, the operands' element type, the
    result's, (lhs batch, rhs batch, lhs contracting, rhs contracting)), or None."""
    x, y = op.operands
    out = op.results[0].type
    tx, ty = x.type, y.type
    if not all(isinstance(t, TensorType) and t.is_static and not t.is_quantized for t in (tx, ty, out)):
        return None
    et, rt = tx.element_type, out.element_type
    if ty.element_type != et or getattr(et, "is_bool", False):
        return None
    if not (getattr(et, "is_int", False) or getattr(et, "name", "") in ("f16", "bf16", "f32", "f64")):
        return None
    if rt != et and not _exact_convert(et, rt):
        return None
    dn = op.attr("dot_dimension_numbers")
    dims = tuple(list(dn[k]) for k in ("lhs_batching_dimensions", "rhs_batching_dimensions",
                                        "lhs_contracting_dimensions", "rhs_contracting_dimensions"))
    return x, y, tx, ty, out, et, rt, dims


@P.on("stablehlo.dot_general")
def dot_of_one_product(op, b):
    """dot_general whose contracting dimensions all have extent 1 (an outer product, a
    scaling by a broadcast vector: forward-mode and Hessian programs are full of them) ->
    multiply of the operands transposed and broadcast to the result, plus +0.0 for floats
    (the dot's sum starts from +0.0, which turns a -0.0 product into +0.0): the same single
    product per element, where the GEMM of K = 1 materialized it, now fused into its users.
    Operands of one type, the result that type or an exact widening of it (bf16 x bf16 ->
    f32: the product is exact in the wider type, as the dot's)."""
    d = elementwise_dot(op)
    if d is None:
        return None
    x, y, tx, ty, out, et, rt, (lb, rb, lc, rc) = d
    if any(tx.shape[i] != 1 for i in lc) or any(ty.shape[i] != 1 for i in rc):
        return None
    lfree = [i for i in range(tx.rank) if i not in lb and i not in lc]
    rfree = [i for i in range(ty.rank) if i not in rb and i not in rc]
    nb, nl = len(lb), len(lfree)

    def placed(v, t, batch, free, at):
        """v without its contracting dimensions, in (batch, free) order, broadcast to out."""
        keep = batch + free
        shape = [t.shape[i] for i in keep]
        order = sorted(range(len(keep)), key=lambda i: keep[i])  # keep's dims in v's order
        rank_order = [keep[i] for i in order]
        if rt != et:
            v = b.create("stablehlo.convert", [v], [TensorType(t.shape, rt)]).result
        v = b.create("stablehlo.reshape", [v], [TensorType(tuple(t.shape[i] for i in rank_order), rt)]).result
        perm = [rank_order.index(k) for k in keep]
        if perm != list(range(len(perm))):
            v = b.create("stablehlo.transpose", [v], [TensorType(tuple(shape), rt)],
                         {"permutation": _arr(perm)}).result
        dims = list(range(nb)) + [at + i for i in range(len(free))]
        return b.create("stablehlo.broadcast_in_dim", [v], [out], {"broadcast_dimensions": _arr(dims)}).result
    lhs = placed(x, tx, lb, lfree, nb)
    rhs = placed(y, ty, rb, rfree, nb + nl)
    prod = b.create("stablehlo.multiply", [lhs, rhs], [out]).result
    if getattr(rt, "is_float", False):
        zero = b.create("stablehlo.broadcast_in_dim", [b.constant(np.zeros(()), TensorType((), rt))], [out],
                        {"broadcast_dimensions": _arr([])}).result
        prod = b.create("stablehlo.add", [prod, zero], [out]).result
    return [prod]


@P.on("stablehlo.slice")
def slice_(op, b):
    """slice of the whole operand -> x; slice(slice(x)) -> one slice."""
    x = op.operands[0]
    starts, limits, strides = op.attr("start_indices"), op.attr("limit_indices"), op.attr("strides")
    if _same(x, op.results[0]) and all(s == 0 for s in starts) and all(t == 1 for t in strides):
        return [x]
    inner = _owner(x, "stablehlo.slice")
    if inner is not None:
        s1, t1 = inner.attr("start_indices"), inner.attr("strides")
        n = op.results[0].type.shape
        new_start = [a + c * t for a, c, t in zip(s1, starts, t1)]
        new_stride = [t * u for t, u in zip(t1, strides)]
        new_limit = [s + (k - 1) * st + 1 if k > 0 else s for s, k, st in zip(new_start, n, new_stride)]
        return [b.create("stablehlo.slice", [inner.operands[0]], [op.results[0].type],
                         {"start_indices": _arr(new_start), "limit_indices": _arr(new_limit),
                          "strides": _arr(new_stride)}).result]
    cat = _owner(x, "stablehlo.concatenate")
    if cat is not None and op.results[0].type.is_static and all(v.type.is_static for v in cat.operands):
        # a slice within one operand of a concatenate reads that operand (jnp.partition
        # concatenates two top_k's and a slice of it may leave one of them dead)
        d = int(cat.attr("dimension"))
        n = op.results[0].type.shape[d]
        first = starts[d]
        last = first + (n - 1) * strides[d] if n > 0 else first
        at = 0
        for v in cat.operands:
            size = v.type.shape[d]
            if at <= first and last < at + size and n > 0:
                s2, l2 = list(starts), list(limits)
                s2[d], l2[d] = first - at, last - at + 1
                return [b.create("stablehlo.slice", [v], [op.results[0].type],
                                 {"start_indices": _arr(s2), "limit_indices": _arr(l2),
                                  "strides": _arr(strides)}).result]
            at += size
    return None


@P.on("stablehlo.pad")
def pad_nothing(op, b):
    """pad with zero padding everywhere -> x."""
    if all(all(v == 0 for v in op.attr(k)) for k in ("edge_padding_low", "edge_padding_high", "interior_padding")):
        return [op.operands[0]]
    return None


@P.on("stablehlo.reverse")
def reverse_nothing(op, b):
    """reverse along dimensions of size <= 1 only -> x (PyTorch's convolution gradients flip the
    spatial dimensions of 1x1 kernels)."""
    shape = op.operands[0].type.shape
    if all(shape[d] is not None and shape[d] <= 1 for d in op.attr("dimensions")):
        return [op.operands[0]]
    return None


@P.on("stablehlo.concatenate")
def concat(op, b):
    """concatenate of one operand -> x; zero-sized operands dropped."""
    dim = op.attr("dimension")
    keep = [v for v in op.operands if v.type.shape[dim] != 0]
    if len(keep) == 1 and _same(keep[0], op.results[0]):
        return [keep[0]]
    if keep and len(keep) < len(op.operands):
        return [b.create("stablehlo.concatenate", keep, [op.results[0].type], dict(op.attributes)).result]
    return None


@P.on("stablehlo.iota")
def iota_size_one(op, b):
    """iota along a dimension of size 1 -> zeros."""
    t = op.results[0].type
    if t.shape[op.attr("iota_dimension")] == 1 and not t.is_quantized:
        return [b.splat(0, t)]
    return None


_IDENTITY = {"stablehlo.add": "zero", "stablehlo.multiply": 1, "stablehlo.maximum": "min",
             "stablehlo.minimum": "max", "stablehlo.and": "ones", "stablehlo.or": "zero"}


def _is_identity(init, body_op: str, et) -> bool:
    want = _IDENTITY.get(body_op)
    s = splat(init)
    if want is None or s is None:
        return False
    if et.is_float:
        table = {"zero": -0.0, "min": -np.inf, "max": np.inf, 1: 1.0}
        return want in table and _is(s, table[want])
    if getattr(et, "is_complex", False):  # only -0 - 0j under add (x * (1 + 0j) is not x for infinite x)
        c = complex(s)
        return want == "zero" and _is(np.float64(c.real), -0.0) and _is(np.float64(c.imag), -0.0)
    if et.is_bool:
        return {"zero": False, "ones": True, "min": False, "max": True, 1: True}[want] == bool(s)
    lo, hi = int_range(et)
    table = {"zero": 0, "min": lo, "max": hi, 1: 1, "ones": -1 if et.is_signed else hi}
    return int(s) == table[want]


@P.on("stablehlo.reduce")
def reduce_trivial(op, b):
    """reduce over dimensions of size 1 with the body's identity as init -> reshape."""
    if len(op.results) != 1:
        return None
    x, init = op.operands
    body = op.regions[0].blocks[0].operations
    if len(body) != 2 or body[1].name != "stablehlo.return" or len(body[0].operands) != 2:
        return None
    args = op.regions[0].blocks[0].arguments
    if set(body[0].operands) != {args[0], args[1]} or body[1].operands[0] is not body[0].results[0]:
        return None
    if not all(x.type.shape[d] == 1 for d in op.attr("dimensions")):
        return None
    if x.type.element_type != op.results[0].type.element_type:
        return None
    if not _is_identity(init, body[0].name, x.type.element_type):
        return None
    return [b.create("stablehlo.reshape", [x], [op.results[0].type]).result]


@register_pass
class Simplify(Pass):
    name = "simplify"

    def run(self, module) -> bool:
        return apply_patterns(module, P)

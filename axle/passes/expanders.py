"""Expanders: passes a backend asks for to rewrite ops it does not implement directly.

- "expand-logistic": logistic(x) -> 1 / (1 + exp(-x)).
- "expand-batch-norm": batch_norm_inference / batch_norm_training / batch_norm_grad into
  elementwise ops, broadcasts and reductions, following the formulas of the spec.
- "expand-complex": add, subtract, negate and multiply of complex tensors into operations
  on real and imaginary parts (real, imag, complex).
Each guarantees that the expansion computes the op's value by the formula the spec
gives; rounding may differ from a fused implementation by a few ulps.
Not expanded yet: stablehlo.einsum / unary_einsum (the interpreter implements them) and
stablehlo.rng.
"""
from __future__ import annotations

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Block, Operation, Region
from axle.ir.types import TensorType, i64
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Builder, Patterns, apply_patterns

LOGISTIC = Patterns("expand-logistic")
BATCH_NORM = Patterns("expand-batch-norm")
COMPLEX = Patterns("expand-complex")


def _v(b, name, operands, t=None, **attrs):
    return b.create(name, operands, None if t is None else [t], attrs or None).result


@LOGISTIC.on("stablehlo.logistic")
def logistic(op, b):
    """logistic(x) -> 1 / (1 + exp(-x))."""
    x = op.operands[0]
    t = x.type
    if not t.is_static or not getattr(t.element_type, "is_float", False):
        return None
    one = b.splat(1, t)
    e = _v(b, "stablehlo.exponential", [_v(b, "stablehlo.negate", [x], t)], t)
    return [_v(b, "stablehlo.divide", [one, _v(b, "stablehlo.add", [one, e], t)], t)]


def _bcast_feature(b, v, t: TensorType, feature: int):
    return b.create("stablehlo.broadcast_in_dim", [v], [t],
                    {"broadcast_dimensions": A.DenseArrayAttr(i64, (feature,))}).result


def _sum_except(b, x, feature: int):
    """Sum of x over every dimension but `feature` (a rank-1 result)."""
    t = x.type
    et = t.element_type
    scalar = TensorType((), et)
    block = Block([scalar, scalar])
    add = Operation("stablehlo.add", block.arguments, [scalar])
    block.append(add)
    block.append(Operation("stablehlo.return", add.results))
    dims = tuple(d for d in range(t.rank) if d != feature)
    zero = b.splat(0, scalar)
    return b.create("stablehlo.reduce", [x, zero], [TensorType((t.shape[feature],), et)],
                    {"dimensions": A.DenseArrayAttr(i64, dims)}, [Region([block])]).result


def _count(t: TensorType, feature: int) -> int:
    return int(np.prod([d for k, d in enumerate(t.shape) if k != feature], dtype=np.int64))


@BATCH_NORM.on("stablehlo.batch_norm_inference")
def bn_inference(op, b):
    """(x - mean) / sqrt(variance + epsilon) * scale + offset, per feature."""
    x, scale, offset, mean, var = op.operands
    t = x.type
    if not t.is_static:
        return None
    f = op.attr("feature_index")
    ft = scale.type
    _, _, norm = _normalize(b, op, x, mean, var, f, t, ft)
    scaled = _v(b, "stablehlo.multiply", [norm, _bcast_feature(b, scale, t, f)], t)
    return [_v(b, "stablehlo.add", [scaled, _bcast_feature(b, offset, t, f)], t)]


def _normalize(b, op, x, mean, var, f, t, ft):
    """(std, centered, norm) = (sqrt(var + eps), x - mean, centered / std) per feature."""
    eps = b.splat(op.attr("epsilon"), ft)
    std = _v(b, "stablehlo.sqrt", [_v(b, "stablehlo.add", [var, eps], ft)], ft)
    centered = _v(b, "stablehlo.subtract", [x, _bcast_feature(b, mean, t, f)], t)
    norm = _v(b, "stablehlo.divide", [centered, _bcast_feature(b, std, t, f)], t)
    return std, centered, norm


@BATCH_NORM.on("stablehlo.batch_norm_training")
def bn_training(op, b):
    """mean and variance over all but the feature dimension, then batch_norm_inference."""
    x, scale, offset = op.operands
    t = x.type
    if not t.is_static:
        return None
    f = op.attr("feature_index")
    ft = scale.type
    n = b.splat(_count(t, f), ft)
    mean = _v(b, "stablehlo.divide", [_sum_except(b, x, f), n], ft)
    centered = _v(b, "stablehlo.subtract", [x, _bcast_feature(b, mean, t, f)], t)
    var = _v(b, "stablehlo.divide", [_sum_except(b, _v(b, "stablehlo.multiply", [centered, centered], t), f), n], ft)
    _, _, norm = _normalize(b, op, x, mean, var, f, t, ft)
    out = _v(b, "stablehlo.add", [_v(b, "stablehlo.multiply", [norm, _bcast_feature(b, scale, t, f)], t),
                                  _bcast_feature(b, offset, t, f)], t)
    return [out, mean, var]


@BATCH_NORM.on("stablehlo.batch_norm_grad")
def bn_grad(op, b):
    """The spec's formulas: grad_scale = sum(dy * norm), grad_offset = sum(dy),
    grad_x = scale / std * (dy - grad_offset / N - norm * grad_scale / N)."""
    x, scale, mean, var, dy = op.operands
    t = x.type
    if not t.is_static:
        return None
    f = op.attr("feature_index")
    ft = scale.type
    std, _, norm = _normalize(b, op, x, mean, var, f, t, ft)
    grad_scale = _sum_except(b, _v(b, "stablehlo.multiply", [dy, norm], t), f)
    grad_offset = _sum_except(b, dy, f)
    n = b.splat(_count(t, f), ft)
    mean_go = _bcast_feature(b, _v(b, "stablehlo.divide", [grad_offset, n], ft), t, f)
    mean_gs = _bcast_feature(b, _v(b, "stablehlo.divide", [grad_scale, n], ft), t, f)
    inner = _v(b, "stablehlo.subtract", [_v(b, "stablehlo.subtract", [dy, mean_go], t),
                                          _v(b, "stablehlo.multiply", [norm, mean_gs], t)], t)
    factor = _bcast_feature(b, _v(b, "stablehlo.divide", [scale, std], ft), t, f)
    return [_v(b, "stablehlo.multiply", [factor, inner], t), grad_scale, grad_offset]


def _parts(b, v):
    part = v.type.with_element_type(v.type.element_type.component)
    return _v(b, "stablehlo.real", [v], part), _v(b, "stablehlo.imag", [v], part), part


def _complex_op(kind):
    def pattern(op, b):
        """Complex arithmetic on (real, imag) pairs."""
        t = op.results[0].type
        if not t.is_static or not getattr(t.element_type, "is_complex", False):
            return None
        parts = [_parts(b, v) for v in op.operands]
        pt = parts[0][2]
        if kind == "negate":
            re, im = (_v(b, "stablehlo.negate", [p], pt) for p in parts[0][:2])
        elif kind in ("add", "subtract"):
            name = "stablehlo." + kind
            re = _v(b, name, [parts[0][0], parts[1][0]], pt)
            im = _v(b, name, [parts[0][1], parts[1][1]], pt)
        else:  # multiply: (a + bi)(c + di) = (ac - bd) + (ad + bc)i
            (a, bb, _), (c, d, _) = parts
            re = _v(b, "stablehlo.subtract", [_v(b, "stablehlo.multiply", [a, c], pt),
                                              _v(b, "stablehlo.multiply", [bb, d], pt)], pt)
            im = _v(b, "stablehlo.add", [_v(b, "stablehlo.multiply", [a, d], pt),
                                         _v(b, "stablehlo.multiply", [bb, c], pt)], pt)
        return [_v(b, "stablehlo.complex", [re, im], t)]
    return pattern


for _k in ("add", "subtract", "negate", "multiply"):
    COMPLEX.on("stablehlo." + _k)(_complex_op(_k))


def _expander(name, patterns):
    cls = type(name.title().replace("-", ""), (Pass,), {
        "name": name, "run": lambda self, module: apply_patterns(module, patterns),
        "__doc__": f"Pass '{name}' (see the module docstring)."})
    return register_pass(cls)


ExpandLogistic = _expander("expand-logistic", LOGISTIC)
ExpandBatchNorm = _expander("expand-batch-norm", BATCH_NORM)
ExpandComplex = _expander("expand-complex", COMPLEX)

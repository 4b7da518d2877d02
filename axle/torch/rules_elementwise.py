"""Elementwise ATen ops. Low-precision floats (f16, bf16) are computed in f32 and rounded
once per op, as PyTorch's CPU kernels do ("opmath")."""
from __future__ import annotations

import math

from axle.torch.dtypes import COMPLEX
from axle.torch.registry import (RULES, Unsupported, V, aten, is_float, opmath, promote, rule,
                                 shape_of, value)


def _binary(kind):
    def lower(em, out, a, b, alpha=None):
        shape, dt = shape_of(out), out[1]
        ct = opmath(dt)
        x, y = value(em, a, ct, shape), value(em, b, ct, shape)
        if alpha is not None and alpha != 1:
            y = em.binary("multiply", y, em.const(alpha, ct, shape))
        return em.convert(em.binary(kind, x, y), dt)
    return lower


for _kind, _ops in {
    "add": (aten.add.Tensor, aten.add.Scalar),
    "subtract": (aten.sub.Tensor, aten.sub.Scalar),
    "multiply": (aten.mul.Tensor, aten.mul.Scalar),
    "maximum": (aten.maximum.default,),
    "minimum": (aten.minimum.default,),
    "atan2": (aten.atan2.default,),
}.items():
    rule(*_ops)(_binary(_kind))


@rule(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(em, out, a, b, alpha=1):
    return _binary("subtract")(em, out, b, a if alpha == 1 else _scaled(em, out, a, alpha))


def _scaled(em, out, a, alpha):
    return em.binary("multiply", value(em, a, opmath(out[1]), shape_of(out)), em.const(alpha, opmath(out[1]), shape_of(out)))


@rule(aten.div.Tensor, aten.div.Scalar)
def _div(em, out, a, b):
    return _binary("divide")(em, out, a, b)


@rule(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div_mode(em, out, a, b, rounding_mode=None):
    shape, dt = shape_of(out), out[1]
    if rounding_mode is None:
        return _div(em, out, a, b)
    ct = opmath(dt)
    x, y = value(em, a, ct, shape), value(em, b, ct, shape)
    q = em.binary("divide", x, y)
    if is_float(ct):
        q = em.unary("floor", q) if rounding_mode == "floor" else _trunc(em, q)
    elif rounding_mode == "floor":  # integer division truncates: step down when signs differ
        r = em.binary("remainder", x, y)
        zero = em.const(0, ct, shape)
        fix = em.binary("and", em.compare("NE", r, zero),
                        em.compare("NE", em.compare("LT", r, zero), em.compare("LT", y, zero)))
        q = em.select(fix, em.binary("subtract", q, em.const(1, ct, shape)), q)
    return em.convert(q, dt)


def _trunc(em, x):
    return em.select(em.compare("LT", x, em.const(0, x.dtype, x.shape)), em.unary("ceil", x), em.unary("floor", x))


@rule(aten.remainder.Tensor, aten.remainder.Scalar)
def _remainder(em, out, a, b):
    shape, dt = shape_of(out), out[1]
    ct = opmath(dt)
    x, y = value(em, a, ct, shape), value(em, b, ct, shape)
    r = em.binary("remainder", x, y)
    zero = em.const(0, ct, shape)
    fix = em.binary("and", em.compare("NE", r, zero),
                    em.compare("NE", em.compare("LT", r, zero), em.compare("LT", y, zero)))
    return em.convert(em.select(fix, em.binary("add", r, y), r), dt)


@rule(aten.fmod.Tensor, aten.fmod.Scalar)
def _fmod(em, out, a, b):
    return _binary("remainder")(em, out, a, b)


@rule(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar)
def _pow(em, out, a, b):
    shape, dt = shape_of(out), out[1]
    ct = opmath(dt)
    x = value(em, a, ct, shape)
    if not isinstance(b, V) and b == 2:
        return em.convert(em.binary("multiply", x, x), dt)
    if not isinstance(b, V) and b == 0.5 and is_float(ct):
        return em.convert(em.unary("sqrt", x), dt)
    return em.convert(em.binary("power", x, value(em, b, ct, shape)), dt)


def _unary(kind):
    def lower(em, out, a):
        dt = out[1]
        ct = opmath(dt)
        if kind == "abs" and isinstance(a, V) and a.dtype in COMPLEX:  # |z|: a real result
            return em.convert(em.op("stablehlo.abs", [a], a.shape, COMPLEX[a.dtype]), dt)
        return em.convert(em.unary(kind, value(em, a, ct)), dt)
    return lower


for _kind, _ops in {
    "exponential": (aten.exp.default,), "exponential_minus_one": (aten.expm1.default,),
    "log": (aten.log.default,), "log_plus_one": (aten.log1p.default,), "sqrt": (aten.sqrt.default,),
    "rsqrt": (aten.rsqrt.default,), "sine": (aten.sin.default,), "cosine": (aten.cos.default,),
    "tanh": (aten.tanh.default,), "logistic": (aten.sigmoid.default,), "abs": (aten.abs.default,),
    "negate": (aten.neg.default,), "floor": (aten.floor.default,), "ceil": (aten.ceil.default,),
    "round_nearest_even": (aten.round.default,), "tan": (aten.tan.default,),
    "sign": (aten.sign.default,),
}.items():
    rule(*_ops)(_unary(_kind))


def _chlo(kind):
    def lower(em, out, a):
        dt = out[1]
        x = value(em, a, opmath(dt))
        return em.convert(em.op(f"chlo.{kind}", [x], x.shape, x.dtype), dt)
    return lower


for _kind, _op in {"erf": aten.erf.default, "asin": aten.asin.default, "acos": aten.acos.default,
                   "atan": aten.atan.default, "sinh": aten.sinh.default, "cosh": aten.cosh.default,
                   "asinh": aten.asinh.default, "acosh": aten.acosh.default, "atanh": aten.atanh.default,
                   "erf_inv": aten.erfinv.default}.items():
    rule(_op)(_chlo(_kind))


@rule(aten.trunc.default)
def _trunc_rule(em, out, a):
    if not is_float(out[1]):
        return a
    x = value(em, a, opmath(out[1]))
    return em.convert(_trunc(em, x), out[1])


@rule(aten.reciprocal.default)
def _reciprocal(em, out, a):
    x = value(em, a, opmath(out[1]))
    return em.convert(em.binary("divide", em.const(1, x.dtype, x.shape), x), out[1])


@rule(aten.log2.default)
def _log2(em, out, a):
    x = value(em, a, opmath(out[1]))
    return em.convert(em.binary("multiply", em.unary("log", x), em.const(1 / math.log(2), x.dtype, x.shape)), out[1])


@rule(aten.log10.default)
def _log10(em, out, a):
    x = value(em, a, opmath(out[1]))
    return em.convert(em.binary("multiply", em.unary("log", x), em.const(1 / math.log(10), x.dtype, x.shape)), out[1])


@rule(aten.exp2.default)
def _exp2(em, out, a):
    x = value(em, a, opmath(out[1]))
    return em.convert(em.binary("power", em.const(2, x.dtype, x.shape), x), out[1])


@rule(aten.relu.default)
def _relu(em, out, a):
    return em.binary("maximum", a, em.const(0, a.dtype, a.shape))


@rule(aten.gelu.default)
def _gelu(em, out, a, approximate="none"):
    x = value(em, a, opmath(out[1]))
    c = lambda v: em.const(v, x.dtype, x.shape)
    if approximate == "tanh":
        inner = em.binary("multiply", c(math.sqrt(2 / math.pi)),
                          em.binary("add", x, em.binary("multiply", c(0.044715),
                                                        em.binary("multiply", x, em.binary("multiply", x, x)))))
        t = em.unary("tanh", inner)
    else:
        t = em.op("chlo.erf", [em.binary("multiply", x, c(1 / math.sqrt(2)))], x.shape, x.dtype)
    y = em.binary("multiply", em.binary("multiply", c(0.5), x), em.binary("add", c(1), t))
    return em.convert(y, out[1])


@rule(aten.gelu_backward.default)
def _gelu_backward(em, out, g, a, approximate="none"):
    x, gy = value(em, a, opmath(out[1])), value(em, g, opmath(out[1]))
    c = lambda v: em.const(v, x.dtype, x.shape)
    mul, add = (lambda p, q: em.binary("multiply", p, q)), (lambda p, q: em.binary("add", p, q))
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        x2 = mul(x, x)
        t = em.unary("tanh", mul(c(k), add(x, mul(c(0.044715), mul(x2, x)))))
        dt = mul(mul(c(k), add(c(1), mul(c(3 * 0.044715), x2))), em.binary("subtract", c(1), mul(t, t)))
        d = add(mul(c(0.5), add(c(1), t)), mul(mul(c(0.5), x), dt))
    else:
        cdf = mul(c(0.5), add(c(1), em.op("chlo.erf", [mul(x, c(1 / math.sqrt(2)))], x.shape, x.dtype)))
        pdf = mul(c(1 / math.sqrt(2 * math.pi)), em.unary("exponential", mul(c(-0.5), mul(x, x))))
        d = add(cdf, mul(x, pdf))
    return em.convert(mul(gy, d), out[1])


@rule(aten.silu.default)
def _silu(em, out, a):
    x = value(em, a, opmath(out[1]))
    return em.convert(em.binary("multiply", x, em.unary("logistic", x)), out[1])


def _compare(direction):
    def lower(em, out, a, b):
        ct = promote(a, b)
        shape = shape_of(out)
        return em.compare(direction, value(em, a, ct, shape), value(em, b, ct, shape))
    return lower


for _dir, _name in {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge"}.items():
    rule(getattr(aten, _name).Tensor, getattr(aten, _name).Scalar)(_compare(_dir))


@rule(aten.isnan.default)
def _isnan(em, out, a):
    return em.compare("NE", a, a) if is_float(a.dtype) else em.const(False, "i1", a.shape)


@rule(aten.isinf.default)
def _isinf(em, out, a):
    if not is_float(a.dtype):
        return em.const(False, "i1", a.shape)
    return em.compare("EQ", em.unary("abs", a), em.const(math.inf, a.dtype, a.shape))


def _logical(kind):
    def lower(em, out, a, b):
        shape = shape_of(out)
        r = em.binary(kind, value(em, a, "i1", shape), value(em, b, "i1", shape))
        return em.convert(r, out[1])
    return lower


rule(aten.logical_and.default)(_logical("and"))
rule(aten.logical_or.default)(_logical("or"))
rule(aten.logical_xor.default)(_logical("xor"))


@rule(aten.logical_not.default)
def _logical_not(em, out, a):
    return em.convert(em.unary("not", value(em, a, "i1")), out[1])


def _bitwise(kind):
    def lower(em, out, a, b):
        shape, dt = shape_of(out), out[1]
        return em.binary(kind, value(em, a, dt, shape), value(em, b, dt, shape))
    return lower


for _kind in ("and", "or", "xor"):
    rule(getattr(aten, f"bitwise_{_kind}").Tensor, getattr(aten, f"bitwise_{_kind}").Scalar)(_bitwise(_kind))


def _shift(left: bool):
    """Bit shifts of integers: StableHLO's shifts give what eager's do for every amount (one
    at least the type's width, or negative, which is a large unsigned amount: 0 to the
    left, the sign's fill to the right), arithmetic right shifts for signed types."""
    def lower(em, out, a, b):
        shape, dt = shape_of(out), out[1]
        if is_float(dt) or dt == "i1":
            raise Unsupported(f"a bit shift of {dt}")
        kind = "shift_left" if left else ("shift_right_logical" if dt.startswith("ui") else "shift_right_arithmetic")
        return em.binary(kind, value(em, a, dt, shape), value(em, b, dt, shape))
    return lower


rule(aten.__lshift__.Scalar, aten.__lshift__.Tensor, aten.bitwise_left_shift.Tensor,
     aten.bitwise_left_shift.Tensor_Scalar, aten.bitwise_left_shift.Scalar_Tensor)(_shift(True))
rule(aten.__rshift__.Scalar, aten.__rshift__.Tensor, aten.bitwise_right_shift.Tensor,
     aten.bitwise_right_shift.Tensor_Scalar, aten.bitwise_right_shift.Scalar_Tensor)(_shift(False))


@rule(aten.bitwise_not.default)
def _bitwise_not(em, out, a):
    return em.unary("not", a)


@rule(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(em, out, cond, a, b):
    shape, dt = shape_of(out), out[1]
    return em.select(value(em, cond, "i1", shape), value(em, a, dt, shape), value(em, b, dt, shape))


@rule(aten.clamp.default, aten.clamp.Tensor, aten.clamp_min.default, aten.clamp_min.Tensor)
def _clamp(em, out, a, lo=None, hi=None):
    shape, dt = shape_of(out), out[1]
    ct = opmath(dt)
    x = value(em, a, ct, shape)
    if lo is not None:
        x = em.binary("maximum", x, value(em, lo, ct, shape))
    if hi is not None:
        x = em.binary("minimum", x, value(em, hi, ct, shape))
    return em.convert(x, dt)


@rule(aten.clamp_max.default, aten.clamp_max.Tensor)
def _clamp_max(em, out, a, hi):
    return _clamp(em, out, a, None, hi)


@rule(aten.hardtanh.default)
def _hardtanh(em, out, a, lo=-1.0, hi=1.0):
    return _clamp(em, out, a, lo, hi)


@rule(aten.leaky_relu.default)
def _leaky_relu(em, out, a, slope=0.01):
    x = value(em, a, opmath(out[1]))
    neg = em.binary("multiply", x, em.const(slope, x.dtype, x.shape))
    return em.convert(em.select(em.compare("GT", x, em.const(0, x.dtype, x.shape)), x, neg), out[1])


@rule(aten.elu.default)
def _elu(em, out, a, alpha=1.0, scale=1.0, input_scale=1.0):
    """scale * x where x > 0, else scale * alpha * (exp(x * input_scale) - 1) (SELU, CELU)."""
    x = value(em, a, opmath(out[1]))
    c = lambda v: em.const(v, x.dtype, x.shape)  # noqa: E731
    neg = em.binary("multiply", c(alpha), em.unary("exponential_minus_one", em.binary("multiply", x, c(input_scale))))
    y = em.select(em.compare("GT", x, c(0)), x, neg)
    return em.convert(y if scale == 1 else em.binary("multiply", y, c(scale)), out[1])


def _fma(em, out, a, b, c):
    """a * b + c rounded once (inductor's prims.fma): f32 through f64, where the product of
    two f32 values is exact (then two roundings of the sum, as close as StableHLO gets)."""
    dtype = out[1]
    wide = "f64" if dtype == "f32" else dtype
    spec = (out[0], wide)
    prod = RULES[aten.mul.Tensor](em, spec, value(em, a, wide), value(em, b, wide))
    r = RULES[aten.add.Tensor](em, spec, prod, value(em, c, wide))
    return em.convert(r, dtype) if wide != dtype else r


RULES.by_name["prims.fma.default"] = _fma

"""CHLO ops: the higher-level math functions and the broadcasting binary ops of the `chlo`
dialect (stablehlo/dialect/ChloOps.td).

CHLO has no spec of its own: each op means what its decomposition to StableHLO
(chlo-legalize-to-stablehlo) computes. Here the math functions are evaluated in float64 /
complex128 with numpy and scipy.special and rounded once to the result type; the special
cases that the decompositions define differently from scipy (poles of digamma, lgamma(-inf),
the domain of zeta and polygamma) are applied explicitly.

`chlo.broadcast_*` ops broadcast their operands numpy-style (or through `broadcast_dimensions`,
which maps the lower-rank operand's dimensions into the result's) and then evaluate the
StableHLO op of the same name.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.special

from axle.interpreter.numerics import from_raw_bits, raw_bits, round_float, to_compute, wrap_int
from axle.interpreter.ops_elementwise import (
    arith, elementwise, float_map, operand_et, result_et,
)
from axle.interpreter.registry import OpCall, lookup, register
from axle.ir.types import f32 as F32

# ---------------------------------------------------------------- unary math functions
#
# cosh and sinh of real numbers follow their decompositions step by step: the expected values
# of the conformance tests come from them and differ from the correctly rounded ones by a few
# ulps.


def is_pole(x):
    """x is zero or a negative integer."""
    return (x <= 0) & (x == np.floor(x))


def lgamma(x):
    """log|Gamma(x)|; +inf at the poles and at +-inf. Near zero (|x| < 2^-60) it is
    -log|x| to within an ulp: scipy's gammaln overflows to inf below ~5.6e-309."""
    with np.errstate(divide="ignore"):
        tiny = -np.log(np.abs(x))
    return np.where(np.isinf(x), np.inf, np.where(np.abs(x) < 2.0**-60, tiny, scipy.special.gammaln(x)))


def digamma(x):
    """Gamma'(x) / Gamma(x); NaN at the poles (zero and the negative integers)."""
    return np.where(is_pole(x), np.nan, scipy.special.psi(x))


def stepwise(et):
    """Rounding to the type a CHLO decomposition computes in: `et`, but at least f32."""
    work = et if et.bitwidth >= 32 else F32
    return lambda v: round_float(v, work).astype(np.float64)


def cosh_decomposed(x, et):
    """cosh as its decomposition computes it, rounding every step:
    e^(x + log(1/2)) + e^(log(1/2) - x)."""
    r = stepwise(et)
    log_half = r(np.log(0.5))
    return r(r(np.exp(r(x + log_half))) + r(np.exp(r(log_half - x))))


def sinh_decomposed(x, et):
    """sinh as its decomposition computes it, rounding every step:
    (expm1(x) + expm1(x) / (expm1(x) + 1)) / 2 for |x| < 1, else
    e^(x + log(1/2)) - e^(log(1/2) - x)."""
    r = stepwise(et)
    log_half = r(np.log(0.5))
    large = r(r(np.exp(r(x + log_half))) - r(np.exp(r(log_half - x))))
    expm1 = r(np.expm1(x))
    small = r(0.5 * r(expm1 + r(expm1 / r(expm1 + 1.0))))
    return np.where(np.abs(x) < 1, small, large)


_MATH_FUNCTIONS = {
    # op: (real function, complex function or None when there is none)
    "acos": (np.arccos, np.arccos),
    "acosh": (np.arccosh, np.arccosh),
    "asin": (np.arcsin, np.arcsin),
    "asinh": (np.arcsinh, np.arcsinh),
    "atan": (np.arctan, np.arctan),
    "atanh": (np.arctanh, np.arctanh),
    "tan": (np.tan, np.tan),
    "bessel_i1e": (scipy.special.i1e, None),
    "digamma": (digamma, None),
    "erf": (scipy.special.erf, None),
    "erfc": (scipy.special.erfc, None),
    "erf_inv": (scipy.special.erfinv, None),
    "lgamma": (lgamma, None),
}


def _register_math_function(op: str, real_fn, complex_fn) -> None:
    @elementwise(f"chlo.{op}")
    def impl(call, operand):
        if operand_et(call).is_complex and complex_fn is None:
            raise call.error(f"chlo.{op} of complex numbers is not supported")
        return float_map(call, real_fn, complex_fn)


for _op, (_real, _complex) in _MATH_FUNCTIONS.items():
    _register_math_function(_op, _real, _complex)


@elementwise("chlo.cosh")
def cosh(call, operand):
    et = operand_et(call)
    if et.is_complex:
        return float_map(call, np.cosh, np.cosh)
    return round_float(cosh_decomposed(to_compute(operand, et), et), result_et(call))


@elementwise("chlo.sinh")
def sinh(call, operand):
    et = operand_et(call)
    if et.is_complex:
        return float_map(call, np.sinh, np.sinh)
    return round_float(sinh_decomposed(to_compute(operand, et), et), result_et(call))


@elementwise("chlo.conj")
def conj(call, operand):
    return np.conj(operand).astype(result_et(call).dtype)


@elementwise("chlo.square")
def square(call, operand):
    return arith(call, lambda x: x * x, lambda x: x * x, operand)


@elementwise("chlo.is_inf")
def is_inf(call, operand):
    return np.isinf(to_compute(operand, operand_et(call)))


@elementwise("chlo.is_pos_inf")
def is_pos_inf(call, operand):
    return to_compute(operand, operand_et(call)) == np.inf


@elementwise("chlo.is_neg_inf")
def is_neg_inf(call, operand):
    return to_compute(operand, operand_et(call)) == -np.inf


# ---------------------------------------------------------------- binary math functions


def zeta(x, q):
    """Hurwitz zeta(x, q) = sum_n (q + n)^-x, with the decomposition's domain: NaN for x < 1
    and for q <= 0 with x not an integer; at the poles (q a non-positive integer) +inf for even
    x and NaN otherwise; +inf for x = 1."""
    result = scipy.special.zeta(x, q)
    x_is_int = x == np.floor(x)
    result = np.where(x < 1, np.nan, result)
    result = np.where((q <= 0) & ~x_is_int, np.nan, result)
    even = x_is_int & (np.fmod(x, 2) == 0)
    result = np.where(is_pole(q), np.where(even, np.inf, np.nan), result)
    return np.where(x == 1, np.inf, result)


def polygamma(n, x):
    """The n-th derivative of digamma: (-1)^(n+1) n! zeta(n+1, x); NaN unless n is a natural
    number."""
    sign = 2 * np.fmod(n, 2) - 1
    result = sign * np.exp(lgamma(n + 1)) * zeta(n + 1, x)
    result = np.where(n == 0, digamma(x), result)
    return np.where((n != np.floor(n)) | (n < 0), np.nan, result)


@elementwise("chlo.zeta")
def zeta_op(call, x, q):
    return arith(call, None, zeta, x, q)


@elementwise("chlo.polygamma")
def polygamma_op(call, n, x):
    return arith(call, None, polygamma, n, x)


@elementwise("chlo.next_after")
def next_after(call, x, y):
    """The next representable value after x in the direction of y (C's nextafter), on the
    bit patterns so that it works for every float type."""
    et = operand_et(call)
    xv, yv = to_compute(x, et), to_compute(y, et)
    xb, yb = raw_bits(x, et), raw_bits(y, et)
    sign_mask = np.uint64(1 << (et.bitwidth - 1))
    x_abs, y_abs = xb & ~sign_mask, yb & ~sign_mask
    toward_zero = (x_abs > y_abs) | ((xb & sign_mask) != (yb & sign_mask))
    step = np.where(toward_zero, xb - np.uint64(1), xb + np.uint64(1))
    smallest_toward_y = (yb & sign_mask) | np.uint64(1)
    result = np.where(x_abs == 0, np.where(y_abs == 0, yb, smallest_toward_y), step)
    result = np.where(xv == yv, yb, result)
    result = from_raw_bits(result, et)
    nan = np.isnan(xv) | np.isnan(yv)
    return np.where(nan, np.array(np.nan).astype(et.dtype), result).astype(et.dtype)


@elementwise("chlo.mulhi")
def mulhi(call, lhs, rhs):
    """The high half of the double-width product of two integers."""
    et = operand_et(call)
    width = et.bitwidth
    if width < 64:
        wide_type = np.uint64 if et.is_unsigned else np.int64
        product = lhs.astype(wide_type) * rhs.astype(wide_type)
        return wrap_int(product >> wide_type(width), result_et(call))
    return wrap_int(high_64(lhs, rhs, signed=not et.is_unsigned), result_et(call))


def high_64(lhs, rhs, signed: bool):
    """High 64 bits of the 128-bit product of 64-bit integers, from 32-bit halves."""
    a = np.asarray(lhs).astype(np.uint64)
    b = np.asarray(rhs).astype(np.uint64)
    low_mask, shift = np.uint64(0xFFFFFFFF), np.uint64(32)
    a_lo, a_hi, b_lo, b_hi = a & low_mask, a >> shift, b & low_mask, b >> shift
    lo_lo, hi_lo = a_lo * b_lo, a_hi * b_lo
    lo_hi, hi_hi = a_lo * b_hi, a_hi * b_hi
    middle = (lo_lo >> shift) + (hi_lo & low_mask) + (lo_hi & low_mask)
    high = hi_hi + (hi_lo >> shift) + (lo_hi >> shift) + (middle >> shift)
    if signed:  # (a - 2^64 [a<0]) (b - 2^64 [b<0]) changes the high half by -b and -a
        high = high - np.where(a >> np.uint64(63) == 1, b, 0).astype(np.uint64)
        high = high - np.where(b >> np.uint64(63) == 1, a, 0).astype(np.uint64)
    return high


# ---------------------------------------------------------------- constants


def full_of(value, shape, et) -> np.ndarray:
    """A tensor of `shape` filled with the scalar attribute `value` of type `et`."""
    if isinstance(value, np.ndarray):
        return np.broadcast_to(value.astype(et.dtype), shape).copy()
    if et.is_bool:
        return np.full(shape, bool(value))
    if et.is_int:
        return wrap_int(np.full(shape, int(value), dtype=np.uint64 if et.is_unsigned else np.int64), et)
    if et.is_complex:
        return np.full(shape, complex(value), dtype=et.dtype)
    return round_float(np.full(shape, float(value)), et)


@register("chlo.constant_like")
def constant_like(call: OpCall):
    return full_of(call.attrs["value"], np.shape(call.operands[0]), result_et(call))


@register("chlo.constant")
def constant(call: OpCall):
    value = np.asarray(call.attrs["value"])
    return value.astype(result_et(call).dtype)


# ---------------------------------------------------------------- broadcasting ops


def broadcast_operands(operands, broadcast_dimensions=None):
    """Numpy-style broadcasting; `broadcast_dimensions` places the dimensions of a lower-rank
    operand at the given result dimensions (its other dimensions have size 1)."""
    arrays = [np.asarray(x) for x in operands]
    rank = max(a.ndim for a in arrays)
    if broadcast_dimensions is not None:
        placed = []
        for a in arrays:
            if 0 < a.ndim < rank:
                shape = [1] * rank
                for i, d in enumerate(broadcast_dimensions):
                    shape[d] = a.shape[i]
                a = a.reshape(shape)
            placed.append(a)
        arrays = placed
    return [np.ascontiguousarray(a) for a in np.broadcast_arrays(*arrays)]


_BROADCAST_OPS = {
    "broadcast_add": "stablehlo.add",
    "broadcast_atan2": "stablehlo.atan2",
    "broadcast_divide": "stablehlo.divide",
    "broadcast_maximum": "stablehlo.maximum",
    "broadcast_minimum": "stablehlo.minimum",
    "broadcast_multiply": "stablehlo.multiply",
    "broadcast_next_after": "chlo.next_after",
    "broadcast_polygamma": "chlo.polygamma",
    "broadcast_power": "stablehlo.power",
    "broadcast_remainder": "stablehlo.remainder",
    "broadcast_shift_left": "stablehlo.shift_left",
    "broadcast_shift_right_arithmetic": "stablehlo.shift_right_arithmetic",
    "broadcast_shift_right_logical": "stablehlo.shift_right_logical",
    "broadcast_subtract": "stablehlo.subtract",
    "broadcast_zeta": "chlo.zeta",
    "broadcast_and": "stablehlo.and",
    "broadcast_or": "stablehlo.or",
    "broadcast_xor": "stablehlo.xor",
    "broadcast_complex": "stablehlo.complex",
    "broadcast_compare": "stablehlo.compare",
    "broadcast_select": "stablehlo.select",
}


def _register_broadcast_op(chlo_name: str, target: str) -> None:
    @register(f"chlo.{chlo_name}")
    def impl(call: OpCall):
        operands = broadcast_operands(call.operands, call.attrs.get("broadcast_dimensions"))
        attrs = dict(call.attrs)
        if attrs.get("compare_type") == "NOTYPE":
            del attrs["compare_type"]
        return lookup(target)(dataclasses.replace(call, operands=operands, attrs=attrs))


for _name, _target in _BROADCAST_OPS.items():
    _register_broadcast_op(_name, _target)

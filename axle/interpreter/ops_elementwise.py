"""StableHLO elementwise ops (spec.md, one section per op).

Every op is a short function over whole numpy arrays. The arithmetic rules come from
numerics.py: integers are computed in 64 bits and wrapped to their width, floats in float64 and
complex numbers in complex128, rounded once to the result type (as the reference interpreter
does). Operands have equal shapes, except the scalar `pred` of select and the scalar `min`/`max`
of clamp, which numpy broadcasting covers.

Quantized tensors are handled by ops_quant.py (the spec's `dequantize_op_quantize` around these
implementations).

Behaviour the spec leaves open follows XLA (and the reference interpreter where it defines one):
integer division by zero gives -1 (all bits set) and remainder by zero gives the dividend;
INT_MIN / -1 gives INT_MIN and INT_MIN % -1 gives 0; shift amounts are read as unsigned and
amounts >= the bit width give 0 (shift_left, shift_right_logical) or the sign fill
(shift_right_arithmetic); float -> integer conversion truncates, saturates and maps NaN to 0.
"""
from __future__ import annotations

import functools

import numpy as np

from axle.ir.types import QuantizedType
from axle.interpreter.numerics import (
    cast_to, convert as convert_values, element_type, float_info, from_raw_bits, raw_bits,
    round_float, sign_extend, to_compute, to_wide_int, total_order_key, wrap_int,
)
from axle.interpreter.registry import OpCall, register

# ---------------------------------------------------------------- registration


def elementwise(*names: str):
    """Registers an elementwise op `fn(call, *operands)`. numpy's warnings for the IEEE special
    cases (overflow, division by zero, invalid) are silenced: the results are the defined ones.
    Quantized operands never reach `fn`: the evaluator sends such calls through
    ops_quant.quantized_call, which dequantizes them (or passes storage values)."""

    def deco(fn):
        @functools.wraps(fn)
        def impl(call: OpCall):
            with np.errstate(all="ignore"):
                return np.asarray(fn(call, *call.operands))

        register(*names)(impl)
        return impl

    return deco


def operand_et(call: OpCall, i: int = 0):
    return element_type(call.operand_types[i])


def result_et(call: OpCall):
    return element_type(call.result_types[0])


# ---------------------------------------------------------------- shared kernels


def arith(call: OpCall, int_fn, float_fn, *operands):
    """`int_fn` on operands widened to 64-bit integers, or `float_fn` on float64/complex128
    values, cast back to the result type."""
    et = operand_et(call)
    if et.is_int or et.is_bool:
        return cast_to(int_fn(*(to_wide_int(x, et) for x in operands)), result_et(call))
    return round_float(float_fn(*(to_compute(x, et) for x in operands)), result_et(call))


def float_map(call: OpCall, real_fn, complex_fn=None):
    """A float/complex function computed in float64/complex128 and rounded to the result."""
    et = operand_et(call)
    values = to_compute(call.operands[0], et)
    fn = complex_fn if et.is_complex and complex_fn is not None else real_fn
    return round_float(fn(values), result_et(call))


def all_ones(dtype) -> np.ndarray:
    return np.array(-1).astype(dtype)


def ieee_maximum(a, b):
    """IEEE-754 maximum: NaN propagates, +0 > -0."""
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero, np.where(np.signbit(a), b, a), np.maximum(a, b))


def ieee_minimum(a, b):
    """IEEE-754 minimum: NaN propagates, -0 < +0."""
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero, np.where(np.signbit(a), a, b), np.minimum(a, b))


def complex_greater(a, b):
    """Lexicographic (real, imag) a > b."""
    return np.where(a.real == b.real, a.imag > b.imag, a.real > b.real)


def complex_less(a, b):
    return np.where(a.real == b.real, a.imag < b.imag, a.real < b.real)


def max_values(a, b, et):
    """maximum on values already in compute form (wide ints, float64, complex128)."""
    if et.is_complex:
        return np.where(complex_greater(a, b), a, b)
    if et.is_float:
        return ieee_maximum(a, b)
    return np.maximum(a, b)


def min_values(a, b, et):
    if et.is_complex:
        return np.where(complex_less(a, b), a, b)
    if et.is_float:
        return ieee_minimum(a, b)
    return np.minimum(a, b)


def compute_form(x, et):
    """Values of `et` as wide ints (ints, bools) or float64/complex128."""
    if et.is_int or et.is_bool:
        return to_wide_int(x, et)
    return to_compute(x, et)


# ---------------------------------------------------------------- arithmetic


@elementwise("stablehlo.add")
def add(call, lhs, rhs):
    if operand_et(call).is_bool:
        return lhs | rhs
    return arith(call, np.add, np.add, lhs, rhs)


@elementwise("stablehlo.subtract")
def subtract(call, lhs, rhs):
    return arith(call, np.subtract, np.subtract, lhs, rhs)


@elementwise("stablehlo.multiply")
def multiply(call, lhs, rhs):
    if operand_et(call).is_bool:
        return lhs & rhs
    return arith(call, np.multiply, np.multiply, lhs, rhs)


def int_divide(call, lhs, rhs):
    """Quotient rounded toward zero, and the matching remainder (sign of the dividend).
    Division by zero gives all ones and remainder by zero the dividend; the one overflowing
    case, INT_MIN / -1, wraps to INT_MIN with remainder 0."""
    et = operand_et(call)
    a, b = to_wide_int(lhs, et), to_wide_int(rhs, et)
    by_zero = b == 0
    b = np.where(by_zero, 1, b).astype(a.dtype)
    remainder = np.fmod(a, b).astype(a.dtype)  # C's %: the sign of the dividend
    quotient = ((a - remainder) // b).astype(a.dtype)  # an exact division
    quotient = np.where(by_zero, all_ones(a.dtype), quotient).astype(a.dtype)
    remainder = np.where(by_zero, a, remainder).astype(a.dtype)
    return quotient, remainder


@elementwise("stablehlo.divide")
def divide(call, lhs, rhs):
    et = operand_et(call)
    if et.is_int:
        return wrap_int(int_divide(call, lhs, rhs)[0], result_et(call))
    return arith(call, None, np.divide, lhs, rhs)


@elementwise("stablehlo.remainder")
def remainder(call, lhs, rhs):
    et = operand_et(call)
    if et.is_int:
        return wrap_int(int_divide(call, lhs, rhs)[1], result_et(call))
    if et.is_complex:
        raise call.error("remainder of complex numbers is not defined by the spec (#997)")
    return arith(call, None, np.fmod, lhs, rhs)


def int_power(base, exponent, et):
    """Integer exponentiation by squaring with wrap-around. A negative exponent gives 0
    unless |base| = 1 (the reference interpreter's rule)."""
    b = to_wide_int(base, et)
    e = to_wide_int(exponent, et)
    result = np.ones_like(b)
    zero_result = np.zeros(np.broadcast(b, e).shape, dtype=bool)
    if et.is_signed:
        negative = e < 0
        zero_result = negative & (b != 1) & (b != -1)
        e = np.where(negative, -e, e)
    e = e.astype(np.uint64)
    while np.any(e != 0):
        odd = (e & np.uint64(1)) == 1
        result = np.where(odd, result * b, result).astype(b.dtype)
        b = b * b
        e = e >> np.uint64(1)
    return np.where(zero_result, 0, result).astype(result.dtype)


@elementwise("stablehlo.power")
def power(call, lhs, rhs):
    et = operand_et(call)
    if et.is_int:
        return wrap_int(int_power(lhs, rhs, et), result_et(call))
    return arith(call, None, np.power, lhs, rhs)


@elementwise("stablehlo.negate")
def negate(call, operand):
    return arith(call, np.negative, np.negative, operand)


@elementwise("stablehlo.abs")
def abs_(call, operand):
    return arith(call, np.abs, np.abs, operand)


@elementwise("stablehlo.sign")
def sign(call, operand):
    et = operand_et(call)
    if et.is_int:
        return wrap_int(np.sign(to_wide_int(operand, et)), result_et(call))
    x = to_compute(operand, et)
    if et.is_complex:
        magnitude = np.abs(x)
        result = np.where(magnitude == 0, 0j, x / np.where(magnitude == 0, 1, magnitude))
        result = np.where(np.isnan(x.real) | np.isnan(x.imag), complex(np.nan, np.nan), result)
    else:
        result = np.where(x == 0, x, np.sign(x))  # keeps the sign of zero; NaN stays NaN
    return round_float(result, result_et(call))


@elementwise("stablehlo.maximum")
def maximum(call, lhs, rhs):
    et = operand_et(call)
    result = max_values(compute_form(lhs, et), compute_form(rhs, et), et)
    return cast_to(result, result_et(call))


@elementwise("stablehlo.minimum")
def minimum(call, lhs, rhs):
    et = operand_et(call)
    result = min_values(compute_form(lhs, et), compute_form(rhs, et), et)
    return cast_to(result, result_et(call))


@elementwise("stablehlo.clamp")
def clamp(call, min_, operand, max_):
    et = operand_et(call, 1)
    x = compute_form(operand, et)
    lo, hi = compute_form(min_, et), compute_form(max_, et)
    result = min_values(max_values(x, lo, et), hi, et)
    return cast_to(np.broadcast_to(result, np.shape(operand)), result_et(call))


# ---------------------------------------------------------------- float functions


def log_plus_one_complex(z):
    return np.log(np.hypot(z.real + 1, z.imag)) + 1j * np.arctan2(z.imag, z.real + 1)


def cbrt_complex(z):
    theta = np.arctan2(z.imag, z.real) / 3.0
    return (z.real ** 2 + z.imag ** 2) ** (1.0 / 6.0) * (np.cos(theta) + 1j * np.sin(theta))


def logistic_fn(x):
    return 1.0 / (1.0 + np.exp(-x))


def round_half_away(x):
    truncated = np.trunc(x)
    return np.where(np.abs(x - truncated) >= 0.5, truncated + np.sign(x), truncated)


_FLOAT_FUNCTIONS = {
    # op: (real function, complex function or None when numpy's serves both)
    "cbrt": (np.cbrt, cbrt_complex),
    "ceil": (np.ceil, None),
    "cosine": (np.cos, None),
    "exponential": (np.exp, None),
    "exponential_minus_one": (np.expm1, lambda z: np.exp(z) - 1),
    "floor": (np.floor, None),
    "log": (np.log, None),
    "log_plus_one": (np.log1p, log_plus_one_complex),
    "logistic": (logistic_fn, None),
    "round_nearest_afz": (round_half_away, None),
    "round_nearest_even": (np.rint, None),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), None),
    "sine": (np.sin, None),
    "sqrt": (np.sqrt, None),
    "tan": (np.tan, None),
    "tanh": (np.tanh, None),
}


def _register_float_function(op: str, real_fn, complex_fn) -> None:
    @elementwise(f"stablehlo.{op}")
    def impl(call, operand):
        return float_map(call, real_fn, complex_fn)

    impl.__name__ = op


for _op, (_real, _complex) in _FLOAT_FUNCTIONS.items():
    _register_float_function(_op, _real, _complex)


def atan2_complex(y, x):
    """atan2(y, x) = -i * log((x + i*y) / sqrt(x*x + y*y)), as the reference interpreter."""
    return -1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))


@elementwise("stablehlo.atan2")
def atan2(call, lhs, rhs):
    fn = atan2_complex if operand_et(call).is_complex else np.arctan2
    return arith(call, None, fn, lhs, rhs)


@elementwise("stablehlo.is_finite")
def is_finite(call, x):
    return np.isfinite(to_compute(x, operand_et(call)))


@elementwise("stablehlo.reduce_precision")
def reduce_precision(call, operand):
    et = operand_et(call)
    exponent_bits, mantissa_bits = call.attrs["exponent_bits"], call.attrs["mantissa_bits"]
    bits = reduce_precision_bits(raw_bits(operand, et), et, exponent_bits, mantissa_bits)
    result = from_raw_bits(bits, et)
    nan_result = operand if mantissa_bits > 0 else np.array(np.inf).astype(et.dtype)
    return np.where(np.isnan(to_compute(operand, et)), nan_result, result).astype(et.dtype)


def reduce_precision_bits(bits, et, exponent_bits: int, mantissa_bits: int):
    """The spec's reduce_precision on bit patterns: round the mantissa to `mantissa_bits`
    (ties to even), then flush exponents out of the `exponent_bits` range to +-0 / +-Inf."""
    u = np.uint64
    width = et.bitwidth
    src_exponent_bits, src_mantissa_bits = float_info(et)
    if mantissa_bits < src_mantissa_bits:
        dropped = src_mantissa_bits - mantissa_bits
        last_kept_bit = u(1 << dropped)
        last_bit = (bits & last_kept_bit) >> u(dropped)
        rounding_bias = last_bit + u((1 << (dropped - 1)) - 1)
        bits = (bits + rounding_bias) & ~u((1 << dropped) - 1)
    if exponent_bits < src_exponent_bits:
        sign_mask = u(1 << (width - 1))
        exponent_mask = u(((1 << src_exponent_bits) - 1) << src_mantissa_bits)
        bias = (1 << (src_exponent_bits - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        max_exponent = u((bias + reduced_bias) << src_mantissa_bits)
        min_exponent = u((bias - reduced_bias) << src_mantissa_bits)
        exponent = bits & exponent_mask
        signed_zero = bits & sign_mask
        bits = np.where(exponent > max_exponent, signed_zero | exponent_mask, bits)
        bits = np.where(exponent <= min_exponent, signed_zero, bits)
    return bits & u((1 << width) - 1)


# ---------------------------------------------------------------- complex parts


@elementwise("stablehlo.complex")
def complex_(call, lhs, rhs):
    result = np.empty(np.shape(lhs), dtype=result_et(call).dtype)
    result.real, result.imag = lhs, rhs
    return result


@elementwise("stablehlo.real")
def real(call, operand):
    return np.real(operand).astype(result_et(call).dtype)


@elementwise("stablehlo.imag")
def imag(call, operand):
    if operand_et(call).is_complex:
        return np.imag(operand).astype(result_et(call).dtype)
    return np.zeros(np.shape(operand), dtype=result_et(call).dtype)


# ---------------------------------------------------------------- comparison and selection


_DIRECTIONS = {
    "EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal,
    "GT": np.greater, "LE": np.less_equal, "LT": np.less,
}


def compare_values(lhs, rhs, et, direction: str, compare_type: str | None):
    """stablehlo.compare on values of element type `et`."""
    if et.is_complex:
        a, b = to_compute(lhs, et), to_compute(rhs, et)
        equal = (a.real == b.real) & (a.imag == b.imag)
        if direction in ("EQ", "NE"):
            return equal if direction == "EQ" else ~equal
        before = complex_less(a, b) if direction in ("LT", "LE") else complex_greater(a, b)
        return before | equal if direction in ("LE", "GE") else before
    if et.is_float:
        if compare_type == "TOTALORDER":
            a, b = total_order_key(lhs, et), total_order_key(rhs, et)
        else:
            a, b = to_compute(lhs, et), to_compute(rhs, et)
    elif et.is_int and compare_type == "UNSIGNED":
        a, b = raw_bits(lhs, et), raw_bits(rhs, et)
    elif et.is_int and compare_type == "SIGNED":
        a, b = sign_extend(raw_bits(lhs, et), et.bitwidth), sign_extend(raw_bits(rhs, et), et.bitwidth)
    else:
        a, b = to_wide_int(lhs, et), to_wide_int(rhs, et)
    return _DIRECTIONS[direction](a, b)


@elementwise("stablehlo.compare")
def compare(call, lhs, rhs):
    return compare_values(lhs, rhs, operand_et(call), call.attrs["comparison_direction"],
                          call.attrs.get("compare_type"))


@elementwise("stablehlo.select")
def select(call, pred, on_true, on_false):
    return np.where(pred, on_true, on_false).astype(np.asarray(on_true).dtype)


# ---------------------------------------------------------------- logical and bitwise


def bitwise(call, fn, *operands):
    et = operand_et(call)
    if et.is_bool:
        return fn(*(np.asarray(x, np.bool_) for x in operands))
    return wrap_int(fn(*(to_wide_int(x, et) for x in operands)), result_et(call))


@elementwise("stablehlo.and")
def and_(call, lhs, rhs):
    return bitwise(call, np.bitwise_and, lhs, rhs)


@elementwise("stablehlo.or")
def or_(call, lhs, rhs):
    return bitwise(call, np.bitwise_or, lhs, rhs)


@elementwise("stablehlo.xor")
def xor(call, lhs, rhs):
    return bitwise(call, np.bitwise_xor, lhs, rhs)


@elementwise("stablehlo.not")
def not_(call, operand):
    return bitwise(call, np.invert, operand)


@elementwise("stablehlo.popcnt")
def popcnt(call, operand):
    et = operand_et(call)
    return wrap_int(np.bitwise_count(raw_bits(operand, et)).astype(np.int64), result_et(call))


@elementwise("stablehlo.count_leading_zeros")
def count_leading_zeros(call, operand):
    et = operand_et(call)
    bits = raw_bits(operand, et)
    bit_length = np.zeros(bits.shape, dtype=np.int64)
    for i in range(et.bitwidth):
        bit_length += (bits >> np.uint64(i)) != 0
    return wrap_int(et.bitwidth - bit_length, result_et(call))


def shift_amounts(rhs, et):
    """Shift amounts read as unsigned, and whether each is >= the bit width."""
    amount = raw_bits(rhs, et)
    too_far = amount >= et.bitwidth
    return np.where(too_far, 0, amount).astype(np.uint64), too_far


@elementwise("stablehlo.shift_left")
def shift_left(call, lhs, rhs):
    et = operand_et(call)
    amount, too_far = shift_amounts(rhs, et)
    shifted = raw_bits(lhs, et) << amount
    return from_raw_bits(np.where(too_far, np.uint64(0), shifted), result_et(call))


@elementwise("stablehlo.shift_right_logical")
def shift_right_logical(call, lhs, rhs):
    et = operand_et(call)
    amount, too_far = shift_amounts(rhs, et)
    shifted = raw_bits(lhs, et) >> amount
    return from_raw_bits(np.where(too_far, np.uint64(0), shifted), result_et(call))


@elementwise("stablehlo.shift_right_arithmetic")
def shift_right_arithmetic(call, lhs, rhs):
    et = operand_et(call)
    amount, too_far = shift_amounts(rhs, et)
    amount = np.where(too_far, et.bitwidth - 1, amount).astype(np.int64)
    value = sign_extend(raw_bits(lhs, et), et.bitwidth)
    return wrap_int(value >> amount, result_et(call))


# ---------------------------------------------------------------- conversions


@elementwise("stablehlo.convert")
def convert(call, operand):
    return convert_values(operand, operand_et(call), result_et(call))


def to_bit_matrix(x, et):
    """Bits of every element, least significant first: shape x.shape + (bitwidth,). A complex
    element is its real part's bits followed by its imaginary part's."""
    x = np.asarray(x)
    if et.is_complex:
        parts = np.stack([x.real, x.imag], axis=-1)
        return to_bit_matrix(parts, et.component).reshape(x.shape + (et.bitwidth,))
    bits = raw_bits(x, et)
    positions = np.arange(et.bitwidth, dtype=np.uint64)
    return ((bits[..., None] >> positions) & np.uint64(1)).astype(np.uint8)


def from_bit_matrix(matrix, et):
    """Inverse of to_bit_matrix: the last axis (bitwidth long) becomes one element."""
    if et.is_complex:
        half = et.bitwidth // 2
        parts = from_bit_matrix(matrix.reshape(matrix.shape[:-1] + (2, half)), et.component)
        result = np.empty(matrix.shape[:-1], dtype=et.dtype)
        result.real, result.imag = parts[..., 0], parts[..., 1]
        return result
    positions = np.arange(et.bitwidth, dtype=np.uint64)
    bits = np.bitwise_or.reduce(matrix.astype(np.uint64) << positions, axis=-1)
    return from_raw_bits(bits, et)


@elementwise("stablehlo.bitcast_convert")
def bitcast_convert(call, operand):
    """The bits of the whole tensor, read in order as elements of the result type: a wider
    result takes its bits from the operand's last dimension, a narrower one adds a dimension."""
    src = operand_et(call)
    dst = element_type(call.result_types[0])
    if isinstance(dst, QuantizedType):
        dst = dst.storage_type
    if isinstance(src, QuantizedType):
        src = src.storage_type
    matrix = to_bit_matrix(operand, src)
    shape = np.shape(operand)
    if dst.bitwidth < src.bitwidth:
        shape = shape + (src.bitwidth // dst.bitwidth,)
    elif dst.bitwidth > src.bitwidth:
        shape = shape[:-1]
    return from_bit_matrix(matrix.reshape(shape + (dst.bitwidth,)), dst)

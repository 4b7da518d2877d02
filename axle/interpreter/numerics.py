"""Numeric helpers shared by the interpreter's op implementations.

The interpreter stores a tensor as a numpy array of its element type's dtype (ml_dtypes for
bf16, the f8/f6/f4 families and the 2/4-bit integers). The helpers here give every op the same
arithmetic rules:

* Integers are computed in 64 bits (`to_wide_int`: int64 for signed and bool, uint64 for
  unsigned) and wrapped back to the type's width (`wrap_int`), as two's complement hardware does.
* Floats are computed in float64 and complex numbers in complex128 (`to_compute`), then rounded
  once to the result type (`round_float`), as the StableHLO reference interpreter does. For the
  basic operations (+ - * / sqrt) float64 has more than twice the precision of every narrower
  type plus two bits, so computing in float64 and rounding once is exactly the correctly rounded
  result in the narrow type.
* `round_float` rounds correctly to every type (ml_dtypes' own float64 -> bf16/f8 cast rounds
  twice, through float32, which is wrong in rare ties).
* `raw_bits` / `from_raw_bits` give the bit pattern of each element as a uint64 (the low
  `bitwidth` bits), for bit-level ops (bitcast_convert, popcnt, shifts, reduce_precision,
  total order).
* `convert` is the semantics of stablehlo.convert between any two element types.
* `dequantize` / `quantize` are the spec's functions of the same names, for
  `dequantize_op_quantize` on quantized tensors.

Every function takes and returns numpy arrays (0-d arrays for scalars, never numpy scalars).
Function names here are a stable interface: other interpreter files import them.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from axle.ir.types import ElementType, QuantizedType, TensorType, i64, int_range

__all__ = [
    "element_type", "is_quantized", "has_sign_bit", "float_info",
    "to_wide_int", "wrap_int", "sign_extend", "to_compute", "round_float", "cast_to",
    "reinterpret", "raw_bits", "from_raw_bits", "total_order_key",
    "convert", "float_to_int", "dequantize", "quantize",
]


# ---------------------------------------------------------------- types


def element_type(t) -> ElementType | QuantizedType:
    """The element type of a TensorType (or the type itself if it already is one)."""
    return t.element_type if isinstance(t, TensorType) else t


def is_quantized(t) -> bool:
    """True for a quantized tensor type or a quantized element type."""
    return isinstance(element_type(t), QuantizedType)


def has_sign_bit(et: ElementType) -> bool:
    """Whether a float type has a sign bit (all but the unsigned f8E8M0FNU)."""
    return et.name != "f8E8M0FNU"


def float_info(et: ElementType) -> tuple[int, int]:
    """(exponent_bits, mantissa_bits) of a float element type; mantissa bits exclude the
    implicit leading one."""
    mantissa = int(ml_dtypes.finfo(et.dtype).nmant)
    exponent = et.bitwidth - mantissa - (1 if has_sign_bit(et) else 0)
    return exponent, mantissa


# ---------------------------------------------------------------- integers


def to_wide_int(x: np.ndarray, et: ElementType) -> np.ndarray:
    """Integer or bool values widened to int64 (signed, bool) or uint64 (unsigned)."""
    return np.asarray(x).astype(np.uint64 if et.is_unsigned else np.int64)


def wrap_int(x: np.ndarray, et: ElementType) -> np.ndarray:
    """Wraps int64/uint64 values around to the width of `et` (two's complement) and returns
    them in et's dtype. For i1 the low bit is kept."""
    x = np.asarray(x)
    if et.is_bool:
        return (x.astype(np.uint64) & np.uint64(1)).astype(np.bool_)
    width = et.bitwidth
    if width == 64:
        return x.astype(et.dtype)
    bits = x.astype(np.uint64) & np.uint64((1 << width) - 1)
    if et.is_unsigned:
        return bits.astype(et.dtype)
    return sign_extend(bits, width).astype(et.dtype)


def sign_extend(bits: np.ndarray, width: int) -> np.ndarray:
    """The low `width` bits of uint64 `bits` read as a two's complement number (int64)."""
    bits = np.asarray(bits).astype(np.uint64)
    if width == 64:
        return reinterpret(bits, np.int64)
    value = bits.astype(np.int64)
    return np.where(value >= (1 << (width - 1)), value - (1 << width), value).astype(np.int64)


# ---------------------------------------------------------------- floats


def to_compute(x: np.ndarray, et: ElementType) -> np.ndarray:
    """Float values as float64, complex values as complex128 (exact widening)."""
    x = np.asarray(x)
    if et.is_complex:
        return x.astype(np.complex128)
    return x.astype(np.float64)


def _round_to_odd_f32(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounding to odd: truncate toward zero, and set the last bit when the
    result is inexact. Rounding this once more to a type with at most 22 mantissa bits gives the
    correctly rounded result of the original float64."""
    x = np.asarray(x, np.float64)
    nearest = x.astype(np.float32)
    back = nearest.astype(np.float64)
    inexact = np.isfinite(x) & (back != x)
    went_away = inexact & (np.abs(back) > np.abs(x))
    bits = reinterpret(nearest, np.uint32)
    bits = np.where(went_away, bits - np.uint32(1), bits)
    bits = np.where(inexact, bits | np.uint32(1), bits).astype(np.uint32)
    return reinterpret(bits, np.float32)


def round_float(x: np.ndarray, et: ElementType) -> np.ndarray:
    """Rounds float64 (or complex128) values to the float (or complex) type `et`, to nearest
    with ties to even, once."""
    x = np.asarray(x)
    dtype = et.dtype
    if et.is_complex:
        return x.astype(dtype)
    if dtype in (np.float64, np.float32, np.float16):
        return x.astype(np.float64).astype(dtype)
    return _round_to_odd_f32(x.astype(np.float64)).astype(dtype)


def cast_to(x: np.ndarray, et: ElementType) -> np.ndarray:
    """Brings a computed value (int64/uint64 for integers, float64/complex128 for floats, bool)
    back to `et`: wrap-around for integers, one rounding for floats."""
    x = np.asarray(x)
    if et.is_bool:
        return x.astype(np.bool_) if x.dtype == np.bool_ else wrap_int(x, et)
    if et.is_int:
        return wrap_int(x, et)
    return round_float(x, et)


# ---------------------------------------------------------------- bit patterns


def reinterpret(x: np.ndarray, dtype) -> np.ndarray:
    """The same bytes read as `dtype` (of the same item size), keeping the shape; works for
    0-d and non-contiguous arrays."""
    x = np.asarray(x)
    return np.ascontiguousarray(x).reshape(-1).view(dtype).reshape(x.shape)


def raw_bits(x: np.ndarray, et: ElementType) -> np.ndarray:
    """The bit pattern of every element of a bool, integer or float tensor as uint64 (the low
    `et.bitwidth` bits; the others are zero)."""
    x = np.asarray(x)
    width = et.bitwidth
    if et.is_bool:
        return x.astype(np.uint64)
    if width in (8, 16, 32, 64):
        unsigned = np.dtype(f"uint{width}")
        return reinterpret(x, unsigned).astype(np.uint64)
    # sub-byte types are stored one per byte, in the low bits
    stored = reinterpret(x, np.uint8).astype(np.uint64)
    return stored & np.uint64((1 << width) - 1)


def from_raw_bits(bits: np.ndarray, et: ElementType) -> np.ndarray:
    """Inverse of raw_bits: elements of type `et` with the given bit patterns."""
    bits = np.asarray(bits).astype(np.uint64)
    width = et.bitwidth
    if et.is_bool:
        return (bits & np.uint64(1)).astype(np.bool_)
    if et.is_int:
        return wrap_int(bits, et)
    if width in (8, 16, 32, 64):
        unsigned = np.dtype(f"uint{width}")
        return reinterpret(bits.astype(unsigned), et.dtype)
    stored = (bits & np.uint64((1 << width) - 1)).astype(np.uint8)
    return reinterpret(stored, et.dtype)


def total_order_key(x: np.ndarray, et: ElementType) -> np.ndarray:
    """int64 keys ordering float elements by IEEE-754 totalOrder:
    -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN."""
    bits = raw_bits(x, et)
    if not has_sign_bit(et):
        return bits.astype(np.int64)
    width = et.bitwidth
    sign = (bits >> np.uint64(width - 1)) & np.uint64(1)
    magnitude = (bits & np.uint64((1 << (width - 1)) - 1)).astype(np.int64)
    return np.where(sign == 1, -1 - magnitude, magnitude)


# ---------------------------------------------------------------- convert


def float_to_int(x: np.ndarray, et: ElementType) -> np.ndarray:
    """float64 -> integer type `et`: the fraction is truncated, values out of range saturate
    to the type's min/max and NaN becomes 0 (LLVM APFloat::convertToInteger, which the
    reference interpreter uses, and XLA's behaviour)."""
    t = np.trunc(np.asarray(x, np.float64))
    lo, hi = int_range(et)
    width = et.bitwidth
    if et.is_unsigned:
        too_big, too_small = t >= 2.0 ** width, t < 0
        wide = np.uint64
    else:
        too_big, too_small = t >= 2.0 ** (width - 1), t < -(2.0 ** (width - 1))
        wide = np.int64
    safe = np.where(too_big | too_small | np.isnan(t), 0, t).astype(wide)
    result = np.where(too_big, wide(hi), np.where(too_small, wide(lo), safe))
    return result.astype(et.dtype)


def convert(x: np.ndarray, src: ElementType, dst: ElementType) -> np.ndarray:
    """stablehlo.convert of values `x` of type `src` to type `dst`."""
    x = np.asarray(x)
    if src.is_complex and not dst.is_complex:
        x, src = np.real(x.astype(np.complex128)), src.component
    if dst.is_bool:
        return np.asarray((x if src.is_bool or src.is_int else to_compute(x, src)) != 0)
    if src.is_bool:
        x, src = x.astype(np.int64), i64
    if src.is_int:
        wide = to_wide_int(x, src)
        if dst.is_int:
            return wrap_int(wide, dst)
        if dst.dtype in (np.float32, np.complex64):
            return wide.astype(dst.dtype)  # numpy rounds 64-bit integers to float32 once
        values = wide.astype(np.float64)
        return values.astype(dst.dtype) if dst.is_complex else round_float(values, dst)
    values = to_compute(x, src)
    if dst.is_int:
        return float_to_int(values, dst)
    if dst.is_complex:
        return values.astype(np.complex128).astype(dst.dtype)
    return round_float(values, dst)


# ---------------------------------------------------------------- quantization


def _per_axis(params, qtype: QuantizedType, rank: int, dtype) -> np.ndarray:
    """Scales or zero points shaped to broadcast against a tensor of rank `rank`."""
    values = np.asarray(params, dtype=dtype)
    if qtype.quantized_dimension is None:
        return values.reshape(())
    shape = [1] * rank
    shape[qtype.quantized_dimension] = len(values)
    return values.reshape(shape)


def dequantize(x: np.ndarray, qtype: QuantizedType) -> np.ndarray:
    """The spec's `dequantize`: storage integers -> values of the expressed type,
    `(x - zero_point) * scale`, with the scale and the product rounded to the expressed type."""
    x = np.asarray(x)
    expressed = qtype.expressed_type
    zero_points = _per_axis(qtype.zero_points, qtype, x.ndim, np.int64)
    scales = round_float(_per_axis(qtype.scales, qtype, x.ndim, np.float64), expressed)
    shifted = round_float((x.astype(np.int64) - zero_points).astype(np.float64), expressed)
    return round_float(shifted.astype(np.float64) * scales.astype(np.float64), expressed)


def quantize(x: np.ndarray, qtype: QuantizedType) -> np.ndarray:
    """The spec's `quantize`: values of the expressed type -> storage integers,
    `round_nearest_even(clamp(min, x / scale + zero_point, max))`, each step rounded to the
    expressed type."""
    x = np.asarray(x)
    expressed = qtype.expressed_type
    scales = round_float(_per_axis(qtype.scales, qtype, x.ndim, np.float64), expressed)
    zero_points = round_float(_per_axis(qtype.zero_points, qtype, x.ndim, np.float64), expressed)
    scaled = round_float(to_compute(x, expressed) / scales.astype(np.float64), expressed)
    shifted = round_float(scaled.astype(np.float64) + zero_points.astype(np.float64), expressed)
    clamped = np.clip(shifted.astype(np.float64), qtype.min_value, qtype.max_value)
    return float_to_int(np.round(clamped), qtype.storage_type)

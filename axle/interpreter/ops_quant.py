"""Quantization: uniform_quantize, uniform_dequantize and every other op on quantized tensors.

A quantized tensor's runtime value is a numpy array of its storage integers; its
`QuantizedType` (types.py) gives the storage and expressed types, the scales and zero points
(one pair per tensor, or one per slice along `quantized_dimension`) and the storage range.

The spec ("Execution semantics of quantized operation") leaves the arithmetic of quantized ops
to the implementation, as long as it means `dequantize_op_quantize` (and, for hybrid
dot_general/convolution with a float lhs, `hybrid_dequantize_then_op`). This interpreter gives
the results of the StableHLO reference interpreter, which lowers quantized programs with the
`stablehlo-legalize-quant-to-math` pass before running them:

* uniform_quantize float -> quant and uniform_dequantize are the spec's `quantize` and
  `dequantize` (numerics.py).
* uniform_quantize quant -> quant (requantization) with f32 expressed types multiplies by the
  merged scale `in_scale / out_scale` and adds the merged zero point
  `out_zp - in_zp * merged_scale`, in f32, then clamps and rounds to nearest even; with other
  expressed types it is `quantize(dequantize(x))`.
* add with per-tensor quantized lhs, rhs and result (f32 expressed) requantizes both operands
  to the result's scale and zero point as i32 and adds them in integers.
* dot_general, and convolution in the layouts the pass accepts, run in integers
  (`_dot_like_in_integers`): an i32 dot product of the storage values is scaled by
  `lhs_scale * rhs_scale / result_scale` (truncating to i32, skipped when that factor is within
  0.001 of 1) and corrected for the zero points.
* Ops that only move or select elements (reshape, transpose, slice, gather, pad, ..., and
  maximum/minimum/select when all quantized types are equal) work on the storage values
  directly.
* Every other op is `dequantize_op_quantize`: quantized operands are dequantized to their
  expressed type, the float implementation runs with the expressed types, and quantized
  results are quantized (per tensor or per axis); compare dequantizes both sides and compares
  them as floats.

The evaluator uses two functions from here:

    if is_quantized_call(call):
        result = quantized_call(impl, call)   # impl: the op's float implementation
    else:
        result = impl(call)

`is_quantized_call` is False for the ops that take quantized types natively
(uniform_quantize, uniform_dequantize and the collectives, NATIVE_OPS).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from axle.ir.types import ELEMENT_TYPES, QuantizedType, TensorType
from axle.interpreter.numerics import dequantize, float_to_int, quantize, wrap_int
from axle.interpreter.registry import OpCall, register

__all__ = ["is_quantized_call", "quantized_call", "requantize", "NATIVE_OPS"]

_F32 = ELEMENT_TYPES["f32"]
_F64 = ELEMENT_TYPES["f64"]
_I32 = ELEMENT_TYPES["i32"]

_SH = "stablehlo."

# Ops whose implementations handle quantized operands themselves.
NATIVE_OPS = frozenset(_SH + n for n in [
    "uniform_quantize", "uniform_dequantize", "all_gather", "all_reduce", "all_to_all",
    "collective_broadcast", "collective_permute", "collective_reduce", "reduce_scatter",
    "send", "recv", "infeed", "outfeed",
])

# Ops whose quantized semantics is dequantize_op_quantize (the spec's sections of these ops
# say so; the reference interpreter lowers them the same way).
_DEQUANTIZE_OP_QUANTIZE = frozenset(_SH + n for n in [
    "abs", "add", "atan2", "batch_norm_grad", "batch_norm_inference", "batch_norm_training",
    "cbrt", "ceil", "cholesky", "clamp", "compare", "convolution", "cosine", "divide", "dot",
    "dot_general", "dynamic_conv", "exponential", "exponential_minus_one", "floor", "iota",
    "log", "log_plus_one", "logistic", "maximum", "minimum", "multiply", "negate", "power",
    "reduce_precision", "remainder", "round_nearest_afz", "round_nearest_even", "rsqrt",
    "select", "sign", "sine", "sqrt", "subtract", "tan", "tanh", "triangular_solve",
])

# Of those, the ones that give the same result on the storage values when every quantized
# type of the op is the same (the reference interpreter runs them on the storage then).
_ORDER_ONLY = frozenset(_SH + n for n in ["maximum", "minimum", "select"])


# ---------------------------------------------------------------- types


def quantized_element(t) -> Optional[QuantizedType]:
    """The QuantizedType of a quantized tensor type, else None."""
    if isinstance(t, TensorType) and isinstance(t.element_type, QuantizedType):
        return t.element_type
    return None


def _expressed(t):
    q = quantized_element(t)
    return t.with_element_type(q.expressed_type) if q else t


def _storage(t):
    q = quantized_element(t)
    return t.with_element_type(q.storage_type) if q else t


def _is_per_axis(q: QuantizedType) -> bool:
    return q.quantized_dimension is not None


def is_quantized_call(call: OpCall) -> bool:
    """Whether `call` has a quantized operand or result and must go through quantized_call."""
    if call.name in NATIVE_OPS:
        return False
    return any(quantized_element(t) for t in (*call.operand_types, *call.result_types))


def _as_list(value, call: OpCall) -> list:
    if isinstance(value, (list, tuple)) and not (len(call.result_types) == 1
                                                 and isinstance(value, tuple)):
        return list(value)
    return [value]


def _like_impl_output(results: list, call: OpCall):
    return results[0] if len(call.result_types) == 1 else results


# ---------------------------------------------------------------- dispatch


def quantized_call(impl, call: OpCall):
    """Evaluates an op with quantized operands or results, given `impl`, the op's
    implementation for non-quantized tensors (see the module docstring for the strategy)."""
    if call.name in NATIVE_OPS:
        return impl(call)
    special = _INTEGER_KERNELS.get(call.name)
    if special is not None:
        result = special(impl, call)
        if result is not None:
            return result
    if call.name in _DEQUANTIZE_OP_QUANTIZE:
        if call.name in _ORDER_ONLY and _single_quantized_type(call):
            return _on_storage(impl, call)
        return dequantize_op_quantize(impl, call)
    if call.regions or _single_quantized_type(call):
        return _on_storage(impl, call)
    return dequantize_op_quantize(impl, call)


def _single_quantized_type(call: OpCall) -> bool:
    types = {quantized_element(t) for t in (*call.operand_types, *call.result_types)}
    types.discard(None)
    return len(types) == 1


def _on_storage(impl, call: OpCall):
    """Runs `impl` on the storage values, the quantized types replaced by storage types."""
    storage_call = dataclasses.replace(
        call, operand_types=[_storage(t) for t in call.operand_types],
        result_types=[_storage(t) for t in call.result_types])
    return impl(storage_call)


def dequantize_op_quantize(impl, call: OpCall):
    """The spec's dequantize_op_quantize (and hybrid_dequantize_then_op, and
    dequantize_compare): `impl` runs on the dequantized operands with the expressed types;
    quantized results are quantized to their types."""
    operands = []
    for value, t in zip(call.operands, call.operand_types):
        q = quantized_element(t)
        operands.append(dequantize(value, q) if q else value)
    attrs = call.attrs
    if call.name == _SH + "compare":
        attrs = {**attrs, "compare_type": "FLOAT"}
    float_call = dataclasses.replace(
        call, operands=operands, operand_types=[_expressed(t) for t in call.operand_types],
        result_types=[_expressed(t) for t in call.result_types], attrs=attrs)
    with np.errstate(all="ignore"):
        results = _as_list(impl(float_call), call)
        for i, t in enumerate(call.result_types):
            q = quantized_element(t)
            if q:
                results[i] = quantize(np.asarray(results[i]), q)
    return _like_impl_output(results, call)


# ---------------------------------------------------------------- uniform_quantize / dequantize


@register(_SH + "uniform_quantize")
def uniform_quantize(call: OpCall):
    operand, = call.operands
    target = quantized_element(call.result_type)
    source = quantized_element(call.operand_types[0])
    with np.errstate(all="ignore"):
        if source is None:
            return quantize(operand, target)
        return requantize(operand, source, target)


@register(_SH + "uniform_dequantize")
def uniform_dequantize(call: OpCall):
    return dequantize(call.operands[0], quantized_element(call.operand_types[0]))


def requantize(x: np.ndarray, source: QuantizedType, target: QuantizedType,
               storage=None) -> np.ndarray:
    """Storage values of `source` -> storage values of `target` (or of the integer type
    `storage` when given: the i32 intermediates of quantized add).

    With f32 expressed types this is the reference lowering: `x * merged_scale + merged_zp`
    in f32, clamped to the storage range when the storage is narrower than 32 bits, rounded to
    nearest even. With other expressed types, or between per-axis types of different
    quantized dimensions, it is the spec's `quantize(dequantize(x))`."""
    storage = storage or target.storage_type
    if source == target:
        return wrap_int(np.asarray(x).astype(np.int64), storage)
    if source.expressed_type != _F32 or target.expressed_type != _F32 \
            or _changes_quantized_dimension(source, target):
        return quantize(dequantize(x, source), target)
    x = np.asarray(x)
    merged_scale, merged_zp = _merged_scale_and_zero_point(source, target, x.ndim)
    value = x.astype(np.int64).astype(np.float32) * merged_scale
    if np.any(merged_zp != 0):
        value = value + merged_zp
    if storage.bitwidth < 32:
        value = np.clip(value, np.float32(target.min_value), np.float32(target.max_value))
    return float_to_int(np.rint(value), storage)


def _changes_quantized_dimension(source: QuantizedType, target: QuantizedType) -> bool:
    return _is_per_axis(source) and _is_per_axis(target) and (
        source.quantized_dimension != target.quantized_dimension
        or len(source.scales) != len(target.scales))


def _merged_scale_and_zero_point(source: QuantizedType, target: QuantizedType, rank: int):
    """f32 `in_scale / out_scale` and `out_zp - in_zp * merged_scale` (computed in double),
    shaped to broadcast along the quantized dimension."""
    axis = target.quantized_dimension
    if axis is None:
        axis = source.quantized_dimension
    count = max(len(source.scales), len(target.scales))

    def per_channel(values):
        values = list(values)
        return np.array(values * count if len(values) == 1 else values, dtype=np.float64)

    scale = per_channel(source.scales) / per_channel(target.scales)
    zero_point = per_channel(target.zero_points) - per_channel(source.zero_points) * scale
    if axis is None:
        return np.float32(scale[0]), np.float32(zero_point[0])
    shape = [1] * rank
    shape[axis] = count
    return scale.astype(np.float32).reshape(shape), zero_point.astype(np.float32).reshape(shape)


# ---------------------------------------------------------------- integer kernels


def _all_f32(*qs: QuantizedType) -> bool:
    return all(q.expressed_type == _F32 for q in qs)


def _quantized_add(impl, call: OpCall):
    """add of per-tensor quantized tensors in integers: both operands requantized to the
    result's parameters as i32, `lhs + rhs - zero_point`, clamped to the storage range.
    Per-axis add (same type everywhere, i32 storage) is `lhs + rhs - zero_point` per slice.
    Returns None (use dequantize_op_quantize) for the other cases."""
    lhs_q, rhs_q, result_q = (quantized_element(t) for t in
                              (*call.operand_types, call.result_type))
    if not (lhs_q and rhs_q and result_q and _all_f32(lhs_q, rhs_q, result_q)):
        return None
    lhs, rhs = (np.asarray(x) for x in call.operands)
    if any(_is_per_axis(q) for q in (lhs_q, rhs_q, result_q)):
        if not (lhs_q == rhs_q == result_q and result_q.storage_type == _I32):
            return None
        zero_points = _along_axis(result_q.zero_points, result_q, lhs.ndim)
        total = lhs.astype(np.int64) + rhs.astype(np.int64) - zero_points
        return wrap_int(total, _I32)
    lhs32 = requantize(lhs, lhs_q, result_q, storage=_I32).astype(np.int64)
    rhs32 = requantize(rhs, rhs_q, result_q, storage=_I32).astype(np.int64)
    total = wrap_int(lhs32 + rhs32 - result_q.zero_points[0], _I32).astype(np.int64)
    if result_q.storage_type.bitwidth < 32:
        total = np.clip(total, result_q.min_value, result_q.max_value)
    return wrap_int(total, result_q.storage_type)


def _along_axis(values, q: QuantizedType, rank: int) -> np.ndarray:
    shape = [1] * rank
    shape[q.quantized_dimension] = len(values)
    return np.asarray(values, dtype=np.int64).reshape(shape)


def _dot_like_kind(call: OpCall) -> Optional[str]:
    """'quantized' when lhs is per-tensor quantized and rhs and result are both per-tensor or
    both per-axis quantized (f32 expressed), else None."""
    lhs_q, rhs_q, result_q = (quantized_element(t) for t in
                              (*call.operand_types[:2], call.result_type))
    if lhs_q and rhs_q and result_q and not _is_per_axis(lhs_q) \
            and _is_per_axis(rhs_q) == _is_per_axis(result_q) \
            and _all_f32(lhs_q, rhs_q, result_q):
        return "quantized"
    return None


def _run_exact(impl, call: OpCall, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`impl` on integer-valued operands, computed in float64 (exact: every partial sum of
    products of storage integers stays far below 2**53), as int64."""
    float_call = dataclasses.replace(
        call, operands=[lhs.astype(np.float64), rhs.astype(np.float64)],
        operand_types=[t.with_element_type(_F64) for t in call.operand_types[:2]],
        result_types=[call.result_type.with_element_type(_F64)])
    result = impl(float_call)
    return np.asarray(result[0] if isinstance(result, (list, tuple)) else result).astype(np.int64)


def _quantized_dot_general(impl, call: OpCall):
    if _dot_like_kind(call) is None:
        return None
    lhs_q, rhs_q = (quantized_element(t) for t in call.operand_types[:2])
    lhs, rhs = (np.asarray(x).astype(np.int64) for x in call.operands[:2])
    lhs_zp = lhs_q.zero_points[0]
    rhs_zp = 0 if _is_per_axis(rhs_q) else rhs_q.zero_points[0]
    raw = _run_exact(impl, call, lhs, rhs)
    centered = _run_exact(impl, call, lhs - lhs_zp, rhs - rhs_zp)
    return _dot_like_in_integers(call, raw, raw - centered)


def _quantized_convolution(impl, call: OpCall):
    if _dot_like_kind(call) is None or not _integer_convolution_supported(call):
        return None
    lhs_q = quantized_element(call.operand_types[0])
    lhs, rhs = (np.asarray(x).astype(np.int64) for x in call.operands[:2])
    lhs_zp = lhs_q.zero_points[0]
    # The lowering pads lhs with its zero point, so every window sees `lhs_zp` times the
    # whole kernel: the offset is lhs_zp * (sum of each output feature's kernel).
    centered = _run_exact(impl, call, lhs - lhs_zp, rhs)
    dn = call.attrs["dimension_numbers"]
    kernel_out = dn["kernel_output_feature_dimension"]
    kernel_sums = np.moveaxis(rhs, kernel_out, 0).reshape(rhs.shape[kernel_out], -1).sum(axis=1)
    shape = [1] * centered.ndim
    shape[dn["output_feature_dimension"]] = len(kernel_sums)
    offset = np.broadcast_to(lhs_zp * kernel_sums.reshape(shape), centered.shape)
    return _dot_like_in_integers(call, centered + offset, offset)


def _dot_like_in_integers(call: OpCall, raw: np.ndarray, zp_offset: np.ndarray) -> np.ndarray:
    """The reference lowering of quantized dot_general/convolution, from `raw` (the i32 dot
    product of the storage values) and `zp_offset` (its zero-point part, so that
    `raw - zp_offset` is the product of the zero-point-free values):
    `result = raw * combined_scale + result_zp - zp_offset * combined_scale`, where each
    product with `combined_scale = lhs_scale * rhs_scale / result_scale` is done in f32 and
    truncated to i32, and skipped when combined_scale is within 0.001 of 1."""
    lhs_q, rhs_q = (quantized_element(t) for t in call.operand_types[:2])
    result_q = quantized_element(call.result_type)
    raw = wrap_int(raw, _I32).astype(np.int64)
    zp_offset = wrap_int(zp_offset, _I32).astype(np.int64)
    combined_scale = lhs_q.scales[0] * rhs_q.scales[0] / result_q.scales[0]
    if abs(combined_scale - 1.0) > 0.001:
        scale = np.float32(combined_scale)
        raw = float_to_int(raw.astype(np.float32) * scale, _I32).astype(np.int64)
        zp_offset = float_to_int(zp_offset.astype(np.float32) * scale, _I32).astype(np.int64)
    result_zp = 0 if _is_per_axis(result_q) else result_q.zero_points[0]
    total = wrap_int(raw + wrap_int(result_zp - zp_offset, _I32).astype(np.int64), _I32)
    return wrap_int(total.astype(np.int64), result_q.storage_type)


# Convolution layouts the lowering runs in integers: (input batch, input feature, input
# spatial, kernel input feature, kernel output feature, kernel spatial, output batch,
# output feature, output spatial) for NHWC, NCHW, NDHWC and NCDHW.
_INTEGER_CONV_LAYOUTS = [
    (0, 3, [1, 2], 2, 3, [0, 1], 0, 3, [1, 2]),
    (0, 1, [2, 3], 1, 0, [2, 3], 0, 1, [2, 3]),
    (0, 4, [1, 2, 3], 3, 4, [0, 1, 2], 0, 4, [1, 2, 3]),
    (0, 1, [2, 3, 4], 0, 1, [2, 3, 4], 0, 1, [2, 3, 4]),
]


def _integer_convolution_supported(call: OpCall) -> bool:
    """The conditions under which the reference lowering runs a quantized convolution in
    integers: rhs (and a per-axis result) with zero zero points, a per-axis rhs quantized
    along its last dimension with result/rhs scale ratios equal across channels, no lhs
    dilation, and one of the layouts above."""
    rhs_q = quantized_element(call.operand_types[1])
    result_q = quantized_element(call.result_type)
    if _is_per_axis(rhs_q):
        if any(zp != 0 for zp in (*rhs_q.zero_points, *result_q.zero_points)):
            return False
        if rhs_q.quantized_dimension != len(call.operand_types[1].shape) - 1:
            return False
        ratios = [r / s for r, s in zip(result_q.scales, rhs_q.scales)]
        if any(abs((r - ratios[0]) / ratios[0]) > 0.001 for r in ratios):
            return False
    elif rhs_q.zero_points[0] != 0:
        return False
    lhs_dilation = call.attrs.get("lhs_dilation")
    if lhs_dilation is not None and any(int(d) != 1 for d in lhs_dilation):
        return False
    dn = call.attrs["dimension_numbers"]
    layout = (dn["input_batch_dimension"], dn["input_feature_dimension"],
              list(dn["input_spatial_dimensions"]), dn["kernel_input_feature_dimension"],
              dn["kernel_output_feature_dimension"], list(dn["kernel_spatial_dimensions"]),
              dn["output_batch_dimension"], dn["output_feature_dimension"],
              list(dn["output_spatial_dimensions"]))
    return layout in _INTEGER_CONV_LAYOUTS


_INTEGER_KERNELS = {
    _SH + "add": _quantized_add,
    _SH + "dot_general": _quantized_dot_general,
    _SH + "convolution": _quantized_convolution,
}


"""Data-movement ops: constants, iota, broadcasts, reshapes, transposes, slices,
concatenation, padding, reversal, tuples, tokens and barriers.

Every op here moves or copies elements without computing on them, so it works alike on the
stored values of every element type (for quantized tensors, their storage integers). Shapes
come from the operands wherever the spec defines them that way; only the ops whose result
shape is given by the result type alone (constant, iota, broadcast_in_dim, reshape) read the
result type, and those reject a dynamic (`?`) dimension they cannot infer.

The helpers `broadcast_to_shape`, `pad_tensor`, `iota_tensor`, `slice_tensor`, `index_values`,
`shape_values` and `fresh` are shared with ops_dynamic.py and ops_indexing.py.
"""
from __future__ import annotations

import numpy as np

from axle.interpreter.numerics import convert, quantize, round_float, wrap_int
from axle.interpreter.registry import TOKEN, OpCall, register
from axle.ir.types import ElementType, QuantizedType, TensorType, i64

# ---------------------------------------------------------------- shared helpers


def fresh(x) -> np.ndarray:
    """A new C-contiguous copy of `x` (0-d arrays stay 0-d, unlike np.ascontiguousarray)."""
    return np.array(x, order="C")


def index_values(x) -> np.ndarray:
    """Integer tensor values as int64 (indices, sizes, paddings). Unsigned values beyond the
    int64 range saturate, which keeps clamping to a tensor's bounds right."""
    x = np.asarray(x)
    if x.dtype == np.uint64:
        x = np.minimum(x, np.uint64(np.iinfo(np.int64).max))
    return x.astype(np.int64)


def shape_values(call: OpCall, x) -> tuple[int, ...]:
    """A 1-D integer tensor read as a shape (dynamic ops' shape operands)."""
    dims = tuple(int(d) for d in index_values(x).reshape(-1))
    if any(d < 0 for d in dims):
        raise call.error(f"negative dimension size in shape {list(dims)}")
    return dims


def static_shape(call: OpCall, t) -> tuple[int, ...]:
    """The shape of a result type, which must be fully static."""
    if not isinstance(t, TensorType):
        raise call.error(f"expected a tensor result type, got {t}")
    if not t.is_static:
        raise call.error(f"cannot infer the dynamic dimensions of result type {t}")
    return tuple(t.shape)


def broadcast_to_shape(call: OpCall, x: np.ndarray, dims, shape) -> np.ndarray:
    """broadcast_in_dim: operand axis d goes to result axis dims[d]; size-1 axes repeat."""
    dims = [int(d) for d in dims]
    if len(dims) != x.ndim:
        raise call.error(f"broadcast_dimensions {dims} do not match operand rank {x.ndim}")
    if len(set(dims)) != len(dims) or any(not 0 <= d < len(shape) for d in dims):
        raise call.error(f"invalid broadcast_dimensions {dims} for result rank {len(shape)}")
    for d, size in zip(dims, x.shape):
        if size not in (1, shape[d]):
            raise call.error(f"operand dimension of size {size} cannot broadcast to {shape[d]}")
    order = sorted(range(x.ndim), key=lambda d: dims[d])  # operand axes in result order
    expanded = [1] * len(shape)
    for d in order:
        expanded[dims[d]] = x.shape[d]
    aligned = np.transpose(x, order).reshape(expanded)
    return fresh(np.broadcast_to(aligned, shape))


def iota_tensor(call: OpCall, shape, iota_dimension: int, result_type) -> np.ndarray:
    """Values increasing from zero along `iota_dimension`, in the result's element type."""
    if not 0 <= iota_dimension < len(shape):
        raise call.error(f"iota_dimension {iota_dimension} out of range for rank {len(shape)}")
    index = np.arange(shape[iota_dimension], dtype=np.int64)
    index = np.broadcast_to(
        index.reshape([-1 if d == iota_dimension else 1 for d in range(len(shape))]), shape)
    et = result_type.element_type
    if isinstance(et, QuantizedType):
        expressed = round_float(index.astype(np.float64), et.expressed_type)
        return quantize(expressed, et)
    return fresh(convert(index, i64, et))


def pad_tensor(call: OpCall, x: np.ndarray, padding_value, low, high, interior) -> np.ndarray:
    """pad: interior padding first, then edge padding (negative edges remove elements)."""
    low, high, interior = ([int(v) for v in values] for values in (low, high, interior))
    if not len(low) == len(high) == len(interior) == x.ndim:
        raise call.error("padding sizes do not match the operand rank")
    if any(i < 0 for i in interior):
        raise call.error(f"negative interior padding {interior}")
    # The operand spread out by interior padding, inside the non-negative edge padding.
    spread = [(n - 1) * (i + 1) + 1 if n > 0 else 0 for n, i in zip(x.shape, interior)]
    grown = [max(lo, 0) + s + max(hi, 0) for lo, s, hi in zip(low, spread, high)]
    out = np.full(grown, np.asarray(padding_value), dtype=x.dtype)
    out[tuple(slice(max(lo, 0), max(lo, 0) + s, i + 1)
              for lo, s, i in zip(low, spread, interior))] = x
    # Negative edge padding crops.
    crop = []
    for lo, hi, g in zip(low, high, grown):
        start, stop = max(-lo, 0), g - max(-hi, 0)
        if stop < start:
            raise call.error(f"padding low={low} high={high} gives a negative dimension size")
        crop.append(slice(start, stop))
    return fresh(out[tuple(crop)])


def _coerce_constant(value: np.ndarray, et) -> np.ndarray:
    """A constant's values in the stored dtype of `et` (one rounding for narrow floats)."""
    dtype = et.dtype
    if value.dtype == dtype:
        return value
    if isinstance(et, ElementType):
        if et.is_float and value.dtype.kind == "f":
            return round_float(value, et)
        if et.is_int and value.dtype.kind in "iu":
            return wrap_int(value.astype(np.uint64 if value.dtype.kind == "u" else np.int64), et)
    return value.astype(dtype)


# ---------------------------------------------------------------- ops


@register("stablehlo.constant")
def constant(call: OpCall):
    value = np.asarray(call.attrs["value"])
    t = call.result_type
    if value.size > 1 and all(s == 0 for s in value.strides):  # a lazy splat (attributes.py)
        from axle.limits import check_constant
        check_constant(value.size * value.itemsize, f"the constant {t}")
    if not isinstance(t, TensorType):
        return value
    value = _coerce_constant(value, t.element_type)
    shape = tuple(t.shape) if t.is_static else value.shape
    if value.shape != tuple(shape):
        if value.size == 1:  # a splat
            return np.full(shape, value.reshape(()), dtype=value.dtype)
        if value.size != int(np.prod(shape)):
            raise call.error(f"constant of shape {value.shape} does not fit {t}")
        value = value.reshape(shape)
    return np.array(value, copy=True)


@register("stablehlo.iota")
def iota(call: OpCall):
    return iota_tensor(call, static_shape(call, call.result_type), int(call.attrs["iota_dimension"]),
                       call.result_type)


def _result_shape_from_operand(call: OpCall, x: np.ndarray, dims) -> tuple[int, ...]:
    """The result shape of broadcast_in_dim; a `?` dimension is taken from the operand axis
    mapped onto it, when there is one."""
    t = call.result_type
    if t.is_static:
        return tuple(t.shape)
    shape = list(t.shape)
    for d, target in enumerate(dims):
        if shape[target] is None:
            shape[target] = x.shape[d]
    if any(s is None for s in shape):
        raise call.error(f"cannot infer the dynamic dimensions of result type {t}")
    return tuple(shape)


@register("stablehlo.broadcast_in_dim")
def broadcast_in_dim(call: OpCall):
    x = call.operands[0]
    dims = list(call.attrs.get("broadcast_dimensions", []))
    return broadcast_to_shape(call, x, dims, _result_shape_from_operand(call, x, dims))


@register("stablehlo.broadcast")
def broadcast(call: OpCall):
    """Deprecated `broadcast`: prepends `broadcast_sizes` dimensions to the operand."""
    x = call.operands[0]
    sizes = [int(s) for s in call.attrs.get("broadcast_sizes", [])]
    rank = len(sizes) + x.ndim
    return broadcast_to_shape(call, x, range(len(sizes), rank), tuple(sizes) + x.shape)


@register("stablehlo.reshape")
def reshape(call: OpCall):
    x = call.operands[0]
    shape = list(call.result_type.shape)
    unknown = [d for d, s in enumerate(shape) if s is None]
    if len(unknown) == 1:
        known = int(np.prod([s for s in shape if s is not None]))
        if known == 0 or x.size % known:
            raise call.error(f"cannot infer the dynamic dimension of {call.result_type}")
        shape[unknown[0]] = x.size // known
    elif unknown:
        raise call.error(f"cannot infer the dynamic dimensions of {call.result_type}")
    if int(np.prod(shape)) != x.size:
        raise call.error(f"cannot reshape {x.shape} to {tuple(shape)}")
    return fresh(np.reshape(x, shape))


@register("stablehlo.transpose")
def transpose(call: OpCall):
    x = call.operands[0]
    permutation = [int(p) for p in call.attrs.get("permutation", range(x.ndim))]
    if sorted(permutation) != list(range(x.ndim)):
        raise call.error(f"invalid permutation {permutation} for rank {x.ndim}")
    return fresh(np.transpose(x, permutation))


@register("stablehlo.slice")
def slice_op(call: OpCall):
    x = call.operands[0]
    starts = [int(s) for s in call.attrs["start_indices"]]
    limits = [int(s) for s in call.attrs["limit_indices"]]
    strides = [int(s) for s in call.attrs.get("strides", [1] * x.ndim)] or [1] * x.ndim
    return slice_tensor(call, x, starts, limits, strides)


def slice_tensor(call: OpCall, x: np.ndarray, starts, limits, strides) -> np.ndarray:
    """`x[starts:limits:strides]` per axis, after checking the bounds as the spec demands."""
    if not len(starts) == len(limits) == len(strides) == x.ndim:
        raise call.error("slice bounds do not match the operand rank")
    for start, limit, stride, size in zip(starts, limits, strides, x.shape):
        if not (0 <= start <= limit <= size and stride > 0):
            raise call.error(f"invalid slice {start}:{limit}:{stride} of a dimension of size {size}")
    return fresh(x[tuple(slice(s, l, st) for s, l, st in zip(starts, limits, strides))])


@register("stablehlo.concatenate")
def concatenate(call: OpCall):
    dimension = int(call.attrs.get("dimension", 0))
    if not call.operands:
        raise call.error("concatenate needs at least one operand")
    return np.concatenate([np.asarray(x) for x in call.operands], axis=dimension)


@register("stablehlo.pad")
def pad(call: OpCall):
    x, padding_value = call.operands
    return pad_tensor(call, x, padding_value, call.attrs["edge_padding_low"],
                      call.attrs["edge_padding_high"],
                      call.attrs.get("interior_padding", [0] * x.ndim))


@register("stablehlo.reverse")
def reverse(call: OpCall):
    x = call.operands[0]
    dims = tuple(int(d) for d in call.attrs.get("dimensions", []))
    return fresh(np.flip(x, axis=dims))


@register("stablehlo.get_dimension_size")
def get_dimension_size(call: OpCall):
    x = call.operands[0]
    dimension = int(call.attrs["dimension"])
    if not 0 <= dimension < x.ndim:
        raise call.error(f"dimension {dimension} out of range for rank {x.ndim}")
    return np.array(x.shape[dimension], dtype=call.result_type.dtype)


@register("stablehlo.tuple")
def tuple_op(call: OpCall):
    return [tuple(call.operands)]


@register("stablehlo.get_tuple_element")
def get_tuple_element(call: OpCall):
    return call.operands[0][int(call.attrs["index"])]


@register("stablehlo.optimization_barrier")
def optimization_barrier(call: OpCall):
    return list(call.operands)


@register("stablehlo.after_all", "stablehlo.create_token")
def after_all(call: OpCall):
    return TOKEN

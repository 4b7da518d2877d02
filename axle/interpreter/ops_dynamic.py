"""Dynamic-shape ops: the variants of broadcast_in_dim, iota, reshape, pad, gather and slice
whose shapes, sizes or paddings are operands instead of attributes.

Each one reads those operands as integers and then does exactly what its static sibling does;
the result type may have `?` dimensions, the values decide the real shape.
"""
from __future__ import annotations

import numpy as np

from axle.interpreter.ops_indexing import gather_tensor
from axle.interpreter.ops_shape import (
    broadcast_to_shape, fresh, index_values, iota_tensor, pad_tensor, shape_values, slice_tensor,
)
from axle.interpreter.registry import OpCall, register


def _check_rank(call: OpCall, shape) -> None:
    t = call.result_type
    if len(shape) != t.rank:
        raise call.error(f"shape operand {list(shape)} does not match the rank of {t}")
    for size, declared in zip(shape, t.shape):
        if declared is not None and declared != size:
            raise call.error(f"shape operand {list(shape)} does not match result type {t}")


def _int_list(x) -> list[int]:
    return [int(v) for v in index_values(x).reshape(-1)]


@register("stablehlo.dynamic_broadcast_in_dim")
def dynamic_broadcast_in_dim(call: OpCall):
    operand, output_dimensions = call.operands
    shape = shape_values(call, output_dimensions)
    _check_rank(call, shape)
    return broadcast_to_shape(call, operand, call.attrs.get("broadcast_dimensions", []), shape)


@register("stablehlo.dynamic_iota")
def dynamic_iota(call: OpCall):
    shape = shape_values(call, call.operands[0])
    _check_rank(call, shape)
    return iota_tensor(call, shape, int(call.attrs["iota_dimension"]), call.result_type)


@register("stablehlo.dynamic_reshape")
def dynamic_reshape(call: OpCall):
    operand, output_shape = call.operands
    shape = shape_values(call, output_shape)
    _check_rank(call, shape)
    if int(np.prod(shape)) != operand.size:
        raise call.error(f"cannot reshape {operand.shape} to {shape}")
    return fresh(np.reshape(operand, shape))


@register("stablehlo.dynamic_pad")
def dynamic_pad(call: OpCall):
    operand, padding_value, low, high, interior = call.operands
    return pad_tensor(call, operand, padding_value, _int_list(low), _int_list(high),
                      _int_list(interior))


@register("stablehlo.dynamic_gather")
def dynamic_gather(call: OpCall):
    operand, start_indices, slice_sizes = call.operands
    dn = dict(call.attrs.get("dimension_numbers", {}))
    return gather_tensor(call, operand, start_indices, dn, _int_list(slice_sizes))


@register("stablehlo.real_dynamic_slice")
def real_dynamic_slice(call: OpCall):
    """slice with start_indices, limit_indices and strides given as 1-D tensors."""
    operand, starts, limits, strides = call.operands
    return slice_tensor(call, operand, _int_list(starts), _int_list(limits), _int_list(strides))

"""Indexing ops: gather, scatter, dynamic_slice, dynamic_update_slice, sort and chlo.top_k.

Index computations are vectorized with numpy: for every element of a gather's result (or of a
scatter's updates) we build the operand index the spec's formulas give, one int64 array per
operand axis. Ops with a computation region (scatter, sort) call the region once per element
(or per comparison) with 0-d arrays, in a fixed order: row-major over the updates for scatter;
for sort, a stable merge sort (Python's Timsort), after trying a few numpy-computed guesses that
the comparator can confirm with one call per adjacent pair.

`gather_tensor` is shared with dynamic_gather (ops_dynamic.py).
"""
from __future__ import annotations

import numpy as np

from axle.interpreter.numerics import convert, total_order_key
from axle.interpreter.ops_shape import fresh, index_values
from axle.interpreter.registry import OpCall, register
from axle.ir.types import ElementType, QuantizedType

# ---------------------------------------------------------------- helpers


def _index_vectors(indices, index_vector_dim: int) -> np.ndarray:
    """Start indices as int64 with the index vector moved to the last axis (a trailing axis of
    size 1 is added when index_vector_dim == rank, i.e. the index vectors are implicit)."""
    s = index_values(indices)
    if index_vector_dim == s.ndim:
        s = s[..., None]
    return np.moveaxis(s, index_vector_dim, -1)


def _batch_position(d_start: int, index_vector_dim: int) -> int:
    """Position of start_indices axis `d_start` among the batch axes (all but the index
    vector axis)."""
    return d_start - (0 if d_start < index_vector_dim else 1)


def _dimension_numbers(call: OpCall, name: str) -> dict:
    dn = call.attrs.get(name)
    if dn is None:
        raise call.error(f"missing attribute {name}")
    return {k: (list(v) if isinstance(v, (list, tuple, np.ndarray)) else v) for k, v in dn.items()}


# ---------------------------------------------------------------- gather


def gather_tensor(call: OpCall, operand: np.ndarray, start_indices, dn: dict,
                  slice_sizes) -> np.ndarray:
    """The spec's gather: result[result_index] = operand[full_start_index +
    full_batching_index + full_offset_index]."""
    offset_dims = [int(d) for d in dn.get("offset_dims", [])]
    collapsed = [int(d) for d in dn.get("collapsed_slice_dims", [])]
    operand_batching = [int(d) for d in dn.get("operand_batching_dims", [])]
    indices_batching = [int(d) for d in dn.get("start_indices_batching_dims", [])]
    start_index_map = [int(d) for d in dn.get("start_index_map", [])]
    index_vector_dim = int(dn.get("index_vector_dim", 0))
    slice_sizes = [int(s) for s in slice_sizes]
    rank = operand.ndim
    if len(slice_sizes) != rank:
        raise call.error(f"slice_sizes {slice_sizes} do not match operand rank {rank}")
    for size, dim in zip(slice_sizes, operand.shape):
        if not 0 <= size <= dim:
            raise call.error(f"slice_sizes {slice_sizes} exceed operand shape {operand.shape}")

    starts = _index_vectors(start_indices, index_vector_dim)
    if starts.shape[-1] != len(start_index_map):
        raise call.error("start_index_map does not match the index vector size")
    batch_shape = starts.shape[:-1]
    nb = len(batch_shape)
    batch_index = np.indices(batch_shape, sparse=True) if nb else []
    dropped = set(collapsed) | set(operand_batching)  # operand axes with no result axis
    window = [1 if d in dropped else slice_sizes[d] for d in range(rank)]

    index_arrays = []
    for d in range(rank):
        if d in start_index_map:
            start = starts[..., start_index_map.index(d)]
            upper = operand.shape[d] - slice_sizes[d]
            if d in dropped:  # a collapsed axis of slice size 0 still reads at its start
                upper = min(upper, operand.shape[d] - 1)
            start = np.clip(start, 0, max(upper, 0))
        elif d in operand_batching:
            d_start = indices_batching[operand_batching.index(d)]
            start = batch_index[_batch_position(d_start, index_vector_dim)]
        else:
            start = np.zeros((), np.int64)
        start = np.broadcast_to(start, batch_shape).reshape(batch_shape + (1,) * rank)
        offset = np.arange(window[d]).reshape((1,) * (nb + d) + (-1,) + (1,) * (rank - d - 1))
        index_arrays.append(start + offset)

    offset_shape = [window[d] for d in range(rank) if d not in dropped]
    result_rank = nb + len(offset_shape)
    if int(np.prod(batch_shape + tuple(window))) == 0:
        gathered = np.zeros(batch_shape + tuple(offset_shape), operand.dtype)
    elif operand.size == 0:
        raise call.error("gather of a collapsed axis of size 0")
    else:
        gathered = operand[tuple(index_arrays)].reshape(batch_shape + tuple(offset_shape))
    # result axis j is offset axis offset_dims.index(j), or the next batch axis
    permutation, next_batch = [], 0
    for j in range(result_rank):
        if j in offset_dims:
            permutation.append(nb + offset_dims.index(j))
        else:
            permutation.append(next_batch)
            next_batch += 1
    return fresh(np.transpose(gathered, permutation))


@register("stablehlo.gather")
def gather(call: OpCall):
    operand, start_indices = call.operands
    return gather_tensor(call, operand, start_indices, _dimension_numbers(call, "dimension_numbers"),
                         call.attrs["slice_sizes"])


# ---------------------------------------------------------------- scatter


def _scatter_result_indices(call: OpCall, input_shape, indices, update_shape, dn: dict):
    """For every update element (row-major), the index of `results` it updates: an int64
    array of shape (size(updates), rank(inputs)) and a mask of those in bounds."""
    update_window_dims = [int(d) for d in dn.get("update_window_dims", [])]
    inserted = [int(d) for d in dn.get("inserted_window_dims", [])]
    input_batching = [int(d) for d in dn.get("input_batching_dims", [])]
    indices_batching = [int(d) for d in dn.get("scatter_indices_batching_dims", [])]
    to_operand = [int(d) for d in dn.get("scatter_dims_to_operand_dims", [])]
    index_vector_dim = int(dn.get("index_vector_dim", 0))
    rank = len(input_shape)

    starts = _index_vectors(indices, index_vector_dim)
    if starts.shape[-1] != len(to_operand):
        raise call.error("scatter_dims_to_operand_dims does not match the index vector size")
    update_index = np.indices(update_shape, sparse=True)
    update_scatter_dims = [d for d in range(len(update_shape)) if d not in update_window_dims]
    update_scatter_index = tuple(update_index[d] for d in update_scatter_dims)
    if len(update_scatter_index) != starts.ndim - 1:
        raise call.error("updates do not match the shape of scatter_indices")
    start_index = starts[update_scatter_index] if update_scatter_index else starts
    window_axes = [d for d in range(rank) if d not in inserted and d not in input_batching]

    result_index = np.zeros((rank,) + tuple(update_shape), np.int64)
    for d in range(rank):
        if d in to_operand:
            result_index[d] += start_index[..., to_operand.index(d)]
        if d in input_batching:
            d_start = indices_batching[input_batching.index(d)]
            result_index[d] += update_scatter_index[_batch_position(d_start, index_vector_dim)]
        if d in window_axes:
            result_index[d] += update_index[update_window_dims[window_axes.index(d)]]
    result_index = result_index.reshape(rank, -1).T
    bounds = np.array(input_shape, np.int64)
    in_bounds = np.all((result_index >= 0) & (result_index < bounds), axis=1)
    return result_index, in_bounds


def _to_type(x: np.ndarray, src, dst) -> np.ndarray:
    """Values of type `src` in type `dst` (to_destination_type for promoted region types)."""
    if src == dst or isinstance(src, QuantizedType) or isinstance(dst, QuantizedType):
        return np.asarray(x)
    return convert(x, src, dst)


@register("stablehlo.scatter")
def scatter(call: OpCall):
    n = (len(call.operands) - 1) // 2
    inputs, indices, updates = call.operands[:n], call.operands[n], call.operands[n + 1:]
    dn = _dimension_numbers(call, "scatter_dimension_numbers")
    input_types, update_types = call.operand_types[:n], call.operand_types[n + 1:]
    result_ets = [t.element_type for t in call.result_types]
    results = [np.array(_to_type(x, t.element_type, et), copy=True)
               for x, t, et in zip(inputs, input_types, result_ets)]
    updates = [_to_type(u, t.element_type, et).reshape(-1)
               for u, t, et in zip(updates, update_types, result_ets)]
    result_index, in_bounds = _scatter_result_indices(
        call, inputs[0].shape, indices, call.operands[n + 1].shape, dn)
    update_computation = call.regions[0]
    for position in np.flatnonzero(in_bounds):
        index = tuple(int(i) for i in result_index[position])
        current = [np.array(r[index]) for r in results]
        new_values = update_computation(*current, *[np.array(u[position]) for u in updates])
        for r, value in zip(results, new_values):
            r[index] = value
    return results


# ---------------------------------------------------------------- dynamic slices


def _clamped_starts(call: OpCall, start_indices, operand_shape, sizes) -> list[int]:
    """clamp(0, start_indices, shape(operand) - sizes), one Python int per axis."""
    if len(start_indices) != len(operand_shape):
        raise call.error("the number of start indices does not match the operand rank")
    starts = []
    for s, dim, size in zip(start_indices, operand_shape, sizes):
        if not 0 <= size <= dim:
            raise call.error(f"slice of size {size} does not fit a dimension of size {dim}")
        starts.append(min(max(int(index_values(s)), 0), dim - size))
    return starts


@register("stablehlo.dynamic_slice")
def dynamic_slice(call: OpCall):
    operand, start_indices = call.operands[0], call.operands[1:]
    sizes = [int(s) for s in call.attrs["slice_sizes"]]
    starts = _clamped_starts(call, start_indices, operand.shape, sizes)
    return fresh(operand[tuple(slice(s, s + n) for s, n in zip(starts, sizes))])


@register("stablehlo.dynamic_update_slice")
def dynamic_update_slice(call: OpCall):
    operand, update, start_indices = call.operands[0], call.operands[1], call.operands[2:]
    if update.ndim != operand.ndim:
        raise call.error("update and operand ranks differ")
    starts = _clamped_starts(call, start_indices, operand.shape, update.shape)
    result = np.array(operand, copy=True)
    result[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return result


# ---------------------------------------------------------------- sort
#
# Each 1-D slice is sorted with the comparator. Calling the comparator region is by far the
# costliest step, so before merge-sorting we try a few likely answers computed with numpy
# (ascending or descending by one operand, lexicographic by all operands) and keep one
# if the comparator confirms it with one call per adjacent pair (`_is_stable_sorted`). For a
# strict weak order the stable sorted permutation is unique, so a confirmed guess is exactly
# what the merge sort would give; any other comparator falls through to the merge sort.


def _stable_descending(key: np.ndarray) -> np.ndarray:
    """Positions ordered by descending key, equal keys in their original order."""
    ascending_of_reversed = np.argsort(key[::-1], kind="stable")
    return (len(key) - 1 - ascending_of_reversed)[::-1]


def _ascending_keys(x: np.ndarray, et) -> list[np.ndarray]:
    """Integer keys ordering a row of values ascending, the likely comparators' orders: for
    floats, -0 == +0 with every NaN last (JAX's comparator), then IEEE totalOrder."""
    if not isinstance(et, ElementType) or et.is_complex:
        return []
    if not et.is_float:
        return [x.astype(np.uint64 if et.is_unsigned else np.int64)]
    total = total_order_key(x, et)
    canonical = np.where(total == -1, 0, total)  # -0 (key -1) ranks with +0
    canonical = np.where(np.isnan(x.astype(np.float64)), np.iinfo(np.int64).max, canonical)
    return [canonical, total]


def _guessed_orders(values: list[np.ndarray], element_types) -> dict[str, np.ndarray]:
    keys = [_ascending_keys(v, et) for v, et in zip(values, element_types)]
    guesses = {}
    for operand, operand_keys in enumerate(keys):
        for i, key in enumerate(operand_keys):
            guesses[f"ascending{operand}.{i}"] = np.argsort(key, kind="stable")
            guesses[f"descending{operand}.{i}"] = _stable_descending(key)
    if len(values) > 1 and all(keys):
        guesses["lexicographic"] = np.lexsort([k[0] for k in reversed(keys)])
    return guesses


def _is_stable_sorted(less, order) -> bool:
    """Whether `order` is the stable sort by `less`: no element is less than the one before
    it, and equal neighbours keep their original order."""
    for a, b in zip(order, order[1:]):
        if (less(b, a) if a < b else not less(a, b)):
            return False
    return True


def _merge_sorted(less, n: int) -> list[int]:
    class Key:
        __slots__ = ("position",)

        def __init__(self, position: int):
            self.position = position

        def __lt__(self, other: "Key") -> bool:
            return less(self.position, other.position)

    return sorted(range(n), key=Key)  # Timsort: a stable merge sort using only `<`


class _RowSorter:
    """Sorts rows with a comparator region, remembering which guess worked last."""

    def __init__(self, comparator, element_types):
        self.comparator = comparator
        self.element_types = element_types
        self.last_good = None

    def order(self, values: list[np.ndarray]) -> list[int]:
        columns = [[np.array(v) for v in column] for column in values]

        def less(i: int, j: int) -> bool:
            args = []
            for column in columns:
                args.append(column[i])
                args.append(column[j])
            return bool(np.asarray(self.comparator(*args)[0]))

        guesses = _guessed_orders(values, self.element_types)
        names = sorted(guesses, key=lambda name: name != self.last_good)
        tried = set()
        for name in names:
            order = [int(i) for i in guesses[name]]
            if tuple(order) in tried:
                continue
            tried.add(tuple(order))
            if _is_stable_sorted(less, order):
                self.last_good = name
                return order
        return _merge_sorted(less, len(values[0]))


@register("stablehlo.sort")
def sort(call: OpCall):
    inputs = [np.asarray(x) for x in call.operands]
    rank = inputs[0].ndim
    dimension = int(call.attrs.get("dimension", -1))
    if not -rank <= dimension < rank:
        raise call.error(f"dimension {dimension} out of range for rank {rank}")
    dimension %= rank
    if inputs[0].size == 0:
        return [np.array(x, copy=True) for x in inputs]
    moved = [np.moveaxis(x, dimension, -1) for x in inputs]
    n = moved[0].shape[-1]
    rows = [x.reshape(-1, n) for x in moved]
    results = [np.empty_like(r) for r in rows]
    sorter = _RowSorter(call.regions[0], [t.element_type for t in call.operand_types])
    for row in range(rows[0].shape[0]):
        order = sorter.order([r[row] for r in rows])
        for result, r in zip(results, rows):
            result[row] = r[row][order]
    return [fresh(np.moveaxis(r.reshape(m.shape), -1, dimension))
            for r, m in zip(results, moved)]


# ---------------------------------------------------------------- chlo.top_k


def _ascending_key(x: np.ndarray, et) -> np.ndarray:
    """Keys that order values ascending; floats by IEEE total order (NaN above +inf)."""
    if isinstance(et, ElementType) and et.is_float:
        return total_order_key(x, et)
    if isinstance(et, ElementType) and et.is_complex:
        raise TypeError("top_k of complex values")
    if x.dtype == np.bool_:
        return x.astype(np.uint8)
    return x.astype(np.uint64 if x.dtype.kind == "u" else np.int64)


@register("chlo.top_k")
def top_k(call: OpCall):
    """The k largest elements along the last axis and their indices; equal elements keep
    their order of appearance."""
    x = call.operands[0]
    k = int(call.attrs["k"])
    n = x.shape[-1]
    if not 0 <= k <= n:
        raise call.error(f"k = {k} out of range for a last dimension of size {n}")
    try:
        keys = _ascending_key(x, call.operand_types[0].element_type)
    except TypeError as e:
        raise call.error(str(e)) from None
    # Stable descending order: sort the reversed keys ascending, then reverse back.
    ascending = np.argsort(keys[..., ::-1], axis=-1, kind="stable")
    order = (n - 1 - ascending)[..., ::-1][..., :k]
    values = np.take_along_axis(x, order, axis=-1)
    return [fresh(values), order.astype(call.result_types[1].dtype)]

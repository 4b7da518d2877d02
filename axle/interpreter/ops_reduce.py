"""Ops that apply a region to many elements: reduce, reduce_window, select_and_scatter, map, and
chlo.scan (spec.md, one section per op).

Regions are callables (`call.regions[i](*values)` returns the values the region's
`stablehlo.return` yields). The spec calls a reduction body once per pair of 0-d values; doing
that from Python for every element is slow, so a region is instead applied to whole arrays at
once whenever that gives the same answer, which it does when every op in the region is
elementwise on 0-d values (add, maximum, compare, select, ...): numpy then computes the same
function at every position. `Body` decides:

* when the callable exposes its IR region (`fn.region`, an axle.ir.core.Region), it is applied
  to arrays exactly when all of the region's ops are elementwise or 0-d constants;
* otherwise it is applied to arrays on trial: the result must have the full shape and agree with
  element-by-element calls at the first and last positions;
* in every other case (and whenever the array call raises) it is called element by element.

Reductions run as a tree over the reduced positions: neighbours are combined pairwise,
`body(x[0], x[1]), body(x[2], x[3]), ...`, level by level, and the init value is combined last
from the left: `body(init, total)`. That is one of the schedules the spec allows (a full binary
tree whose in-order traversal is the elements in ascending index order with the init value
interspersed), it is deterministic, and it needs only log2(n) array calls of the body.

Quantized tensors need nothing special here: these ops only move values and call the region,
whose ops handle quantized types themselves.
"""
from __future__ import annotations

import numpy as np

from axle.interpreter.numerics import convert, element_type, is_quantized
from axle.interpreter.ops_shape import pad_tensor
from axle.interpreter.registry import InterpreterError, OpCall, register
from axle.ir import ops as op_table

# ---------------------------------------------------------------- applying regions


def _region_is_elementwise(fn):
    """True / False when the callable exposes its IR region, None when it does not."""
    region = getattr(fn, "region", None)
    if region is None or not hasattr(region, "blocks"):
        return None
    if len(region.blocks) != 1:
        return False
    block = region.blocks[0]
    if any(getattr(a.type, "shape", None) != () for a in block.arguments):
        return False
    for op in block.operations:
        opdef = op_table.lookup(op.name)
        if opdef is not None and opdef.has(op_table.TERMINATOR):
            continue
        if op.regions or any(getattr(t, "shape", None) != () for t in op.result_types):
            return False
        if op.name not in ("stablehlo.constant", "chlo.constant") and not (
                opdef is not None and opdef.has(op_table.ELEMENTWISE)):
            return False
    return True


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


class Body:
    """A region applied at every position of same-shaped (or broadcastable) arrays.

    `dtypes` are the numpy dtypes of the region's results, used when there is nothing to
    evaluate (zero elements) and when evaluating element by element.
    """

    def __init__(self, call: OpCall, index: int, dtypes):
        self.call = call
        self.fn = call.regions[index]
        self.dtypes = [np.dtype(d) for d in dtypes]
        self.vectorize = _region_is_elementwise(self.fn)  # None: not known yet
        self.verified = self.vectorize is True

    def __call__(self, *args) -> list[np.ndarray]:
        args = [np.asarray(a) for a in args]
        shape = np.broadcast_shapes(*(a.shape for a in args))
        if shape == ():
            return self._results(self.fn(*args))
        if 0 in shape:
            return [np.empty(shape, dtype=d) for d in self.dtypes]
        full = [np.ascontiguousarray(np.broadcast_to(a, shape)) for a in args]
        if self.vectorize is not False:
            result = self._try_arrays(full, shape)
            if result is not None:
                return result
            self.vectorize = False
        return self._elementwise(full, shape)

    def _results(self, values) -> list[np.ndarray]:
        values = [np.asarray(v) for v in values]
        if len(values) != len(self.dtypes):
            raise self.call.error(f"region returned {len(values)} values, expected {len(self.dtypes)}")
        return values

    def _try_arrays(self, full, shape):
        try:
            with np.errstate(all="ignore"):
                result = self._results(self.fn(*full))
        except InterpreterError:
            if self.verified:
                raise
            return None
        except Exception:  # noqa: BLE001 - a region that is not elementwise may fail anywhere
            return None
        if any(r.shape != shape for r in result):
            return None
        if not self.verified:
            for index in (np.unravel_index(0, shape), np.unravel_index(int(np.prod(shape)) - 1, shape)):
                one = self._results(self.fn(*[np.asarray(a[index]) for a in full]))
                if not all(_same_bits(r[index], o) for r, o in zip(result, one)):
                    return None
            self.verified = True
        return result

    def _elementwise(self, full, shape) -> list[np.ndarray]:
        outs = [np.empty(shape, dtype=d) for d in self.dtypes]
        for index in np.ndindex(*shape):
            values = self._results(self.fn(*[np.asarray(a[index]) for a in full]))
            for out, v in zip(outs, values):
                out[index] = v
        return outs


def reduce_last_axis(body: Body, values: list[np.ndarray], inits: list[np.ndarray]) -> list[np.ndarray]:
    """Reduces N arrays of shape (..., K) along their last axis with `body`, pairwise as a tree,
    the init values combined last from the left. With K = 0 the result is the init values."""
    n = len(values)
    batch = values[0].shape[:-1]
    if values[0].shape[-1] == 0:
        return [np.ascontiguousarray(np.broadcast_to(init, batch)).astype(d)
                for init, d in zip(inits, body.dtypes)]
    while values[0].shape[-1] > 1:
        k = values[0].shape[-1]
        even = k - k % 2
        left = [v[..., 0:even:2] for v in values]
        right = [v[..., 1:even:2] for v in values]
        combined = body(*left, *right)
        if k % 2:
            combined = [np.concatenate([c, v[..., k - 1:]], axis=-1) for c, v in zip(combined, values)]
        values = combined
    totals = [v[..., 0] for v in values]
    return body(*[np.broadcast_to(init, batch) for init in inits], *totals)[:n]


def to_body_type(call: OpCall, x: np.ndarray, source_type, target_type) -> np.ndarray:
    """Converts values to a region's (promoted) argument type (spec: to_destination_type)."""
    src, dst = element_type(source_type), element_type(target_type)
    if src == dst or is_quantized(src) or is_quantized(dst):
        return np.asarray(x)
    return convert(x, src, dst)


def _result_dtypes(call: OpCall, n: int):
    return [t.dtype for t in call.result_types[:n]]


# ---------------------------------------------------------------- reduce


@register("stablehlo.reduce")
def reduce(call: OpCall):
    n = len(call.operands) // 2
    inputs, inits = call.operands[:n], call.operands[n:]
    dims = sorted(int(d) for d in call.attrs.get("dimensions", []))
    rank = np.ndim(inputs[0])
    kept = [d for d in range(rank) if d not in dims]
    shape = np.shape(inputs[0])
    moved = []
    for x, t, rt in zip(inputs, call.operand_types, call.result_types):
        x = to_body_type(call, x, t, rt)
        reduced_size = int(np.prod([shape[d] for d in dims], dtype=np.int64))
        x = np.transpose(x, kept + dims).reshape([shape[d] for d in kept] + [reduced_size])
        moved.append(x)
    inits = [to_body_type(call, v, t, rt) for v, t, rt in zip(inits, call.operand_types[n:], call.result_types)]
    body = Body(call, 0, _result_dtypes(call, n))
    return reduce_last_axis(body, moved, inits)


# ---------------------------------------------------------------- reduce_window


def _window_attrs(call: OpCall, rank: int):
    """window_dimensions, strides, base and window dilations and padding, with spec defaults."""
    ones = [1] * rank
    window = [int(v) for v in call.attrs["window_dimensions"]]
    strides = [int(v) for v in call.attrs.get("window_strides", ones)]
    base = [int(v) for v in call.attrs.get("base_dilations", ones)]
    dilations = [int(v) for v in call.attrs.get("window_dilations", ones)]
    padding = np.asarray(call.attrs.get("padding", np.zeros((rank, 2), np.int64)), np.int64).reshape(rank, 2)
    if not len(window) == len(strides) == len(base) == len(dilations) == rank:
        raise call.error(f"window attributes do not match the operand rank {rank}")
    return window, strides, base, dilations, padding


def num_windows(size: int, window: int, stride: int, dilation: int) -> int:
    """How many windows fit along a (padded) dimension of `size`."""
    span = (window - 1) * dilation + 1
    if size == 0 or span > size:
        return 0
    return (size - span) // stride + 1


def windows_of(x: np.ndarray, window, strides, dilations) -> np.ndarray:
    """All windows of `x`: an array of shape (num_windows..., prod(window)); the last axis runs
    over the window positions in ascending index order."""
    counts = [num_windows(s, w, st, d) for s, w, st, d in zip(x.shape, window, strides, dilations)]
    if 0 in counts or 0 in window:
        return np.empty(counts + [int(np.prod(window))], dtype=x.dtype)
    x = np.ascontiguousarray(x)
    view = np.lib.stride_tricks.as_strided(
        x, shape=counts + list(window),
        strides=[s * st for s, st in zip(x.strides, strides)] + [s * d for s, d in zip(x.strides, dilations)],
        writeable=False)
    return view.reshape(counts + [-1])


@register("stablehlo.reduce_window")
def reduce_window(call: OpCall):
    n = len(call.operands) // 2
    inputs, inits = call.operands[:n], call.operands[n:]
    rank = np.ndim(inputs[0])
    window, strides, base, dilations, padding = _window_attrs(call, rank)
    inits = [to_body_type(call, v, t, rt) for v, t, rt in zip(inits, call.operand_types[n:], call.result_types)]
    windows = []
    for x, t, rt, init in zip(inputs, call.operand_types, call.result_types, inits):
        x = to_body_type(call, x, t, rt)
        padded = pad_tensor(call, x, init, padding[:, 0], padding[:, 1], [b - 1 for b in base])
        windows.append(windows_of(padded, window, strides, dilations))
    body = Body(call, 0, _result_dtypes(call, n))
    return reduce_last_axis(body, windows, inits)


# ---------------------------------------------------------------- select_and_scatter


def _select_in_windows(select: Body, values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """For every window (last axis) the operand index that `select` picks: a pairwise tree of
    `select(a, b) ? a : b`, skipping padding (index -1). -1 where a window holds only padding."""
    while values.shape[-1] > 1:
        k = values.shape[-1]
        even = k - k % 2
        a, b = values[..., 0:even:2], values[..., 1:even:2]
        ia, ib = index[..., 0:even:2], index[..., 1:even:2]
        (pick_a,) = select(a, b)
        pick_a = np.where(ia < 0, False, np.where(ib < 0, True, pick_a.astype(bool)))
        new_values, new_index = np.where(pick_a, a, b), np.where(pick_a, ia, ib)
        if k % 2:
            new_values = np.concatenate([new_values, values[..., k - 1:]], axis=-1)
            new_index = np.concatenate([new_index, index[..., k - 1:]], axis=-1)
        values, index = new_values, new_index
    if values.shape[-1] == 0:
        return np.full(values.shape[:-1], -1, np.int64)
    return index[..., 0]


def scatter_to(scatter: Body, init: np.ndarray, size: int, targets: np.ndarray, values: np.ndarray):
    """result[t] = scatter(...scatter(scatter(init, v0), v1)..., vk) over the values sent to t, in
    their order; positions no value is sent to keep `init`. Values go in rounds: round r
    applies, at once, the r-th value of every target."""
    result = np.ascontiguousarray(np.broadcast_to(init, (size,))).astype(scatter.dtypes[0])
    if targets.size == 0:
        return result
    order = np.argsort(targets, kind="stable")
    sorted_targets = targets[order]
    positions = np.arange(len(order))
    first = np.r_[True, sorted_targets[1:] != sorted_targets[:-1]]
    rank_sorted = positions - np.maximum.accumulate(np.where(first, positions, 0))
    rank = np.empty_like(rank_sorted)
    rank[order] = rank_sorted
    for r in range(int(rank.max()) + 1):
        chosen = rank == r
        t = targets[chosen]
        (result[t],) = scatter(result[t], values[chosen])
    return result


@register("stablehlo.select_and_scatter")
def select_and_scatter(call: OpCall):
    operand, source, init = call.operands
    rank = np.ndim(operand)
    window, strides, _, _, padding = _window_attrs(call, rank)
    ones = [1] * rank
    flat_index = np.arange(np.size(operand), dtype=np.int64).reshape(np.shape(operand))
    padded_index = pad_tensor(call, flat_index, -1, padding[:, 0], padding[:, 1], [0] * rank)
    padded_values = pad_tensor(call, operand, np.zeros((), np.asarray(operand).dtype),
                               padding[:, 0], padding[:, 1], [0] * rank)
    value_windows = windows_of(padded_values, window, strides, ones)
    index_windows = windows_of(padded_index, window, strides, ones)
    if value_windows.shape[:-1] != np.shape(source):
        raise call.error(f"source shape {np.shape(source)} does not match the "
                         f"{list(value_windows.shape[:-1])} windows of the operand")
    select = Body(call, 0, [np.bool_])
    selected = _select_in_windows(select, value_windows, index_windows).reshape(-1)
    result_type = call.result_types[0]
    values = to_body_type(call, source, call.operand_types[1], result_type).reshape(-1)
    init = to_body_type(call, init, call.operand_types[2], result_type)
    sent = selected >= 0
    scatter = Body(call, 1, [result_type.dtype])
    result = scatter_to(scatter, init, np.size(operand), selected[sent], values[sent])
    return result.reshape(np.shape(operand))


# ---------------------------------------------------------------- map


@register("stablehlo.map")
def map_op(call: OpCall):
    body = Body(call, 0, _result_dtypes(call, 1))
    if not call.operands:
        raise call.error("map needs at least one input")
    return body(*call.operands)[0]


# ---------------------------------------------------------------- chlo.scan


def _scan_split(call: OpCall, length: int, dimension: int) -> tuple[int, int]:
    """(number of inputs, number of outputs) of a chlo.scan; the rest are carries."""
    segments = call.attrs.get("operandSegmentSizes", call.attrs.get("operand_segment_sizes"))
    if segments is not None:
        n_inputs, n_carries = (int(s) for s in segments)
        return n_inputs, len(call.result_types) - n_carries
    # Without segment sizes: outputs are the leading results stacked along `dimension`.
    n_outputs = 0
    for t in call.result_types:
        shape = getattr(t, "shape", ())
        if len(shape) > dimension and shape[dimension] in (length, None):
            n_outputs += 1
        else:
            break
    n_carries = len(call.result_types) - n_outputs
    return len(call.operands) - n_carries, n_outputs


@register("chlo.scan")
def scan(call: OpCall):
    dimension = int(call.attrs.get("dimension", 0))
    length = np.shape(call.operands[0])[dimension]
    n_inputs, n_outputs = _scan_split(call, length, dimension)
    inputs, carries = call.operands[:n_inputs], list(call.operands[n_inputs:])
    steps = range(length - 1, -1, -1) if call.attrs.get("is_reverse", False) else range(length)
    slices: list[list[np.ndarray]] = [[None] * length for _ in range(n_outputs)]
    for i in steps:
        values = call.regions[0](*[np.take(x, i, axis=dimension) for x in inputs], *carries)
        values = [np.asarray(v) for v in values]
        for out, v in zip(slices, values[:n_outputs]):
            out[i] = v
        carries = values[n_outputs:]
    outputs = []
    for out, t in zip(slices, call.result_types[:n_outputs]):
        if length:
            outputs.append(np.stack(out, axis=dimension))
        else:
            outputs.append(np.empty([0 if d is None else d for d in t.shape], dtype=t.dtype))
    return outputs + [np.asarray(c) for c in carries]

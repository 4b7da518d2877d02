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
* when the region is not exposed (or calls a function) it is applied to arrays on trial: the
  result must have the full shape and agree with element-by-element calls at the first and
  last positions;
* in every other case, and whenever the array call raises, it is called element by element.

Array calls go through `fn.batched` when the callable has one (an evaluation that lets values
carry extra dimensions, which the evaluator's per-op result shape checks would otherwise
reject), else through `fn` itself.

Reductions fold the reduced positions in ascending index order, starting from the init value:
`body(...body(body(init, x0), x1)..., xk)`, one array call of the body per position (all output
positions at once); reduce_window and select_and_scatter fold each window the same way, over
strided views of the padded input (one call per window position). That is the order of XLA and of the StableHLO reference interpreter, so
float reductions round as theirs do; the spec allows any full binary tree whose in-order
traversal is the elements in order with init values interspersed. Reductions longer than
FOLD_BLOCK fold in blocks to bound the number of calls (see `reduce_last_axis`).

Quantized tensors need nothing special here: these ops only move values and call the region,
whose ops handle quantized types themselves.
"""
from __future__ import annotations

import numpy as np

from axle.interpreter.numerics import convert, element_type, is_quantized
from axle.interpreter.ops_shape import pad_tensor
from axle.interpreter.registry import OpCall, register
from axle.ir import ops as op_table

# ---------------------------------------------------------------- applying regions


def _elementwise_on_0d(op, opdef) -> bool:
    """Elementwise when all its values are 0-d: the elementwise trait, a constant, or a
    bitcast (which changes shape only between element types of different widths)."""
    return opdef is not None and (opdef.has(op_table.ELEMENTWISE) or opdef.has(op_table.CONSTANT_LIKE)) \
        or op.name == "stablehlo.bitcast_convert"


def _region_is_elementwise(fn):
    """True when the callable exposes its IR region and every op in it is elementwise on 0-d
    values (or a 0-d constant); None when that is not known (no region exposed, or the region
    calls a function); False otherwise."""
    region = getattr(fn, "region", None)
    if region is None or not hasattr(region, "blocks"):
        return None
    if len(region.blocks) != 1:
        return False
    block = region.blocks[0]
    if any(getattr(a.type, "shape", None) != () for a in block.arguments):
        return False
    verdict = True
    for op in block.operations:
        opdef = op_table.lookup(op.name)
        if opdef is not None and opdef.has(op_table.TERMINATOR):
            continue
        if op.regions or any(getattr(t, "shape", None) != () for t in op.result_types):
            return False
        if op.name == "func.call":
            verdict = None  # the callee's body decides: try it on arrays, then spot-check
        elif not _elementwise_on_0d(op, opdef):
            return False
    return verdict


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
        # an evaluator may offer a variant that takes arrays with extra dimensions
        self.array_fn = getattr(self.fn, "batched", self.fn)
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
                result = self._results(self.array_fn(*full))
        except Exception:  # noqa: BLE001 - any failure on arrays: evaluate element by element,
            return None    # where a genuine error shows up again
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


FOLD_BLOCK = 256  # reductions longer than this fold in blocks (see reduce_last_axis)


def _fold(body: Body, values: list[np.ndarray], accumulators=None) -> list[np.ndarray]:
    """Left fold along the last axis: body(...body(body(acc, x0), x1)..., xk); without
    accumulators the fold starts from x0."""
    k = values[0].shape[-1]
    if accumulators is None:
        accumulators, first = [v[..., 0] for v in values], 1
    else:
        accumulators, first = [np.broadcast_to(a, values[0].shape[:-1]) for a in accumulators], 0
    for i in range(first, k):
        accumulators = body(*accumulators, *[v[..., i] for v in values])
    return accumulators


def reduce_last_axis(body: Body, values: list[np.ndarray], inits: list[np.ndarray]) -> list[np.ndarray]:
    """Reduces N arrays of shape (..., K) along their last axis with `body` and the init values.

    Up to FOLD_BLOCK elements are folded in order, starting from the init value:
    `body(...body(body(init, x0), x1)..., xk)`, the order XLA and the StableHLO reference
    interpreter use. Longer reductions are cut into blocks of FOLD_BLOCK consecutive
    elements, each block is folded (all blocks at once, one array call per position), and
    the block results are reduced the same way. That is still a schedule the spec allows
    (the tree's in-order traversal is the init value, then every element in order), and it
    needs about FOLD_BLOCK calls per level instead of K.
    """
    n = len(values)
    k = values[0].shape[-1]
    batch = values[0].shape[:-1]
    if k == 0:
        # np.array, not np.ascontiguousarray: that one makes a 0-d result 1-d
        return [np.array(np.broadcast_to(init, batch)).astype(d)
                for init, d in zip(inits, body.dtypes)]
    while k > FOLD_BLOCK:
        blocks = k // FOLD_BLOCK
        head = [v[..., :blocks * FOLD_BLOCK].reshape(batch + (blocks, FOLD_BLOCK)) for v in values]
        partials = _fold(body, head)
        if k % FOLD_BLOCK:
            tail = _fold(body, [v[..., blocks * FOLD_BLOCK:] for v in values])
            partials = [np.concatenate([p, t[..., None]], axis=-1) for p, t in zip(partials, tail)]
        values = partials
        k = values[0].shape[-1]
    return _fold(body, values, inits)[:n]


def to_body_type(call: OpCall, x: np.ndarray, source_type, target_type) -> np.ndarray:
    """Converts values to a region's (promoted) argument type (spec: to_destination_type)."""
    src, dst = element_type(source_type), element_type(target_type)
    if src == dst or is_quantized(src) or is_quantized(dst):
        return np.asarray(x)
    return convert(x, src, dst)


def _inits_in_body_types(call: OpCall, inits, n: int) -> list[np.ndarray]:
    types = zip(call.operand_types[n:], call.result_types)
    return [to_body_type(call, v, t, rt) for v, (t, rt) in zip(inits, types)]


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
    reduced_size = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    for x, t, rt in zip(inputs, call.operand_types, call.result_types):
        x = to_body_type(call, x, t, rt)
        x = np.transpose(x, kept + dims).reshape([shape[d] for d in kept] + [reduced_size])
        moved.append(x)
    inits = _inits_in_body_types(call, inits, n)
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
    padding = call.attrs.get("padding", np.zeros((rank, 2), np.int64))
    padding = np.asarray(padding, np.int64).reshape(rank, 2)
    if not len(window) == len(strides) == len(base) == len(dilations) == rank:
        raise call.error(f"window attributes do not match the operand rank {rank}")
    return window, strides, base, dilations, padding


def num_windows(size: int, window: int, stride: int, dilation: int) -> int:
    """How many windows fit along a (padded) dimension of `size`."""
    span = (window - 1) * dilation + 1
    if size == 0 or span > size:
        return 0
    return (size - span) // stride + 1


def windows_of(x: np.ndarray, window, strides, dilations) -> list[np.ndarray]:
    """The windows of `x`, one array per window position in ascending index order: the k-th
    array holds, for every window, its element at position k (shape: the number of windows
    along each dimension). They are strided views of `x`, so no window is copied."""
    counts = [num_windows(s, w, st, d) for s, w, st, d in zip(x.shape, window, strides, dilations)]
    if 0 in counts:
        return [np.empty(counts, dtype=x.dtype) for _ in np.ndindex(*window)]
    x = np.ascontiguousarray(x)
    window_starts = [s * st for s, st in zip(x.strides, strides)]
    window_steps = [s * d for s, d in zip(x.strides, dilations)]
    view = np.lib.stride_tricks.as_strided(x, shape=counts + list(window),
                                           strides=window_starts + window_steps, writeable=False)
    return [view[(Ellipsis, *position)] for position in np.ndindex(*window)]


@register("stablehlo.reduce_window")
def reduce_window(call: OpCall):
    """Folds every window in order from the init value, all windows at once: one array call of
    the body per window position (the windows are views: nothing of window size is copied)."""
    n = len(call.operands) // 2
    inputs, inits = call.operands[:n], call.operands[n:]
    rank = np.ndim(inputs[0])
    window, strides, base, dilations, padding = _window_attrs(call, rank)
    inits = _inits_in_body_types(call, inits, n)
    per_input = []
    for x, t, rt, init in zip(inputs, call.operand_types, call.result_types, inits):
        x = to_body_type(call, x, t, rt)
        padded = pad_tensor(call, x, init, padding[:, 0], padding[:, 1], [b - 1 for b in base])
        per_input.append(windows_of(padded, window, strides, dilations))
    body = Body(call, 0, _result_dtypes(call, n))
    accumulators = [np.broadcast_to(init, per_input[0][0].shape) for init in inits]
    for elements in zip(*per_input):
        accumulators = body(*accumulators, *elements)
    return accumulators


# ---------------------------------------------------------------- select_and_scatter


def _select_in_windows(select: Body, values: list[np.ndarray], index: list[np.ndarray]) -> np.ndarray:
    """For every window the operand index that `select` picks (values and index given per
    window position, as windows_of gives them), folding in order: the current choice is kept
    when `select(current, next)` is true, else `next` replaces it. Padding (index -1) is never
    chosen; -1 where a window holds only padding."""
    current, chosen = values[0], index[0]
    for candidate, candidate_index in zip(values[1:], index[1:]):
        (keep,) = select(current, candidate)
        keep = np.where(chosen < 0, False, np.where(candidate_index < 0, True, keep.astype(bool)))
        current = np.where(keep, current, candidate)
        chosen = np.where(keep, chosen, candidate_index)
    return chosen


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
    if value_windows[0].shape != np.shape(source):
        raise call.error(f"source shape {np.shape(source)} does not match the "
                         f"{list(value_windows[0].shape)} windows of the operand")
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
    """(number of inputs, number of outputs) of a chlo.scan; the other operands and results
    are the carries. Read from `operandSegmentSizes` when the op has it; else from the body's
    argument types when the region is exposed (an input's argument drops `dimension`, a
    carry's argument has the init's type); else the outputs are taken to be the leading
    results whose dimension `dimension` has the scanned length."""
    segments = call.attrs.get("operandSegmentSizes", call.attrs.get("operand_segment_sizes"))
    if segments is not None:
        n_inputs, n_carries = (int(s) for s in segments)
        return n_inputs, len(call.result_types) - n_carries
    n_operands, n_results = len(call.operands), len(call.result_types)
    region = getattr(call.regions[0], "region", None)
    if region is not None:
        arg_shapes = [tuple(a.type.shape) for a in region.blocks[0].arguments]
        for n_inputs in range(1, n_operands + 1):
            sliced = [tuple(np.delete(np.shape(x), dimension)) for x in call.operands[:n_inputs]]
            carried = [tuple(np.shape(x)) for x in call.operands[n_inputs:]]
            if arg_shapes == sliced + carried:
                return n_inputs, n_results - (n_operands - n_inputs)
    n_outputs = 0
    for t in call.result_types:
        shape = getattr(t, "shape", ())
        if len(shape) > dimension and shape[dimension] in (length, None):
            n_outputs += 1
        else:
            break
    return n_operands - (n_results - n_outputs), n_outputs


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

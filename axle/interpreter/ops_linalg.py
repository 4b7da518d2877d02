"""Contractions and linear algebra: dot_general, dot, einsum, convolution, dynamic_conv, fft,
triangular_solve, cholesky, the batch_norm ops and chlo.ragged_dot (spec.md, one section per op).

Arithmetic: operands are brought to the form the result type computes in (`contraction_form`).
Integer and boolean results use 64-bit integers (products and sums wrap around, which equals
wrapping once at the end); integer operands are first converted to the result type, as
`convert` would (i8 x i8 -> i32). Boolean contractions are `or` of `and`s, so the sum of
products is compared with zero. Float results accumulate in float32 (complex64) when their
components have at most 32 bits, else in float64 (complex128), adding one product at a time in
the order of the contracting index, as the reference interpreter and XLA's loops do (large
contractions run as one float64 BLAS matmul instead: see `accumulation`). f16/bf16/f8 therefore
accumulate in f32 and are rounded once at the end.

Quantized operands: dot_general, convolution and the other ops here compute on values, not on
storage integers; they are wrapped with dequantize -> op -> quantize by ops_quant.py. Should a
quantized tensor reach them directly, `reject_quantized` raises instead of computing on storage.
"""
from __future__ import annotations

import numpy as np
from axle.interpreter import fft_library

from axle.interpreter.numerics import (
    cast_to, convert, element_type, is_quantized, round_float, to_compute, to_wide_int,
)
from axle.interpreter.ops_reduce import num_windows
from axle.interpreter.ops_shape import pad_tensor
from axle.interpreter.registry import OpCall, register

# ---------------------------------------------------------------- shared helpers


def reject_quantized(call: OpCall) -> None:
    """Hook for quantized operands: these ops are evaluated on dequantized values by the
    dequantize_op_quantize wrapper of ops_quant.py, never on storage integers."""
    if any(is_quantized(t) for t in [*call.operand_types, *call.result_types]):
        raise call.error("quantized operands must go through dequantize_op_quantize (ops_quant.py)")


def contraction_form(x, src, dst) -> np.ndarray:
    """Operand values of element type `src` in the form a contraction with result element type
    `dst` computes in: int64/uint64 for integer and boolean results (after converting to
    `dst`), float32/complex64 for results of up to 32 bits per component, float64/complex128
    for wider ones."""
    x = np.asarray(x)
    if dst.is_int or dst.is_bool:
        if src != dst and not (src.is_bool and dst.is_bool):
            x = convert(x, src, dst)
        return to_wide_int(x, dst)
    narrow = dst.component.bitwidth <= 32
    if src.is_complex or dst.is_complex:
        return x.astype(np.complex64 if narrow else np.complex128)
    return x.astype(np.float32 if narrow else np.float64)


SEQUENTIAL_LIMIT = 1 << 24  # multiply-adds up to which float contractions add one by one


def accumulation(dtype, multiply_adds: int) -> tuple[np.dtype, bool]:
    """(accumulator dtype, whether to add products one at a time) for a contraction of
    values of `dtype` with `multiply_adds` products in all.

    Integers use an exact (wrapping) matmul. Floats add one product at a time, in the order of
    the contracting index, each product and sum rounded to the contraction form's type: the
    reference interpreter's order and XLA's loops, so results with cancellation round as theirs
    do. Past SEQUENTIAL_LIMIT that costs seconds in numpy, so larger float contractions run as
    one BLAS matmul in float64 (complex128) instead, rounded once at the end: more precise, and
    still deterministic for a given shape."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return dtype, False
    if multiply_adds <= SEQUENTIAL_LIMIT:
        return dtype, True
    return np.dtype(np.complex128 if dtype.kind == "c" else np.float64), False


def accumulate_products(acc: np.ndarray, a: np.ndarray, b: np.ndarray, sequential: bool) -> np.ndarray:
    """acc (..., M, N) plus the products of a (..., M, K) and b (..., K, N), in acc's dtype."""
    with np.errstate(all="ignore"):
        if not sequential:
            return acc + np.matmul(a.astype(acc.dtype), b.astype(acc.dtype))
        for k in range(a.shape[-1]):
            acc = acc + a[..., :, k, None] * b[..., None, k, :]
    return acc


def from_contraction_form(values: np.ndarray, dst) -> np.ndarray:
    """Rounds or wraps computed values once to the result element type."""
    if dst.is_bool:
        return np.asarray(values) != 0
    return cast_to(values, dst)


def contract(lhs, rhs, lhs_batch, rhs_batch, lhs_contract, rhs_contract) -> np.ndarray:
    """dot_general on values already in contraction form: result dimensions are the batch
    dimensions, then lhs's free dimensions, then rhs's free dimensions."""
    lhs_batch, rhs_batch = list(lhs_batch), list(rhs_batch)
    lhs_contract, rhs_contract = list(lhs_contract), list(rhs_contract)
    lhs_free = [d for d in range(lhs.ndim) if d not in lhs_batch + lhs_contract]
    rhs_free = [d for d in range(rhs.ndim) if d not in rhs_batch + rhs_contract]
    batch_shape = [lhs.shape[d] for d in lhs_batch]
    lhs_free_shape = [lhs.shape[d] for d in lhs_free]
    rhs_free_shape = [rhs.shape[d] for d in rhs_free]
    size = lambda dims: int(np.prod(dims, dtype=np.int64))  # noqa: E731
    contract_size = size([lhs.shape[d] for d in lhs_contract])
    left = np.transpose(lhs, lhs_batch + lhs_free + lhs_contract).reshape(
        size(batch_shape), size(lhs_free_shape), contract_size)
    right = np.transpose(rhs, rhs_batch + rhs_contract + rhs_free).reshape(
        size(batch_shape), contract_size, size(rhs_free_shape))
    out_shape = (size(batch_shape), size(lhs_free_shape), size(rhs_free_shape))
    dtype, sequential = accumulation(left.dtype, size(out_shape) * contract_size)
    product = accumulate_products(np.zeros(out_shape, dtype), left, right, sequential)
    return product.reshape(batch_shape + lhs_free_shape + rhs_free_shape)


def _operands_in_contraction_form(call: OpCall, count: int = 2):
    dst = element_type(call.result_types[0])
    return [contraction_form(x, element_type(t), dst)
            for x, t in zip(call.operands[:count], call.operand_types[:count])], dst


# ---------------------------------------------------------------- dot_general, dot


@register("stablehlo.dot_general")
def dot_general(call: OpCall):
    reject_quantized(call)
    (lhs, rhs), dst = _operands_in_contraction_form(call)
    dims = call.attrs.get("dot_dimension_numbers", {})
    values = contract(lhs, rhs,
                      dims.get("lhs_batching_dimensions", []), dims.get("rhs_batching_dimensions", []),
                      dims.get("lhs_contracting_dimensions", []), dims.get("rhs_contracting_dimensions", []))
    return from_contraction_form(values, dst)


@register("stablehlo.dot")
def dot(call: OpCall):
    """The legacy dot: lhs's last dimension contracts with rhs's first (ranks 1 or 2)."""
    reject_quantized(call)
    (lhs, rhs), dst = _operands_in_contraction_form(call)
    if lhs.ndim not in (1, 2) or rhs.ndim not in (1, 2):
        raise call.error(f"dot expects rank-1 or rank-2 operands, got ranks {lhs.ndim} and {rhs.ndim}")
    values = contract(lhs, rhs, [], [], [lhs.ndim - 1], [0])
    return from_contraction_form(values, dst)


@register("stablehlo.einsum", "stablehlo.unary_einsum")
def einsum(call: OpCall):
    """The deprecated einsum ops (not in the spec; XLA's semantics): `einsum_config` is a numpy
    einsum subscript string such as "ab,bc->ac". Floats are summed in float64 (complex128)."""
    reject_quantized(call)
    operands, dst = _operands_in_contraction_form(call, len(call.operands))
    if operands[0].dtype.kind in "fc":
        wide = np.complex128 if operands[0].dtype.kind == "c" else np.float64
        operands = [x.astype(wide) for x in operands]
    with np.errstate(all="ignore"):
        values = np.einsum(call.attrs["einsum_config"], *operands)
    return from_contraction_form(values, dst)


# ---------------------------------------------------------------- convolution


def _conv_windows(call: OpCall, x, w, strides, padding, lhs_dilation, rhs_dilation):
    """Convolution of x (N, spatial..., C) with w (spatial..., C, O), one feature group:
    for every kernel position, the strided slice of the padded input it meets is multiplied
    by the kernel's (C, O) matrix at that position and summed."""
    rank = x.ndim - 2
    low = [0, *(int(p) for p in padding[:, 0]), 0]
    high = [0, *(int(p) for p in padding[:, 1]), 0]
    interior = [0, *(d - 1 for d in lhs_dilation), 0]
    x = pad_tensor(call, x, np.zeros((), x.dtype), low, high, interior)
    kernel = w.shape[:rank]
    counts = [num_windows(x.shape[1 + i], kernel[i], strides[i], rhs_dilation[i]) for i in range(rank)]
    out_shape = [x.shape[0], *counts, w.shape[-1]]
    dtype, sequential = accumulation(x.dtype, int(np.prod(out_shape + list(w.shape[:-1]), dtype=np.int64)))
    out = np.zeros(out_shape, dtype=dtype)
    if 0 in counts:
        return out
    for position in np.ndindex(*kernel):
        window = tuple(slice(k * d, k * d + (c - 1) * s + 1, s)
                       for k, d, c, s in zip(position, rhs_dilation, counts, strides))
        out = accumulate_products(out, x[(slice(None), *window, slice(None))], w[position], sequential)
    return out


def convolve(call: OpCall, lhs, rhs, padding) -> np.ndarray:
    """stablehlo.convolution on values in contraction form, with `padding` an (N-2, 2) array."""
    rank = lhs.ndim - 2
    dims = call.attrs["dimension_numbers"]
    ones = [1] * rank
    strides = [int(v) for v in call.attrs.get("window_strides", ones)]
    lhs_dilation = [int(v) for v in call.attrs.get("lhs_dilation", ones)]
    rhs_dilation = [int(v) for v in call.attrs.get("rhs_dilation", ones)]
    reversal = [bool(v) for v in call.attrs.get("window_reversal", [False] * rank)]
    feature_groups = int(call.attrs.get("feature_group_count", 1))
    batch_groups = int(call.attrs.get("batch_group_count", 1))
    padding = np.asarray(padding, np.int64).reshape(rank, 2)

    # Canonical layouts: x (N, spatial..., C), w (spatial..., I, O), result (N, spatial..., O).
    x = np.transpose(lhs, [dims["input_batch_dimension"], *dims["input_spatial_dimensions"],
                           dims["input_feature_dimension"]])
    w = np.transpose(rhs, [*dims["kernel_spatial_dimensions"], dims["kernel_input_feature_dimension"],
                           dims["kernel_output_feature_dimension"]])
    # Reversing the lhs window along a spatial dimension is reversing the kernel along it.
    w = np.flip(w, axis=[i for i in range(rank) if reversal[i]])

    def one_group(xg, wg):
        return _conv_windows(call, xg, wg, strides, padding, lhs_dilation, rhs_dilation)

    if feature_groups > 1:
        parts = zip(np.split(x, feature_groups, axis=-1), np.split(w, feature_groups, axis=-1))
        out = np.concatenate([one_group(xg, wg) for xg, wg in parts], axis=-1)
    elif batch_groups > 1:
        parts = zip(np.split(x, batch_groups, axis=0), np.split(w, batch_groups, axis=-1))
        out = np.concatenate([one_group(xg, wg) for xg, wg in parts], axis=-1)
    else:
        out = one_group(x, w)
    order = [dims["output_batch_dimension"], *dims["output_spatial_dimensions"],
             dims["output_feature_dimension"]]
    return np.transpose(out, np.argsort(order))


@register("stablehlo.convolution")
def convolution(call: OpCall):
    reject_quantized(call)
    (lhs, rhs), dst = _operands_in_contraction_form(call)
    rank = lhs.ndim - 2
    padding = call.attrs.get("padding", np.zeros((rank, 2), np.int64))
    return from_contraction_form(convolve(call, lhs, rhs, padding), dst)


@register("stablehlo.dynamic_conv")
def dynamic_conv(call: OpCall):
    reject_quantized(call)
    (lhs, rhs), dst = _operands_in_contraction_form(call)
    padding = np.asarray(call.operands[2]).astype(np.int64)
    return from_contraction_form(convolve(call, lhs, rhs, padding), dst)


# ---------------------------------------------------------------- chlo.ragged_dot


def _group_bounds(call: OpCall, group_sizes) -> np.ndarray:
    sizes = np.asarray(group_sizes).astype(np.int64)
    if sizes.ndim != 1:
        raise call.error(f"ragged_dot supports group_sizes of rank 1, got shape {sizes.shape}")
    return np.concatenate([[0], np.cumsum(sizes)])


def _along(index: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A 1-D array shaped to broadcast along `axis` of a rank-`ndim` array."""
    return index.reshape([-1 if d == axis else 1 for d in range(ndim)])


@register("chlo.ragged_dot")
def ragged_dot(call: OpCall):
    """Ragged dot (jax.lax.ragged_dot_general): lhs's ragged dimension is cut into groups of
    `group_sizes` consecutive positions. Modes: the ragged dimension is a free dimension (each
    group uses its own rhs slice along rhs's group dimension), a contracting dimension (one
    result per group, contracting only that group's positions), or a batch dimension."""
    reject_quantized(call)
    (lhs, rhs), dst = _operands_in_contraction_form(call)
    dims = call.attrs["ragged_dot_dimension_numbers"]
    lb, rb, lc, rc = (list(dims.get(f"{side}_{kind}_dimensions", [])) for kind in ("batching", "contracting")
                      for side in ("lhs", "rhs"))
    (ragged,) = dims["lhs_ragged_dimensions"]
    group_dims = list(dims.get("rhs_group_dimensions", []))
    bounds = _group_bounds(call, call.operands[2])
    positions = np.arange(lhs.shape[ragged])

    if group_dims:  # mode 1: ragged free dimension, rhs has a group dimension
        (group_dim,) = group_dims
        keep = lambda d: d - (d > group_dim)  # noqa: E731  rhs dimension after removing group_dim
        lhs_free = [d for d in range(lhs.ndim) if d not in lb + lc]
        result_axis = len(lb) + lhs_free.index(ragged)
        out = None
        for g in range(len(bounds) - 1):
            part = contract(lhs, np.take(rhs, g, axis=group_dim), lb, [keep(d) for d in rb],
                            lc, [keep(d) for d in rc])
            if out is None:
                out = np.zeros_like(part)
            inside = (positions >= bounds[g]) & (positions < bounds[g + 1])
            out = np.where(_along(inside, result_axis, part.ndim), part, out)
        if out is None:
            raise call.error("ragged_dot needs at least one group")
        return from_contraction_form(out, dst)

    if ragged in lc:  # mode 2: ragged contracting dimension, one result per group
        rhs_ragged = rc[lc.index(ragged)]
        parts = []
        for g in range(len(bounds) - 1):
            inside = (positions >= bounds[g]) & (positions < bounds[g + 1])
            masked_lhs = np.where(_along(inside, ragged, lhs.ndim), lhs, 0)
            masked_rhs = np.where(_along(inside, rhs_ragged, rhs.ndim), rhs, 0)
            parts.append(contract(masked_lhs, masked_rhs, lb, rb, lc, rc))
        return from_contraction_form(np.stack(parts), dst)

    # mode 3: ragged batch dimension; batch positions outside every group give zeros
    out = contract(lhs, rhs, lb, rb, lc, rc)
    inside = positions < bounds[-1]
    out = np.where(_along(inside, lb.index(ragged), out.ndim), out, 0)
    return from_contraction_form(out, dst)


# ---------------------------------------------------------------- fft


@register("stablehlo.fft")
def fft(call: OpCall):
    reject_quantized(call)
    x = np.asarray(call.operands[0])
    fft_type = call.attrs["fft_type"]
    lengths = [int(n) for n in call.attrs["fft_length"]]
    dst = element_type(call.result_types[0])
    if fft_type == "RFFT":
        shape = [*x.shape[:-1], x.shape[-1] // 2 + 1 if x.shape[-1] else 0]
    elif fft_type == "IRFFT":
        shape = [*x.shape[:-1], lengths[-1]]
    else:
        shape = list(x.shape)
    if 0 in x.shape or 0 in shape:
        return np.zeros(shape, dtype=dst.dtype)
    # complex64 / float32 transforms run in single precision, as XLA's do (DUCC, pocketfft's
    # successor): rounding in f64 would differ from them by more ULPs. The library
    # (axle/interpreter/fft_library.py) is the one the CPU backend calls.
    if fft_type not in ("FFT", "IFFT", "RFFT", "IRFFT"):
        raise call.error(f"unknown fft_type {fft_type!r}")
    narrow = dst.component.bitwidth <= 32
    precision = (np.float32 if narrow else np.float64) if fft_type == "IRFFT" else \
        (np.complex64 if narrow else np.complex128)
    return round_float(fft_library.transform(fft_type, lengths, x, precision), dst)


# ---------------------------------------------------------------- triangular_solve, cholesky


def _solve_triangular(a: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """Solves a x = b by substitution for triangular a (..., n, n) and b (..., n, m); only the
    triangle of a that `lower` names is read."""
    n = a.shape[-1]
    x = np.zeros(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], dtype=np.result_type(a, b))
    rows = range(n) if lower else range(n - 1, -1, -1)
    for i in rows:
        known = slice(0, i) if lower else slice(i + 1, n)
        rest = b[..., i, :] - np.einsum("...j,...jm->...m", a[..., i, known], x[..., known, :])
        x[..., i, :] = rest / a[..., i, i, None]
    return x


@register("stablehlo.triangular_solve")
def triangular_solve(call: OpCall):
    reject_quantized(call)
    a = to_compute(call.operands[0], element_type(call.operand_types[0]))
    b = to_compute(call.operands[1], element_type(call.operand_types[1]))
    lower = bool(call.attrs.get("lower", False))
    a = np.tril(a) if lower else np.triu(a)
    if call.attrs.get("unit_diagonal", False):
        n = a.shape[-1]
        a = a.copy()
        a[..., np.arange(n), np.arange(n)] = 1
    transpose = call.attrs.get("transpose_a", "NO_TRANSPOSE")
    if transpose in ("TRANSPOSE", "ADJOINT"):
        a = np.swapaxes(a, -1, -2)
        lower = not lower
        if transpose == "ADJOINT":
            a = np.conj(a)
    with np.errstate(all="ignore"):
        if call.attrs.get("left_side", False):  # op(a) x = b
            x = _solve_triangular(a, b, lower)
        else:  # x op(a) = b  <=>  op(a)^T x^T = b^T
            x_t = _solve_triangular(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), not lower)
            x = np.swapaxes(x_t, -1, -2)
    return round_float(x, element_type(call.result_types[0]))


@register("stablehlo.cholesky")
def cholesky(call: OpCall):
    """Cholesky–Banachiewicz on the triangle `lower` names. Like XLA, a matrix whose
    factorization meets a negative (or NaN) pivot gives a matrix of NaNs; the opposite
    triangle of the result is zero."""
    reject_quantized(call)
    a = to_compute(call.operands[0], element_type(call.operand_types[0]))
    lower = bool(call.attrs.get("lower", False))
    if not lower:  # factor the transpose: its lower triangle is a's upper triangle
        a = np.swapaxes(a, -1, -2)
    n = a.shape[-1]
    l = np.zeros_like(a)
    failed = np.zeros(a.shape[:-2], dtype=bool)
    with np.errstate(all="ignore"):
        for j in range(n):
            row = l[..., j, :j]
            pivot = np.sqrt(np.real(a[..., j, j] - np.einsum("...k,...k->...", row, np.conj(row))))
            failed |= np.isnan(pivot)
            l[..., j, j] = pivot
            below = a[..., j + 1:, j] - np.einsum("...ik,...k->...i", l[..., j + 1:, :j], np.conj(row))
            l[..., j + 1:, j] = below / pivot[..., None]
    l = np.where(failed[..., None, None], np.nan, l)
    if not lower:
        l = np.swapaxes(l, -1, -2)
    return round_float(l, element_type(call.result_types[0]))


# ---------------------------------------------------------------- batch norm


class _Steps:
    """Evaluates the spec's decomposition of the batch_norm ops one StableHLO op at a time:
    every intermediate is rounded to the element type (float64 values in between)."""

    def __init__(self, et, operand: np.ndarray, feature_index: int):
        self.et = et
        self.rank = operand.ndim
        self.feature_index = feature_index
        self.axes = tuple(d for d in range(self.rank) if d != feature_index)
        self.count = self.r(operand.size / max(operand.shape[feature_index], 1))

    def r(self, x) -> np.ndarray:
        return round_float(np.asarray(x, np.float64), self.et).astype(np.float64)

    def bcast(self, v: np.ndarray) -> np.ndarray:
        """broadcast_in_dim of a per-feature vector along feature_index."""
        return v.reshape([-1 if d == self.feature_index else 1 for d in range(self.rank)])

    def sum(self, x: np.ndarray) -> np.ndarray:
        return self.r(np.sum(x, axis=self.axes))

    def mean(self, x: np.ndarray) -> np.ndarray:
        return self.r(self.sum(x) / self.count)

    def inference(self, x, scale, offset, mean, variance, epsilon):
        centered = self.r(x - self.bcast(mean))
        stddev = self.r(np.sqrt(self.r(self.bcast(variance) + epsilon)))
        normalized = self.r(centered / stddev)
        return self.r(self.r(self.bcast(scale) * normalized) + self.bcast(offset))


def _batch_norm_inputs(call: OpCall, count: int):
    reject_quantized(call)
    et = element_type(call.operand_types[0])
    values = [to_compute(x, element_type(t)) for x, t in zip(call.operands[:count], call.operand_types)]
    steps = _Steps(et, values[0], int(call.attrs["feature_index"]))
    epsilon = steps.r(float(call.attrs.get("epsilon", 0.0)))
    return steps, values, epsilon


@register("stablehlo.batch_norm_inference")
def batch_norm_inference(call: OpCall):
    steps, (x, scale, offset, mean, variance), epsilon = _batch_norm_inputs(call, 5)
    with np.errstate(all="ignore"):
        result = steps.inference(x, scale, offset, mean, variance, epsilon)
    return round_float(result, steps.et)


@register("stablehlo.batch_norm_training")
def batch_norm_training(call: OpCall):
    steps, (x, scale, offset), epsilon = _batch_norm_inputs(call, 3)
    with np.errstate(all="ignore"):
        mean = steps.mean(x)
        centered = steps.r(x - steps.bcast(mean))
        variance = steps.mean(steps.r(centered * centered))
        output = steps.inference(x, scale, offset, mean, variance, epsilon)
    return [round_float(v, steps.et) for v in (output, mean, variance)]


@register("stablehlo.batch_norm_grad")
def batch_norm_grad(call: OpCall):
    steps, (x, scale, mean, variance, grad_output), epsilon = _batch_norm_inputs(call, 5)
    r, bcast = steps.r, steps.bcast
    with np.errstate(all="ignore"):
        centered = r(x - bcast(mean))
        variance_eps = r(bcast(variance) + epsilon)
        stddev = r(np.sqrt(variance_eps))
        normalized = r(centered / stddev)
        # as in XLA's batchnorm_expander, which the spec follows
        i1 = r(grad_output * steps.count)
        i2 = bcast(steps.sum(grad_output))
        i3 = bcast(steps.sum(r(grad_output * centered)))
        i4 = r(i3 * centered)
        i5 = r(i4 / variance_eps)
        i6 = r(r(i1 - i2) - i5)
        grad_operand = r(r(r(bcast(scale) / stddev) / steps.count) * i6)
        grad_scale = steps.sum(r(grad_output * normalized))
        grad_offset = steps.sum(grad_output)
    return [round_float(v, steps.et) for v in (grad_operand, grad_scale, grad_offset)]
